"""Result CSVs of the whole-model benchmarks (models.py, fused_inference.py): reading rows, the
resumable writer (rows of a previous, interrupted call first; each new row appended to the
resume file as it is measured), and the shared row helpers."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def skipped(row: dict) -> bool:
    """A row a resumed run measures again (out of budget, no library, CUDA failed before)."""
    return str(row.get("status", "")).startswith("skipped")


def num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


class Writer:
    """The CSV, row by row; with resume, the rows that file holds (but the skipped ones) come
    first and count as done (by key(row)), and each new measured row is appended to it too."""

    def __init__(
        self,
        path: Path,
        resume: Path | None,
        columns: Sequence[str],
        key: Callable[[dict], Hashable],
        fmt: Callable[[Any], str],
    ) -> None:
        self.path, self.resume, self.columns, self.fmt = path, resume, list(columns), fmt
        self.rows: list[dict] = []
        self.done: dict[Any, dict] = {}
        for r in read_rows(resume) if resume else []:
            if not skipped(r):
                self.done[key(r)] = r
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = path.open("w", newline="")
        self._w = csv.DictWriter(self._f, fieldnames=self.columns, extrasaction="ignore")
        self._w.writeheader()
        for r in self.done.values():
            self._put(r)
        self._f.flush()
        if resume and not resume.is_file():
            resume.parent.mkdir(parents=True, exist_ok=True)
            with resume.open("w", newline="") as f:
                csv.DictWriter(f, fieldnames=self.columns).writeheader()

    def _line(self, row: dict) -> dict:
        return {k: self.fmt(row.get(k)) for k in self.columns}

    def _put(self, row: dict) -> None:
        self.rows.append(row)
        self._w.writerow(self._line(row))

    def write(self, row: dict) -> None:
        self._put(row)
        self._f.flush()
        if self.resume and not skipped(row):
            with self.resume.open("a", newline="") as f:
                csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore").writerow(
                    self._line(row)
                )

    def close(self) -> None:
        self._f.close()
