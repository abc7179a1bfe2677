"""ckgen.KernelLibrary (ckgen.Registry): declare kernels, build them (parallel JIT, cached), select at run time, run.

    from ckgen import KernelLibrary, Problem
    reg = KernelLibrary.build("default", arch="sm_90a", kernels=["grouped_conv_fwd_fp16_2d_*"], max_workers=16)
    p = Problem.make(N=2, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
    sel = reg.select(p, variant="forward", datatype="fp16")      # tuning DB, else cost model
    sel.run(p, x.data_ptr(), w.data_ptr(), y.data_ptr())          # device pointers (PyTorch ok)

The build renders the project, configures it with CMake and compiles the kernels and
lib/libckgen_dispatch.so with Ninja (-j max_workers). It is cached in cache_dir by a content
hash of the rendered files, the compiler's version and the flags: building the same set again
loads the cached library without running a compiler.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ckgen.errors import CkgenError
from ckgen.model.problem import Problem

CACHE_ENV = "CKGEN_CACHE_DIR"
CACHE_VERSION = "1"
LIB_NAME = "libckgen_dispatch.so"


class CkgenRuntimeError(CkgenError):
    """A call into the compiled library failed; .code is the C API's error code."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class UnsupportedProblem(CkgenRuntimeError):
    """The kernel cannot run the problem; .reason is its is_supported() answer."""

    def __init__(self, kernel: str, reason: str) -> None:
        super().__init__(f"{kernel}: {reason}", code=2)
        self.kernel = kernel
        self.reason = reason


class NoKernel(CkgenRuntimeError):
    """select() found no kernel that supports the problem; .reason says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, code=5)
        self.reason = reason


class _CProblem(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int32), ("reserved", ctypes.c_int32),
                ("G", ctypes.c_int64), ("N", ctypes.c_int64), ("C", ctypes.c_int64), ("K", ctypes.c_int64),
                ("in_", ctypes.c_int64 * 3), ("filter", ctypes.c_int64 * 3), ("stride", ctypes.c_int64 * 3),
                ("dilation", ctypes.c_int64 * 3), ("pad_l", ctypes.c_int64 * 3), ("pad_r", ctypes.c_int64 * 3)]


def _c_problem(p: Problem) -> _CProblem:
    t = ctypes.c_int64 * 3
    return _CProblem(p.ndim, 0, p.G, p.N, p.C, p.K, t(*p.input), t(*p.filter), t(*p.stride),
                     t(*p.dilation), t(*p.pad_l), t(*p.pad_r))


def _ptr(x: Any) -> int:
    """A device pointer from an int, a torch tensor (data_ptr) or anything with __cuda_array_interface__."""
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    if hasattr(x, "data_ptr"):
        return int(x.data_ptr())
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai:
        return int(cai["data"][0])
    raise TypeError(f"not a device pointer: {type(x).__name__}")


def _stream(s: Any) -> int:
    if s is None:
        return 0
    if isinstance(s, int):
        return s
    for attr in ("cuda_stream", "handle"):
        if hasattr(s, attr):
            return int(getattr(s, attr))
    raise TypeError(f"not a stream: {type(s).__name__}")


def _load_lib(path: Path) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as ex:
        raise CkgenRuntimeError(f"cannot load {path}: {ex}") from None
    P = ctypes.POINTER(_CProblem)
    sig = {
        "ckgen_api_version": (ctypes.c_int, []),
        "ckgen_arch": (ctypes.c_char_p, []),
        "ckgen_num_kernels": (ctypes.c_int, []),
        "ckgen_kernel_name": (ctypes.c_char_p, [ctypes.c_int]),
        "ckgen_kernel_info": (ctypes.c_char_p, [ctypes.c_int]),
        "ckgen_is_supported": (ctypes.c_char_p, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_workspace_bytes": (ctypes.c_int64, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_run": (ctypes.c_int, [ctypes.c_int, P, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]),
        "ckgen_select": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                        ctypes.POINTER(ctypes.c_char_p)]),
        "ckgen_select_cost_model": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_char_p)]),
        "ckgen_estimate_us": (ctypes.c_double, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_load_tuning_db": (ctypes.c_int, [ctypes.c_char_p]),
        "ckgen_set_compute_units": (None, [ctypes.c_int]),
        "ckgen_set_k_batch_candidates": (None, [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
        "ckgen_last_error": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sig.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise CkgenRuntimeError(f"{path}: missing C API function {name} (stale library?)") from None
        f.restype = res
        f.argtypes = args
    return lib


@dataclass
class Kernel:
    """One compiled instance of a KernelLibrary."""

    registry: "KernelLibrary"
    index: int
    name: str
    variant: str
    datatype: str
    ndim: int
    tile: tuple[int, int, int]

    def is_supported(self, problem: Problem, k_batch: int = 0) -> str:
        """'' when the kernel can run the problem, else the reason."""
        r = self.registry._lib.ckgen_is_supported(self.index, ctypes.byref(_c_problem(problem)), k_batch)
        return r.decode()

    def workspace_bytes(self, problem: Problem, k_batch: int = 0) -> int:
        n = self.registry._lib.ckgen_workspace_bytes(self.index, ctypes.byref(_c_problem(problem)), k_batch)
        if n < 0:
            raise CkgenRuntimeError(self.registry._last_error())
        return int(n)

    def estimate_us(self, problem: Problem, k_batch: int = 0) -> float:
        """The cost model's estimate (host only, no GPU); UnsupportedProblem when it cannot run."""
        v = self.registry._lib.ckgen_estimate_us(self.index, ctypes.byref(_c_problem(problem)), k_batch)
        if v < 0:
            raise UnsupportedProblem(self.name, self.registry._last_error())
        return float(v)

    def run(self, problem: Problem, in_ptr: Any, wei_ptr: Any, out_ptr: Any, workspace_ptr: Any = 0,
            stream: Any = 0, k_batch: int = 0) -> None:
        """Enqueue on stream (device pointers: ints or tensors). UnsupportedProblem carries the
        is_supported reason; other failures raise CkgenRuntimeError."""
        lib = self.registry._lib
        rc = lib.ckgen_run(self.index, ctypes.byref(_c_problem(problem)), _ptr(in_ptr), _ptr(wei_ptr),
                           _ptr(out_ptr), _ptr(workspace_ptr), _stream(stream), k_batch)
        if rc == 0:
            return
        msg = self.registry._last_error()
        if rc == 2:
            raise UnsupportedProblem(self.name, msg.split(": ", 1)[-1])
        raise CkgenRuntimeError(msg, code=rc)

    def __repr__(self) -> str:
        return f"Kernel({self.index}, {self.name!r})"


@dataclass
class Selection:
    """What KernelLibrary.select chose: the kernel, the k_batch to run it with, and why."""

    kernel: Kernel
    k_batch: int
    why: str

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def source(self) -> str:
        return self.why.split(":", 1)[0]

    def workspace_bytes(self, problem: Problem) -> int:
        return self.kernel.workspace_bytes(problem, self.k_batch)

    def run(self, problem: Problem, in_ptr: Any, wei_ptr: Any, out_ptr: Any, workspace_ptr: Any = 0,
            stream: Any = 0) -> None:
        self.kernel.run(problem, in_ptr, wei_ptr, out_ptr, workspace_ptr, stream, self.k_batch)


class KernelLibrary:
    """The kernels of one compiled generated project (lib/libckgen_dispatch.so)."""

    def __init__(self, lib_path: Path | str, project: Path | None = None, build_seconds: float = 0.0,
                 cached: bool = False) -> None:
        self.lib_path = Path(lib_path)
        self.project = project
        self.build_seconds = build_seconds
        self.cached = cached
        self._lib = _load_lib(self.lib_path)
        self.arch = self._lib.ckgen_arch().decode()
        self.kernels: list[Kernel] = []
        for i in range(self._lib.ckgen_num_kernels()):
            v, d, nd, tm, tn, tk, _kb = self._lib.ckgen_kernel_info(i).decode().split()
            self.kernels.append(Kernel(self, i, self._lib.ckgen_kernel_name(i).decode(), v, d, int(nd),
                                       (int(tm), int(tn), int(tk))))
        self._by_name = {k.name: k for k in self.kernels}

    # ------------------------------------------------------------------ lookup / select
    def __len__(self) -> int:
        return len(self.kernels)

    def __getitem__(self, name: str) -> Kernel:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r} in {self.lib_path}") from None

    def _last_error(self) -> str:
        return (self._lib.ckgen_last_error() or b"").decode()

    def load_tuning_db(self, path: Path | str | None) -> int:
        """Use this tuning database (JSON of `ckgen tune`) for select(); None clears it.
        Returns its number of entries."""
        n = self._lib.ckgen_load_tuning_db(str(path).encode() if path else None)
        if n < 0:
            raise CkgenRuntimeError(self._last_error(), code=3)
        return int(n)

    def set_compute_units(self, n: int) -> None:
        self._lib.ckgen_set_compute_units(int(n))

    def set_k_batch_candidates(self, k_batches: Sequence[int] | None) -> None:
        """backward_weight split counts the cost model tries (0 = the instance's own choice);
        None restores the default (0, 1, 2, 4, 8, 16, 32)."""
        kbs = list(k_batches or [])
        self._lib.ckgen_set_k_batch_candidates((ctypes.c_int * max(1, len(kbs)))(*kbs), len(kbs))

    def select(self, problem: Problem, variant: str = "forward", datatype: str = "fp16",
               cost_model_only: bool = False) -> Selection:
        """Best kernel for the problem: tuning database (exact, then the cost model corrected by the
        residuals measured on the nearest tuned shapes), else the cost model. NoKernel (with the
        reasons) when none supports it."""
        kb = ctypes.c_int(0)
        why = ctypes.c_char_p()
        fn = self._lib.ckgen_select_cost_model if cost_model_only else self._lib.ckgen_select
        i = fn(ctypes.byref(_c_problem(problem)), variant.encode(), datatype.encode(), ctypes.byref(kb),
               ctypes.byref(why))
        if i < 0:
            raise NoKernel(self._last_error())
        return Selection(self.kernels[i], kb.value, (why.value or b"").decode())

    # ------------------------------------------------------------------ build
    @classmethod
    def load(cls, path: Path | str) -> "KernelLibrary":
        """A registry over an already built project: its build dir, or the .so itself."""
        p = Path(path)
        for cand in (p, p / "lib" / LIB_NAME, p / "build" / "lib" / LIB_NAME):
            if cand.is_file():
                return cls(cand)
        raise CkgenError(f"no {LIB_NAME} under {p} (build the project with `ckgen build -o DIR`)")

    @classmethod
    def build(cls, configs: str | Path | Sequence[str | Path] | None = "default", arch: str = "sm_90a", *,
              max_workers: int = 0, kernels: str | Sequence[str] = (), variants: Sequence[str] = (),
              datatypes: Sequence[str] = (), cache_dir: Path | str | None = None,
              gpu_targets: str | None = None, launcher: str = "",
              progress: Callable[[int, int, str], None] | None = None, timeout: float = 3600) -> "KernelLibrary":
        """Generate, compile (cmake + ninja -j max_workers; 0 = one per CPU) and load.

        configs: a shipped config set name ('default', 'tests', ...), YAML paths, or None
        (default set). kernels: name globs. The project and its build live in
        cache_dir/<hash> (default $CKGEN_CACHE_DIR or ~/.cache/ckgen); the hash covers the
        rendered files, the compiler's version and the flags, so the same request is a cache
        hit that compiles nothing."""
        from ckgen.emit.cmake import render_cmake
        from ckgen.emit.output import apply, plan
        from ckgen.emit.render import render_project
        from ckgen.model.arch import get_arch
        from ckgen.model.vocab import DataType, Variant
        from ckgen.runtime.build import compiler_identity, configure, ninja
        from ckgen.space.expand import (
            Filters,
            default_config_paths,
            expand,
            load_configs,
        )

        t0 = time.perf_counter()
        spec = get_arch(arch)
        vs = [Variant(v) for v in variants] or list(Variant)
        if configs is None or isinstance(configs, str) and not configs.endswith((".yaml", ".yml")):
            paths = default_config_paths(vs, configs or "default")
        else:
            seq = [configs] if isinstance(configs, (str, Path)) else list(configs)
            paths = [Path(c) for c in seq]
        globs = (kernels,) if isinstance(kernels, str) else tuple(kernels)
        cfgs = [c for c in load_configs(paths) if c.variant in vs]
        exp = expand(cfgs, spec, Filters(datatypes=tuple(DataType(d) for d in datatypes), kernels=globs))
        if not exp.instances:
            raise CkgenError(f"no instance selected ({exp.candidates} candidates, {len(exp.rejected)} rejected, "
                             f"{exp.filtered} filtered out by kernels={list(globs)})")
        targets = gpu_targets or spec.cuda_arch or spec.name
        files = render_project(exp.instances, spec)
        files["CMakeLists.txt"] = render_cmake(spec.platform, targets, launcher, spec.name).encode()
        h = hashlib.sha256()
        h.update(f"ckgen-jit {CACHE_VERSION}\n{compiler_identity(spec.platform.value)}\n"
                 f"targets={targets}\nlauncher={launcher}\n".encode())
        for rel in sorted(files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
        key = h.hexdigest()[:20]
        root = Path(cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ckgen").expanduser()
        entry = root / f"{spec.name}-{key}"
        lib = entry / "build" / "lib" / LIB_NAME
        stamp = entry / "ok.json"
        entry.mkdir(parents=True, exist_ok=True)
        with open(entry / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build per entry; others wait, then hit the cache
            if stamp.is_file() and lib.is_file():
                return cls(lib, project=entry / "src", build_seconds=time.perf_counter() - t0, cached=True)
            src = entry / "src"
            apply(plan(src, files))
            jobs = max_workers if max_workers > 0 else (os.cpu_count() or 1)
            configure(src, entry / "build", gpu_targets=targets, launcher=launcher, profilers=False, tests=False)
            ninja(entry / "build", jobs=jobs, targets=["ckgen_dispatch"], progress=progress, timeout=timeout)
            secs = time.perf_counter() - t0
            stamp.write_text(json.dumps({"arch": spec.name, "instances": len(exp.instances), "seconds": secs,
                                         "max_workers": jobs}, indent=1) + "\n")
            return cls(lib, project=src, build_seconds=secs, cached=False)

    @staticmethod
    def clear_cache(cache_dir: Path | str | None = None) -> None:
        root = Path(cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ckgen").expanduser()
        shutil.rmtree(root, ignore_errors=True)

    def find(self, variant: str | None = None, datatype: str | None = None, ndim: int | None = None) -> list[Kernel]:
        return [k for k in self.kernels if (variant is None or k.variant == variant)
                and (datatype is None or k.datatype == datatype) and (ndim is None or k.ndim == ndim)]

    def __repr__(self) -> str:
        return f"KernelLibrary({len(self.kernels)} kernels for {self.arch}, {self.lib_path})"


def supported(kernels: Iterable[Kernel], problem: Problem, k_batch: int = 0) -> list[Kernel]:
    return [k for k in kernels if not k.is_supported(problem, k_batch)]
