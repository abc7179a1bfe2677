"""ckgen.KernelLibrary (ckgen.Registry): declare kernels, build them (parallel JIT, cached), select
at run time, run.

    from ckgen import KernelLibrary, Problem
    reg = KernelLibrary.build("default", arch="sm_90a", kernels=["grouped_conv_fwd_fp16_2d_*"],
    max_workers=16)
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError
from ckgen.model.problem import Problem
from ckgen.runtime.capi import (
    CkgenRuntimeError,
    NoKernel,
    UnsupportedProblem,
    c_problem,
    load_lib,
    ptr_arg,
    stream_arg,
)

__all__ = [
    "CkgenRuntimeError",
    "Kernel",
    "KernelLibrary",
    "NoKernel",
    "Selection",
    "UnsupportedProblem",
]

CACHE_ENV = "CKGEN_CACHE_DIR"
CACHE_VERSION = "1"
LIB_NAME = "libckgen_dispatch.so"


@dataclass
class Kernel:
    """One compiled instance of a KernelLibrary."""

    registry: KernelLibrary
    index: int
    name: str
    variant: str
    datatype: str
    ndim: int
    tile: tuple[int, int, int]

    def is_supported(self, problem: Problem, k_batch: int = 0) -> str:
        """'' when the kernel can run the problem, else the reason."""
        r = self.registry._lib.ckgen_is_supported(
            self.index, ctypes.byref(c_problem(problem)), k_batch
        )
        return r.decode()

    def workspace_bytes(self, problem: Problem, k_batch: int = 0) -> int:
        n = self.registry._lib.ckgen_workspace_bytes(
            self.index, ctypes.byref(c_problem(problem)), k_batch
        )
        if n < 0:
            raise CkgenRuntimeError(self.registry._last_error())
        return int(n)

    def estimate_us(self, problem: Problem, k_batch: int = 0) -> float:
        """The cost model's estimate (host only, no GPU); UnsupportedProblem when it cannot run."""
        v = self.registry._lib.ckgen_estimate_us(
            self.index, ctypes.byref(c_problem(problem)), k_batch
        )
        if v < 0:
            raise UnsupportedProblem(self.name, self.registry._last_error())
        return float(v)

    def run(
        self,
        problem: Problem,
        in_ptr: Any,
        wei_ptr: Any,
        out_ptr: Any,
        workspace_ptr: Any = 0,
        stream: Any = 0,
        k_batch: int = 0,
    ) -> None:
        """Enqueue on stream (device pointers: ints or tensors). UnsupportedProblem carries the
        is_supported reason; other failures raise CkgenRuntimeError."""
        lib = self.registry._lib
        rc = lib.ckgen_run(
            self.index,
            ctypes.byref(c_problem(problem)),
            ptr_arg(in_ptr),
            ptr_arg(wei_ptr),
            ptr_arg(out_ptr),
            ptr_arg(workspace_ptr),
            stream_arg(stream),
            k_batch,
        )
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

    def run(
        self,
        problem: Problem,
        in_ptr: Any,
        wei_ptr: Any,
        out_ptr: Any,
        workspace_ptr: Any = 0,
        stream: Any = 0,
    ) -> None:
        self.kernel.run(problem, in_ptr, wei_ptr, out_ptr, workspace_ptr, stream, self.k_batch)


class KernelLibrary:
    """The kernels of one compiled generated project (lib/libckgen_dispatch.so)."""

    def __init__(
        self,
        lib_path: Path | str,
        project: Path | None = None,
        build_seconds: float = 0.0,
        cached: bool = False,
    ) -> None:
        self.lib_path = Path(lib_path)
        self.project = project
        self.build_seconds = build_seconds
        self.cached = cached
        self._lib = load_lib(self.lib_path)
        self.arch = self._lib.ckgen_arch().decode()
        self.kernels: list[Kernel] = []
        for i in range(self._lib.ckgen_num_kernels()):
            v, d, nd, tm, tn, tk, _kb = self._lib.ckgen_kernel_info(i).decode().split()
            self.kernels.append(
                Kernel(
                    self,
                    i,
                    self._lib.ckgen_kernel_name(i).decode(),
                    v,
                    d,
                    int(nd),
                    (int(tm), int(tn), int(tk)),
                )
            )
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

    def select(
        self,
        problem: Problem,
        variant: str = "forward",
        datatype: str = "fp16",
        cost_model_only: bool = False,
    ) -> Selection:
        """Best kernel for the problem: tuning database (exact, then the cost model corrected by the
        residuals measured on the nearest tuned shapes), else the cost model. NoKernel (with the
        reasons) when none supports it."""
        kb = ctypes.c_int(0)
        why = ctypes.c_char_p()
        fn = self._lib.ckgen_select_cost_model if cost_model_only else self._lib.ckgen_select
        i = fn(
            ctypes.byref(c_problem(problem)),
            variant.encode(),
            datatype.encode(),
            ctypes.byref(kb),
            ctypes.byref(why),
        )
        if i < 0:
            raise NoKernel(self._last_error())
        return Selection(self.kernels[i], kb.value, (why.value or b"").decode())

    # ------------------------------------------------------------------ build
    @classmethod
    def load(cls, path: Path | str) -> KernelLibrary:
        """A registry over an already built project: its build dir, or the .so itself."""
        p = Path(path)
        for cand in (p, p / "lib" / LIB_NAME, p / "build" / "lib" / LIB_NAME):
            if cand.is_file():
                return cls(cand)
        raise CkgenError(f"no {LIB_NAME} under {p} (build the project with `ckgen build -o DIR`)")

    @classmethod
    def build(
        cls,
        configs: str | Path | Sequence[str | Path] | None = "default",
        arch: str = "sm_90a",
        *,
        max_workers: int = 0,
        kernels: str | Sequence[str] = (),
        variants: Sequence[str] = (),
        datatypes: Sequence[str] = (),
        cache_dir: Path | str | None = None,
        gpu_targets: str | None = None,
        launcher: str = "",
        progress: Callable[[int, int, str], None] | None = None,
        timeout: float = 3600,
    ) -> KernelLibrary:
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
        exp = expand(
            cfgs, spec, Filters(datatypes=tuple(DataType(d) for d in datatypes), kernels=globs)
        )
        if not exp.instances:
            raise CkgenError(
                f"no instance selected ({exp.candidates} candidates, "
                f"{exp.rejected_count} rejected, {exp.filtered} filtered out by "
                f"kernels={list(globs)})"
            )
        targets = gpu_targets or spec.cuda_arch or spec.name
        files = render_project(exp.instances, spec)
        files["CMakeLists.txt"] = render_cmake(spec.platform, targets, launcher, spec.name).encode()
        h = hashlib.sha256()
        h.update(
            f"ckgen-jit {CACHE_VERSION}\n{compiler_identity(spec.platform.value)}\n"
            f"targets={targets}\nlauncher={launcher}\n".encode()
        )
        for rel in sorted(files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
        key = h.hexdigest()[:20]
        root = Path(
            cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ckgen"
        ).expanduser()
        entry = root / f"{spec.name}-{key}"
        lib = entry / "build" / "lib" / LIB_NAME
        stamp = entry / "ok.json"
        entry.mkdir(parents=True, exist_ok=True)
        with open(entry / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build per entry; others wait, then hit the cache
            if stamp.is_file() and lib.is_file():
                return cls(
                    lib, project=entry / "src", build_seconds=time.perf_counter() - t0, cached=True
                )
            src = entry / "src"
            apply(plan(src, files))
            jobs = max_workers if max_workers > 0 else (os.cpu_count() or 1)
            configure(
                src,
                entry / "build",
                gpu_targets=targets,
                launcher=launcher,
                profilers=False,
                tests=False,
            )
            ninja(
                entry / "build",
                jobs=jobs,
                targets=["ckgen_dispatch"],
                progress=progress,
                timeout=timeout,
            )
            secs = time.perf_counter() - t0
            stamp.write_text(
                json.dumps(
                    {
                        "arch": spec.name,
                        "instances": len(exp.instances),
                        "seconds": secs,
                        "max_workers": jobs,
                    },
                    indent=1,
                )
                + "\n"
            )
            return cls(lib, project=src, build_seconds=secs, cached=False)

    @staticmethod
    def clear_cache(cache_dir: Path | str | None = None) -> None:
        root = Path(
            cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ckgen"
        ).expanduser()
        shutil.rmtree(root, ignore_errors=True)

    def find(
        self, variant: str | None = None, datatype: str | None = None, ndim: int | None = None
    ) -> list[Kernel]:
        return [
            k
            for k in self.kernels
            if (variant is None or k.variant == variant)
            and (datatype is None or k.datatype == datatype)
            and (ndim is None or k.ndim == ndim)
        ]

    def __repr__(self) -> str:
        return f"KernelLibrary({len(self.kernels)} kernels for {self.arch}, {self.lib_path})"


def supported(kernels: Iterable[Kernel], problem: Problem, k_batch: int = 0) -> list[Kernel]:
    return [k for k in kernels if not k.is_supported(problem, k_batch)]
