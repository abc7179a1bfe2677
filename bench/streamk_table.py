"""StreamK vs split-K table (seed 002's layout) from a backward_weight profiler CSV.

    python3 bench/streamk_table.py streamk.csv [--out streamk_table.md]

Per shape and tile configuration (the instance name's tile, e.g. 64x64x32): the best verified
split-K time (over its k_batch sweep, one- and two-stage) is 1.00x; StreamK is the best of the
linear and tree reductions, persistent or not, as a speedup over it (split-K ms / StreamK ms:
above 1.00x StreamK is faster), with the winning variant. A second table has the times.
Rows that failed verification are left out and counted under the tables.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TILE_RE = re.compile(r"_t(\d+x\d+x\d+)_")
STREAMK_RE = re.compile(r"_sk(lin|tree)(_persist)?$")


@dataclass(frozen=True)
class Run:
    shape: str
    tile: str  # "128x128x32"
    method: str  # "splitk" or "streamk"
    variant: str  # splitk: "kb4" / "kb4 2st"; streamk: "linear" / "tree persistent"
    ms: float


def classify(instance: str, k_batch: str) -> tuple[str, str, str] | None:
    """(tile, method, variant) of a profiler row, None when the name has no tile."""
    t = TILE_RE.search(instance)
    if not t:
        return None
    m = STREAMK_RE.search(instance)
    if m:
        variant = ("linear" if m.group(1) == "lin" else "tree") + (
            " persistent" if m.group(2) else ""
        )
        return t.group(1), "streamk", variant
    variant = f"kb{k_batch or '?'}" + (" 2st" if instance.endswith("_2st") else "")
    return t.group(1), "splitk", variant


def shape_label(row: dict[str, str]) -> str:
    """'3x3 128->128 N=32 14x14' from the problem columns (the seed's way of naming shapes)."""
    return f"{row['filter']} {row['C']}->{row['K']} N={row['N']} {row['input']}"


def load(path: Path) -> tuple[list[Run], dict[str, str], int]:
    """Verified runs, shape name -> label (in file order), rows left out for failing verification."""
    runs: list[Run] = []
    labels: dict[str, str] = {}
    failed = 0
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            if row.get("variant", "backward_weight") != "backward_weight":
                continue
            labels.setdefault(row["shape"], shape_label(row))
            if row.get("verified", "").lower() not in ("pass", "none"):
                failed += 1
                continue
            try:
                ms = float(row["ms"])
            except (KeyError, ValueError):
                continue
            c = classify(row["instance"], row.get("k_batch", ""))
            if ms > 0 and c:
                runs.append(Run(row["shape"], c[0], c[1], c[2], ms))
    return runs, labels, failed


def best(runs: list[Run], shape: str, tile: str, method: str) -> Run | None:
    mine = [r for r in runs if r.shape == shape and r.tile == tile and r.method == method]
    return min(mine, key=lambda r: r.ms) if mine else None


def tiles_of(runs: list[Run]) -> list[str]:
    """Tile configurations, smallest first."""

    def area(t: str) -> tuple[int, ...]:
        m, n, k = (int(x) for x in t.split("x"))
        return (m * n, m, k)

    return sorted({r.tile for r in runs}, key=area)


def render(runs: list[Run], labels: dict[str, str], failed: int) -> str:
    tiles = tiles_of(runs)
    out = [
        "| Shape | " + " | ".join(f"{t} Split-K | {t} StreamK" for t in tiles) + " |",
        "|---|" + "---|---|" * len(tiles),
    ]
    detail = [
        "| Shape | Tile | best split-K | ms | best StreamK | ms | linear ms | tree ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for shape, label in labels.items():
        cells = []
        for t in tiles:
            sk, sp = best(runs, shape, t, "streamk"), best(runs, shape, t, "splitk")
            if sp is None:
                cells += ["n/a", f"({sk.variant})" if sk else "n/a"]
            elif sk is None:
                cells += ["1.00x", "n/a"]
            else:
                cells += ["1.00x", f"{sp.ms / sk.ms:.2f}x ({sk.variant})"]
            lin = min(
                (
                    r.ms
                    for r in runs
                    if r.shape == shape
                    and r.tile == t
                    and r.method == "streamk"
                    and r.variant.startswith("linear")
                ),
                default=None,
            )
            tree = min(
                (
                    r.ms
                    for r in runs
                    if r.shape == shape
                    and r.tile == t
                    and r.method == "streamk"
                    and r.variant.startswith("tree")
                ),
                default=None,
            )
            detail.append(
                f"| {label} | {t} | {sp.variant if sp else 'n/a'} | {_ms(sp)} | "
                f"{sk.variant if sk else 'n/a'} | {_ms(sk)} | {_num(lin)} | {_num(tree)} |"
            )
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    text = "\n".join(out) + "\n\n" + "\n".join(detail) + "\n"
    if failed:
        text += f"\n{failed} row(s) left out: verification failed or errored.\n"
    return text


def _ms(r: Run | None) -> str:
    return _num(r.ms if r else None)


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "csv",
        type=Path,
        help="backward_weight profiler CSV (--csv of ckgen_profiler_backward_weight)",
    )
    ap.add_argument("--out", type=Path, help="also write the markdown here")
    a = ap.parse_args(argv)
    if not a.csv.is_file():
        print(f"{a.csv}: no such file", file=sys.stderr)
        return 1
    runs, labels, failed = load(a.csv)
    if not runs:
        print(f"{a.csv}: no verified backward_weight rows", file=sys.stderr)
        return 1
    text = render(runs, labels, failed)
    print(text, end="")
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
