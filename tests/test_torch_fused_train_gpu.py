"""Training through ckgen::conv_fused on the GPU (skips visibly without one): forward and every
gradient against PyTorch's fp32 autograd on fresh random inputs, with the allocator's memory
poisoned (NaN) before each call, the bias_grad kernel checked to be the one that ran; a CUDA
graph of a training step; torch.compile(fullgraph=True) of one.

The registry is conftest's torch_registry (CKGEN_TORCH_LIB); the tests need the fused forward
and bias_grad backward_weight kernels (configs/forward/fused.yaml,
configs/backward_weight/fused.yaml) and skip, saying so, when the library has none."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to PyTorch"),
]

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import ckgen.torch as ct  # noqa: E402
from ckgen.torch import fused_grad, fused_op  # noqa: E402

from conftest import poison_cuda_allocator  # noqa: E402

CASES = [
    # N, C, K, HW, filter, stride, pad
    (4, 64, 64, 28, 3, 1, 1),
    (8, 64, 256, 14, 1, 1, 0),
    (2, 128, 64, 15, 3, 2, 1),
    (32, 64, 128, 28, 3, 1, 1),
]
DT = {"fp16": torch.float16, "bf16": torch.bfloat16}


@pytest.fixture
def always_bias_grad(monkeypatch):
    """The bias_grad kernel wherever one runs the problem (not where the cost model would put
    the plain kernel and a sum), so that its result is what the test checks."""
    monkeypatch.setattr(fused_grad, "BIAS_GRAD_POLICY", "always")
    ct.clear_cache()
    yield
    ct.clear_cache()


@pytest.fixture(scope="module")
def registry(torch_registry):
    for variant, fusion in (("forward", "bias_relu"), ("backward_weight", "bias_grad")):
        if not torch_registry.find(variant=variant, datatype="fp16", ndim=2, fusion=fusion):
            pytest.skip(f"the library has no fp16 2D {fusion} {variant} kernel")
    return torch_registry


def _close(a, b, k_red: int, what: str) -> None:
    tol = 2e-2 * max(1.0, (k_red**0.5) / 8)
    err = (a.float() - b.float()).abs().max().item()
    scale = b.float().abs().max().item() + 1e-3
    assert err <= tol * scale, f"{what}: max err {err} vs scale {scale} (tol {tol})"


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("fusion", ["bias", "bias_relu", "bias_relu6"])
@pytest.mark.parametrize(
    "case", CASES, ids=[f"n{c[0]}c{c[1]}k{c[2]}_{c[3]}f{c[4]}s{c[5]}" for c in CASES]
)
def test_gradients_match_fp32_autograd(registry, always_bias_grad, case, fusion, dtype) -> None:
    n, c, k, hw, f, s, p = case
    if not registry.find(variant="forward", datatype=dtype, ndim=2, fusion=fusion):
        pytest.skip(f"the library has no {dtype} 2D {fusion} kernel")
    dt = DT[dtype]
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    x = torch.randn(n, c, hw, hw, device="cuda", generator=g).to(dt)
    w = (torch.randn(k, c, f, f, device="cuda", generator=g) * 0.1).to(dt)
    b = torch.randn(k, device="cuda", generator=g)
    cl = torch.channels_last
    xs = x.contiguous(memory_format=cl).requires_grad_()
    ws = w.contiguous(memory_format=cl).requires_grad_()
    bs = b.clone().requires_grad_()
    ct.clear_cache()
    poison_cuda_allocator()
    y = ct.conv_fused(xs, ws, bs, fusion=fusion, stride=s, padding=p, registry=registry)
    dy = torch.randn(y.shape, device="cuda", generator=g).to(dt)
    poison_cuda_allocator()
    y.backward(dy)
    act = fused_op._ACT[fusion.removeprefix("bias").lstrip("_") or "none"]
    xr, wr, br = (t.detach().float().requires_grad_() for t in (x, w, b))
    zr = F.conv2d(xr, wr, br, s, p)
    yr = act(zr, 0.01)
    # the mask of PyTorch's unfused ops in dt: the activation's input rounded to dt (relu6 drops
    # the gradient of an input that rounds to 6, as the kernel's output does)
    zq = zr.detach().to(dt).float()
    mask = {"bias": torch.ones_like(zq), "bias_relu": zq > 0, "bias_relu6": (zq > 0) & (zq < 6)}
    zr.backward(dy.float() * mask[fusion])
    out_px = n * y.shape[2] * y.shape[3]
    _close(y, yr, c * f * f, "y")
    _close(xs.grad, xr.grad, k * f * f, "dx")
    _close(ws.grad, wr.grad, out_px, "dw")
    _close(bs.grad, br.grad, out_px, "db")
    ran = [v.selection.name for key, v in ct.cache_info().items() if key[0] == "bias_grad"]
    assert ran and ran[0].endswith("_bgrad"), f"no bias_grad kernel ran: {ran}"


def _net() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU6(),
        nn.Conv2d(128, 64, 1),
    )  # fmt: skip


def _step(m: nn.Module, x) -> None:
    m(x).float().square().sum().backward()


def test_cuda_graph_and_compile_of_a_training_step(registry) -> None:
    torch.manual_seed(0)
    cl = torch.channels_last
    ref = _net().cuda().half().to(memory_format=cl).train()
    fused = ct.convert(_net().cuda().half().to(memory_format=cl).train(), registry, fuse=True)
    fused.load_state_dict(ref.state_dict())
    assert sum(isinstance(m, ct.FusedTrainConv) for m in fused.modules()) == 3
    x = torch.randn(8, 64, 20, 20, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    _step(ref, x)
    want = [p.grad.clone() for p in ref.parameters()]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fused.zero_grad(set_to_none=True)
            _step(fused, x)
    torch.cuda.current_stream().wait_stream(s)
    fused.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _step(fused, x)
    for p in fused.parameters():
        p.grad.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    for got, exp in zip((p.grad for p in fused.parameters()), want, strict=True):
        _close(got, exp, 8 * 20 * 20 * 8, "graph grad")
    compiled = torch.compile(fused, fullgraph=True)
    fused.zero_grad(set_to_none=True)
    _step(compiled, x)
    for got, exp in zip((p.grad for p in fused.parameters()), want, strict=True):
        _close(got, exp, 8 * 20 * 20 * 8, "compiled grad")
