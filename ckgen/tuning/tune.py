"""Tuning database: every instance (and k_batch) timed per shape -> JSON read by the dispatcher
(dispatch/dispatcher.hpp, TuningDb), and the heuristic's quality on shapes it was not tuned on.

Format (version 1; also the autotune cache's, ckgen/runtime/autotune.py, which adds its key
under "autotune"):
  {"ckgen_tuning_db": 1, "arch": ..., "gpu": ..., "sm_count": ... (0: not recorded),
   "created": ..., "entries": [
     {"variant": "forward", "datatype": "fp16", "shape": "r50_l1_3x3_64_64",
      "problem": {"ndim": 2, "G": 1, "N": 2, "C": 64, "K": 64, "in": [1, 200, 200],
                  "filter": [1, 3, 3], "stride": [1, 1, 1], "dilation": [1, 1, 1],
                  "pad_l": [0, 1, 1], "pad_r": [0, 1, 1]},
      "kernel": "<best instance>", "k_batch": 0, "ms": 0.0123,
      "ranking": [{"kernel": ..., "k_batch": ..., "ms": ...}, ...]}]}   (every timed pair, fastest
      first)
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError, ConfigError, Where, shown
from ckgen.model.problem import Problem, load_shapes
from ckgen.tuning.profile import FAILED, is_fused_instance

DB_VERSION = 1


def build_db(
    rows: Iterable[dict[str, str]],
    problems: Sequence[Problem],
    arch: str = "",
    shapes: Sequence[str] | None = None,
    sm_count: int = 0,
    keep: int | None = None,
) -> dict[str, Any]:
    """Tuning DB from profiler rows; only shapes named in `shapes` when given. Every timed
    (instance, k_batch) of a shape is kept unless `keep` cuts the ranking to its fastest: the
    dispatcher's neighbour ranking scores an instance by its time relative to the best on each
    nearby tuned shape, so a short ranking hides how slow the rest are."""
    by_name = {p.name: p for p in problems}
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    gpu = ""
    for r in rows:
        if not r.get("ms") or r.get("verified") in FAILED:
            continue
        if shapes is not None and r["shape"] not in shapes:
            continue
        if r["shape"] not in by_name or is_fused_instance(r["instance"]):
            continue
        gpu = gpu or r.get("gpu", "")
        groups.setdefault((r["variant"], r["datatype"], r["shape"]), []).append(r)
    entries = []
    for (v, d, s), rs in sorted(groups.items()):
        rs.sort(key=lambda r: float(r["ms"]))
        seen = set()
        ranking = []
        for r in rs:
            k = (r["instance"], int(r.get("k_batch") or 0))
            if k in seen:
                continue
            seen.add(k)
            ranking.append({"kernel": k[0], "k_batch": k[1], "ms": float(r["ms"])})
            if keep is not None and len(ranking) == keep:
                break
        entries.append(
            {
                "variant": v,
                "datatype": d,
                "shape": s,
                "problem": by_name[s].to_json(),
                "kernel": ranking[0]["kernel"],
                "k_batch": ranking[0]["k_batch"],
                "ms": ranking[0]["ms"],
                "ranking": ranking,
            }
        )
    db = db_header(arch, gpu, sm_count)
    db["entries"] = entries
    return db


def db_header(arch: str, gpu: str, sm_count: int = 0) -> dict[str, Any]:
    """The fields of a tuning database before its entries (`ckgen tune` and autotune)."""
    return {
        "ckgen_tuning_db": DB_VERSION,
        "arch": arch,
        "gpu": gpu,
        "sm_count": int(sm_count),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_db(path: Path, db: dict[str, Any]) -> None:
    """Writes the database atomically (temporary file + rename, under a lock beside it), so a
    process reading it meanwhile sees the old or the new file."""
    from ckgen.runtime.autotune import locked, write_json_atomic

    try:
        with locked(Path(path)):
            write_json_atomic(Path(path), db)
    except OSError as ex:
        raise CkgenError(f"cannot write the tuning database {path}: {ex.strerror or ex}") from None


def read_db(path: Path) -> dict[str, Any]:
    """A tuning database, validated; ConfigError (file: key path) for anything else."""
    from ckgen.config.loader import load_json

    db = load_json(Path(path), "tuning database")
    validate_db(Path(path), db)
    return db


def validate_db(path: Path, db: Any) -> None:
    """The structure the dispatcher relies on (see the format above): ConfigError naming the
    file and the key path of the first problem."""

    def bad(kp: str, msg: str) -> ConfigError:
        return ConfigError(Where(path, None, kp), msg)

    if not isinstance(db, dict) or "entries" not in db:
        raise bad("", f"not a ckgen tuning database (no 'entries'): got {shown(db)}")
    ver = db.get("ckgen_tuning_db", DB_VERSION)
    if ver != DB_VERSION:
        raise bad("ckgen_tuning_db", f"version {shown(ver)}; this ckgen reads {DB_VERSION}")
    for key in ("arch", "gpu", "created"):
        if key in db and not isinstance(db[key], str):
            raise bad(key, f"expected a string, got {shown(db[key])}")
    entries = db["entries"]
    if not isinstance(entries, list):
        raise bad("entries", f"expected a list of entries, got {shown(entries)}")

    def check_pick(kp: str, e: Any) -> None:
        if not isinstance(e, dict):
            raise bad(kp, f"expected a mapping, got {shown(e)}")
        for key, want in (("kernel", str), ("k_batch", int), ("ms", float)):
            if key not in e:
                raise bad(kp, f"missing '{key}'")
            v = e[key]
            ok = (
                isinstance(v, str)
                if want is str
                else not isinstance(v, bool)
                and isinstance(v, int if want is int else (int, float))
                and v >= 0
            )
            if not ok:
                what = {str: "a string", int: "a non-negative integer", float: "a number >= 0"}
                raise bad(f"{kp}.{key}", f"expected {what[want]}, got {shown(v)}")

    for n, e in enumerate(entries):
        kp = f"entries[{n}]"
        check_pick(kp, e)
        for key in ("variant", "datatype", "shape"):
            if not isinstance(e.get(key), str):
                raise bad(f"{kp}.{key}", f"expected a string, got {shown(e.get(key))}")
        prob = e.get("problem")
        if not isinstance(prob, dict):
            raise bad(f"{kp}.problem", f"expected a mapping, got {shown(prob)}")
        for key, v in prob.items():
            vals = v if isinstance(v, list) else [v]
            if not vals or not all(isinstance(x, int) and not isinstance(x, bool) for x in vals):
                raise bad(f"{kp}.problem.{key}", f"expected integers, got {shown(v)}")
        ranking = e.get("ranking", [])
        if not isinstance(ranking, list):
            raise bad(f"{kp}.ranking", f"expected a list, got {shown(ranking)}")
        for m, r in enumerate(ranking):
            check_pick(f"{kp}.ranking[{m}]", r)


def split_shapes(problems: Sequence[Problem], part: str) -> list[str]:
    """'even' / 'odd' halves of a shapes file (by row), or 'all'."""
    if part == "all":
        return [p.name for p in problems]
    r = 0 if part == "even" else 1
    return [p.name for i, p in enumerate(problems) if i % 2 == r]


@dataclass
class Quality:
    variant: str
    datatype: str
    shape: str
    selected: str
    k_batch: int
    source: str
    selected_ms: float | None  # None: the selected (kernel, k_batch) was not timed
    best: str
    best_ms: float

    @property
    def ratio(self) -> float | None:
        return None if self.selected_ms is None else self.selected_ms / self.best_ms


def evaluate(
    registry: Any,
    rows: Iterable[dict[str, str]],
    problems: Sequence[Problem],
    shapes: Sequence[str],
    cost_model_only: bool = False,
) -> list[Quality]:
    """For each (variant, datatype, shape) of `shapes` that was profiled: the dispatcher's choice,
    its measured time (looked up in the rows), and the best measured time."""
    from ckgen.runtime.library import NoKernel

    by_name = {p.name: p for p in problems}
    timed: dict[tuple[str, str, str], dict[tuple[str, int], float]] = {}
    for r in rows:
        if not r.get("ms") or r.get("verified") in FAILED or r["shape"] not in shapes:
            continue
        t = timed.setdefault((r["variant"], r["datatype"], r["shape"]), {})
        k = (r["instance"], int(r.get("k_batch") or 0))
        t[k] = min(t.get(k, math.inf), float(r["ms"]))
    # The cost model chooses among the split counts that were measured (backward_weight).
    kbs = sorted(
        {kb for (v, _d, _s), t in timed.items() if v == "backward_weight" for (_n, kb) in t}
    )
    if kbs and hasattr(registry, "set_k_batch_candidates"):
        registry.set_k_batch_candidates(kbs)
    out = []
    for (v, d, s), t in sorted(timed.items()):
        (bname, _bkb), bms = min(t.items(), key=lambda kv: kv[1])
        try:
            sel = registry.select(by_name[s], v, d, cost_model_only=cost_model_only)
        except NoKernel as ex:
            out.append(Quality(v, d, s, "(none: " + ex.reason + ")", 0, "none", None, bname, bms))
            continue
        ms = t.get((sel.name, sel.k_batch))
        out.append(Quality(v, d, s, sel.name, sel.k_batch, sel.source, ms, bname, bms))
    return out


def summarize(q: Sequence[Quality]) -> dict[str, Any]:
    ratios = sorted(x.ratio for x in q if x.ratio is not None)
    n = len(ratios)
    if not n:
        return {"count": len(q), "timed": 0}

    def pct(p: float) -> float:
        return ratios[min(n - 1, int(round(p * (n - 1))))]

    return {
        "count": len(q),
        "timed": n,
        "untimed": len(q) - n,
        "within_1pct": sum(r <= 1.01 for r in ratios) / n,
        "within_10pct": sum(r <= 1.10 for r in ratios) / n,
        "within_25pct": sum(r <= 1.25 for r in ratios) / n,
        "geomean_ratio": math.exp(sum(math.log(r) for r in ratios) / n),
        "median_ratio": pct(0.5),
        "p90_ratio": pct(0.9),
        "max_ratio": ratios[-1],
    }


def shapes_problems(path: Path) -> list[Problem]:
    return load_shapes(path)
