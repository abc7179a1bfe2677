"""Shared helpers: run the CLI in-process (fast) or as a subprocess (real cwd, real exit code)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ckgen.cli import main
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import DATATYPE_BYTES, DataType

# CKGEN_EXHAUSTIVE=1: the slow builds cover every instance (the whole default set on each AMD
# target, the whole tests set, bf16 too, in the nvcc build); by default they build one instance
# per code path (one_per_code_path), which keeps a CI run on a 2-core machine near an hour.
EXHAUSTIVE = os.environ.get("CKGEN_EXHAUSTIVE", "0") == "1"

REPO = Path(__file__).resolve().parent.parent

# the sizes of an instance (and its rank, covered per pipeline below); every other field of its
# name selects a code path
_SIZE_FIELDS = (
    "tile",
    "vec_a",
    "vec_b",
    "vec_c",
    "waves",
    "stages",
    "groups_to_merge",
    "load_waves",
    "math_waves",
    "k_batch",
    "origin",
    "ndim",
)


def _vector_class(v: int, dt: DataType) -> str:
    """An operand's access as a code path: scalar, vectors under 4 bytes (a synchronous copy where
    the pipeline prefetches), or asynchronous vectors."""
    return "scalar" if v == 1 else "sync" if v * DATATYPE_BYTES[dt] < 4 else "async"


def one_per_code_path(names: list[str], largest: bool = True) -> list[str]:
    """One instance per code path: names grouped by every field but the sizes, with what the sizes
    select kept (k_batch: chosen by the instance, 1 or a fixed split; wavelet_tma's ping-pong:
    more math warps than the tile's; each operand's vector class), and one per variant, datatype,
    rank and pipeline; of each group the largest tile x stages (the likeliest to spill), or with
    largest=False the smallest (the quickest to compile). Ties: the first name."""
    groups: dict[tuple, list[tuple[int, str]]] = {}
    for n in sorted(names):
        i = parse_instance_name(n)
        key = tuple(
            (f.name, str(getattr(i, f.name)))
            for f in dataclasses.fields(i)
            if f.name not in _SIZE_FIELDS
        ) + (
            ("k_batch", min(i.k_batch, 2)),
            ("vectors", tuple(_vector_class(v, i.datatype) for v in (i.vec_a, i.vec_b, i.vec_c))),
            ("ping_pong", i.math_waves > i.waves[0] * i.waves[1] * i.waves[2]),
        )
        size = i.tile[0] * i.tile[1] * i.tile[2] * max(i.stages, 1)
        entry = (-size if largest else size, n)
        groups.setdefault(key, []).append(entry)
        groups.setdefault(("rank", i.variant, i.datatype, i.ndim, i.pipeline), []).append(entry)
    return sorted({min(g)[1] for g in groups.values()})


ALL_ARCHS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201", "sm_80", "sm_90a")


def cli(*args: str, ok: bool = True) -> object:
    """Run ckgen in-process; asserts exit code 0 unless ok=False. Returns the click Result
    (stdout in .stdout, stderr in .stderr)."""
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert res.exit_code == 0, (
            f"ckgen {' '.join(args)} -> {res.exit_code}\n{res.output}\n{res.stderr}"
        )
    return res


def cli_proc(
    *args: str,
    cwd: Path | None = None,
    ok: bool = True,
    env: dict | None = None,
    timeout: int = 300,
) -> subprocess.CompletedProcess:
    """Run `python -m ckgen.cli` in a subprocess (own cwd, own hash seed)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "ckgen.cli", *args],
        cwd=cwd,
        env=e,
        text=True,
        capture_output=True,
        timeout=timeout,
    )
    if ok:
        assert p.returncode == 0, (
            f"ckgen {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
        )
    return p


def tree(root: Path) -> dict[str, bytes]:
    """Every regular file under root, relative posix path -> bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def tree_digest(root: Path) -> dict[str, str]:
    return {k: hashlib.sha256(v).hexdigest() for k, v in tree(root).items()}


def stat_tree(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (mtime_ns, inode) for every file and directory."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.stat()
        out[p.relative_to(root).as_posix()] = (st.st_mtime_ns, st.st_ino)
    return out


HOST_CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
needs_host_cxx = pytest.mark.skipif(
    HOST_CXX is None, reason="needs a host C++ compiler (g++, c++ or clang++)"
)


def build_and_run_host_check(source: Path, include: Path, out: Path) -> subprocess.CompletedProcess:
    """Compiles a tests/cpp host check (-Wall -Wextra -Werror) against ``include`` and runs it."""
    exe = out / source.stem
    cc = subprocess.run(
        [
            HOST_CXX,
            "-std=c++17",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{include}",
            str(source),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cc.returncode == 0, cc.stdout + cc.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)


def build_dispatch_host_test(name: str, tmp_path: Path, *flags: str) -> Path:
    """tests/host/<name>.cpp (the dispatcher with fake instances) compiled by the host C++
    compiler ($CXX, g++, c++ or clang++; the test skips without one) against the library headers
    and sm_90a's rendered arch_params.hpp, with core/portability.hpp's host-only branch
    (CKGEN_PLATFORM_HOST: whatever CUDA / HIP headers the machine has), whose device queries
    answer "no device"; flags go before the sources. The executable, in tmp_path."""
    cxx = next(
        (c for c in (os.environ.get("CXX", ""), "g++", "c++", "clang++") if c and shutil.which(c)),
        None,
    )
    if cxx is None:
        pytest.skip("no host C++ compiler")
    from ckgen.emit.render import _dispatch_files
    from ckgen.model.arch import get_arch

    inc = tmp_path / "include"
    gen = _dispatch_files(get_arch("sm_90a"))["include/ckgen/generated/arch_params.hpp"]
    (inc / "ckgen" / "generated").mkdir(parents=True)
    (inc / "ckgen" / "generated" / "arch_params.hpp").write_bytes(gen)
    exe = tmp_path / name
    comp = subprocess.run(
        [
            cxx,
            "-std=c++17",
            "-O1",
            *flags,
            "-DCKGEN_PLATFORM_HOST",
            f"-I{REPO / 'templates' / 'include'}",
            f"-I{inc}",
            str(REPO / "tests" / "host" / f"{name}.cpp"),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert comp.returncode == 0, comp.stderr[-4000:]
    return exe


def mutated_include(dest: Path, header: str, old: str, new: str) -> Path:
    """A copy of templates/include under ``dest`` with one line of ``ckgen/<header>`` replaced
    (the target must occur exactly once): for checks that must fail on broken code."""
    inc = dest / "include"
    shutil.copytree(REPO / "templates" / "include", inc)
    hdr = inc / "ckgen" / header
    text = hdr.read_text()
    assert text.count(old) == 1, f"mutation target not found once in {header}: {old}"
    hdr.write_text(text.replace(old, new))
    return inc


def have(*tools: str) -> bool:
    return all(shutil.which(t) for t in tools)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# The kernels the GPU torch tests build when CKGEN_TORCH_LIB names no built library.
TORCH_TEST_KERNELS = ["grouped_conv_*_fp16_2d_*", "grouped_conv_*_bf16_2d_*"]


@pytest.fixture(scope="session")
def torch_registry():
    """The ckgen library of the GPU torch tests: CKGEN_TORCH_LIB (a built libckgen_dispatch.so or
    its build directory), else a JIT build of TORCH_TEST_KERNELS for sm_90a (cached)."""
    from ckgen import Registry

    lib = os.environ.get("CKGEN_TORCH_LIB")
    if lib:
        return Registry.load(lib)
    if not have("cmake", "ninja", "nvcc"):
        pytest.skip("no CKGEN_TORCH_LIB and no cmake/ninja/nvcc to build one")
    return Registry.build(
        "default", arch="sm_90a", kernels=TORCH_TEST_KERNELS, max_workers=os.cpu_count() or 4
    )


def poison_cuda_allocator() -> None:
    """Fill the CUDA caching allocator's free blocks, small and large, with NaN: an output a
    kernel leaves unwritten reads NaN."""
    import torch

    for nbytes in (512, 4096, 65536, 1 << 20, 64 << 20):
        ts = [torch.full((nbytes // 4,), float("nan"), device="cuda") for _ in range(8)]
        del ts


def torch_dtype(datatype: str):
    """The torch dtype of a ckgen datatype name (fp16, bf16, fp32)."""
    from ckgen.torch.checks import torch_dtype

    return torch_dtype(datatype)


def tensor_at(ptr: int, shape: tuple, dtype):
    """The tensor of `shape` and torch `dtype` over the CPU memory at the address ptr: what a
    fake kernel reads and writes from the pointers it is handed."""
    import ctypes

    import torch

    size = torch.empty((), dtype=dtype).element_size()
    for s in shape:
        size *= s
    buf = (ctypes.c_byte * size).from_address(ptr)
    return torch.frombuffer(buf, dtype=dtype).view(shape)


@pytest.fixture
def cpu_as_cuda(monkeypatch):
    """ckgen.torch with CPU tensors standing in for CUDA ones (PyTorch tests without a GPU): they
    pass the device checks, device and stream queries answer 0, no prepared launch is carried
    in or out."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import ckgen.torch as ct
    from ckgen.torch import checks, ops

    monkeypatch.setattr(checks, "TRACE_DEVICES", (*checks.TRACE_DEVICES, "cpu"))
    monkeypatch.setattr(ops, "_get_device", lambda: 0)
    monkeypatch.setattr(ops, "_raw_stream", lambda i: 0)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    ct.clear_cache()
    yield
    ct.clear_cache()
