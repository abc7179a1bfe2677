"""The C API's fused select / run and the Registry over it, host-only: dispatch/ckgen_dispatch*.cpp
compiled by the host C++ compiler with the fake registry of tests/host/fake_library.cpp, as a
check program (tests/host/capi_fused.cpp) and as a libckgen_dispatch.so that ckgen.Registry
loads (no GPU: the fake kernels record their operands)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from ckgen.model.epilogue import Epilogue
from ckgen.model.problem import Problem
from ckgen.model.vocab import Activation, ChannelOp
from ckgen.runtime.capi import CkgenRuntimeError, NoKernel
from ckgen.runtime.library import KernelLibrary

from conftest import REPO

HOST = REPO / "tests" / "host"
DISPATCH = REPO / "templates" / "project" / "dispatch"
CAPI_SOURCES = [DISPATCH / "ckgen_dispatch.cpp", DISPATCH / "ckgen_dispatch_args.cpp"]


def _cxx() -> str:
    for c in ("g++", "c++", "clang++"):
        if shutil.which(c):
            return c
    pytest.skip("no host C++ compiler")


def _compile(tmp: Path, out: Path, sources: list[Path], shared: bool) -> None:
    from ckgen.emit.render import _dispatch_files
    from ckgen.model.arch import get_arch

    inc = tmp / "include" / "ckgen" / "generated"
    inc.mkdir(parents=True, exist_ok=True)
    gen = _dispatch_files(get_arch("sm_90a"))["include/ckgen/generated/arch_params.hpp"]
    (inc / "arch_params.hpp").write_bytes(gen)
    flags = ["-shared", "-fPIC"] if shared else []
    r = subprocess.run(
        [
            _cxx(),
            "-std=c++17",
            "-O0",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-DCKGEN_PLATFORM_HOST",
            "-DCKGEN_DISPATCH_BUILD",
            *flags,
            f"-I{REPO / 'templates' / 'include'}",
            f"-I{tmp / 'include'}",
            f"-I{DISPATCH}",
            *map(str, sources),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-4000:]


def test_capi_fused_host_only(tmp_path: Path) -> None:
    exe = tmp_path / "capi_fused"
    srcs = [HOST / "capi_fused.cpp", HOST / "fake_library.cpp", *CAPI_SOURCES]
    _compile(tmp_path, exe, srcs, shared=False)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok ") >= 19, out.stdout


def test_header_compiles_as_c(tmp_path: Path) -> None:
    if not shutil.which("gcc"):
        pytest.skip("no C compiler")
    src = tmp_path / "use.c"
    src.write_text(
        '#include "ckgen_dispatch.h"\n'
        "int f(const ckgen_problem* p) {\n"
        "  ckgen_epilogue e = {CKGEN_CHANNEL_OP_BIAS, CKGEN_ACTIVATION_RELU, 0, 0, 0};\n"
        "  ckgen_epilogue_args a = {0, 0, 0, 1.f, 0.01f, 0, 0, 0};\n"
        '  int i = ckgen_select_fused(p, "forward", "fp16", &e, 0, 0);\n'
        "  return ckgen_run_fused(i, p, 0, -1, 0, -1, 0, -1, &a, 0, -1, 0, 0);\n"
        "}\n"
    )
    r = subprocess.run(
        [
            "gcc",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            f"-I{DISPATCH}",
            "-c",
            str(src),
            "-o",
            str(tmp_path / "use.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def fake_reg(tmp_path_factory: pytest.TempPathFactory) -> KernelLibrary:
    tmp = tmp_path_factory.mktemp("fakelib")
    so = tmp / "libckgen_dispatch.so"
    _compile(tmp, so, [HOST / "fake_library.cpp", *CAPI_SOURCES], shared=True)
    return KernelLibrary(so)


P = Problem.make(N=8, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)


def _last_run(reg: KernelLibrary) -> tuple[int, int, int, int, float, float]:
    f = reg._lib.fake_last_run
    v = [ctypes.c_void_p() for _ in range(3)]
    beta, alpha = ctypes.c_float(), ctypes.c_float()
    n = f(*(ctypes.byref(x) for x in v), ctypes.byref(beta), ctypes.byref(alpha))
    return n, *(x.value or 0 for x in v), beta.value, alpha.value  # type: ignore[return-value]


def test_registry_knows_each_kernels_epilogue(fake_reg: KernelLibrary) -> None:
    eps = {k.name: k.epilogue.fusion for k in fake_reg.kernels}
    assert eps["fwd_plain_t128"] == "none"
    assert eps["fwd_bias_relu_t64"] == "bias_relu"
    assert eps["fwd_ss_silu_res_t64"] == "scale_shift_silu_residual"
    assert [k.name for k in fake_reg.find(fusion="bias_relu")] == [
        "fwd_bias_relu_t64",
        "fwd_bias_relu_t128",
    ]
    assert len(fake_reg.find(fusion="none")) == 2


def test_select_fusion(fake_reg: KernelLibrary) -> None:
    plain = fake_reg.select(P, "forward", "fp16")
    assert not plain.epilogue.fused
    sel = fake_reg.select(P, "forward", "fp16", fusion="bias_relu")
    assert sel.epilogue == Epilogue(ChannelOp.BIAS, Activation.RELU)
    assert sel.source == "cost-model"
    ep = Epilogue.parse("scale_shift_silu_residual")
    assert fake_reg.select(P, "forward", "fp16", fusion=ep).name == "fwd_ss_silu_res_t64"
    # cached apart: the plain answer after the fused ones is still plain
    assert fake_reg.select(P, "forward", "fp16") is plain
    assert fake_reg.select(P, "forward", "fp16", fusion="bias_relu") is sel
    assert fake_reg.select(P, "forward", "fp16", fusion="none") is plain


def test_select_fusion_errors(fake_reg: KernelLibrary) -> None:
    with pytest.raises(NoKernel):
        fake_reg.select(P, "forward", "fp16", fusion="leaky_relu")
    with pytest.raises(CkgenRuntimeError, match="gradient mask"):
        fake_reg.select(P, "backward_data", "fp16", fusion="bias_relu")
    with pytest.raises(CkgenRuntimeError, match="backward operations") as err:
        fake_reg.select(P, "forward", "fp16", fusion="drelu")
    assert not isinstance(err.value, NoKernel)
    with pytest.raises(ValueError, match="not a fusion"):
        fake_reg.select(P, "forward", "fp16", fusion="relu_bias")


def test_selection_run_passes_operands(fake_reg: KernelLibrary) -> None:
    sel = fake_reg.select(P, "forward", "fp16", fusion="scale_shift_silu_residual")
    n0 = _last_run(fake_reg)[0]
    sel.run(P, 0x1000, 0x2000, 0x3000, bias=0x4000, scale=0x5000, residual=0x6000, beta=0.5)
    assert _last_run(fake_reg) == (n0 + 1, 0x4000, 0x5000, 0x6000, 0.5, pytest.approx(0.01))
    br = fake_reg.select(P, "forward", "fp16", fusion="bias_relu")
    with pytest.raises(CkgenRuntimeError, match="needs bias vector"):
        br.run(P, 0x1000, 0x2000, 0x3000)
    with pytest.raises(CkgenRuntimeError, match="reads no scale"):
        br.run(P, 0x1000, 0x2000, 0x3000, bias=0x4000, scale=0x5000)
    plain = fake_reg.select(P, "forward", "fp16")
    with pytest.raises(CkgenRuntimeError, match="reads no bias"):
        plain.run(P, 0x1000, 0x2000, 0x3000, bias=0x4000)
    plain.run(P, 0x1000, 0x2000, 0x3000)
    assert _last_run(fake_reg)[:4] == (n0 + 2, 0, 0, 0)


def test_backward_selection_run_passes_y_and_db(fake_reg: KernelLibrary) -> None:
    sel = fake_reg.select(P, "backward_weight", "fp16", fusion="bias_grad_drelu")
    assert sel.name == "bwd_weight_bgrad_drelu_t64"
    assert sel.epilogue.needs_y and sel.epilogue.needs_db and not sel.epilogue.needs_bias
    n0 = _last_run(fake_reg)[0]
    sel.run(P, 0x1000, 0x2000, 0x3000, y=0x7000, db=0x8000)
    y, db = ctypes.c_void_p(), ctypes.c_void_p()
    assert fake_reg._lib.fake_last_grad(ctypes.byref(y), ctypes.byref(db)) == n0 + 1
    assert (y.value, db.value) == (0x7000, 0x8000)
    with pytest.raises(CkgenRuntimeError, match="needs saved forward output y"):
        sel.run(P, 0x1000, 0x2000, 0x3000, db=0x8000)
    mask = fake_reg.select(P, "backward_data", "fp16", fusion="drelu")
    with pytest.raises(CkgenRuntimeError, match="reads no bias gradient db"):
        mask.run(P, 0x1000, 0x2000, 0x3000, y=0x7000, db=0x8000)
    mask.run(P, 0x1000, 0x2000, 0x3000, y=0x7000)
    assert _last_run(fake_reg)[0] == n0 + 2


def test_fused_run_checks_tensors(fake_reg: KernelLibrary) -> None:
    torch = pytest.importorskip("torch")
    br = fake_reg.select(P, "forward", "fp16", fusion="bias_relu")
    with pytest.raises(CkgenRuntimeError, match="GPU memory"):
        br.run(P, 0x1000, 0x2000, 0x3000, bias=torch.zeros(64))


def test_stats_selection_runs_with_its_output(fake_reg: KernelLibrary) -> None:
    sel = fake_reg.select(P, "forward", "fp16", fusion="bias_relu_stats")
    assert sel.name == "fwd_bias_relu_stats_t64" and sel.epilogue.needs_stats
    assert fake_reg.select(P, "forward", "fp16", fusion="bias_relu").name != sel.name
    n0 = _last_run(fake_reg)[0]
    sel.run(P, 0x1000, 0x2000, 0x3000, bias=0x4000, stats=0x9000)
    st = ctypes.c_void_p()
    assert fake_reg._lib.fake_last_stats(ctypes.byref(st)) == n0 + 1 and st.value == 0x9000
    with pytest.raises(CkgenRuntimeError, match="needs statistics output stats"):
        sel.run(P, 0x1000, 0x2000, 0x3000, bias=0x4000)
    with pytest.raises(CkgenRuntimeError, match="stats"):
        fake_reg.select(P, "backward_data", "fp16", fusion="drelu_stats")
