"""bench/calibration/cost_calibration.py: the per-pipeline refit of the cost model's calibration
and its leave-one-model-out score (no library: synthetic timed rows)."""

from __future__ import annotations

import math

from calibration import cost_calibration as cc  # bench/ is on the tests' path (pyproject.toml)


def _rows() -> tuple[list, list[dict[str, str]]]:
    """Two models of three problems each; multistage runs 9x its estimate, wavelet_tma at it, and
    the estimates rank multistage first, so the shipped calibration picks wrong everywhere."""
    rows, layers = [], []
    for model in ("a", "b"):
        for i in range(3):
            s = f"{model}{i}"
            layers.append({"shape": s, "row": s, "model": model, "count": "1"})
            rows.append((s, "forward", "multistage", 90.0, 10.0))
            rows.append((s, "forward", "wavelet_tma", 20.0, 20.0))
    return rows, layers


def test_fit_is_the_square_root_of_the_median_ratio() -> None:
    rows, _ = _rows()
    corr = cc.fit(rows)
    assert math.isclose(corr[("forward", "multistage")], 3.0)
    assert math.isclose(corr[("forward", "wavelet_tma")], 1.0)


def test_held_out_score_counts_the_refit_without_the_held_out_model() -> None:
    rows, layers = _rows()
    within, geomean = cc.held_out_score(rows, layers, "forward", set())
    assert within == 0.0 and math.isclose(geomean, 4.5)
    within, geomean = cc.held_out_score(rows, layers, "forward", {"multistage", "wavelet_tma"})
    assert within == 1.0 and math.isclose(geomean, 1.0)
    # a model whose rows no other model's rows calibrate keeps the shipped picks
    alone = [r for r in rows if r[0].startswith("a") or r[2] == "wavelet_tma"]
    within, _ = cc.held_out_score(alone, layers, "forward", {"multistage", "wavelet_tma"})
    assert within == 0.5
