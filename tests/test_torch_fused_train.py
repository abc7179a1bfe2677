"""Training through ckgen::conv_fused without a GPU: its gradient (the activation's derivative
from the saved output, db from a bias_grad backward_weight kernel or summed apart), the op
ckgen::conv_backward_weight_bias, and convert(model.train(), fuse=True). Launches go to a fake
library that computes each variant with PyTorch from the pointers it is handed (CPU tensors
stand in for CUDA ones), so the gradients check the pointer roles too."""

from __future__ import annotations

from collections import OrderedDict

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import ckgen.torch as ct  # noqa: E402
from ckgen.model.epilogue import Epilogue  # noqa: E402
from ckgen.runtime.capi import NoKernel  # noqa: E402
from ckgen.torch import fused_grad, fused_op  # noqa: E402

from conftest import tensor_at, torch_dtype  # noqa: E402


class _Estimate:
    def __init__(self, us: float) -> None:
        self.us = us

    def estimate_us(self, problem, k_batch) -> float:
        return self.us


class _Kernel:
    """forward (with its epilogue), backward_data or backward_weight (with bias_grad) of a 2D
    problem, computed from raw CPU pointers in fp32; `kernel` answers the cost model's estimate
    where one is given."""

    k_batch = 1

    def __init__(self, log: list, variant: str, datatype: str, ep: Epilogue, us=None) -> None:
        self.log, self.variant, self.dt, self.ep = log, variant, torch_dtype(datatype), ep
        self.name = f"fake_{variant}_{ep}"
        self.kernel = None if us is None else _Estimate(us)

    def workspace_bytes(self, p) -> int:
        return 0

    def run(self, p, pa, pb, pc, pws=0, stream=0, **operands) -> None:
        lo = 1  # 2D: the last two of the problem's three spatial extents
        hi, fl, ho = tuple(p.input)[lo:], tuple(p.filter)[lo:], tuple(p.output)[lo:]
        kw = dict(stride=p.stride[lo:], padding=p.pad_l[lo:], dilation=p.dilation[lo:], groups=p.G)
        to_nchw, to_nhwc = (0, 3, 1, 2), (0, 2, 3, 1)
        xs, ws, ys = (p.N, *hi, p.G * p.C), (p.G * p.K, *fl, p.C), (p.N, *ho, p.G * p.K)
        if self.variant == "forward":
            x = tensor_at(pa, xs, self.dt).permute(to_nchw).float()
            w = tensor_at(pb, ws, self.dt).permute(to_nchw).float()
            y = F.conv2d(x, w, None, **kw)
            if operands.get("bias") is not None:
                y = y + tensor_at(operands["bias"], (p.G * p.K,), torch.float32).view(1, -1, 1, 1)
            if operands.get("residual") is not None:
                r = tensor_at(operands["residual"], ys, self.dt).permute(to_nchw).float()
                y = y + operands.get("beta", 1.0) * r
            y = fused_op._ACT[str(self.ep.activation)](y, operands.get("alpha", 0.01))
            tensor_at(pc, ys, self.dt).copy_(y.permute(to_nhwc).to(self.dt))
        elif self.variant == "backward_data":
            w = tensor_at(pb, ws, self.dt).permute(to_nchw).float()
            dy = tensor_at(pc, ys, self.dt).permute(to_nchw).float()
            dx = torch.nn.grad.conv2d_input((p.N, p.G * p.C, *hi), w, dy, **kw)
            tensor_at(pa, xs, self.dt).copy_(dx.permute(to_nhwc).to(self.dt))
        else:
            x = tensor_at(pa, xs, self.dt).permute(to_nchw).float()
            dy = tensor_at(pc, ys, self.dt).permute(to_nchw).float()
            dw = torch.nn.grad.conv2d_weight(x, (p.G * p.K, p.C, *fl), dy, **kw)
            tensor_at(pb, ws, self.dt).copy_(dw.permute(to_nhwc).to(self.dt))
            if operands.get("db") is not None:
                tensor_at(operands["db"], (p.G * p.K,), torch.float32).copy_(dy.sum((0, 2, 3)))
        self.log.append(self.name)


class _Library:
    """Every fusion has a kernel but bias_grad, which has one when bias_grad=True."""

    def __init__(self, bias_grad: bool = True, estimates: dict | None = None) -> None:
        self.runs: list[str] = []
        self.selects: list[tuple] = []
        self.bias_grad = bias_grad
        self.estimates = estimates or {}  # fusion -> the cost model's us (none: no estimates)
        if estimates:
            self.arch = "sm_90a"

    def select(self, problem, variant="forward", datatype="fp16", fusion=None):
        ep = Epilogue.parse(fusion)
        self.selects.append((variant, str(ep)))
        if ep.needs_db and not self.bias_grad:
            raise NoKernel("no bias_grad kernel")
        return _Kernel(self.runs, variant, datatype, ep, self.estimates.get(str(ep)))

    def find(self, variant=None, datatype=None, ndim=None, fusion=None):
        return [] if fusion == "bias_grad" and not self.bias_grad else ["k"]


def _cl(t):
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


def _leaf(t):
    return t.detach().clone().requires_grad_(True)


# ------------------------------------------------------------------------ the gradient
@pytest.mark.parametrize("bias_grad", [True, False])
@pytest.mark.parametrize(
    "fusion", ["bias", "bias_relu", "bias_relu6", "bias_leaky_relu", "bias_relu_residual"]
)
def test_gradients_match_the_unfused_ops(cpu_as_cuda, fusion, bias_grad) -> None:
    lib = _Library(bias_grad)
    torch.manual_seed(0)
    ep = Epilogue.parse(fusion)
    x, w = _cl(torch.randn(2, 8, 9, 9)), _cl(torch.randn(12, 4, 3, 3) * 0.3)
    b = torch.randn(12)
    r = _cl(torch.randn(2, 12, 5, 5)) if ep.residual else None
    kw = dict(stride=2, padding=1, groups=2, beta=0.5, alpha=0.2)
    leaves = [_leaf(t) for t in (x, w, b)] + ([_leaf(r)] if r is not None else [])
    y = ct.conv_fused(*leaves[:3], None, leaves[3] if r is not None else None,
                      fusion=fusion, registry=lib, **kw)  # fmt: skip
    dy = _cl(torch.randn_like(y))
    y.backward(dy)
    refs = [_leaf(t) for t in (x, w, b)] + ([_leaf(r)] if r is not None else [])
    z = F.conv2d(refs[0], refs[1], refs[2], stride=2, padding=1, groups=2)
    if r is not None:
        z = z + 0.5 * refs[3]
    z = fused_op._ACT[str(ep.activation)](z, 0.2)
    z.backward(dy)
    torch.testing.assert_close(y.detach(), z.detach(), rtol=1e-4, atol=1e-4)
    for got, ref, what in zip(leaves, refs, ("x", "w", "b", "residual"), strict=False):
        assert got.grad is not None, what
        torch.testing.assert_close(got.grad, ref.grad, rtol=1e-4, atol=1e-4, msg=what)
    variants = [v for v, _ in lib.selects]
    assert variants == ["forward", "backward_data", "backward_weight"] + (
        [] if bias_grad else ["backward_weight"]
    )
    # the bias gradient comes from the bias_grad kernel when there is one, else a plain dw
    assert ("backward_weight", "bias_grad") in lib.selects
    assert ("fake_backward_weight_bias_grad" in lib.runs) is bias_grad


@pytest.mark.parametrize("fused_us", [10.0, 30.0])
def test_cost_model_decides_between_bias_grad_and_plain_plus_sum(cpu_as_cuda, fused_us) -> None:
    """The bias_grad kernel runs where its estimate is at most the plain kernel's plus dy's bytes
    at the target's bandwidth (here 10 us + about 0 us)."""
    lib = _Library(estimates={"bias_grad": fused_us, "none": 10.0})
    x, w = _cl(torch.randn(2, 8, 9, 9)), _leaf(_cl(torch.randn(12, 8, 3, 3)))
    b = _leaf(torch.randn(12))
    y = ct.conv_fused(x, w, b, fusion="bias_relu", padding=1, registry=lib)
    y.sum().backward()
    ref_b = F.relu(F.conv2d(x, w.detach(), b.detach(), padding=1)).gt(0).float().sum((0, 2, 3))
    torch.testing.assert_close(b.grad, ref_b)
    assert ("backward_weight", "bias_grad") in lib.selects
    assert ("fake_backward_weight_bias_grad" in lib.runs) is (fused_us == 10.0)
    assert ("fake_backward_weight_none" in lib.runs) is (fused_us == 30.0)


@pytest.mark.parametrize("policy", ["always", "never", "sometimes"])
def test_bias_grad_policy(cpu_as_cuda, monkeypatch, policy) -> None:
    monkeypatch.setattr(fused_grad, "BIAS_GRAD_POLICY", policy)
    lib = _Library(estimates={"bias_grad": 30.0, "none": 10.0})  # auto would sum apart
    x, w = _cl(torch.randn(2, 8, 9, 9)), _leaf(_cl(torch.randn(12, 8, 3, 3)))
    b = _leaf(torch.randn(12))
    y = ct.conv_fused(x, w, b, fusion="bias", padding=1, registry=lib)
    if policy == "sometimes":
        with pytest.raises(ct.ConvValueError, match="one of auto, always, never"):
            y.sum().backward()
        return
    y.sum().backward()
    assert ("fake_backward_weight_bias_grad" in lib.runs) is (policy == "always")
    assert (("backward_weight", "bias_grad") in lib.selects) is (policy == "always")


def test_weight_grad_alone_takes_the_plain_kernel(cpu_as_cuda) -> None:
    lib = _Library()
    x, w, b = _cl(torch.randn(1, 4, 6, 6)), _leaf(_cl(torch.randn(8, 4, 3, 3))), torch.randn(8)
    ct.conv_fused(x, w, b, fusion="bias_relu", padding=1, registry=lib).sum().backward()
    assert lib.selects == [("forward", "bias_relu"), ("backward_weight", "none")]
    assert w.grad is not None


def test_second_derivative_and_negative_slope_raise(cpu_as_cuda) -> None:
    lib = _Library()
    x = _leaf(_cl(torch.randn(1, 4, 6, 6)))
    w, b = _cl(torch.randn(8, 4, 3, 3)), torch.randn(8)
    y = ct.conv_fused(x, w, b, fusion="bias_relu", padding=1, registry=lib)
    with pytest.raises(ct.FusedGradientError, match="second derivative"):
        torch.autograd.grad(y.sum(), x, create_graph=True)
    with pytest.raises(ct.FusedGradientError, match="negative slope"):
        ct.conv_fused(x, w, b, fusion="bias_leaky_relu", alpha=-0.1, padding=1, registry=lib)


def test_weight_bias_op_registered() -> None:
    schema = str(torch.ops.ckgen.conv_backward_weight_bias.default._schema)
    assert schema == "ckgen::conv_backward_weight_bias" + fused_grad.SCHEMA
    x, dy = torch.empty(2, 8, 10, 10, device="meta"), torch.empty(2, 16, 5, 5, device="meta")
    args = (x, dy, [16, 4, 3, 3], [2, 2], [1, 1], [1, 1], [1, 1], 2, 0)
    dw, db = torch.ops.ckgen.conv_backward_weight_bias(*args)
    assert dw.shape == (16, 4, 3, 3) and db.shape == (16,) and db.dtype == torch.float32
    res = torch.library.opcheck(fused_grad.conv_backward_weight_bias_op, args)
    assert set(res.values()) == {"SUCCESS"}, res


def test_fused_op_traces_with_its_gradient() -> None:
    """make_fx of a training step on meta tensors: the fused forward, then the backward ops."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(x, w, b):
        y = torch.ops.ckgen.conv_fused(
            x, w, b, None, None, 1.0, 0.01, "bias_relu", [1, 1], [1, 1], [1, 1], [1, 1], 1, 0
        )
        return torch.autograd.grad(y.sum(), (x, w, b))

    x = torch.empty(2, 8, 10, 10, device="meta", requires_grad=True)
    w = torch.empty(16, 8, 3, 3, device="meta", requires_grad=True)
    b = torch.empty(16, device="meta", requires_grad=True)
    g = make_fx(step)(x, w, b)
    called = [str(n.target) for n in g.graph.nodes if n.op == "call_function"]
    assert "ckgen.conv_fused.default" in called
    assert "ckgen.conv_backward_data.default" in called
    assert "ckgen.conv_backward_weight_bias.default" in called


# ------------------------------------------------------------------------ convert(fuse=True)
def _model() -> nn.Module:
    return nn.Sequential(
        OrderedDict(
            conv1=nn.Conv2d(4, 8, 3, padding=1),
            act1=nn.ReLU(),
            conv2=nn.Conv2d(8, 8, 3, padding=1, bias=False),
            bn2=nn.BatchNorm2d(8),
            act2=nn.ReLU(),
            conv3=nn.Conv2d(8, 8, 1),
            act3=nn.SiLU(),
            conv4=nn.Conv2d(8, 8, 3, padding=1, bias=False),
            act4=nn.ReLU6(),
            conv5=nn.Conv2d(8, 6, 1),
        )
    )


@pytest.mark.parametrize("bias_grad", [True, False])
def test_convert_train_fuses_conv_bias_activation(cpu_as_cuda, bias_grad) -> None:
    torch.manual_seed(1)
    ref = _model().train()
    model = _model().train()
    model.load_state_dict(ref.state_dict())
    params = dict(model.named_parameters())
    lib = _Library(bias_grad)
    out = ct.convert(model, lib, fuse=True, verbose=False)
    why = {d.name: d for d in ct.report(out)}
    assert type(out.conv1) is ct.FusedTrainConv and out.conv1.fusion == "bias_relu"
    assert ("db in the backward_weight kernel" in why["conv1"].reason) is bias_grad
    assert type(out.conv2).__name__ == "Conv2d" and "BatchNorm2d follows" in why["conv2"].reason
    # SiLU's gradient needs its input: the bias alone is fused, the SiLU stays after it
    assert type(out.conv3) is ct.FusedTrainConv and out.conv3.fusion == "bias"
    assert "act3 stays apart: silu" in why["conv3"].reason
    assert type(out.conv4) is ct.FusedTrainConv and out.conv4.fusion == "bias_relu6"
    assert out.conv4.bias is None and out.conv4.zero_bias.dtype == torch.float32
    assert type(out.conv5) is ct.FusedTrainConv and out.conv5.fusion == "bias"
    assert type(out.act1) is nn.Identity and type(out.act3) is nn.SiLU
    assert type(out.conv2).__name__ == "Conv2d" and type(out.conv2) is not nn.Conv2d  # plain pass
    # the same Parameter objects: an optimizer made before convert() keeps training them
    assert all(p is params[n] for n, p in out.named_parameters())
    assert "fusion=bias_relu, training" in repr(out.conv1)
    x = _cl(torch.randn(2, 4, 7, 7))
    y, z = out(x), ref(x)
    torch.testing.assert_close(y, z, rtol=1e-4, atol=1e-4)
    dy = torch.randn_like(y)
    y.backward(dy)
    z.backward(dy)
    for (name, p), q in zip(out.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=name)
    out.half()
    assert out.conv4.zero_bias.dtype == torch.float32


def test_convert_eval_model_then_train_raises(cpu_as_cuda) -> None:
    lib = _Library()
    model = ct.convert(
        nn.Sequential(nn.Conv2d(4, 8, 1), nn.BatchNorm2d(8), nn.ReLU()).eval(),
        lib, fuse=True, verbose=False,
    )  # fmt: skip
    x = _leaf(_cl(torch.randn(1, 4, 5, 5)))
    with pytest.raises(ct.FusedGradientError, match="convert\\(model.train\\(\\), fuse=True\\)"):
        model(x)


def test_eager_fast_path_same_gradients(cpu_as_cuda, monkeypatch) -> None:
    """FusedTrainConv on plain tensors takes fused_grad.train_eager (no dispatcher): the same
    forward and gradients as through the op."""
    from ckgen.torch import registration

    torch.manual_seed(2)
    lib = _Library()
    conv = nn.Conv2d(4, 8, 3, padding=1)
    mods = [ct.FusedTrainConv(conv, "relu", registry=lib) for _ in range(2)]
    x = _cl(torch.randn(2, 4, 6, 6))
    grads = []
    for fast in (False, True):
        monkeypatch.setattr(registration, "fast", lambda *a, _f=fast: _f)
        seen = []
        monkeypatch.setattr(fused_grad, "train_eager", _spy(fused_grad.train_eager, seen))
        conv.weight.grad = conv.bias.grad = None
        xs = _leaf(x)
        y = mods[fast](xs)
        y.backward(torch.ones_like(y))
        assert bool(seen) is fast
        grads.append((y.detach(), xs.grad, conv.weight.grad.clone(), conv.bias.grad.clone()))
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def _spy(fn, seen: list):
    def wrapped(*a, **k):
        seen.append(1)
        return fn(*a, **k)

    return wrapped
