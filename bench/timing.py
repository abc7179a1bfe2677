"""Timing shared by the step benchmarks (bench/profile_step.py, bench/model_steps.py): steps
compared in interleaved rounds, and the medians of the samples. Host-bound steps (eager,
torch.compile without CUDA graphs) drift with the CPU's state by tens of percent within a minute,
so backends are compared within a round, not one after the other. No torch here."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def interleaved_ms(
    steps: dict[str, Callable[[], Any]],
    rounds: int,
    n: int,
    before: Callable[[str], None],
    sync: Callable[[], None],
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Milliseconds per call of each step, one sample a round: each round runs every step n
    times, one after the other in the dict's order (before(name) first, sync() around)."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            before(name)
            sync()
            t = clock()
            for _ in range(n):
                fn()
            sync()
            times[name].append((clock() - t) * 1e3 / n)
    return times


def summary(times: dict[str, list[float]], reference: str) -> dict[str, dict[str, float]]:
    """Per step: wall_ms (median), wall_min_ms, rounds and speedup_vs_cudnn (the reference's
    median over this one's; absent without a reference)."""
    ref = statistics.median(times[reference]) if times.get(reference) else None
    out: dict[str, dict[str, float]] = {}
    for name, t in times.items():
        if not t:
            continue
        med = statistics.median(t)
        row = {"wall_ms": round(med, 3), "wall_min_ms": round(min(t), 3), "rounds": len(t)}
        if ref:
            row["speedup_vs_cudnn"] = round(ref / med, 4)
        out[name] = row
    return out
