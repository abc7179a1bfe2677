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
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
    tensor_arg,
    tensor_device,
)

__all__ = [
    "Candidate",
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
        pi, bi = tensor_arg(in_ptr, "in", self.datatype, problem)
        pw, bw = tensor_arg(wei_ptr, "wei", self.datatype, problem)
        po, bo = tensor_arg(out_ptr, "out", self.datatype, problem)
        pws, bws = tensor_arg(workspace_ptr, "workspace", None)
        self.registry._check_devices(in_ptr, wei_ptr, out_ptr, workspace_ptr)
        rc = lib.ckgen_run_checked(
            self.index,
            ctypes.byref(c_problem(problem)),
            pi,
            bi,
            pw,
            bw,
            po,
            bo,
            pws,
            bws,
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
    autotuned: bool = field(default=False, compare=False)

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


@dataclass(frozen=True)
class Candidate:
    """One (kernel, k_batch) pair of KernelLibrary.candidates, with the cost model's estimate."""

    kernel: Kernel
    k_batch: int
    estimate_us: float

    @property
    def name(self) -> str:
        return self.kernel.name


class _SelectMemo:
    """select()'s answers in Python, shared by every KernelLibrary over one loaded .so (the C
    dispatcher is per process): by the Problem object's identity (the object is kept, so its id
    is not reused) and by its value; dropped when the C cache's epoch moves (a tuning database
    loaded, settings changed, the cache cleared)."""

    CAP = 4096

    def __init__(self) -> None:
        self.epoch = -1
        self.by_id: dict[tuple[Any, ...], tuple[Problem, Selection]] = {}
        self.by_value: dict[tuple[Any, ...], Selection] = {}
        self.store: Any = None  # AutotuneStore, built on first autotune
        self.autotune_env = _autotune_env()

    def clear(self) -> None:
        """Drops the answers; CKGEN_AUTOTUNE is read again (reading the environment on every
        select() would cost more than the rest of a cached answer)."""
        self.by_id.clear()
        self.by_value.clear()
        self.autotune_env = _autotune_env()


_MEMOS: dict[str, _SelectMemo] = {}


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
        self._memo = _MEMOS.setdefault(str(self.lib_path.resolve()), _SelectMemo())
        self._device_key: Any = None
        self._gate_env_tuning_db()

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

    def load_tuning_db(self, path: Path | str | None, force: bool | None = None) -> int:
        """Use this tuning database (JSON of `ckgen tune`, or an autotune cache file) for
        select(); None clears it. Returns its number of entries. Clears the selection caches.

        A database shipped with ckgen (configs/tuning) is applied only on the GPU it was
        measured on (its "gpu" name and "sm_count"): on another GPU it is not loaded (a warning
        says so; returns 0) unless force (or CKGEN_TUNING_DB_FORCE=1). Any other database
        measured on another GPU is loaded with a warning."""
        from ckgen.runtime.autotune import FORCE_DB_ENV, env_flag, is_shipped

        if path:
            why = self._db_mismatch(Path(path))
            if why:
                forced = env_flag(FORCE_DB_ENV) if force is None else force
                if is_shipped(Path(path)) and not forced:
                    warnings.warn(
                        f"tuning database {path} not applied: {why} (force=True or "
                        f"{FORCE_DB_ENV}=1 applies it anyway)",
                        stacklevel=2,
                    )
                    return 0
                warnings.warn(f"tuning database {path}: {why}; applied anyway", stacklevel=2)
        n = self._lib.ckgen_load_tuning_db(str(path).encode() if path else None)
        self._memo.clear()
        if n < 0:
            raise CkgenRuntimeError(self._last_error(), code=3)
        return int(n)

    def load_shipped_tuning_db(self, force: bool | None = None) -> Path | None:
        """Loads the shipped tuning database (configs/tuning/<arch>_*.json) measured on this GPU
        (name and SM count); None, with a warning naming what ships, when none matches (with
        force: the first one of the arch)."""
        from ckgen.resources import tuning_dir
        from ckgen.runtime.autotune import FORCE_DB_ENV, env_flag

        forced = env_flag(FORCE_DB_ENV) if force is None else force
        shipped = sorted(tuning_dir().glob(f"{self.arch}_*.json"))
        for f in shipped:
            if not self._db_mismatch(f) and self._device_info() is not None:
                self.load_tuning_db(f)
                return f
        if forced and shipped:
            self.load_tuning_db(shipped[0], force=True)
            return shipped[0]
        dev = self._device_info()
        warnings.warn(
            f"no shipped tuning database for {dev[0] if dev else 'this machine (no GPU)'} "
            f"({self.arch}; shipped: {', '.join(f.name for f in shipped) or 'none'}): "
            "select() uses the cost model",
            stacklevel=2,
        )
        return None

    def _device_info(self) -> tuple[str, int, int, int] | None:
        """(name, SM count, driver version, runtime version) of the current device; None
        without one."""
        dev = self._lib.ckgen_current_device()
        if dev < 0:
            return None
        name = ctypes.create_string_buffer(256)
        sm, drv, rt = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
        rc = self._lib.ckgen_device_info(
            dev, name, 256, ctypes.byref(sm), ctypes.byref(drv), ctypes.byref(rt)
        )
        if rc != 0:
            return None
        return name.value.decode(errors="replace"), sm.value, drv.value, rt.value

    def _db_mismatch(self, path: Path) -> str:
        from ckgen.runtime.autotune import db_device, device_mismatch

        dev = self._device_info()
        if dev is None:
            return ""
        gpu, sm = db_device(path)
        return device_mismatch(gpu, sm, dev[0], dev[1])

    def _gate_env_tuning_db(self) -> None:
        """CKGEN_TUNING_DB naming a shipped database of another GPU: cleared (with a warning)
        unless CKGEN_TUNING_DB_FORCE=1, before the dispatcher reads it on first select."""
        from ckgen.runtime.autotune import FORCE_DB_ENV, env_flag, is_shipped

        env = os.environ.get("CKGEN_TUNING_DB", "")
        if not env or env_flag(FORCE_DB_ENV) or not is_shipped(Path(env)):
            return
        why = self._db_mismatch(Path(env))
        if why:
            warnings.warn(
                f"CKGEN_TUNING_DB={env} not applied: {why} ({FORCE_DB_ENV}=1 applies it anyway)",
                stacklevel=3,
            )
            self._lib.ckgen_load_tuning_db(None)
            self._memo.clear()

    def set_compute_units(self, n: int) -> None:
        self._lib.ckgen_set_compute_units(int(n))
        self._memo.clear()

    def set_k_batch_candidates(self, k_batches: Sequence[int] | None) -> None:
        """backward_weight split counts the cost model tries (0 = the instance's own choice);
        None restores the default (0, 1, 2, 4, 8, 16, 32)."""
        kbs = list(k_batches or [])
        self._lib.ckgen_set_k_batch_candidates((ctypes.c_int * max(1, len(kbs)))(*kbs), len(kbs))
        self._memo.clear()

    # ------------------------------------------------------------------ selection cache
    def clear_selection_cache(self) -> None:
        """Forgets every cached selection (the C dispatcher's and this process's memo);
        autotune results stay in their cache file."""
        self._lib.ckgen_cache_clear()
        self._memo.clear()

    def set_selection_cache_capacity(self, entries: int) -> None:
        """At most this many cached selections (0 disables the C cache; default 4096 or
        CKGEN_SELECT_CACHE_SIZE)."""
        self._lib.ckgen_cache_set_capacity(int(entries))
        self._memo.clear()

    def selection_cache_stats(self) -> dict[str, int]:
        """{'size', 'hits', 'misses'} of the C dispatcher's selection cache."""
        v = [ctypes.c_int64(0) for _ in range(3)]
        self._lib.ckgen_cache_stats(*(ctypes.byref(x) for x in v))
        return {"size": v[0].value, "hits": v[1].value, "misses": v[2].value}

    def select(
        self,
        problem: Problem,
        variant: str = "forward",
        datatype: str = "fp16",
        cost_model_only: bool = False,
        *,
        autotune: bool | None = None,
        stream: Any = 0,
        tensors: Sequence[Any] | None = None,
        topk: int | None = None,
    ) -> Selection:
        """Best kernel for the problem: tuning database (exact, then the cost model corrected by the
        residuals measured on the nearest tuned shapes), else the cost model. NoKernel (with the
        reasons of the nearest kernels) when none supports it.

        Repeated calls are answered from a cache (this process's memo in front of the C
        dispatcher's selection cache, keyed by problem, variant, datatype and current device).

        autotune (default: CKGEN_AUTOTUNE=1): on a problem's first call, time the top-k
        candidates (topk, default CKGEN_AUTOTUNE_TOPK or 8) on `stream` with scratch outputs
        (tensors = (in, wei, out) lends the inputs; the tensor the variant writes is never
        touched), keep the fastest and persist it in the per-GPU autotune cache file. Never
        times while the stream captures a graph (the known pick, else the heuristic)."""
        lib = self._lib
        memo = self._memo
        epoch = lib.ckgen_cache_epoch()
        if epoch != memo.epoch:
            memo.clear()
            memo.epoch = epoch
        dev = lib.ckgen_current_device()
        key = (id(problem), variant, datatype, dev, cost_model_only)
        hit = memo.by_id.get(key)
        if autotune is None:
            autotune = memo.autotune_env
        if hit is not None and hit[0] is problem and (hit[1].autotuned or not autotune):
            return hit[1]
        vkey = (problem, variant, datatype, dev, cost_model_only)
        sel_v = memo.by_value.get(vkey)
        if sel_v is not None and (not autotune or sel_v.autotuned or cost_model_only):
            sel = sel_v
        elif autotune and not cost_model_only:
            sel = self._autotuned(problem, variant, datatype, stream, tensors, topk)
        else:
            sel = self._select_c(problem, variant, datatype, cost_model_only)
        if lib.ckgen_cache_epoch() == memo.epoch:  # not cleared meanwhile
            if len(memo.by_id) >= _SelectMemo.CAP:
                memo.clear()
            memo.by_id[key] = (problem, sel)
            memo.by_value[vkey] = sel
        return sel

    def _select_c(
        self, problem: Problem, variant: str, datatype: str, cost_model_only: bool
    ) -> Selection:
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
        text = (why.value or b"").decode()
        return Selection(self.kernels[i], kb.value, text, autotuned=text.startswith("autotune"))

    # ------------------------------------------------------------------ autotune
    def candidates(
        self, problem: Problem, variant: str = "forward", datatype: str = "fp16", k: int = 8
    ) -> list[Candidate]:
        """Up to k (kernel, k_batch) pairs worth timing, best guess first: select()'s pick, an
        exact tuning-database entry's ranking, then the cost model's order. NoKernel when none
        supports the problem."""
        k = max(0, int(k))
        idx = (ctypes.c_int * max(1, k))()
        kbs = (ctypes.c_int * max(1, k))()
        est = (ctypes.c_double * max(1, k))()
        n = self._lib.ckgen_candidates(
            ctypes.byref(c_problem(problem)),
            variant.encode(),
            datatype.encode(),
            k,
            idx,
            kbs,
            est,
        )
        if n < 0:
            msg = self._last_error()
            raise NoKernel(msg) if "no " in msg[:3] else CkgenRuntimeError(msg, code=3)
        return [Candidate(self.kernels[idx[i]], int(kbs[i]), float(est[i])) for i in range(n)]

    def run_with(
        self,
        problem: Problem,
        kernel: Kernel | str | int,
        k_batch: int,
        in_ptr: Any,
        wei_ptr: Any,
        out_ptr: Any,
        workspace_ptr: Any = 0,
        stream: Any = 0,
    ) -> None:
        """Runs one given (kernel, k_batch) pair (e.g. a candidate) on stream."""
        self._kernel(kernel).run(problem, in_ptr, wei_ptr, out_ptr, workspace_ptr, stream, k_batch)

    def remember(
        self,
        problem: Problem,
        variant: str,
        datatype: str,
        kernel: Kernel | str | int,
        k_batch: int,
        why: str = "",
    ) -> Selection:
        """Records (kernel, k_batch) as select()'s answer for the problem on the current device
        (an autotuned pick): in the C dispatcher's selection cache and this process's memo, until
        a tuning database is loaded or the cache cleared. UnsupportedProblem /
        CkgenRuntimeError when the kernel cannot serve the problem."""
        k = self._kernel(kernel)
        text = why or f"autotune: {k.name} k_batch {k_batch}"
        rc = self._lib.ckgen_cache_put(
            ctypes.byref(c_problem(problem)),
            variant.encode(),
            datatype.encode(),
            k.index,
            int(k_batch),
            text.encode(),
        )
        if rc == 2:
            raise UnsupportedProblem(k.name, self._last_error().removeprefix(k.name + ": "))
        if rc != 0:
            raise CkgenRuntimeError(self._last_error(), code=rc)
        sel = Selection(k, int(k_batch), text, autotuned=True)
        memo = self._memo
        dev = self._lib.ckgen_current_device()
        memo.by_value[(problem, variant, datatype, dev, False)] = sel
        memo.by_id[(id(problem), variant, datatype, dev, False)] = (problem, sel)
        return sel

    def stream_is_capturing(self, stream: Any = 0) -> bool:
        """Whether stream captures a CUDA / HIP graph (True also when the runtime cannot tell)."""
        c = ctypes.c_int(1)
        self._lib.ckgen_stream_is_capturing(stream_arg(stream), ctypes.byref(c))
        return bool(c.value)

    def device_key(self) -> Any:
        """The autotune cache's key for the current device (None without a GPU)."""
        from ckgen import __version__
        from ckgen.runtime.autotune import DeviceKey, file_hash

        dev = self._device_info()
        if dev is None:
            return None
        if self._device_key is None or self._device_key.gpu != dev[0]:
            self._device_key = DeviceKey(
                gpu=dev[0],
                sm_count=dev[1],
                driver=dev[2],
                runtime=dev[3],
                ckgen_version=__version__,
                library_hash=file_hash(self.lib_path),
            )
        return self._device_key

    def autotune_store(self) -> Any:
        """The AutotuneStore (cache file) of the current device; None without a GPU."""
        from ckgen.runtime.autotune import AutotuneStore

        key = self.device_key()
        if key is None:
            return None
        st = self._memo.store
        if st is None or st.key != key:
            st = self._memo.store = AutotuneStore.for_key(key, self.arch)
        return st

    def _autotuned(
        self,
        problem: Problem,
        variant: str,
        datatype: str,
        stream: Any,
        tensors: Sequence[Any] | None,
        topk: int | None,
    ) -> Selection:
        from ckgen.runtime.autotune import autotune_topk

        store = self.autotune_store()
        if store is not None:
            e = store.get(variant, datatype, problem)
            if e is not None and e["kernel"] in self._by_name:
                try:
                    return self.remember(
                        problem,
                        variant,
                        datatype,
                        e["kernel"],
                        int(e.get("k_batch", 0)),
                        f"autotune: {e['kernel']} {float(e.get('ms', 0)) * 1e3:.2f} us "
                        f"(cache file {store.path})",
                    )
                except CkgenRuntimeError:
                    pass  # an entry the library cannot run: measure again
        heuristic = self._select_c(problem, variant, datatype, False)
        if heuristic.autotuned or store is None or self.stream_is_capturing(stream):
            return heuristic  # known, no GPU, or capturing: never time now
        cands = self.candidates(problem, variant, datatype, topk or autotune_topk())
        ranking = _time_candidates(self, problem, variant, cands, stream, tensors)
        if not ranking:
            return heuristic
        store.put(variant, datatype, problem, ranking)
        best = (
            ranking[0]
            if ranking[0][2] == min(r[2] for r in ranking)
            else min(ranking, key=lambda r: r[2])
        )
        return self.remember(
            problem,
            variant,
            datatype,
            best[0],
            best[1],
            f"autotune: {best[0]} {best[2] * 1e3:.2f} us, fastest of {len(ranking)} timed "
            f"(heuristic pick {heuristic.name})",
        )

    def _kernel(self, kernel: Kernel | str | int) -> Kernel:
        if isinstance(kernel, Kernel):
            return kernel
        if isinstance(kernel, int):
            if not 0 <= kernel < len(self.kernels):
                raise CkgenRuntimeError(
                    f"kernel index {kernel} out of range 0..{len(self.kernels) - 1}", code=1
                )
            return self.kernels[kernel]
        return self[kernel]

    def _check_devices(self, *xs: Any) -> None:
        """Tensors on different GPUs, or on another GPU than the current one (where the kernel
        launches), are refused."""
        devs = {d for d in (tensor_device(x) for x in xs) if d is not None}
        if not devs:
            return
        if len(devs) > 1:
            raise CkgenRuntimeError(
                f"tensors on different GPUs ({sorted(devs)}); put them on one device", code=3
            )
        cur = self._lib.ckgen_current_device()
        if cur >= 0 and devs != {cur}:
            raise CkgenRuntimeError(
                f"tensors on cuda:{devs.pop()} but the current device is cuda:{cur} (the kernel "
                "launches there): torch.cuda.set_device / a device guard",
                code=3,
            )

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
        files = render_project(exp.instances, spec, filtered=exp.filtered > 0)
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


def _autotune_env() -> bool:
    return os.environ.get("CKGEN_AUTOTUNE", "").strip().lower() in ("1", "true", "yes", "on")


def _written(variant: str) -> int:
    """Which of (in, wei, out) the variant writes."""
    return {"forward": 2, "backward_data": 0, "backward_weight": 1}.get(variant, 2)


class _Scratch:
    """Device buffers for timing: PyTorch's allocator when torch is loaded with CUDA, else the
    C API's (gpuMalloc); freed on exit."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.held: list[Any] = []
        torch = sys.modules.get("torch")
        self.torch = torch if torch is not None and torch.cuda.is_available() else None

    def alloc(self, nbytes: int) -> int:
        nbytes = max(256, int(nbytes))
        if self.torch is not None:
            t = self.torch.empty(nbytes, dtype=self.torch.uint8, device="cuda")
            self.held.append(t)
            return int(t.data_ptr())
        p = ctypes.c_void_p()
        if self.lib.ckgen_device_alloc(nbytes, ctypes.byref(p)) != 0:
            raise CkgenRuntimeError((self.lib.ckgen_last_error() or b"").decode(), code=6)
        self.held.append(int(p.value or 0))
        return int(p.value or 0)

    def __enter__(self) -> _Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        for h in self.held:
            if isinstance(h, int):
                self.lib.ckgen_device_free(h)
        self.held.clear()


def _time_candidates(
    reg: KernelLibrary,
    problem: Problem,
    variant: str,
    cands: Sequence[Candidate],
    stream: Any,
    tensors: Sequence[Any] | None,
) -> list[tuple[str, int, float]]:
    """(kernel name, k_batch, ms) of each candidate that ran, timed on stream with a scratch
    buffer for the tensor the variant writes (the caller's inputs when lent)."""
    from ckgen.runtime.autotune import ITERS, WARMUP

    if not cands:
        return []
    lib = reg._lib
    datatype = cands[0].kernel.datatype
    sizes = [ctypes.c_int64(0) for _ in range(3)]
    cp = ctypes.byref(c_problem(problem))
    if lib.ckgen_tensor_bytes(cp, datatype.encode(), *(ctypes.byref(x) for x in sizes)) != 0:
        raise CkgenRuntimeError(reg._last_error(), code=3)
    out: list[tuple[str, int, float]] = []
    with _Scratch(lib) as scratch:
        ptrs = []
        for i in range(3):
            lent = tensors[i] if tensors is not None and i < len(tensors) else None
            if lent is not None and i != _written(variant):
                ptrs.append(ptr_arg(lent))
            else:
                ptrs.append(scratch.alloc(sizes[i].value))
        ws_need = 0
        for c in cands:
            try:
                ws_need = max(ws_need, c.kernel.workspace_bytes(problem, c.k_batch))
            except CkgenRuntimeError:
                pass
        ws = scratch.alloc(ws_need) if ws_need > 0 else 0
        st = stream_arg(stream)
        for c in cands:
            ms = ctypes.c_float(0)
            rc = lib.ckgen_time_run(
                c.kernel.index,
                cp,
                ptrs[0],
                ptrs[1],
                ptrs[2],
                ws,
                st,
                c.k_batch,
                WARMUP,
                ITERS,
                ctypes.byref(ms),
            )
            if rc == 0 and ms.value > 0:
                out.append((c.kernel.name, c.k_batch, float(ms.value)))
    out.sort(key=lambda r: r[2])
    return out
