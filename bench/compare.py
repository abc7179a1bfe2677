"""Merge profiler CSVs with cuDNN's timing into the benchmark CSV (columns: docs/design.md),
print a speedup table and the geomean per variant.

    python3 bench/compare.py --gpu "NVIDIA H200" --cudnn cudnn.csv --out result.csv prof_*.csv
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from fastest import fastest_rows

COLUMNS = [
    "shape",
    "variant",
    "datatype",
    "instance",
    "ms",
    "tflops",
    "cudnn_ms",
    "cudnn_tflops",
    "speedup",
    "gpu",
    "floor_ms",
    "frac_of_floor",
]


def _rows(paths: list[Path]) -> Iterator[dict[str, str]]:
    for p in paths:
        with p.open() as f:
            yield from csv.DictReader(f)


def best_rows(paths: list[Path]) -> dict[tuple[str, str, str], dict[str, str]]:
    """Fastest verified (or unverified when --verify none) row per shape x variant x datatype."""
    return fastest_rows(_rows(paths), lambda r: r.get("verified", "").lower() in ("pass", "none"))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--cudnn", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("profiles", type=Path, nargs="+")
    a = ap.parse_args()
    ours = best_rows(a.profiles)
    peer = {}
    with a.cudnn.open() as f:
        for row in csv.DictReader(f):
            peer[(row["shape"], row["variant"], row["datatype"])] = row
    rows = []
    for key, r in sorted(ours.items()):
        p = peer.get(key)
        if p is None:
            continue
        ms, cms = float(r["ms"]), float(p["cudnn_ms"])
        rows.append(
            {
                "shape": key[0],
                "variant": key[1],
                "datatype": key[2],
                "instance": r["instance"],
                "ms": f"{ms:.5f}",
                "tflops": f"{float(r['tflops']):.2f}",
                "cudnn_ms": f"{cms:.5f}",
                "cudnn_tflops": p["cudnn_tflops"],
                "speedup": f"{cms / ms:.3f}",
                "gpu": a.gpu,
                "floor_ms": p.get("floor_ms", ""),
                "frac_of_floor": f"{float(p['floor_ms']) / ms:.4g}" if p.get("floor_ms") else "",
            }
        )
    with a.out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    geo: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        geo[(r["variant"], r["datatype"])].append(math.log(float(r["speedup"])))
    print(
        f"{'shape':34s} {'variant':16s} {'dt':5s} {'ours ms':>9s} {'cudnn ms':>9s} {'speedup':>8s}"
    )
    for r in rows:
        print(
            f"{r['shape']:34s} {r['variant']:16s} {r['datatype']:5s} {float(r['ms']):9.4f} {float(r['cudnn_ms']):9.4f} {float(r['speedup']):8.3f}"
        )
    for (v, dt), logs in sorted(geo.items()):
        fr = [
            math.log(float(r["frac_of_floor"]))
            for r in rows
            if (r["variant"], r["datatype"]) == (v, dt)
            and r["frac_of_floor"]
            and float(r["frac_of_floor"]) > 0
        ]
        frac = f", geomean floor/ours {math.exp(sum(fr) / len(fr)):.3f}" if fr else ""
        print(
            f"geomean speedup {v:16s} {dt}: {math.exp(sum(logs) / len(logs)):.3f} over {len(logs)} shapes, "
            f"min {math.exp(min(logs)):.3f}{frac}"
        )


if __name__ == "__main__":
    main()
