"""Best time per shape with a set of trial instances against the best without them, from
profiler CSVs of one run (the A/B of a trial beside a default set).

    python3 bench/dev/best_ab.py --trial '*_w4x1x1_*_lm1x8_*' /tmp/pp/prof_*.csv
    python3 bench/dev/best_ab.py --trial '*_w4x1x1_wt64x64x16_*_lm1x8_*' --all-rows ...

A row is (variant, datatype, shape); instances whose name matches a --trial glob form the trial
side. Prints the rows the trial wins (every row with --all-rows) and, per variant and datatype,
the geomean of best-with-trial / best-without over the rows that have an instance without.
"""
from __future__ import annotations

import argparse
import csv
import fnmatch
import math
import sys
from collections import defaultdict

Row = tuple[str, str, str]  # variant, datatype, shape


def best_times(paths: list[str], trial: list[str], verified: set[str]) -> dict[Row, dict[str, tuple[float, str]]]:
    """(variant, datatype, shape) -> side ('trial' / 'rest') -> (best us, instance)."""
    best: dict[Row, dict[str, tuple[float, str]]] = defaultdict(dict)
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                us = float(r.get("ms") or 0) * 1e3
                if us <= 0 or r.get("verified") not in verified:
                    continue
                side = "trial" if any(fnmatch.fnmatchcase(r["instance"], g) for g in trial) else "rest"
                key = (r["variant"], r["datatype"], r["shape"])
                if side not in best[key] or us < best[key][side][0]:
                    best[key][side] = (us, r["instance"])
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csvs", nargs="+", help="profiler CSVs (ckgen_profiler --csv)")
    ap.add_argument("--trial", action="append", required=True, help="instance-name glob of the trial side (repeatable)")
    ap.add_argument("--verified", default="pass", help="accepted verified values, comma-separated (default: pass)")
    ap.add_argument("--all-rows", action="store_true", help="print every row, not only the trial's wins")
    args = ap.parse_args()
    best = best_times(args.csvs, args.trial, set(args.verified.split(",")))
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    for key in sorted(best):
        sides = best[key]
        if "rest" not in sides:
            continue
        rest, rest_name = sides["rest"]
        tr, tr_name = sides.get("trial", (math.inf, ""))
        b = min(rest, tr)
        ratios[key[:2]].append(b / rest)
        if tr < rest or args.all_rows:
            mark = f"  <- {tr_name}" if tr < rest else ""
            print(f"{key[0]:15s} {key[1]} {key[2]:30s} rest {rest:8.2f} trial {tr:8.2f} us  best/rest {b / rest:.3f}{mark}")
    for (v, dt), rs in sorted(ratios.items()):
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"{v} {dt}: best-with-trial / best-without geomean {g:.4f} ({len(rs)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
