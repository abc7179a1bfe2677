"""The fused forward's extra outputs through ckgen.torch on the GPU (skips visibly without one):
a stats fusion's channel sums (ckgen::conv_fused_stats) and an output conversion (to_fp32), each
against PyTorch in fp32 on fresh random inputs with NaN-poisoned memory; the conversion's
gradient against fp32 autograd; the stats op under CUDA-graph capture and torch.compile. The
library (CKGEN_TORCH_LIB, else a build of the default set) needs stats and conversion kernels
(configs/forward/fused.yaml, bench/stats_pairs.yaml, bench/convert_pairs.yaml); the tests skip,
saying so, without them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to PyTorch"),
]

import ckgen.torch as ct  # noqa: E402
from ckgen.torch import fused_op  # noqa: E402

from conftest import poison_cuda_allocator  # noqa: E402

CASES = [
    # N, C, K, HW, filter, stride, pad
    (4, 64, 64, 28, 3, 1, 1),
    (8, 64, 256, 14, 1, 1, 0),
    (2, 128, 64, 15, 3, 2, 1),
]
IDS = [f"n{c[0]}c{c[1]}k{c[2]}_{c[3]}f{c[4]}s{c[5]}" for c in CASES]


def _need(registry, fusion: str, dtype: str = "fp16") -> None:
    if not registry.find(variant="forward", datatype=dtype, ndim=2, fusion=fusion):
        pytest.skip(f"the library has no {dtype} 2D forward {fusion} kernel")


def _inputs(case, dtype):
    n, c, k, hw, f, s, p = case
    x = torch.randn(n, c, hw, hw, device="cuda", dtype=dtype)
    w = torch.randn(k, c, f, f, device="cuda", dtype=dtype) / (c * f * f) ** 0.5
    x = x.contiguous(memory_format=torch.channels_last)
    w = w.contiguous(memory_format=torch.channels_last)
    b = torch.randn(k, device="cuda")
    return x, w, b, dict(stride=s, padding=p)


def _close(a, b, what: str, rel: float) -> None:
    err = (a.double() - b.double()).abs().max().item()
    scale = b.double().abs().max().item() + 1e-3
    assert err <= rel * scale, f"{what}: max err {err} vs scale {scale} (rel {rel})"


@pytest.mark.parametrize("fusion", ["stats", "bias_stats", "bias_relu_stats"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_stats_are_the_sums_of_the_written_output(torch_registry, case, dtype, fusion) -> None:
    dt = "fp16" if dtype == torch.float16 else "bf16"
    _need(torch_registry, fusion, dt)
    x, w, b, kw = _inputs(case, dtype)
    bias = b if fusion.startswith("bias") else None
    poison_cuda_allocator()
    y, st = ct.conv_fused(x, w, bias, fusion=fusion, registry=torch_registry, **kw)
    torch.cuda.synchronize()
    ref = torch.nn.functional.conv2d(x.float(), w.float(), bias, **kw)
    ref = torch.relu(ref) if "relu" in fusion else ref
    _close(y, ref, "y", 2e-2 if dt == "bf16" else 5e-3)
    want = fused_op.stats_of(y)
    assert torch.isfinite(st).all(), "stats left unwritten (NaN poison)"
    _close(st[0], want[0], "channel sums", 1e-4)
    _close(st[1], want[1], "channel sums of squares", 1e-4)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_conversion_writes_fp32_and_trains(torch_registry, case) -> None:
    _need(torch_registry, "to_fp32")
    x, w, _, kw = _inputs(case, torch.float16)
    poison_cuda_allocator()
    y = ct.conv_fused(x, w, fusion="to_fp32", registry=torch_registry, **kw)
    ref = torch.nn.functional.conv2d(x.float(), w.float(), **kw)
    assert y.dtype == torch.float32
    _close(y, ref, "y (fp32)", 2e-3)
    # the gradient: g arrives in fp32, the backward kernels take it in x's dtype
    xg, wg = (t.detach().clone().requires_grad_() for t in (x, w))
    g = torch.randn_like(ref)
    ct.conv_fused(xg, wg, fusion="to_fp32", registry=torch_registry, **kw).backward(g)
    xr, wr = (t.detach().float().requires_grad_() for t in (x, w))
    torch.nn.functional.conv2d(xr, wr, **kw).backward(g)
    assert xg.grad.dtype == torch.float16 and wg.grad.dtype == torch.float16
    _close(xg.grad, xr.grad, "dx", 2e-2)
    _close(wg.grad, wr.grad, "dw", 2e-2)


def test_the_stats_op_captures_and_compiles(torch_registry) -> None:
    _need(torch_registry, "stats")
    x, w, _, kw = _inputs(CASES[0], torch.float16)

    def f(x):
        return ct.conv_fused(x, w, fusion="stats", registry=torch_registry, **kw)

    y0, s0 = f(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        yg, sg = f(x)
    sg.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(yg, y0)
    _close(sg, s0, "stats replayed", 1e-5)
    yc, sc = torch.compile(f, fullgraph=True)(x)
    assert torch.equal(yc, y0)
    _close(sc, s0, "stats compiled", 1e-5)
