"""select()'s Python side: the memo in front of the C dispatcher's selection cache, and the
autotune path (time the cost model's top candidates on scratch buffers, keep the fastest)."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ckgen.model.epilogue import Epilogue
from ckgen.model.problem import Problem
from ckgen.runtime.capi import CkgenRuntimeError, c_problem, ptr_arg, stream_arg
from ckgen.runtime.kernel import Candidate, Selection

if TYPE_CHECKING:
    from ckgen.runtime.library import KernelLibrary


class SelectMemo:
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
        self.autotune_env = env_autotune()

    def clear(self) -> None:
        """Drops the answers; CKGEN_AUTOTUNE is read again (reading the environment on every
        select() would cost more than the rest of a cached answer)."""
        self.by_id.clear()
        self.by_value.clear()
        self.autotune_env = env_autotune()


MEMOS: dict[str, SelectMemo] = {}


def select_fused(
    reg: KernelLibrary, problem: Problem, variant: str, datatype: str, ep: Epilogue
) -> Selection:
    """select()'s fused path: the C dispatcher's answer for exactly these operations (ranked as
    their plain twins), memoised by value with the epilogue in the key."""
    memo = reg._memo
    lib = reg._lib
    epoch = lib.ckgen_cache_epoch()
    if epoch != memo.epoch:
        memo.clear()
        memo.epoch = epoch
    vkey = (problem, variant, datatype, lib.ckgen_current_device(), ep)
    sel = memo.by_value.get(vkey)
    if sel is None:
        sel = reg._select_c(problem, variant, datatype, False, ep)
        if lib.ckgen_cache_epoch() == memo.epoch:
            if len(memo.by_value) >= SelectMemo.CAP:
                memo.clear()
            memo.by_value[vkey] = sel
    return sel


def autotuned(
    reg: KernelLibrary,
    problem: Problem,
    variant: str,
    datatype: str,
    stream: Any,
    tensors: Sequence[Any] | None,
    topk: int | None,
) -> Selection:
    """select()'s autotune path: the pick the cache file knows, else time the top-k candidates
    (never while the stream captures a graph), persist the ranking and remember the fastest."""
    from ckgen.runtime.autotune import autotune_topk

    store = reg.autotune_store()
    if store is not None:
        e = store.get(variant, datatype, problem)
        if e is not None and e["kernel"] in reg._by_name:
            try:
                return reg.remember(
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
    heuristic = reg._select_c(problem, variant, datatype, False)
    if heuristic.autotuned or store is None or reg.stream_is_capturing(stream):
        return heuristic  # known, no GPU, or capturing: never time now
    cands = reg.candidates(problem, variant, datatype, topk or autotune_topk())
    ranking = time_candidates(reg, problem, variant, cands, stream, tensors)
    if not ranking:
        return heuristic
    store.put(variant, datatype, problem, ranking)
    best = (
        ranking[0]
        if ranking[0][2] == min(r[2] for r in ranking)
        else min(ranking, key=lambda r: r[2])
    )
    return reg.remember(
        problem,
        variant,
        datatype,
        best[0],
        best[1],
        f"autotune: {best[0]} {best[2] * 1e3:.2f} us, fastest of {len(ranking)} timed "
        f"(heuristic pick {heuristic.name})",
    )


def env_autotune() -> bool:
    return os.environ.get("CKGEN_AUTOTUNE", "").strip().lower() in ("1", "true", "yes", "on")


def written(variant: str) -> int:
    """Which of (in, wei, out) the variant writes."""
    return {"forward": 2, "backward_data": 0, "backward_weight": 1}.get(variant, 2)


class Scratch:
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

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        for h in self.held:
            if isinstance(h, int):
                self.lib.ckgen_device_free(h)
        self.held.clear()


def time_candidates(
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
    with Scratch(lib) as scratch:
        ptrs = []
        for i in range(3):
            lent = tensors[i] if tensors is not None and i < len(tensors) else None
            if lent is not None and i != written(variant):
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
