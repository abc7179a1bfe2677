#!/usr/bin/env python3
"""Host cost of KernelLibrary.select() and of a kernel launch through the Python runtime.

select(): the first call of a problem (selection cache empty: tuning database / cost model), a
repeated call with the same Problem object (this process's memo), with an equal but new Problem
object (the memo by value), and through the C dispatcher's selection cache alone (memo skipped).
Target: a repeated select() <= 2 us.

run() (needs a GPU and torch): host microseconds per Selection.run (Python checks + ctypes +
C API checks + launch enqueue), against the bare ctypes ckgen_run call, measured as the wall time
of N back-to-back launches of a tiny problem (the GPU is slower than neither: the host is what is
timed) with no synchronisation inside the loop.

    python bench/select_overhead.py --lib BUILD_DIR_OR_SO
    python bench/select_overhead.py --build [--kernels 'grouped_conv_fwd_fp16_2d_*ms3*']
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from pathlib import Path

from ckgen import Registry
from ckgen.model.problem import Problem
from ckgen.runtime.capi import c_problem


def per_call_us(fn, n: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", help="a built project's build dir or libckgen_dispatch.so")
    ap.add_argument("--build", action="store_true", help="JIT-build a small forward fp16 set")
    ap.add_argument("--kernels", default="grouped_conv_fwd_fp16_2d_*", help="globs for --build")
    ap.add_argument("--set", default="tests", help="config set for --build")
    ap.add_argument("--n", type=int, default=20000, help="calls per timing")
    ap.add_argument("--json", help="write the numbers here")
    a = ap.parse_args()
    if a.lib:
        reg = Registry.load(a.lib)
    elif a.build:
        reg = Registry.build(a.set, arch="sm_90a", kernels=[a.kernels], variants=["forward"])
    else:
        ap.error("--lib or --build")
    shapes = [
        Problem.make(G=g, N=n, C=c, K=k, input=(hw, hw), filter=(f, f), pad=f // 2)
        for g, n, c, k, hw, f in (
            (1, 32, 64, 64, 56, 3),
            (1, 32, 256, 64, 56, 1),
            (1, 1, 512, 512, 7, 3),
            (256, 32, 1, 1, 56, 3),  # depthwise (direct instances)
        )
    ]
    res: dict[str, float] = {}
    variant, dtype = "forward", "fp16"
    usable = []
    for p in shapes:
        try:
            reg.select(p, variant, dtype)
            usable.append(p)
        except Exception as ex:  # noqa: BLE001 - a shape the built set cannot run
            print(f"skip {p.key()}: {ex}", file=sys.stderr)
    if not usable:
        print("no shape is supported by this library", file=sys.stderr)
        return 1
    p = usable[0]

    def first() -> None:
        reg.clear_selection_cache()
        reg.select(p, variant, dtype)

    res["select_first_us"] = per_call_us(first, max(1, a.n // 100))
    reg.select(p, variant, dtype)
    res["select_repeat_same_object_us"] = per_call_us(lambda: reg.select(p, variant, dtype), a.n)
    q = Problem.from_json(p.to_json())
    reg.select(q, variant, dtype)
    qs = [Problem.from_json(p.to_json()) for _ in range(64)]
    i = [0]

    def equal_object() -> None:
        i[0] = (i[0] + 1) % 64
        reg.select(qs[i[0]], variant, dtype)

    res["select_repeat_equal_object_us"] = per_call_us(equal_object, a.n)
    res["select_c_cache_only_us"] = per_call_us(
        lambda: reg._select_c(p, variant, dtype, False), a.n
    )
    res["cache"] = reg.selection_cache_stats()  # type: ignore[assignment]

    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        tiny = Problem.make(N=1, C=64, K=64, input=(8, 8), filter=(3, 3), pad=1)
        sel = reg.select(tiny, variant, dtype)
        x = torch.randn(1, 8, 8, 64, device="cuda", dtype=torch.float16)
        w = torch.randn(64, 3, 3, 64, device="cuda", dtype=torch.float16)
        y = torch.empty(1, 8, 8, 64, device="cuda", dtype=torch.float16)
        stream = torch.cuda.current_stream()
        sel.run(tiny, x, w, y, stream=stream)
        torch.cuda.synchronize()
        n = min(a.n, 5000)

        def py_run() -> None:
            sel.run(tiny, x, w, y, stream=stream)

        res["run_python_us"] = per_call_us(py_run, n, repeat=3)
        torch.cuda.synchronize()
        lib, cp = reg._lib, ctypes.byref(c_problem(tiny))
        xp, wp, yp, sp = x.data_ptr(), w.data_ptr(), y.data_ptr(), stream.cuda_stream

        def c_run() -> None:
            lib.ckgen_run(sel.kernel.index, cp, xp, wp, yp, 0, sp, sel.k_batch)

        res["run_ctypes_us"] = per_call_us(c_run, n, repeat=3)
        torch.cuda.synchronize()

        def select_and_run() -> None:
            reg.select(tiny, variant, dtype).run(tiny, x, w, y, stream=stream)

        res["select_plus_run_us"] = per_call_us(select_and_run, n, repeat=3)
        torch.cuda.synchronize()
        res["gpu"] = torch.cuda.get_device_name()  # type: ignore[assignment]
    else:
        print("no GPU (torch.cuda): run() overhead not measured", file=sys.stderr)
    for k, v in res.items():
        print(f"{k:34s} {v:.2f}" if isinstance(v, float) else f"{k:34s} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("CKGEN_AUTOTUNE", "0")
    sys.exit(main())
