"""ckgen.torch custom ops against PyTorch's own convolution and autograd (GPU only; skips visibly).

The registry comes from CKGEN_TORCH_LIB (a built libckgen_dispatch.so or build directory, as
bench/device_dispatch.sh sets it), else a small JIT build (fp16 2D, cached). Also runs without
pytest (`python3 tests/test_torch_op.py`, for machines that have torch but no pytest)."""

from __future__ import annotations

import os
import re
import shutil
import sys

try:
    import pytest
except ImportError:  # standalone run (see __main__ below)
    pytest = None

KERNELS = ["grouped_conv_*_fp16_2d_*"]


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
    _raises(Exception, lambda: ct.conv_forward(x, w, registry=registry), "unsupported dtype")
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
    def registry():
        from ckgen import Registry

        lib = os.environ.get("CKGEN_TORCH_LIB")
        if lib:
            return Registry.load(lib)
        if not all(shutil.which(t) for t in ("cmake", "ninja", "nvcc")):
            pytest.skip("no CKGEN_TORCH_LIB and no cmake/ninja/nvcc to build one")
        return Registry.build(
            "default", arch="sm_90a", kernels=KERNELS, max_workers=os.cpu_count() or 4
        )

    @pytest.mark.parametrize("case", CASES, ids=IDS)
    def test_ops_match_torch(registry, case) -> None:
        check_ops_match_torch(registry, case)

    def test_autograd_function_and_module(registry) -> None:
        check_autograd_function_and_module(registry)

    def test_unsupported_problem_raises_reason(registry) -> None:
        check_unsupported_problem_raises_reason(registry)


def _standalone() -> int:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
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
