"""Add a later profile's rows to a tuning database: for each database entry (variant, datatype,
shape) the profile measured, the (instance, k_batch) pairs it timed that the entry's ranking does
not hold join the ranking, which is re-sorted and cut to its previous length (or --keep); the
entry's pick is the new first. Rows that failed verification are left out. For instances added
to the default set after the database was tuned (their times come from another call on the same
GPU model: expect a few per cent between calls).

    python3 bench/db_merge_profile.py --db configs/tuning/sm_90a_H200.json \\
        prof_forward.csv prof_backward_data.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ckgen.tuning.tune import read_db, write_db


def merge(db: dict, rows: list[dict[str, str]], keep: int = 0) -> int:
    """Merges rows into db's entries in place; returns how many entries changed."""
    timed: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        if r.get("verified", "pass") not in ("pass", "skip"):
            continue
        key = (r["variant"], r["datatype"], r["shape"])
        kb = int(r.get("k_batch") or 0)
        timed.setdefault(key, []).append(
            {"kernel": r["instance"], "k_batch": kb, "ms": float(r["ms"])}
        )
    changed = 0
    for e in db["entries"]:
        new = timed.get((e["variant"], e["datatype"], e["shape"]))
        if not new:
            continue
        have = {(c["kernel"], c["k_batch"]) for c in e["ranking"]}
        add = [c for c in new if (c["kernel"], c["k_batch"]) not in have]
        if not add:
            continue
        n = keep or len(e["ranking"])
        ranking = sorted(e["ranking"] + add, key=lambda c: c["ms"])[:n]
        if ranking == e["ranking"]:
            continue
        e["ranking"] = ranking
        e["kernel"], e["k_batch"], e["ms"] = (
            ranking[0]["kernel"],
            ranking[0]["k_batch"],
            ranking[0]["ms"],
        )
        changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="tuning database, rewritten in place")
    ap.add_argument("--keep", type=int, default=0, help="ranking length (0: each entry's own)")
    ap.add_argument("profiles", type=Path, nargs="+", help="profiler CSVs (ckgen_profiler_* --csv)")
    a = ap.parse_args(argv)
    db = read_db(a.db)
    rows: list[dict[str, str]] = []
    for p in a.profiles:
        with p.open(newline="") as f:
            rows += list(csv.DictReader(line for line in f if not line.startswith("#")))
    n = merge(db, rows, a.keep)
    write_db(a.db, db)
    print(f"{n} of {len(db['entries'])} entries changed -> {a.db}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
