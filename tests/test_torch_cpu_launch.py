"""ckgen.torch without a GPU, its launch path: the autotune plumbing into select(), the default
registry per device, the problem it builds, and the prepared-launch cache (hits, misses, kept
errors, the fast path only when nothing traces), with CPU tensors standing in for CUDA ones. Skips
when PyTorch is not installed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: ckgen.torch tests skipped")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import ckgen.torch as ct  # noqa: E402
from ckgen.torch import ops, registration  # noqa: E402

H = torch.float16


def meta(*shape, dtype=H, grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype, requires_grad=grad)


def cl_strides(shape):
    return ops.channels_last_strides(shape)


# ------------------------------------------------------------------------ autotune / cache
class _Sel:
    k_batch = 2
    name = "fake_kernel"
    kernel = None

    def workspace_bytes(self, p):
        return 0


class _RegAutotune:
    def __init__(self):
        self.calls = []

    def select(self, problem, variant="forward", datatype="fp16", autotune=False):
        self.calls.append((variant, datatype, autotune))
        return _Sel()


class _RegOld:
    def __init__(self):
        self.calls = []

    def select(self, problem, variant="forward", datatype="fp16", cost_model_only=False):
        self.calls.append((variant, datatype))
        return _Sel()


def _prep(reg, autotune):
    info = ops.check_forward(
        meta(2, 8, 10, 10), meta(16, 8, 3, 3), None, (1, 1), (1, 1), (1, 1), (1, 1), 1
    )
    lid = ops.library_id(reg)
    key = ("test", lid, autotune)
    dev = torch.device("cuda", 0)
    shape = (2, 8, 10, 10)
    return ops._prepare(
        key, "forward", info, shape, (16, 8, 3, 3), info["out_shape"], dev, lid, autotune
    )


def test_autotune_passed_only_where_select_accepts_it() -> None:
    new, old = _RegAutotune(), _RegOld()
    try:
        pr = _prep(new, True)
        assert new.calls == [("forward", "fp16", True)] and pr.k_batch == 2 and pr.fn is None
        _prep(new, False)
        assert new.calls[-1] == ("forward", "fp16", False) or len(new.calls) == 2
        _prep(old, True)  # a library without autotune: select() called without the keyword
        assert old.calls == [("forward", "fp16")]
        assert ("test", ops.library_id(new), True) in ct.cache_info()
        assert pr.problem.C == 8 and pr.problem.K == 16 and pr.out_shape == (2, 16, 10, 10)
    finally:
        ct.clear_cache()
    assert not ct.cache_info()


def test_benchmark_flag_and_env(monkeypatch) -> None:
    monkeypatch.setattr(ct, "benchmark", True)
    assert ct.autotune_enabled()
    monkeypatch.setattr(ct, "benchmark", False)
    assert ct.autotune_enabled() is bool(ops._ENV_AUTOTUNE)
    env = {**os.environ, "CKGEN_AUTOTUNE": "1"}
    code = "import ckgen.torch as ct; print(ct.benchmark, ct.autotune_enabled())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "True"]


def test_default_registry_per_device(monkeypatch) -> None:
    a, b = object(), object()
    monkeypatch.setattr(ops, "_defaults", {})
    ct.set_default_registry(a)
    ct.set_default_registry(b, device="cuda:1")
    assert ct.default_registry(0) is a and ct.default_registry(1) is b
    assert ct.default_registry(torch.device("cuda", 1)) is b
    with pytest.raises(ct.ConvDeviceError, match="expected a CUDA device"):
        ct.set_default_registry(a, device="cpu")
    monkeypatch.setattr(ops, "_defaults", {})
    monkeypatch.delenv("CKGEN_TORCH_LIB", raising=False)
    with pytest.raises(Exception, match="no ckgen registry"):
        ct.default_registry()


def test_default_registry_applies_the_shipped_database(monkeypatch, tmp_path) -> None:
    # CKGEN_TORCH_LIB's library selects with the database shipped for this GPU, unless
    # CKGEN_TUNING_DB names one (the dispatcher reads that on its first select)
    from ckgen.runtime.library import KernelLibrary

    calls: list[bool] = []

    class Lib:
        def load_shipped_tuning_db(self, force=None, quiet=False):
            calls.append(quiet)

    monkeypatch.setattr(KernelLibrary, "load", classmethod(lambda cls, path: Lib()))
    monkeypatch.setenv("CKGEN_TORCH_LIB", str(tmp_path))
    monkeypatch.delenv("CKGEN_TUNING_DB", raising=False)
    monkeypatch.setattr(ops, "_defaults", {})
    assert isinstance(ct.default_registry(), Lib) and calls == [True]
    ct.default_registry()  # loaded once
    assert calls == [True]
    monkeypatch.setattr(ops, "_defaults", {})
    monkeypatch.setenv("CKGEN_TUNING_DB", str(tmp_path / "mine.json"))
    ct.default_registry()
    assert calls == [True]
    monkeypatch.setattr(ops, "_defaults", {})


def test_make_problem() -> None:
    p = ct.make_problem((2, 64, 28, 28), (128, 32, 3, 3), stride=2, padding=1, groups=2)
    assert (p.G, p.N, p.C, p.K, p.ndim) == (2, 2, 32, 64, 2)
    assert p.input == (1, 28, 28) and p.stride == (1, 2, 2) and p.output == (1, 14, 14)
    with pytest.raises(ct.ConvValueError, match="channels"):
        ct.make_problem((2, 64, 8, 8), (8, 8, 3, 3))


# ------------------------------------------------------------------------ prepared-launch cache
class _RunSel:
    k_batch = 0
    name = "fake_kernel"
    kernel = None  # no C entry point: launches go through run()

    def __init__(self, runs):
        self.runs = runs

    def workspace_bytes(self, p):
        return 0

    def run(self, problem, pa, pb, pc, pws, stream):
        self.runs.append((problem, pa, pb, pc))


class _RunReg:
    """A library whose launches are recorded (CPU tensors stand in for CUDA ones)."""

    def __init__(self):
        self.selects, self.runs = [], []

    def select(self, problem, variant="forward", datatype="fp16"):
        self.selects.append((variant, datatype))
        return _RunSel(self.runs)


@pytest.fixture
def cpu_as_cuda(cpu_as_cuda, monkeypatch):
    """conftest's cpu_as_cuda, yielding the names of the argument checks as they run."""
    checked = []
    for name in ("check_forward", "check_backward_data", "check_backward_weight"):
        real = getattr(ops, name)

        def counted(*a, _real=real, _name=name):
            checked.append(_name)
            return _real(*a)

        monkeypatch.setattr(ops, name, counted)
    ct.clear_cache()
    yield checked
    ct.clear_cache()


def _cl(*shape, dtype=H):
    t = torch.randn(*shape).to(dtype)
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


def test_cache_hit_skips_checks_and_selection(cpu_as_cuda) -> None:
    reg = _RunReg()
    conf = ((1, 1), (1, 1), (1, 1), (1, 1), 1, ops.library_id(reg))
    x, w = _cl(2, 8, 10, 10), _cl(16, 8, 3, 3)
    y = ops.forward(x, w, None, conf)
    assert y.shape == (2, 16, 10, 10) and y.stride() == cl_strides(y.shape)
    assert cpu_as_cuda == ["check_forward"] and reg.selects == [("forward", "fp16")]
    x2 = _cl(2, 8, 10, 10)  # other data, same signature
    y2 = ops.forward(x2, w, None, conf)
    assert cpu_as_cuda == ["check_forward"] and len(reg.selects) == 1  # no check, no select
    assert reg.runs[-1][1:] == (x2.data_ptr(), w.data_ptr(), y2.data_ptr())
    assert reg.runs[0][0] is reg.runs[1][0]  # the problem (and its C struct) built once
    # the registered op's implementation (parameters as lists) shares the entry
    ops.forward_impl(x2, w, None, [1, 1], [1, 1], [1, 1], [1, 1], 1, conf[5])
    assert len(reg.selects) == 1 and len(ct.cache_info()) == 1
    # a layout the kernels do not read: the same entry, a channels-last copy per call
    xn = x2.contiguous()
    ops.forward(xn, w, None, conf)
    assert len(reg.selects) == 1 and reg.runs[-1][1] != xn.data_ptr()


@pytest.mark.parametrize(
    "change",
    ["stride", "padding", "dilation", "dtype", "shape", "bias", "library", "autotune"],
)
def test_cache_misses_on_another_signature(cpu_as_cuda, monkeypatch, change) -> None:
    reg, reg2 = _RunReg(), _RunReg()
    lid = ops.library_id(reg)
    conf = ((1, 1), (1, 1), (1, 1), (1, 1), 1, lid)
    x, w = _cl(2, 8, 10, 10), _cl(16, 8, 3, 3)
    ops.forward(x, w, None, conf)
    b = None
    if change == "stride":
        conf = ((2, 2), *conf[1:])
    elif change == "padding":
        conf = (conf[0], (0, 0), (0, 0), *conf[3:])
    elif change == "dilation":
        conf = (*conf[:3], (2, 2), *conf[4:])
    elif change == "dtype":
        x, w = x.to(torch.bfloat16), w.to(torch.bfloat16)
    elif change == "shape":
        x = _cl(4, 8, 10, 10)
    elif change == "bias":
        b = torch.zeros(16, dtype=H)
    elif change == "library":
        conf = (*conf[:5], ops.library_id(reg2))
    elif change == "autotune":
        monkeypatch.setattr(ct, "benchmark", True)
    y = ops.forward(x, w, b, conf)
    assert cpu_as_cuda == ["check_forward"] * 2 and len(ct.cache_info()) == 2
    assert len(reg.selects) + len(reg2.selects) == 2
    if change == "dtype":
        assert reg.selects[-1] == ("forward", "bf16") and y.dtype == torch.bfloat16


def test_cache_keeps_misuse_errors(cpu_as_cuda) -> None:
    reg = _RunReg()
    conf = ((1, 1), (1, 1), (1, 1), (1, 1), 1, ops.library_id(reg))
    x, w = _cl(2, 8, 10, 10), _cl(16, 8, 3, 3)
    ops.forward(x, w, torch.zeros(16, dtype=H), conf)
    ops.forward(x, w, None, conf)
    with pytest.raises(ct.ConvTypeError, match="weight has dtype torch.float32 but x has"):
        ops.forward(x, w.float(), None, conf)
    with pytest.raises(ct.ConvTypeError, match="bias has dtype torch.float32"):
        ops.forward(x, w, torch.zeros(16), conf)
    with pytest.raises(ct.ConvValueError, match=r"bias has shape \[8\]"):
        ops.forward(x, w, torch.zeros(8, dtype=H), conf)
    with pytest.raises(ct.ConvValueError, match="x has 4 channels"):
        ops.forward(_cl(2, 4, 10, 10), w, None, conf)
    with pytest.raises(ct.ConvDeviceError, match="weight is on meta but x is on cpu"):
        ops.forward(x, w.to("meta"), None, conf)
    dy = _cl(2, 16, 10, 10)
    ops.backward_data(dy, w, x.shape, conf)
    with pytest.raises(ct.ConvValueError, match=r"dy has shape \[2, 16, 9, 9\]"):
        ops.backward_data(_cl(2, 16, 9, 9), w, x.shape, conf)
    ops.backward_weight(x, dy, w.shape, conf)
    with pytest.raises(ct.ConvValueError, match=r"dy has shape"):
        ops.backward_weight(x, _cl(2, 16, 9, 9), w.shape, conf)
    assert len(reg.selects) == 4  # forward with and without bias, backward data and weight


def test_eager_training_function_reuses_prepared_launches(cpu_as_cuda) -> None:
    reg = _RunReg()
    conf = ((1, 1), (1, 1), (1, 1), (1, 1), 1, ops.library_id(reg))
    x = _cl(2, 8, 10, 10).requires_grad_()
    w = _cl(16, 8, 3, 3).requires_grad_()
    b = torch.zeros(16, dtype=H, requires_grad=True)
    for _ in range(2):
        y = registration.ConvFunction.apply(x, w, b, conf)
        y.backward(torch.ones_like(y))
    assert [v for v, _ in reg.selects] == ["forward", "backward_data", "backward_weight"]
    assert len(reg.runs) == 6 and b.grad is not None and float(b.grad[0]) == 2 * 2 * 100
    assert x.grad.shape == x.shape and w.grad.shape == w.shape
    y = registration.ConvFunction.apply(x, w, b, conf)  # no second derivative: it says so
    g = torch.ones_like(y).requires_grad_()
    (gx,) = torch.autograd.grad(y, (x,), g, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        gx.float().sum().backward()


def test_conf_cache_keeps_argument_errors() -> None:
    x, w = meta(2, 8, 10, 10), meta(16, 8, 3, 3)
    assert ct.conv(x, w, stride=1, padding=1).shape == (2, 16, 10, 10)
    assert ct.conv(x, w, stride=(1, 1), padding=(1, 1)).shape == (2, 16, 10, 10)
    with pytest.raises(ct.ConvTypeError, match="stride: expected an int or 2 ints, got True"):
        ct.conv(x, w, stride=True, padding=1)
    with pytest.raises(ct.ConvTypeError, match=r"stride: expected 2 ints, got \[1, True\]"):
        ct.conv(x, w, stride=(1, True), padding=1)
    with pytest.raises(ct.ConvTypeError, match=r"padding: expected 2 ints"):
        ct.conv(x, w, padding=(1.0, 1))
    with pytest.raises(ct.ConvValueError, match="groups: expected an int >= 1, got True"):
        ct.conv(x, w, padding=1, groups=True)
    # 'same' padding depends on the filter: a cached conf is per filter size
    assert ct.conv(x, meta(16, 8, 5, 5), padding="same").shape == (2, 16, 10, 10)
    assert ct.conv(x, w, padding="same").shape == (2, 16, 10, 10)


def test_fast_path_only_when_nothing_traces() -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    x = torch.randn(2, 8, 10, 10)
    assert not registration.fast(x, x)  # not on a CUDA device
    assert not registration.fast(meta(2, 8), meta(2, 8))

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    calls = []
    with Mode():
        assert registration._dispatch_modes() > 0
        calls.append(registration.fast(x, x))
    assert calls == [False]
    with FakeTensorMode():
        f = torch.empty(2, 8, 10, 10, device="cuda")
        assert not registration.fast(f, f)


def test_registered_ops_run_directly_only_when_nothing_traces(cpu_as_cuda) -> None:
    """The ops' Autograd kernel runs the implementation itself for plain tensors, redispatches
    (so a dispatch mode or functionalization sees the op) otherwise; gradients through the op
    reuse the prepared launches; a backward op has no derivative."""
    from torch.utils._python_dispatch import TorchDispatchMode

    reg = _RunReg()
    p = ([1, 1], [1, 1], [1, 1], [1, 1], 1, ops.library_id(reg))
    x, w = _cl(2, 8, 10, 10), _cl(16, 8, 3, 3)
    y = torch.ops.ckgen.conv_forward(x, w, None, *p)
    assert y.shape == (2, 16, 10, 10) and len(reg.runs) == 1
    assert registration._direct(torch._C._dispatch_keys(x))
    with torch.inference_mode():  # no Autograd kernel: the CompositeExplicitAutograd one
        torch.ops.ckgen.conv_forward.default(x, w, None, *p)
    assert len(reg.runs) == 2

    seen = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Mode():
        torch.ops.ckgen.conv_forward(x, w, None, *p)
        torch.ops.ckgen.conv_backward_data(y, w, [2, 8, 10, 10], *p)
    assert seen == ["ckgen.conv_forward.default", "ckgen.conv_backward_data.default"], seen
    assert len(reg.runs) == 4
    assert not registration._direct(torch._C._dispatch_keys(meta(2, 8)))
    fx = torch._to_functional_tensor(x)
    assert not registration._direct(torch._C._dispatch_keys(fx))

    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    b = torch.zeros(16, dtype=H, requires_grad=True)
    y = torch.ops.ckgen.conv_forward(xg, wg, b, *p)
    y.backward(torch.ones_like(y))
    assert [v for v, _ in reg.selects] == ["forward", "backward_data", "forward", "backward_weight"]
    assert xg.grad.shape == x.shape and wg.grad.shape == w.shape and float(b.grad[0]) == 200
    dy = _cl(2, 16, 10, 10).requires_grad_()
    dx = torch.ops.ckgen.conv_backward_data(dy, w, [2, 8, 10, 10], *p)
    assert dx.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula"):
        dx.float().sum().backward()
