"""bench/timing.py: the interleaved timing (every step timed in each round,
one after the other, in order) and the summary (medians, the reference's ratio)."""

from __future__ import annotations

import pytest
import timing


def test_rounds_interleave_the_steps_in_order() -> None:
    log: list[str] = []
    now = [0.0]
    cost = {"cudnn_bench": 0.002, "ckgen": 0.001}  # seconds per call

    def step(name: str):
        def run() -> None:
            log.append(name)
            now[0] += cost[name]

        return run

    steps = {name: step(name) for name in cost}
    before: list[str] = []
    times = timing.interleaved_ms(steps, 3, 2, before.append, lambda: None, clock=lambda: now[0])
    assert log == (["cudnn_bench"] * 2 + ["ckgen"] * 2) * 3
    assert before == ["cudnn_bench", "ckgen"] * 3
    assert times["cudnn_bench"] == pytest.approx([2.0] * 3)
    assert times["ckgen"] == pytest.approx([1.0] * 3)


def test_summary_takes_medians_and_the_reference_ratio() -> None:
    times = {"cudnn_bench": [2.0, 9.0, 2.2], "ckgen": [1.0, 1.1, 5.0], "ckgen_tune": []}
    s = timing.summary(times, "cudnn_bench")
    assert s["cudnn_bench"] == {"wall_ms": 2.2, "wall_min_ms": 2.0, "rounds": 3,
                                "speedup_vs_cudnn": 1.0}  # fmt: skip
    assert s["ckgen"]["wall_ms"] == 1.1 and s["ckgen"]["speedup_vs_cudnn"] == pytest.approx(2.0)
    assert "ckgen_tune" not in s  # nothing timed: no row values
    assert "speedup_vs_cudnn" not in timing.summary({"ckgen": [1.0]}, "cudnn_bench")["ckgen"]
