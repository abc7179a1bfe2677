"""ckgen.torch's fused forward without a GPU: the ckgen::conv_fused op (registration, fake
implementation, checks, inference-only autograd), and convert(model, fuse=True) on torchvision's
ResNet, ResNeXt and MobileNetV2 structures against the unfused model. Launches go to a fake
library that computes each convolution and epilogue with PyTorch from the pointers it is handed
(CPU tensors stand in for CUDA ones), so the pointer plumbing is exercised too."""

from __future__ import annotations

import copy
from collections import OrderedDict

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import ckgen.torch as ct  # noqa: E402
from ckgen.model.epilogue import Epilogue  # noqa: E402
from ckgen.torch import fused_op  # noqa: E402

from conftest import tensor_at, torch_dtype  # noqa: E402

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


class _Kernel:
    """A 'kernel' computing the convolution and the epilogue from raw CPU pointers."""

    def __init__(self, log: list, datatype: str, ep: Epilogue) -> None:
        self.log, self.dt, self.ep = log, torch_dtype(datatype), ep
        self.out_dt = torch_dtype(ep.output_datatype(datatype).value)
        self.k_batch, self.kernel = 1, None
        self.name = f"fake_{datatype}_{ep}"

    def workspace_bytes(self, p) -> int:
        return 0

    def run(self, p, px, pw, py, pws=0, stream=0, bias=None, scale=None, residual=None,
            beta=1.0, alpha=0.01, stats=None) -> None:  # fmt: skip
        nd, lo = p.ndim, 3 - p.ndim
        sp_in, flt, out = tuple(p.input)[lo:], tuple(p.filter)[lo:], tuple(p.output)[lo:]
        gc, gk = p.G * p.C, p.G * p.K
        perm = (0, nd + 1, *range(1, nd + 1))  # channels-last memory -> (N, C, *spatial)
        x = tensor_at(px, (p.N, *sp_in, gc), self.dt).permute(perm).float()
        w = tensor_at(pw, (gk, *flt, p.C), self.dt).permute(perm).float()
        pad = [
            v for lr in zip(reversed(p.pad_l[lo:]), reversed(p.pad_r[lo:]), strict=True) for v in lr
        ]
        y = CONV[nd](F.pad(x, pad), w, None, p.stride[lo:], 0, p.dilation[lo:], p.G)
        view = (1, -1) + (1,) * nd
        if scale is not None:
            y = y * tensor_at(scale, (gk,), torch.float32).view(view)
        if bias is not None:
            y = y + tensor_at(bias, (gk,), torch.float32).view(view)
        if residual is not None:
            y = y + beta * tensor_at(residual, (p.N, *out, gk), self.out_dt).permute(perm).float()
        y = fused_op._ACT[str(self.ep.activation)](y, alpha)
        dst = tensor_at(py, (p.N, *out, gk), self.out_dt)
        dst.copy_(y.permute(0, *range(2, nd + 2), 1).to(self.out_dt))
        if stats is not None:
            sums = fused_op.stats_of(dst.permute(perm))
            tensor_at(stats, (2, gk), torch.float32).copy_(sums)
        self.log.append(str(self.ep))


class _FakeLibrary:
    def __init__(self, fusions=None) -> None:
        self.runs: list[str] = []
        self.fusions = fusions  # None: every fusion has kernels

    def select(self, problem, variant="forward", datatype="fp16", fusion=None):
        return _Kernel(self.runs, datatype, Epilogue.parse(fusion))

    def find(self, variant=None, datatype=None, ndim=None, fusion=None):
        return ["k"] if self.fusions is None or fusion in (None, *self.fusions) else []


def _cl(t):
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


# ------------------------------------------------------------------------ the op
def test_op_registered_and_fake_shapes() -> None:
    schema = str(torch.ops.ckgen.conv_fused.default._schema)
    assert schema == "ckgen::conv_fused" + fused_op.SCHEMA
    x, w = torch.empty(2, 8, 10, 10, device="meta"), torch.empty(16, 8, 3, 3, device="meta")
    b, r = torch.empty(16, device="meta"), torch.empty(2, 16, 5, 5, device="meta")
    y = ct.conv_fused(x, w, b, residual=r, fusion="bias_relu_residual", stride=2, padding=1)
    assert y.shape == (2, 16, 5, 5) and y.is_contiguous(memory_format=torch.channels_last)
    args = (x, w, b, None, r, 1.0, 0.01, "bias_relu_residual", [2, 2], [1, 1], [1, 1], [1, 1], 1, 0)
    res = torch.library.opcheck(fused_op.conv_fused_op, args)
    assert set(res.values()) == {"SUCCESS"}, res


def test_a_converting_fusion_writes_its_datatype() -> None:
    x = torch.empty(2, 8, 10, 10, device="meta", dtype=torch.float16, requires_grad=True)
    w = torch.empty(16, 8, 3, 3, device="meta", dtype=torch.float16, requires_grad=True)
    b, r = torch.empty(16, device="meta"), torch.empty(2, 16, 10, 10, device="meta")
    y = ct.conv_fused(x, w, b, residual=r, fusion="bias_relu_residual_to_fp32", padding=1)
    assert y.dtype == torch.float32 and y.shape == (2, 16, 10, 10)
    y.sum().backward()  # its gradient reaches the fp16 inputs
    assert x.grad is not None and x.grad.dtype == torch.float16 and w.grad.shape == w.shape
    with pytest.raises(ct.ConvTypeError, match="the output's, torch.float32"):
        ct.conv_fused(x, w, b, residual=r.half(), fusion="bias_residual_to_fp32", padding=1)


def test_a_stats_fusion_returns_the_outputs_channel_sums(cpu_as_cuda) -> None:
    lib = _FakeLibrary()
    x, w, b = _cl(torch.randn(2, 8, 9, 9)), _cl(torch.randn(12, 8, 3, 3)), torch.randn(12)
    y, st = ct.conv_fused(x, w, b, fusion="bias_relu_stats", padding=1, registry=lib)
    conf = ((1, 1), (1, 1), (1, 1), (1, 1), 1, 0)
    ref = fused_op.reference(x, w, b, None, None, 1.0, 0.01, "bias_relu_stats", conf)
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    assert st.shape == (2, 12) and st.dtype == torch.float32
    torch.testing.assert_close(st, fused_op.stats_of(y), rtol=1e-5, atol=1e-4)

    def f(x):
        return ct.conv_fused(x, w, b, fusion="bias_relu_stats", padding=1, registry=lib)

    yc, sc = torch.compile(f, backend="eager", fullgraph=True)(x)  # traced through the op
    assert torch.equal(yc, y) and torch.equal(sc, st)
    with pytest.raises(ct.FusedGradientError, match="stats has no gradient"):
        ct.conv_fused(x.requires_grad_(), w, b, fusion="bias_relu_stats", padding=1, registry=lib)


def test_the_stats_op_on_meta() -> None:
    x, w = torch.empty(2, 8, 10, 10, device="meta"), torch.empty(16, 8, 3, 3, device="meta")
    b = torch.empty(16, device="meta")
    y, st = ct.conv_fused(x, w, b, fusion="bias_stats", stride=2, padding=1)
    assert y.shape == (2, 16, 5, 5) and st.shape == (2, 16) and st.dtype == torch.float32
    args = (x, w, b, None, None, 1.0, 0.01, "bias_stats", [2, 2], [1, 1], [1, 1], [1, 1], 1, 0)
    res = torch.library.opcheck(fused_op.conv_fused_stats_op, args)
    assert set(res.values()) == {"SUCCESS"}, res
    with pytest.raises(ct.ConvValueError, match="conv_fused_stats returns"):
        torch.ops.ckgen.conv_fused(*args)
    with pytest.raises(ct.ConvValueError, match="writes no statistics"):
        torch.ops.ckgen.conv_fused_stats(*args[:7], "bias", *args[8:])


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(fusion="bias_relu"), "reads bias, which is None"),
        (dict(fusion="relu_bias"), "is not a fusion"),
        (dict(fusion="none"), "use ckgen::conv_forward"),
        (dict(fusion="bias", bias=torch.zeros(16, dtype=torch.float16)), "epilogue reads fp32"),
        (dict(fusion="bias", bias=torch.zeros(8)), r"expected \(16,\)"),
        (dict(fusion="bias", bias=torch.zeros(16), residual=torch.zeros(2, 16, 10, 10)),
         "does not read residual"),
        (dict(fusion="bias_residual", bias=torch.zeros(16), residual=torch.zeros(2, 16, 9, 9)),
         "expected the output's"),
    ],
)  # fmt: skip
def test_operand_checks(kw, msg) -> None:
    kw = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    x, w = torch.empty(2, 8, 10, 10, device="meta"), torch.empty(16, 8, 3, 3, device="meta")
    with pytest.raises((ct.ConvValueError, ct.ConvTypeError), match=msg):
        ct.conv_fused(x, w, padding=1, **kw)


@pytest.mark.parametrize("fusion", ["bias_silu", "scale_shift_relu", "bias_gelu_tanh"])
def test_no_gradient_where_the_output_does_not_give_it(cpu_as_cuda, fusion) -> None:
    lib = _FakeLibrary()
    x = _cl(torch.randn(2, 8, 6, 6, requires_grad=True))
    w, b, s = _cl(torch.randn(16, 8, 3, 3)), torch.randn(16), torch.rand(16) + 0.5
    scale = s if Epilogue.parse(fusion).needs_scale else None
    with pytest.raises(ct.FusedGradientError, match="cannot be trained through"):
        ct.conv_fused(x, w, b, scale, fusion=fusion, padding=1, registry=lib)
    with torch.no_grad():
        y = ct.conv_fused(x, w, b, scale, fusion=fusion, padding=1, registry=lib)
    conf = ((1, 1), (1, 1), (1, 1), (1, 1), 1, 0)
    ref = fused_op.reference(x.detach(), w, b, scale, None, 1.0, 0.01, fusion, conf)
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fusion", ["bias", "bias_relu6", "bias_leaky_relu_residual",
                                    "scale_shift_silu", "bias_gelu_tanh_residual",
                                    "bias_relu_residual_to_bf16"])  # fmt: skip
def test_op_matches_reference(cpu_as_cuda, fusion) -> None:
    lib = _FakeLibrary()
    x, w = _cl(torch.randn(2, 8, 9, 9)), _cl(torch.randn(12, 4, 3, 3))
    b, s = torch.randn(12), torch.rand(12) + 0.5
    ep = Epilogue.parse(fusion)
    scale = s if ep.needs_scale else None
    r = _cl(torch.randn(2, 12, 5, 5)).to(fused_op.out_dtype(ep, x.dtype)) if ep.residual else None
    kw = dict(stride=2, padding=1, groups=2, registry=lib, beta=0.5, alpha=0.2)
    y = ct.conv_fused(x, w, b, scale, r, fusion=fusion, **kw)
    conf = ((2, 2), (1, 1), (1, 1), (1, 1), 2, 0)
    ref = fused_op.reference(x, w, b, scale, r, 0.5, 0.2, fusion, conf)
    assert y.dtype == ref.dtype == fused_op.out_dtype(ep, x.dtype)
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    assert lib.runs == [fusion]


# ------------------------------------------------------------------------ convert(fuse=True)
def _torchvision():
    return pytest.importorskip("torchvision", reason="torchvision is not installed")


@pytest.mark.parametrize("name", ["resnet18", "resnext50_32x4d", "mobilenet_v2"])
def test_convert_fuse_matches_unfused_model(cpu_as_cuda, name, capsys) -> None:
    tv = _torchvision()
    torch.manual_seed(0)
    model = getattr(tv.models, name)(num_classes=10)
    for m in model.modules():  # non-trivial running statistics to fold
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.2, 0.2)
    model = model.eval().to(memory_format=torch.channels_last)
    x = _cl(torch.randn(2, 3, 64, 64))
    with torch.no_grad():
        ref = model(x)
    lib = _FakeLibrary()
    fused = ct.convert(copy.deepcopy(model), lib, fuse=True)
    printed = capsys.readouterr().out
    decisions = ct.report(fused)
    assert decisions and all(d.converted for d in decisions), printed
    kinds = {type(m).__name__ for m in fused.modules()}
    assert "FusedResidual" in kinds and "BatchNorm2d" not in kinds
    with torch.no_grad():
        y = fused(x)
    torch.testing.assert_close(y, ref, rtol=1e-3, atol=1e-3)
    expect = {"resnet18": {"bias", "bias_relu", "bias_relu_residual"},
              "resnext50_32x4d": {"bias", "bias_relu", "bias_relu_residual"},
              "mobilenet_v2": {"bias", "bias_relu6", "bias_residual"}}  # fmt: skip
    assert set(lib.runs) == expect[name] and "fused" in printed


def test_convert_fuse_leaves_what_it_cannot_fuse(cpu_as_cuda, capsys) -> None:
    seq = nn.Sequential(
        OrderedDict(
            conv1=nn.Conv2d(4, 8, 3, padding=1, bias=False),
            bn1=nn.BatchNorm2d(8),
            act1=nn.GELU(),  # erf GELU: not an epilogue activation; the BN still folds
            conv2=nn.Conv2d(8, 8, 3, padding=1),
            act2=nn.Hardtanh(0.0, 6.0),
            conv3=nn.Conv2d(8, 8, 1),
            act3=nn.SiLU(),
            conv4=nn.Conv2d(8, 8, 1, padding_mode="reflect"),
            bn4=nn.BatchNorm2d(8),
            conv5=nn.Conv2d(8, 8, 1),
        )
    ).eval()
    x = _cl(torch.randn(1, 4, 8, 8))
    with torch.no_grad():
        ref = seq(x)
    lib = _FakeLibrary(fusions={"bias", "bias_relu6"})  # no bias_silu kernel
    out = ct.convert(seq, lib, fuse=True)
    why = {d.name: d for d in ct.report(out)}
    assert why["conv1"].kind == "FusedConv" and "BatchNorm2d folded" in why["conv1"].reason
    assert "fused bias_relu6" in why["conv2"].reason
    assert type(out.conv3).__name__ == "Conv2d" and "no fp32 2D bias_silu kernel" in str(
        why["conv3"]
    )
    assert not why["conv4"].converted and "reflect" in why["conv4"].reason
    assert type(out.bn4) is nn.BatchNorm2d and type(out.act3) is nn.SiLU
    with torch.no_grad():
        y = out(x)
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)


def test_fused_conv_keeps_fp32_bias_and_reference() -> None:
    conv, bn = nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8).eval()
    bn.running_mean.uniform_(-1, 1)
    fc = ct.FusedConv(conv, bn, "leaky_relu", alpha=0.1)
    assert fc.fusion == "bias_leaky_relu" and "fusion=bias_leaky_relu" in repr(fc)
    x = torch.randn(2, 4, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(fc.reference(x), F.leaky_relu(bn(conv(x)), 0.1))
    fc.half()
    assert fc.weight.dtype == torch.float16 and fc.bias.dtype == torch.float32
    fc.to("meta")
    assert fc.bias.device.type == "meta" and fc.bias.dtype == torch.float32


def test_compile_traces_fused_model_without_graph_break() -> None:
    tv = _torchvision()
    torch._dynamo.reset()
    model = tv.models.resnet18(num_classes=4).eval()
    fused = ct.convert(model, fuse=True, verbose=False).to(device="meta", dtype=torch.float16)
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm.forward

    x = torch.empty(2, 3, 32, 32, device="meta", dtype=torch.float16)
    with torch.no_grad():
        y = torch.compile(fused, fullgraph=True, backend=backend)(x)
    assert y.shape == (2, 4) and len(graphs) == 1
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert sum("ckgen.conv_fused" in t for t in targets) == 20, targets
    torch._dynamo.reset()


def test_convert_fuse_retinanet_core(cpu_as_cuda) -> None:
    """The benchmark's RetinaNet (its ResNet stem and blocks inside torchvision's
    IntermediateLayerGetter, FPN, heads) against its unfused self."""
    _torchvision()
    import fused_measure

    model = fused_measure.build("retinanet_resnet50_fpn", 96, "cpu")
    model = model.to(memory_format=torch.channels_last)
    x = _cl(torch.randn(1, 3, 96, 96))
    with torch.no_grad():
        ref = model(x)
    lib = _FakeLibrary()
    fused = ct.convert(copy.deepcopy(model), lib, fuse=True, verbose=False)
    kinds = [type(m).__name__ for m in fused.modules()]
    assert "BatchNorm2d" not in kinds and kinds.count("FusedResidual") == 16
    assert not [d for d in ct.report(fused) if d.kind != "FusedConv"]
    # the convolutions with a bias alone add it in the epilogue: FPN 6, P6 / P7, 2 head outputs
    alone = [m for m in fused.modules() if type(m).__name__ == "FusedConv" and m.fusion == "bias"]
    assert len(alone) == 10 + 4  # and the 4 downsample shortcuts (Conv + BatchNorm)
    with torch.no_grad():
        y = fused(x)
    for a, b in zip(y, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3)
    assert {"bias", "bias_relu", "bias_relu_residual"} <= set(lib.runs)


def test_frozen_batchnorm_folds(cpu_as_cuda) -> None:
    """torchvision's FrozenBatchNorm2d (pretrained detection backbones) folds like BatchNorm."""
    tv = _torchvision()
    bn = tv.ops.misc.FrozenBatchNorm2d(8)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    bn.weight.uniform_(0.5, 2)
    seq = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1, bias=False), bn, nn.ReLU()).eval()
    x = _cl(torch.randn(2, 4, 6, 6))
    with torch.no_grad():
        ref = seq(x)
        out = ct.convert(seq, _FakeLibrary(), fuse=True, verbose=False)
        assert type(out[0]).__name__ == "FusedConv" and type(out[1]) is nn.Identity
        torch.testing.assert_close(out(x), ref, rtol=1e-4, atol=1e-4)


def test_batchnorm_in_training_mode_is_named() -> None:
    seq = nn.Sequential(nn.Conv2d(4, 8, 1), nn.BatchNorm2d(8), nn.ReLU()).eval()
    seq[1].train()
    out = ct.convert(seq, fuse=True, verbose=False)
    d = ct.report(out)[0]
    assert type(out[0]).__name__ == "Conv2d" and "not fused: BatchNorm in training mode" in d.reason
