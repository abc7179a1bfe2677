"""ckgen.torch custom ops against PyTorch's own convolution and autograd (GPU only; skips visibly).

The registry comes from CKGEN_TORCH_LIB (a built libckgen_dispatch.so or build directory, as
bench/device_dispatch.sh sets it), else a small JIT build (conftest's torch_registry). Also runs
without pytest (`python3 tests/test_torch_op.py`, for machines that have torch but no pytest)."""

from __future__ import annotations

import os
import re
import sys

try:
    import pytest
except ImportError:  # standalone run (see __main__ below)
    pytest = None


def _raises(exc: type, fn, match: str = "") -> Exception:
    try:
        fn()
    except exc as ex:  # noqa: PERF203
        assert not match or re.search(match, str(ex)), f"{ex!r} does not match {match!r}"
        return ex
    raise AssertionError(f"{exc.__name__} not raised")


CASES = [
    # N, G, C, K, HW, filter, stride, pad, dilation
    (2, 1, 64, 64, 28, 3, 1, 1, 1),
    (2, 1, 64, 128, 17, 1, 1, 0, 1),
    (1, 1, 32, 64, 20, 3, 2, 1, 1),
    (2, 2, 16, 32, 14, 3, 1, 2, 2),
]


def _close(a, b, k_red: int) -> None:
    tol = 2e-2 * max(1.0, (k_red**0.5) / 8)
    err = (a.float() - b.float()).abs().max().item()
    scale = b.float().abs().max().item() + 1e-3
    assert err <= tol * scale, f"max err {err} vs scale {scale} (tol {tol})"


def check_ops_match_torch(registry, case) -> None:
    import torch

    import ckgen.torch as ct

    n, g, c, k, hw, f, s, p, d = case
    torch.manual_seed(0)
    dev = "cuda"
    x = torch.randn(n, g * c, hw, hw, device=dev, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last
    )
    w = torch.randn(g * k, c, f, f, device=dev, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last
    )
    y_ref = torch.nn.functional.conv2d(
        x.float(), w.float(), stride=s, padding=p, dilation=d, groups=g
    )
    y = ct.conv_forward(x, w, s, p, d, g, registry=registry)
    torch.cuda.synchronize()
    assert y.shape == y_ref.shape and y.is_contiguous(memory_format=torch.channels_last)
    _close(y, y_ref, c * f * f)

    dy = torch.randn_like(y_ref).half().contiguous(memory_format=torch.channels_last)
    xr = x.float().requires_grad_(True)
    wr = w.float().requires_grad_(True)
    torch.nn.functional.conv2d(xr, wr, stride=s, padding=p, dilation=d, groups=g).backward(
        dy.float()
    )
    dx = ct.conv_backward_data(dy, w, x.shape, s, p, d, g, registry=registry)
    dw = ct.conv_backward_weight(x, dy, w.shape, s, p, d, g, registry=registry)
    torch.cuda.synchronize()
    _close(dx, xr.grad, k * f * f)
    _close(dw, wr.grad, n * y.shape[2] * y.shape[3])


def check_autograd_function_and_module(registry) -> None:
    import torch

    import ckgen.torch as ct

    torch.manual_seed(1)
    x = torch.randn(2, 64, 20, 20, device="cuda", dtype=torch.float16).contiguous(
        memory_format=torch.channels_last
    )
    x.requires_grad_(True)
    m = (
        ct.Conv2d(64, 64, 3, padding=1, bias=True, registry=registry)
        .cuda()
        .half()
        .to(memory_format=torch.channels_last)
    )
    ref = torch.nn.Conv2d(64, 64, 3, padding=1, bias=True).cuda().float()
    with torch.no_grad():
        ref.weight.copy_(m.weight.float())
        ref.bias.copy_(m.bias.float())
    y = m(x)
    y.float().square().mean().backward()
    xr = x.detach().float().requires_grad_(True)
    ref(xr).square().mean().backward()
    _close(y, ref(xr.detach()), 64 * 9)
    _close(x.grad, xr.grad, 64 * 9)
    _close(m.weight.grad, ref.weight.grad, 2 * 400)
    _close(m.bias.grad, ref.bias.grad, 2 * 400)


def check_unsupported_problem_raises_reason(registry) -> None:
    import torch

    import ckgen.torch as ct
    from ckgen.runtime.library import NoKernel

    x = torch.randn(1, 8, 8, 8, device="cuda", dtype=torch.float64)
    w = torch.randn(8, 8, 3, 3, device="cuda", dtype=torch.float64)
    _raises(Exception, lambda: ct.conv_forward(x, w, registry=registry), "float64")
    # a kernel asked to run a problem it refuses raises with its is_supported reason
    from ckgen.model.problem import Problem
    from ckgen.runtime.library import UnsupportedProblem

    # C = 3: the GEMM instances with 16-byte vectors refuse it (vector width), the direct ones
    # (group
    # size); whichever refuses it raises its own is_supported reason
    p = Problem.make(N=1, C=3, K=64, input=(8, 8), filter=(3, 3), pad=1)
    refusing = [
        (k, k.is_supported(p))
        for k in registry.kernels
        if k.variant == "forward" and k.datatype == "fp16"
    ]
    refusing = [(k, r) for k, r in refusing if r]
    if not refusing:
        return
    assert any("vector width" in r for _, r in refusing), [r for _, r in refusing][:5]
    xx = torch.randn(1, 8, 8, 3, device="cuda", dtype=torch.float16)
    for k, reason in refusing[:3]:
        ex = _raises(UnsupportedProblem, lambda k=k: k.run(p, xx, xx, xx))
        assert reason in str(ex), (k.name, reason, str(ex))
    assert isinstance(NoKernel("x"), Exception)


def _cl(t):
    return t.contiguous(memory_format=torch_mod().channels_last)


def torch_mod():
    import torch

    return torch


def check_autograd_dtype(registry, dtype_name: str) -> None:
    """forward + both gradients through autograd against F.conv2d in fp32, fresh inputs."""
    import torch

    import ckgen.torch as ct

    dt = getattr(torch, dtype_name)
    if not registry.find(variant="forward", datatype={"float16": "fp16"}.get(dtype_name, "bf16")):
        print(f"SKIPPED: the library has no {dtype_name} kernels")
        return
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    for n, gc, k, hw, f, s, p, groups in [
        (4, 64, 64, 14, 3, 1, 1, 1),
        (2, 64, 128, 15, 1, 2, 0, 1),
        (2, 64, 64, 12, 3, 2, 1, 2),
    ]:
        x = torch.randn(n, gc, hw, hw, device="cuda", generator=g).to(dt)
        w = (torch.randn(k, gc // groups, f, f, device="cuda", generator=g) * 0.1).to(dt)
        b = torch.randn(k, device="cuda", generator=g).to(dt)
        xs, ws, bs = (_cl(x).requires_grad_(), _cl(w).requires_grad_(), b.clone().requires_grad_())
        y = ct.conv(xs, ws, bs, s, p, 1, groups, registry=registry)
        dy = torch.randn(y.shape, device="cuda", generator=g).to(dt)
        y.backward(dy)
        xr, wr, br = (t.detach().float().requires_grad_() for t in (x, w, b))
        yr = torch.nn.functional.conv2d(xr, wr, br, s, p, 1, groups)
        yr.backward(dy.float())
        red = gc // groups * f * f
        _close(y, yr, red)
        _close(xs.grad, xr.grad, k * f * f)
        _close(ws.grad, wr.grad, n * y.shape[2] * y.shape[3])
        _close(bs.grad, br.grad, n * y.shape[2] * y.shape[3])
        assert xs.grad.dtype == dt and ws.grad.dtype == dt


def check_layouts_and_misuse(registry) -> None:
    """NCHW and sliced inputs are copied to channels-last (same result); misuse raises."""
    import torch

    import ckgen.torch as ct

    x = torch.randn(2, 64, 16, 16, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.float16) * 0.1
    y_cl = ct.conv(_cl(x), _cl(w), None, 1, 1, registry=registry)
    y_nchw = ct.conv(x, w, None, 1, 1, registry=registry)  # contiguous NCHW
    big = torch.randn(2, 64, 16, 20, device="cuda", dtype=torch.float16)
    big[..., 2:18] = x
    y_view = ct.conv(big[..., 2:18], w, None, 1, 1, registry=registry)  # a strided view
    torch.cuda.synchronize()
    assert torch.equal(y_cl, y_nchw) and torch.equal(y_cl, y_view)
    assert y_nchw.is_contiguous(memory_format=torch.channels_last)
    _raises(ct.ConvDeviceError, lambda: ct.conv(x, w.cpu(), registry=registry), "weight is on cpu")
    _raises(
        ct.ConvTypeError,
        lambda: ct.conv(x, w.float(), registry=registry),
        "weight has dtype torch.float32",
    )
    _raises(ct.ConvTypeError, lambda: ct.conv(x.double(), w.double(), registry=registry), "float64")
    _raises(ct.ConvValueError, lambda: ct.conv(x[:, :32], w, registry=registry), "channels")
    y0 = ct.conv(x[:0], w, None, 1, 1, registry=registry)
    assert y0.shape == (0, 64, 16, 16)


def check_cuda_graph(registry) -> None:
    import torch

    import ckgen.torch as ct

    m = torch.nn.Sequential(
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 1)
    )
    ct.convert(m, registry, verbose=False)
    m = m.cuda().half().to(memory_format=torch.channels_last)
    x = _cl(torch.randn(4, 64, 14, 14, device="cuda", dtype=torch.float16)).requires_grad_()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up: selections made outside the capture
        for _ in range(2):
            m(x).float().sum().backward()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    m.zero_grad(set_to_none=True)
    x.grad = None
    with torch.cuda.graph(graph):
        y = m(x)
        y.float().sum().backward()
    with torch.no_grad():  # a new input in the captured buffer
        x.copy_(torch.randn_like(x))
    before = y.clone()
    graph.replay()
    torch.cuda.synchronize()
    ref = m(x.detach())
    torch.cuda.synchronize()
    assert not torch.equal(before, y)  # the replay read the new input
    _close(y, ref, 64 * 9)


def check_compile(registry) -> None:
    import torch

    import ckgen.torch as ct

    torch._dynamo.reset()
    m = (
        torch.nn.Sequential(
            torch.nn.Conv2d(32, 64, 3, padding=1),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.Conv2d(64, 64, 3, stride=2, padding=1, groups=2),
        )
        .cuda()
        .to(memory_format=torch.channels_last)
    )
    ref = __import__("copy").deepcopy(m)
    ct.convert(m, registry, dtype=torch.float16, verbose=False)
    x = _cl(torch.randn(8, 32, 16, 16, device="cuda"))
    with torch.autocast("cuda", dtype=torch.float16):
        ex = torch._dynamo.explain(m)(x)
        assert ex.graph_break_count == 0, ex.break_reasons
        torch._dynamo.reset()
        cm = torch.compile(m, fullgraph=True)
        y = cm(x)
        y.float().sum().backward()
        yr = ref(x)
    torch.cuda.synchronize()
    _close(y, yr, 64 * 9)
    assert m[0].weight.grad is not None


def check_two_gpus(registry) -> None:
    import torch

    import ckgen.torch as ct

    outs = []
    for d in (0, 1):
        x = torch.randn(2, 64, 12, 12, device=f"cuda:{d}", dtype=torch.float16)
        w = torch.randn(64, 64, 3, 3, device=f"cuda:{d}", dtype=torch.float16) * 0.1
        with torch.cuda.device(1 - d):  # the current device is the other one: the op follows x
            y = ct.conv(_cl(x), _cl(w), None, 1, 1, registry=registry)
        torch.cuda.synchronize(d)
        _close(y, torch.nn.functional.conv2d(x.float(), w.float(), padding=1), 64 * 9)
        outs.append(y)
    _raises(
        ct.ConvDeviceError,
        lambda: ct.conv(outs[0], outs[1][:, :, :3, :3].contiguous(), registry=registry),
        "cuda:1 but x is on cuda:0",
    )


IDS = [f"n{c[0]}g{c[1]}c{c[2]}k{c[3]}_{c[4]}_f{c[5]}s{c[6]}p{c[7]}d{c[8]}" for c in CASES]

if pytest is not None and __name__ != "__main__":
    torch = pytest.importorskip(
        "torch", reason="PyTorch is not installed: the torch custom-op tests need it"
    )
    pytestmark = [
        pytest.mark.gpu,
        pytest.mark.skipif(
            not torch.cuda.is_available(),
            reason="no CUDA GPU visible to PyTorch: custom-op tests skipped",
        ),
    ]

    @pytest.fixture(scope="module")
    def registry(torch_registry):
        return torch_registry

    @pytest.mark.parametrize("case", CASES, ids=IDS)
    def test_ops_match_torch(registry, case) -> None:
        check_ops_match_torch(registry, case)

    def test_autograd_function_and_module(registry) -> None:
        check_autograd_function_and_module(registry)

    def test_unsupported_problem_raises_reason(registry) -> None:
        check_unsupported_problem_raises_reason(registry)

    @pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
    def test_autograd_matches_torch(registry, dtype) -> None:
        check_autograd_dtype(registry, dtype)

    def test_layouts_and_misuse(registry) -> None:
        check_layouts_and_misuse(registry)

    def test_cuda_graph_capture(registry) -> None:
        check_cuda_graph(registry)

    def test_torch_compile(registry) -> None:
        check_compile(registry)

    @pytest.mark.skipif(
        torch.cuda.device_count() < 2, reason="fewer than 2 GPUs: multi-GPU test skipped"
    )
    def test_two_gpus(registry) -> None:
        check_two_gpus(registry)


def _standalone() -> int:
    try:
        import torch
    except ImportError:
        print("SKIPPED: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA GPU visible to PyTorch")
        return 0
    from ckgen import Registry

    reg = Registry.load(os.environ["CKGEN_TORCH_LIB"])
    checks = [
        (f"ops[{i}]", lambda c=c: check_ops_match_torch(reg, c))
        for i, c in zip(IDS, CASES, strict=False)
    ]
    checks += [
        ("autograd", lambda: check_autograd_function_and_module(reg)),
        ("autograd_fp16", lambda: check_autograd_dtype(reg, "float16")),
        ("autograd_bf16", lambda: check_autograd_dtype(reg, "bfloat16")),
        ("layouts_misuse", lambda: check_layouts_and_misuse(reg)),
        ("cuda_graph", lambda: check_cuda_graph(reg)),
        ("compile", lambda: check_compile(reg)),
        ("unsupported", lambda: check_unsupported_problem_raises_reason(reg)),
    ]
    failed = 0
    for name, fn in checks:
        try:
            fn()
            print(f"PASSED {name}")
        except Exception as ex:  # noqa: BLE001
            failed += 1
            print(f"FAILED {name}: {type(ex).__name__}: {ex}")
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_standalone())
