"""ckgen.torch without a GPU: the op registrations, the fake (meta) implementations' shapes and
channels-last strides, tracing by torch.compile / make_fx with no graph break, convert(), the
argument checks (raised before any GPU work) and the autotune plumbing. Skips when PyTorch is not
installed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: ckgen.torch tests skipped")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import ckgen.torch as ct  # noqa: E402
from ckgen.torch import ops, registration  # noqa: E402

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
    pass


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
    )
    params = {n: p for n, p in m.named_parameters()}
    out = ct.convert(m)
    assert out is m
    printed = capsys.readouterr().out
    assert "4 of 7 convolutions run through ckgen" in printed
    assert isinstance(m[0], ct.Conv2d) and isinstance(m[0], nn.Conv2d)
    assert isinstance(m[2], ct.Conv1d) and isinstance(m[3], ct.Conv3d)
    assert isinstance(m[6][0], ct.Conv2d)
    assert type(m[1]) is nn.Conv2d and type(m[4]) is _MyConv and type(m[5]) is nn.ConvTranspose2d
    assert type(m[7]) is nn.LazyConv2d
    for n, p in m.named_parameters():  # the very same Parameter objects
        if n in params:
            assert params[n] is p, n
    why = {d.name: (d.converted, d.reason) for d in ct.report(m)}
    assert why["1"] == (False, "padding_mode='reflect' (ckgen pads with zeros only)")
    assert "subclass of nn.Conv2d" in why["4"][1] and not why["4"][0]
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
def cpu_as_cuda(monkeypatch):
    """CPU tensors pass the device checks; device and stream queries answer 0."""
    from ckgen.torch import checks

    monkeypatch.setattr(checks, "TRACE_DEVICES", (*checks.TRACE_DEVICES, "cpu"))
    monkeypatch.setattr(ops, "_get_device", lambda: 0)
    monkeypatch.setattr(ops, "_raw_stream", lambda i: 0)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
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
