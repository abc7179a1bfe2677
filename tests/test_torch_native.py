"""ckgen.torch's native eager path (ckgen/torch/native_conv.cpp) against its Python path and
against PyTorch (GPU only; skips visibly): the same kernels give the same values, errors keep
their types, a second derivative is refused, the prepared launches are cached and cleared.

The registry is conftest's torch_registry (CKGEN_TORCH_LIB, else a small JIT build)."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: native-path tests need it")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="no CUDA GPU visible to PyTorch: skipped"
    ),
]


@pytest.fixture(scope="module")
def registry(torch_registry):
    return torch_registry


@pytest.fixture()
def native():
    from ckgen.torch import native

    if not native.enabled():
        pytest.skip("CKGEN_TORCH_NATIVE=0")
    mod = native.module()
    assert mod is not None, "the native path did not build (see the warning)"
    return native


def _cl(t):
    return t.contiguous(memory_format=torch.channels_last)


def _step(registry, x, w, b, dy, stride, pad, groups):
    import ckgen.torch as ct

    xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
    bs = b.clone().requires_grad_() if b is not None else None
    y = ct.conv(xs, ws, bs, stride, pad, 1, groups, registry=registry)
    y.backward(dy)
    torch.cuda.synchronize()
    return y.detach(), xs.grad, ws.grad, (bs.grad if bs is not None else None)


def _python_path(native):
    class Off:
        def __enter__(self):
            self.saved = (native._mod, native._tried)
            native._mod, native._tried = None, True

        def __exit__(self, *exc):
            native._mod, native._tried = self.saved

    return Off()


def _close(a, b, k_red: int) -> None:
    tol = 2e-2 * max(1.0, (k_red**0.5) / 8)
    err = (a.float() - b.float()).abs().max().item()
    scale = b.float().abs().max().item() + 1e-3
    assert err <= tol * scale, f"max err {err} vs scale {scale} (tol {tol})"


@pytest.mark.parametrize(
    "case",
    [
        (4, 64, 64, 14, 3, 1, 1, 1, True),
        (2, 64, 128, 15, 1, 2, 0, 1, False),
        (2, 64, 64, 12, 3, 2, 1, 2, True),
    ],  # fmt: skip
    ids=["3x3", "1x1s2", "grouped_s2"],
)
def test_native_matches_python_path_and_torch(registry, native, case) -> None:
    n, c, k, hw, f, s, p, g, bias = case
    gen = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    x = _cl(torch.randn(n, c, hw, hw, device="cuda", generator=gen).half())
    w = _cl((torch.randn(k, c // g, f, f, device="cuda", generator=gen) * 0.1).half())
    b = torch.randn(k, device="cuda", generator=gen).half() if bias else None
    out = torch.nn.functional.conv2d(x.float(), w.float(), None, s, p, 1, g)
    dy = _cl(torch.randn(out.shape, device="cuda", generator=gen).half())
    before = native._mod.cache_size()
    got = _step(registry, x, w, b, dy, s, p, g)
    assert native._mod.cache_size() >= before + 3 or before >= 3  # forward + both gradients
    with _python_path(native):
        ref = _step(registry, x, w, b, dy, s, p, g)
    for a, r in zip(got, ref, strict=True):
        if r is not None:
            _close(a, r, c * f * f)
    xr, wr = x.float().requires_grad_(), w.float().requires_grad_()
    br = b.float().requires_grad_() if b is not None else None
    torch.nn.functional.conv2d(xr, wr, br, s, p, 1, g).backward(dy.float())
    _close(got[0], torch.nn.functional.conv2d(x.float(), w.float(), br, s, p, 1, g), c * f * f)
    _close(got[1], xr.grad, k * f * f)
    _close(got[2], wr.grad, n * out.shape[2] * out.shape[3])
    if b is not None:
        _close(got[3], br.grad, n * out.shape[2] * out.shape[3])


def test_native_errors_keep_their_types(registry, native) -> None:
    import ckgen.torch as ct

    x = torch.randn(2, 64, 8, 8, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.float16)
    with pytest.raises(ct.ConvTypeError, match="float64"):
        ct.conv(x.double(), w.double(), registry=registry)
    with pytest.raises(ct.ConvValueError, match="channels"):
        ct.conv(x[:, :32], w, registry=registry)
    y = ct.conv(x, w, None, 1, 1, registry=registry)  # NCHW input: copied, same result
    y_cl = ct.conv(_cl(x), _cl(w), None, 1, 1, registry=registry)
    torch.cuda.synchronize()
    assert torch.equal(y, y_cl) and y.is_contiguous(memory_format=torch.channels_last)


def test_native_refuses_a_second_derivative(registry, native) -> None:
    import ckgen.torch as ct

    x = _cl(torch.randn(2, 32, 8, 8, device="cuda", dtype=torch.float16)).requires_grad_()
    w = _cl(torch.randn(32, 32, 3, 3, device="cuda", dtype=torch.float16) * 0.1).requires_grad_()
    y = ct.conv(x, w, None, 1, 1, registry=registry)
    (gx,) = torch.autograd.grad(y.float().square().sum(), x, create_graph=True)
    assert gx.shape == x.shape and gx.requires_grad
    with pytest.raises(RuntimeError, match="no second derivative"):
        gx.float().sum().backward()


def test_native_cache_clears(registry, native) -> None:
    import ckgen.torch as ct

    x = _cl(torch.randn(1, 64, 9, 9, device="cuda", dtype=torch.float16))
    w = _cl(torch.randn(64, 64, 1, 1, device="cuda", dtype=torch.float16))
    ct.conv(x, w, registry=registry)
    assert native._mod.cache_size() > 0
    ct.clear_cache()
    assert native._mod.cache_size() == 0
    ct.conv(x, w, registry=registry)
    assert native._mod.cache_size() == 1


def test_registered_ops_run_in_cpp(registry, native) -> None:
    """Once the native module is loaded, the registered ops' CUDA calls (what compiled graphs
    make) run its C++ kernels: no Python but the autotune flag's lookup; values and gradients
    as the eager path's, a second derivative refused."""
    import sys

    import ckgen.torch as ct
    from ckgen.torch import ops

    for key in ("CUDA", "AutogradCUDA"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key("ckgen::conv_forward", key)
    gen = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    x = _cl(torch.randn(2, 64, 12, 12, device="cuda", generator=gen).half())
    w = _cl((torch.randn(64, 64, 3, 3, device="cuda", generator=gen) * 0.1).half())
    conf = ([1, 1], [1, 1], [1, 1], [1, 1], 1, ops.library_id(registry))
    fwd = torch.ops.ckgen.conv_forward
    fwd(x, w, None, *conf)  # prepares the launch
    calls: list[str] = []
    pkg = os.path.dirname(ct.__file__)

    def watch(frame, event, arg):  # Python functions of ckgen.torch that run
        if event == "call" and frame.f_code.co_filename.startswith(pkg):
            calls.append(frame.f_code.co_name)

    sys.setprofile(watch)
    try:
        y = fwd(x, w, None, *conf)
    finally:
        sys.setprofile(None)
    assert set(calls) <= {"autotune_enabled"}, calls
    _close(y, ct.conv(x, w, None, 1, 1, registry=registry), 64 * 9)
    xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
    dy = _cl(torch.randn(y.shape, device="cuda", generator=gen).half())
    y2 = fwd(xs, ws, None, *conf)
    y2.backward(dy)
    ref = _step(registry, x, w, None, dy, 1, 1, 1)
    _close(xs.grad, ref[1], 64 * 9)
    _close(ws.grad, ref[2], 2 * 144)
    xs.grad = None
    (gx,) = torch.autograd.grad(fwd(xs, ws, None, *conf).float().sum(), xs, create_graph=True)
    with pytest.raises(RuntimeError, match="no derivative|no second derivative|autograd formula"):
        gx.float().sum().backward()
