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
import dataclasses
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError
from ckgen.model.epilogue import PLAIN, Epilogue
from ckgen.model.problem import Problem
from ckgen.runtime import jit as _jit
from ckgen.runtime.capi import (
    CEpilogue,
    CkgenRuntimeError,
    NoKernel,
    UnsupportedProblem,
    c_problem,
    load_lib,
    stream_arg,
)
from ckgen.runtime.jit import CACHE_ENV, CACHE_VERSION, LIB_NAME
from ckgen.runtime.kernel import Candidate, Kernel, Selection, supported
from ckgen.runtime.select_cache import MEMOS, SelectMemo, autotuned, select_fused

__all__ = [
    "CACHE_ENV",
    "CACHE_VERSION",
    "LIB_NAME",
    "Candidate",
    "CkgenRuntimeError",
    "Kernel",
    "KernelLibrary",
    "NoKernel",
    "Selection",
    "UnsupportedProblem",
    "supported",
]


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
        ops = CEpilogue()
        for i in range(self._lib.ckgen_num_kernels()):
            v, d, nd, tm, tn, tk, _kb = self._lib.ckgen_kernel_info(i).decode().split()
            self._lib.ckgen_kernel_epilogue(i, ctypes.byref(ops))
            self.kernels.append(
                Kernel(
                    self,
                    i,
                    self._lib.ckgen_kernel_name(i).decode(),
                    v,
                    d,
                    int(nd),
                    (int(tm), int(tn), int(tk)),
                    Epilogue.from_codes(
                        ops.channel_op, ops.activation, ops.residual, ops.stats, ops.out_datatype
                    ),
                )
            )
        self._by_name = {k.name: k for k in self.kernels}
        self._memo = MEMOS.setdefault(str(self.lib_path.resolve()), SelectMemo())
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

    def load_shipped_tuning_db(self, force: bool | None = None, quiet: bool = False) -> Path | None:
        """Loads the shipped tuning database (configs/tuning/<arch>_*.json) measured on this GPU
        (name and SM count); None, with a warning naming what ships (none when quiet), when none
        matches (with force: the first one of the arch)."""
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
        if quiet:
            return None
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
        fusion: str | Epilogue | None = None,
    ) -> Selection:
        """Best kernel for the problem: tuning database (exact, then the cost model corrected by the
        residuals measured on the nearest tuned shapes), else the cost model. NoKernel (with the
        reasons of the nearest kernels) when none supports it.

        Repeated calls are answered from a cache (this process's memo in front of the C
        dispatcher's selection cache, keyed by problem, variant, datatype and current device).

        autotune (default: CKGEN_AUTOTUNE=1): on a problem's first call, time the top-k
        candidates (topk, default CKGEN_AUTOTUNE_TOPK or 24) on `stream` with scratch outputs
        (tensors = (in, wei, out) lends the inputs; the tensor the variant writes is never
        touched), keep the fastest and persist it in the per-GPU autotune cache file. Never
        times while the stream captures a graph (the known pick, else the heuristic).

        fusion (a spelling such as "bias_relu" or an Epilogue; backward: "drelu",
        "bias_grad_drelu", ...): only kernels whose fused operations are exactly those take part,
        ranked as their plain twins would be (the tuning database's entries of the twins, else
        the cost model; never autotuned); the Selection's run() takes the operands (backward: y=,
        the saved forward output, and db=). A plain request never gets a fused kernel. A
        conversion to the inputs' own datatype (``to_fp16`` of fp16) converts nothing and is
        dropped from the request."""
        ep = Epilogue.parse(fusion) if fusion is not None else PLAIN
        if ep.out_datatype is not None and ep.out_datatype.value == datatype:
            ep = dataclasses.replace(ep, out_datatype=None)
        if ep.fused:
            return select_fused(self, problem, variant, datatype, ep)
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
            sel = autotuned(self, problem, variant, datatype, stream, tensors, topk)
        else:
            sel = self._select_c(problem, variant, datatype, cost_model_only)
        if lib.ckgen_cache_epoch() == memo.epoch:  # not cleared meanwhile
            if len(memo.by_id) >= SelectMemo.CAP:
                memo.clear()
            memo.by_id[key] = (problem, sel)
            memo.by_value[vkey] = sel
        return sel

    def _select_c(
        self,
        problem: Problem,
        variant: str,
        datatype: str,
        cost_model_only: bool,
        ep: Epilogue = PLAIN,
    ) -> Selection:
        kb = ctypes.c_int(0)
        why = ctypes.c_char_p()
        if ep.fused:
            i = self._lib.ckgen_select_fused(
                ctypes.byref(c_problem(problem)),
                variant.encode(),
                datatype.encode(),
                ctypes.byref(CEpilogue(*ep.codes)),
                ctypes.byref(kb),
                ctypes.byref(why),
            )
        else:
            fn = self._lib.ckgen_select_cost_model if cost_model_only else self._lib.ckgen_select
            i = fn(
                ctypes.byref(c_problem(problem)),
                variant.encode(),
                datatype.encode(),
                ctypes.byref(kb),
                ctypes.byref(why),
            )
        if i < 0:
            msg = self._last_error()
            if ep.fused and "fusion not for" in msg:
                raise CkgenRuntimeError(msg, code=3)
            raise NoKernel(msg)
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

    # ------------------------------------------------------------------ build
    @classmethod
    def load(cls, path: Path | str) -> KernelLibrary:
        """A registry over an already built project: its build dir, or the .so itself."""
        p = Path(path)
        for cand in (p, p / "lib" / LIB_NAME, p / "build" / "lib" / LIB_NAME):
            if cand.is_file():
                return cls(cand)
        raise CkgenError(f"no {LIB_NAME} under {p} (build the project with `ckgen build -o DIR`)")

    build = classmethod(_jit.build)
    clear_cache = staticmethod(_jit.clear_cache)

    def find(
        self,
        variant: str | None = None,
        datatype: str | None = None,
        ndim: int | None = None,
        fusion: str | Epilogue | None = None,
    ) -> list[Kernel]:
        """Kernels by variant / datatype / ndim (None: any) and fusion (a spelling or an
        Epilogue; "none": plain kernels only)."""
        ep = Epilogue.parse(fusion) if fusion is not None else None
        return [
            k
            for k in self.kernels
            if (variant is None or k.variant == variant)
            and (datatype is None or k.datatype == datatype)
            and (ndim is None or k.ndim == ndim)
            and (ep is None or k.epilogue == ep)
        ]

    def __repr__(self) -> str:
        return f"KernelLibrary({len(self.kernels)} kernels for {self.arch}, {self.lib_path})"
