"""Adds profiler rows of instances a tuning database has not measured to its entries for the same
(variant, datatype, shape), re-ranking each entry by time (ckgen.tune's order). For rows measured
in a later call on the same GPU model, e.g. a new form on the shapes it serves:

    python3 bench/dev/db_add_rows.py configs/tuning/sm_90a_H100.json --kernels '*_win' \
        bench/results/2026-11-28_H100_window_check/window_*_1.csv.gz ...

Only rows of shapes the database already holds, verified (not fail / error), and of instances
in its ranking's absence are added; the best time of an instance over the files is kept.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import gzip
import json
from pathlib import Path


def rows(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        yield from csv.DictReader(f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("csv", type=Path, nargs="+")
    ap.add_argument("--kernels", default="*", help="instance name glob of the rows to add")
    a = ap.parse_args()
    db = json.loads(a.db.read_text())
    entries = {(e["variant"], e["datatype"], e["shape"]): e for e in db["entries"]}
    best: dict[tuple[str, str, str, str], float] = {}
    for p in a.csv:
        for r in rows(p):
            if r.get("verified") in ("fail", "error") or not r.get("ms") or not float(r["ms"]):
                continue
            if not fnmatch.fnmatch(r["instance"], a.kernels):
                continue
            k = (r["variant"], r["datatype"], r["shape"], r["instance"])
            best[k] = min(best.get(k, 1e30), float(r["ms"]))
    added = 0
    for (v, d, s, inst), ms in sorted(best.items()):
        e = entries.get((v, d, s))
        if e is None or any(x["kernel"] == inst for x in e["ranking"]):
            continue
        e["ranking"].append({"kernel": inst, "k_batch": 0, "ms": round(ms, 6)})
        added += 1
    for e in entries.values():
        e["ranking"].sort(key=lambda x: x["ms"])
        top = e["ranking"][0]
        e["kernel"], e["k_batch"], e["ms"] = top["kernel"], top["k_batch"], top["ms"]
    a.db.write_text(json.dumps(db, indent=1) + "\n")
    print(f"{added} rows added to {a.db}")


if __name__ == "__main__":
    main()
