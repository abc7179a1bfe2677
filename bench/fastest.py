"""The fastest row per (shape, variant, datatype) of profiler CSV rows, shared by bench/compare.py
and bench/corpus_report.py (which differ only in which verification results count)."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def fastest_rows(
    rows: Iterable[dict[str, str]], usable: Callable[[dict[str, str]], bool]
) -> dict[tuple[str, str, str], dict[str, str]]:
    """(shape, variant, datatype) -> the row with the lowest ms > 0 among the usable ones (rows
    without a numeric ms are skipped; on a tie the first row wins)."""
    best: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        if not usable(r):
            continue
        try:
            ms = float(r["ms"])
        except (KeyError, ValueError):
            continue
        if ms <= 0:
            continue
        k = (r["shape"], r["variant"], r["datatype"])
        if k not in best or ms < float(best[k]["ms"]):
            best[k] = r
    return best
