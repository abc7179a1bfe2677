"""ckgen.torch without a GPU: the op registrations, the fake (meta) implementations' shapes and
channels-last strides, tracing by torch.compile / make_fx with no graph break, the argument checks
(raised before any GPU work) and convert(); the launch path is in test_torch_cpu_launch.py. Skips
when PyTorch is not installed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: ckgen.torch tests skipped")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import ckgen.torch as ct  # noqa: E402
from ckgen.torch import ops  # noqa: E402

H = torch.float16
REF = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def meta(*shape, dtype=H, grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype, requires_grad=grad)


def cl_strides(shape):
    return ops.channels_last_strides(shape)


# ------------------------------------------------------------------------ registration
def test_ops_registered_with_schemas() -> None:
    for name, schema in ct.SCHEMAS.items():
        op = getattr(torch.ops.ckgen, name).default
        assert str(op._schema) == f"ckgen::{name}{schema}"
    assert "Tensor? bias" in ct.SCHEMAS["conv_forward"]


@pytest.mark.parametrize(
    "xs,ws,kw",
    [
        ((2, 8, 17), (16, 8, 3), dict(stride=2, padding=1)),
        ((2, 64, 28, 28), (128, 64, 3, 3), dict(stride=2, padding=1)),
        ((2, 64, 14, 14), (64, 16, 3, 3), dict(padding=2, dilation=2, groups=4)),
        ((1, 8, 6, 10, 10), (8, 8, 3, 1, 3), dict(stride=(1, 2, 2), padding=(1, 0, 1))),
        ((3, 32, 9, 9), (32, 1, 5, 5), dict(padding="same", groups=32)),
        ((3, 32, 9, 9), (16, 32, 4, 4), dict(padding="same")),
        ((3, 32, 9, 9), (16, 32, 3, 3), dict(padding="valid")),
    ],
)
def test_fake_shapes_match_pytorch(xs, ws, kw) -> None:
    nd = len(xs) - 2
    x, w = meta(*xs, grad=True), meta(*ws, grad=True)
    b = meta(ws[0], grad=True)
    y = ct.conv(x, w, b, **kw)
    ref = REF[nd](x, w, b, **kw)
    assert y.shape == ref.shape and y.dtype == H and y.device.type == "meta"
    assert y.stride() == cl_strides(y.shape)  # channels-last output
    y.sum().backward()  # autograd registered: meta gradients of the right shapes
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape


def test_backward_ops_fake_shapes() -> None:
    dy, w = meta(2, 128, 14, 14), meta(128, 64, 3, 3)
    dx = ct.conv_backward_data(dy, w, (2, 64, 28, 28), stride=2, padding=1)
    assert dx.shape == (2, 64, 28, 28) and dx.stride() == cl_strides(dx.shape)
    x = meta(2, 64, 28, 28)
    dw = ct.conv_backward_weight(x, dy, (128, 64, 3, 3), stride=2, padding=1)
    assert dw.shape == (128, 64, 3, 3) and dw.stride() == cl_strides(dw.shape)


def test_opcheck_on_meta() -> None:
    x, w, b = meta(2, 8, 10, 10, grad=True), meta(16, 8, 3, 3, grad=True), meta(16, grad=True)
    p = ([1, 1], [1, 1], [1, 1], [1, 1], 1, 0)
    res = torch.library.opcheck(torch.ops.ckgen.conv_forward.default, (x, w, b, *p))
    assert set(res.values()) == {"SUCCESS"}, res
    dy = meta(2, 16, 10, 10)
    res = torch.library.opcheck(
        torch.ops.ckgen.conv_backward_data.default, (dy, w.detach(), [2, 8, 10, 10], *p)
    )
    assert set(res.values()) == {"SUCCESS"}, res
    res = torch.library.opcheck(
        torch.ops.ckgen.conv_backward_weight.default, (x.detach(), dy, [16, 8, 3, 3], *p)
    )
    assert set(res.values()) == {"SUCCESS"}, res


def test_fake_tensors_on_cuda_device() -> None:
    with FakeTensorMode():
        x = torch.empty(4, 32, 16, 16, dtype=torch.bfloat16, device="cuda")  # NCHW: converted
        w = torch.empty(64, 32, 3, 3, dtype=torch.bfloat16, device="cuda")
        y = torch.ops.ckgen.conv_forward(x, w, None, [1, 1], [1, 1], [1, 1], [1, 1], 1, 0)
        assert y.shape == (4, 64, 16, 16) and y.device.type == "cuda"
        assert y.is_contiguous(memory_format=torch.channels_last)


# ------------------------------------------------------------------------ tracing
def _model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(8, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=2),
        nn.ReLU(),
        nn.Conv2d(32, 32, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 4),
    )


def test_compile_fullgraph_no_graph_break() -> None:
    torch._dynamo.reset()
    m = ct.convert(_model(), verbose=False).to(device="meta", dtype=H)
    x = meta(2, 8, 12, 12, grad=True)
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm.forward

    y = torch.compile(m, fullgraph=True, backend=backend)(x)
    assert y.shape == (2, 4) and len(graphs) == 1
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert sum("ckgen.conv_forward" in t for t in targets) == 3, targets
    y.sum().backward()
    assert m[0].weight.grad.shape == m[0].weight.shape
    torch._dynamo.reset()
    ex = torch._dynamo.explain(m)(x)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, ex.break_reasons


def test_aot_graphs_hold_the_three_ops() -> None:
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    torch._dynamo.reset()
    m = ct.convert(_model(), verbose=False).to(device="meta", dtype=H)
    seen: list[str] = []

    def record(gm, inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if "ckgen" in str(n.target))
        return make_boxed_func(gm.forward)

    def backend(gm, inputs):
        return aot_module_simplified(gm, inputs, fw_compiler=record, bw_compiler=record)

    torch.compile(m, fullgraph=True, backend=backend)(
        meta(2, 8, 12, 12, grad=True)
    ).sum().backward()
    assert seen.count("ckgen.conv_forward.default") == 3
    assert seen.count("ckgen.conv_backward_weight.default") == 3
    assert seen.count("ckgen.conv_backward_data.default") == 3


def test_make_fx_training_step() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(x, w, b):
        y = ct.conv(x, w, b, padding=1)
        gx, gw, gb = torch.autograd.grad(y.float().square().sum(), (x, w, b))
        return y, gx, gw, gb

    # meta inputs: a CPU-only build's autograd engine has no CUDA device to run fake CUDA on
    x, w, b = meta(2, 8, 10, 10, grad=True), meta(16, 8, 3, 3, grad=True), meta(16, grad=True)
    gm = make_fx(step, tracing_mode="fake")(x, w, b)
    code = gm.code
    for name in ("conv_forward", "conv_backward_data", "conv_backward_weight"):
        assert f"ckgen.{name}" in code, code


# ------------------------------------------------------------------------ misuse
def _fake_cuda(*shape, dtype=H, device="cuda"):
    return torch.empty(*shape, dtype=dtype, device=device)


MISUSE = [
    # (x, w, kwargs, exception, message)
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3, dtype=torch.float32)), {},
     ct.ConvTypeError, r"weight has dtype torch.float32 but x has torch.float16"),
    (lambda: (_fake_cuda(2, 8, 8, 8, dtype=torch.float64),
              _fake_cuda(8, 8, 3, 3, dtype=torch.float64)), {},
     ct.ConvTypeError, r"x has dtype torch.float64"),
    (lambda: (_fake_cuda(2, 8, 8, 8, device="cpu"), _fake_cuda(8, 8, 3, 3, device="cpu")), {},
     ct.ConvDeviceError, r"x is on cpu: ckgen kernels run on CUDA"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3, device="cuda:1")), {},
     ct.ConvDeviceError, r"weight is on cuda:1 but x is on cuda:0"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3)), {},
     ct.ConvValueError, r"weight has 3 dims"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 4, 3, 3)), {},
     ct.ConvValueError, r"x has 8 channels but weight .* expects 4"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(5, 4, 3, 3)), {"groups": 2},
     ct.ConvValueError, r"weight has 5 output channels, not divisible by groups=2"),
    (lambda: (_fake_cuda(2, 8, 0, 8), _fake_cuda(8, 8, 3, 3)), {"padding": 1},
     ct.ConvValueError, r"dim 2 is zero-size"),
    (lambda: (_fake_cuda(2, 8, 2, 2), _fake_cuda(8, 8, 3, 3)), {},
     ct.ConvValueError, r"smaller than the dilated filter 3"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3)), {"stride": 0},
     ct.ConvValueError, r"stride: every value must be >= 1"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3)), {"padding": (1, 1, 1)},
     ct.ConvValueError, r"padding: expected 2 values"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3)), {"padding": "full"},
     ct.ConvValueError, r"padding='full'"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3)), {"groups": 0},
     ct.ConvValueError, r"groups: expected an int >= 1"),
    (lambda: (_fake_cuda(8, 8), _fake_cuda(8, 8)), {},
     ct.ConvValueError, r"x has 2 dims"),
    (lambda: (_fake_cuda(2, 8, 8, 8), _fake_cuda(8, 8, 3, 3)), {"bias": (4,)},
     ct.ConvValueError, r"bias has shape \[4\]"),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(MISUSE)))
def test_misuse_raises_named_errors_while_tracing(case) -> None:
    make, kw, exc, msg = MISUSE[case]
    kw = dict(kw)
    if "cuda:1" in msg and torch.cuda.is_available() and torch.cuda.device_count() < 2:
        pytest.skip("a fake tensor on cuda:1 initialises that GPU: needs 2 GPUs or none")
    with FakeTensorMode():
        x, w = make()
        bias = _fake_cuda(*kw.pop("bias")) if "bias" in kw else None
        with pytest.raises(exc, match=msg):
            ct.conv(x, w, bias, **kw)
        try:
            st, pl, pr, dil = ct._params(2, w, kw.get("stride", 1), kw.get("padding", 0), 1, None)
        except ct.ConvValueError:
            return  # a parameter error: raised before the op
        with pytest.raises(exc, match=msg):  # the raw op's fake implementation: the same error
            torch.ops.ckgen.conv_forward(x, w, bias, st, pl, pr, dil, kw.get("groups", 1), 0)


def test_misuse_with_real_cpu_tensors() -> None:
    x, w = torch.randn(2, 8, 8, 8), torch.randn(8, 8, 3, 3)
    with pytest.raises(ct.ConvDeviceError, match="x is on cpu") as ei:
        ct.conv(x, w, padding=1)
    assert isinstance(ei.value, RuntimeError)  # the dispatcher keeps the exception's type
    with pytest.raises(ct.ConvTypeError, match="weight has dtype torch.float64"):
        ct.conv(x, w.double())
    with pytest.raises(ct.ConvTypeError, match="expected a torch.Tensor, got list"):
        ct.conv([1, 2], w)
    with pytest.raises(ct.ConvDeviceError, match="dy is on cpu"):
        ct.conv_backward_data(torch.randn(2, 8, 6, 6), w, (2, 8, 8, 8))


def test_backward_ops_check_dy_shape() -> None:
    with FakeTensorMode():
        w, x = _fake_cuda(16, 8, 3, 3), _fake_cuda(2, 8, 10, 10)
        with pytest.raises(
            ct.ConvValueError, match=r"dy has shape \[2, 16, 9, 9\].*\[2, 16, 8, 8\]"
        ):
            ct.conv_backward_data(_fake_cuda(2, 16, 9, 9), w, (2, 8, 10, 10))
        with pytest.raises(ct.ConvValueError, match=r"input_size: expected 4 values"):
            ct.conv_backward_data(_fake_cuda(2, 16, 8, 8), w, (2, 8, 10))
        with pytest.raises(ct.ConvValueError, match=r"dy has shape"):
            ct.conv_backward_weight(x, _fake_cuda(2, 16, 9, 9), (16, 8, 3, 3))
        with pytest.raises(ct.ConvTypeError, match=r"dy has dtype torch.bfloat16 but x"):
            ct.conv_backward_weight(x, _fake_cuda(2, 16, 8, 8, dtype=torch.bfloat16), w.shape)


def test_empty_batch_is_allowed() -> None:
    y = ct.conv(meta(0, 8, 10, 10), meta(16, 8, 3, 3), padding=1)
    assert y.shape == (0, 16, 10, 10)


# ------------------------------------------------------------------------ convert
class _MyConv(nn.Conv2d):
    """Keeps nn.Conv2d's forward (as torchvision's Conv3DSimple does): converted."""

    def label(self) -> str:
        return "mine"


class _MyConvOwnForward(nn.Conv2d):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return super().forward(x) * 2


def test_convert_replaces_what_it_can_and_keeps_parameters(capsys) -> None:
    m = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect"),
        nn.Conv1d(8, 8, 5, padding="same", dilation=2),
        nn.Conv3d(2, 4, 3, padding="valid"),
        _MyConv(8, 8, 1),
        nn.ConvTranspose2d(8, 8, 2),
        nn.Sequential(nn.Conv2d(8, 8, 1, bias=False)),
        nn.LazyConv2d(8, 3),
        _MyConvOwnForward(8, 8, 1),
    )
    params = {n: p for n, p in m.named_parameters()}
    out = ct.convert(m)
    assert out is m
    printed = capsys.readouterr().out
    assert "5 of 8 convolutions run through ckgen" in printed
    assert isinstance(m[0], ct.Conv2d) and isinstance(m[0], nn.Conv2d)
    assert isinstance(m[2], ct.Conv1d) and isinstance(m[3], ct.Conv3d)
    assert isinstance(m[6][0], ct.Conv2d)
    # a subclass that keeps nn.Conv2d's forward: ckgen's forward, still the user's class
    assert isinstance(m[4], ct.Conv2d) and isinstance(m[4], _MyConv) and m[4].label() == "mine"
    assert type(m[4]).forward is ct.Conv2d.forward
    assert type(m[1]) is nn.Conv2d and type(m[5]) is nn.ConvTranspose2d
    assert type(m[7]) is nn.LazyConv2d and type(m[8]) is _MyConvOwnForward
    for n, p in m.named_parameters():  # the very same Parameter objects
        if n in params:
            assert params[n] is p, n
    why = {d.name: (d.converted, d.reason) for d in ct.report(m)}
    assert why["1"] == (False, "padding_mode='reflect' (ckgen pads with zeros only)")
    assert why["4"][0]
    assert why["8"] == (False, "a subclass of nn.Conv2d that defines its own forward(); left as is")
    assert "lazy" in why["7"][1]
    assert why["2"][0] and "padding [4] dilation [2]" in why["2"][1]
    assert "5" not in why  # transposed convolutions are not convolutions ckgen runs
    assert m[2]._ck_conf[:4] == ((1,), (4,), (4,), (2,))


def test_convert_same_padding_even_filter_and_dtype() -> None:
    m = nn.Sequential(nn.Conv2d(4, 4, 4, padding="same"), nn.Conv2d(4, 4, 3).double())
    ct.convert(m, verbose=False)
    assert m[0]._ck_conf[1:3] == ((1, 1), (2, 2))  # PyTorch pads the extra one on the right
    d = ct.report(m)[1]
    assert not d.converted and "dtype torch.float64" in d.reason
    y = m[0].to(device="meta", dtype=H)(meta(1, 4, 7, 7))
    assert y.shape == (1, 4, 7, 7)
    m2 = nn.Sequential(nn.Conv2d(4, 4, 3))
    ct.convert(m2, dtype=torch.float64, verbose=False)
    assert type(m2[0]) is nn.Conv2d


def test_convert_root_conv_and_registry_filter() -> None:
    class Reg:
        def find(self, variant=None, datatype=None, ndim=None):
            return ["k"] if ndim == 2 and datatype == "fp16" else []

    root = nn.Conv2d(4, 4, 3)
    new = ct.convert(root, Reg(), dtype=torch.float16, verbose=False)
    assert isinstance(new, ct.Conv2d) and new.weight is root.weight and new.bias is root.bias
    m = nn.Sequential(nn.Conv1d(4, 4, 3), nn.Conv2d(4, 4, 3).bfloat16())
    ct.convert(m, Reg(), dtype=None, verbose=False)
    reasons = [d.reason for d in ct.report(m)]
    assert "no fp32 1D forward kernel" in reasons[0]
    assert "no bf16 2D forward kernel" in reasons[1]
    assert new.ckgen_registry is not None and ct.convert(new, verbose=False) is new


def test_ckgen_conv_module_rejects_other_padding_modes() -> None:
    with pytest.raises(ct.ConvValueError, match="padding_mode='circular'"):
        ct.Conv2d(4, 4, 3, padding=1, padding_mode="circular")
    m = ct.Conv2d(4, 8, 3, padding=1, bias=True).to(device="meta", dtype=H)
    assert m(meta(2, 4, 5, 5)).shape == (2, 8, 5, 5)
    m.padding = (0, 0)  # attributes changed after construction are honoured
    assert m(meta(2, 4, 5, 5)).shape == (2, 8, 3, 3)
    assert "ckgen=True" in repr(m)


def test_convert_subclass_twin_pickles_in_a_new_process(tmp_path) -> None:
    """A converted subclass (its class made by convert: torchvision's Conv3DSimple) unpickles in a
    process that never ran convert: the class is rebuilt from its name."""
    import pickle
    import subprocess
    import sys

    video = pytest.importorskip("torchvision.models.video.resnet")
    m = nn.Sequential(video.Conv3DSimple(4, 4))
    ct.convert(m, verbose=False)
    assert isinstance(m[0], ct.Conv3d) and isinstance(m[0], video.Conv3DSimple)
    path = tmp_path / "m.pkl"
    path.write_bytes(pickle.dumps(m))
    code = (
        "import pickle; import ckgen.torch; from torchvision.models.video import resnet; "
        f"m = pickle.loads(open({str(path)!r}, 'rb').read()); "
        "assert isinstance(m[0], resnet.Conv3DSimple) and isinstance(m[0], ckgen.torch.Conv3d)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
