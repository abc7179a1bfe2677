"""Groups of 16 and 32 channels per group on the direct matrix paths
(bench/device_wide_groups.sh).

    python3 bench/wide_groups.py shapes --out shapes.csv [--seed 16] [--count 24] [--channels 16,32]
        [--random-channels 16,32] [--random-strides 1,1,2]
    python3 bench/wide_groups.py report prof.csv cudnn.csv --variant forward --out rows.csv
        [--candidate REGEX]

`shapes`: the corpus layers (bench/shapes/models.csv) with C = K = 16 or 32 per group (--channels), and
`count` random layers of the same family (seeded: C = K drawn from --random-channels, 2-64 groups,
batch 1-32, 7-56 pixels a side, 1x1 / 3x3 / 1x3 / 3x1 filters, strides drawn from
--random-strides, dilation 1 / 2), in the profiler's shape format.
`report`: per shape and datatype of one variant the best candidate instance (default: the matrix
path's 16 / 32-channel groups or 16-pixel blocks; --candidate: a regular expression on the
instance name), the best of every other instance of the run, and cuDNN's time: rows to --out,
geomeans printed.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import re
import sys
from pathlib import Path

from corpus_shapes import CorpusRow, dedupe, read_corpus, write_shapes

from ckgen.model.problem import SHAPE_COLUMNS

_G, _C, _K = (SHAPE_COLUMNS.index(c) - 1 for c in ("G", "C", "K"))  # in CorpusRow.cells
# A direct matrix-path instance whose tile K (channels per group) is 16 or 32, or whose tile M is
# 16 pixels (the stride-2 forward blocks).
CANDIDATE = re.compile(r"_(t\d+x\d+x(16|32)|t16x\d+x\d+)_w\d+x1x1_wt16x8x16_direct_")
FILTERS = (
    ("1x1", "1x1", 0),
    ("3x3", "1x1", 1),
    ("1x3", "1x1", 1),
    ("3x1", "1x1", 1),
    ("3x3", "2x2", 2),
)


def random_layers(
    seed: int,
    count: int,
    channels: tuple[int, ...] = (16, 32),
    strides: tuple[int, ...] = (1, 1, 2),
) -> list[CorpusRow]:
    """`count` seeded layers of the family: channels per group from `channels`, strides from
    `strides` (the defaults draw the layers they always drew)."""
    rng = random.Random(seed)
    rows: list[CorpusRow] = []
    while len(rows) < count:
        cg = rng.choice(channels)
        g = rng.choice((2, 4, 8, 16, 32, 64))
        n = rng.choice((1, 8, 32))
        hw = rng.choice((7, 14, 28, 56))
        f, dil, pad = rng.choice(FILTERS)
        s = rng.choice(strides)
        if n * hw * hw * g * cg > 32 * 56 * 56 * 256:  # keep a layer under ~50 MB of input
            continue
        fy, fx = (int(v) for v in f.split("x"))
        py, px = (pad if fy > 1 else 0), (pad if fx > 1 else 0)
        name = f"rand{len(rows):02d}_g{g}_c{cg}_n{n}_{hw}_{f}s{s}d{dil[0]}"
        cells = (
            "2", str(g), str(n), str(cg), str(cg), f"{hw}x{hw}", f, f"{s}x{s}", dil,
            f"{py}x{px}", f"{py}x{px}",
        )  # fmt: skip
        rows.append(CorpusRow(name, "random", 1, cells))
    return rows


def cmd_shapes(args: argparse.Namespace) -> int:
    corpus = read_corpus(Path(__file__).parent / "shapes" / "models.csv")
    wide = [
        r
        for r in corpus
        if int(r.cells[_G]) > 1
        and r.cells[_C] == r.cells[_K]
        and r.cells[_C] in args.channels.split(",")
    ]
    rand = random_layers(
        args.seed, args.count, _ints(args.random_channels), _ints(args.random_strides)
    )
    rows = dedupe(wide)[0] + rand
    write_shapes(args.out, rows)
    print(f"{len(rows)} shapes ({len(rows) - args.count} corpus) -> {args.out}")
    return 0


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def _geomean(v: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def cmd_report(args: argparse.Namespace) -> int:
    candidate = re.compile(args.candidate) if args.candidate else CANDIDATE
    best: dict[tuple[str, str], dict[str, tuple[float, str]]] = {}
    with args.profile.open() as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if not r.get("ms"):
                continue
            kind = "cand" if candidate.search(r["instance"]) else "other"
            slot = best.setdefault((r["shape"], r["datatype"]), {})
            ms = float(r["ms"])
            if kind not in slot or ms < slot[kind][0]:
                slot[kind] = (ms, r["instance"])
    cudnn: dict[tuple[str, str], float] = {}
    with args.cudnn.open() as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["variant"] == args.variant and r.get("cudnn_ms"):
                cudnn[(r["shape"], r["datatype"])] = float(r["cudnn_ms"])
    out = []
    for (shape, dt), slot in sorted(best.items()):
        if "cand" not in slot:
            continue
        cand_ms, cand = slot["cand"]
        other_ms, other = slot.get("other", (float("nan"), ""))
        ref = cudnn.get((shape, dt), float("nan"))
        out.append({
            "shape": shape, "variant": args.variant, "datatype": dt, "candidate": cand, "candidate_ms": f"{cand_ms:.5f}",
            "other": other, "other_ms": f"{other_ms:.5f}", "cudnn_ms": f"{ref:.5f}",
            "other_over_candidate": f"{other_ms / cand_ms:.3f}",
            "cudnn_over_best_before": f"{ref / other_ms:.3f}",
            "cudnn_over_best_after": f"{ref / min(cand_ms, other_ms):.3f}",
        })  # fmt: skip
    if not out:
        print("no shape with a candidate time", file=sys.stderr)
        return 1
    with args.out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    for dt in sorted({r["datatype"] for r in out}):
        rows = [r for r in out if r["datatype"] == dt]
        for part, keep in (
            ("corpus", lambda n: not n.startswith("rand")),
            ("random", lambda n: n.startswith("rand")),
        ):
            sel = [r for r in rows if keep(r["shape"])]
            if not sel:
                continue
            g = {k: _geomean([float(r[k]) for r in sel if not math.isnan(float(r[k]))])
                 for k in ("other_over_candidate", "cudnn_over_best_before", "cudnn_over_best_after")}  # fmt: skip
            low = min((float(r["cudnn_over_best_after"]) for r in sel), default=float("nan"))
            print(
                f"{args.variant} {dt} {part} ({len(sel)} shapes): best before / candidate {g['other_over_candidate']:.3f}, "
                f"cuDNN / best before {g['cudnn_over_best_before']:.3f}, "
                f"cuDNN / best after {g['cudnn_over_best_after']:.3f} (lowest {low:.3f})"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("shapes")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--seed", type=int, default=16)
    s.add_argument("--count", type=int, default=24)
    s.add_argument("--channels", default="16,32", help="corpus layers' channels per group")
    s.add_argument("--random-channels", default="16,32", help="random layers' channels per group")
    s.add_argument("--random-strides", default="1,1,2", help="random layers' strides, drawn evenly")
    r = sub.add_parser("report")
    r.add_argument("profile", type=Path)
    r.add_argument("cudnn", type=Path)
    r.add_argument(
        "--variant", required=True, choices=("forward", "backward_data", "backward_weight")
    )
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--candidate", help="regular expression of the candidate instances' names")
    args = ap.parse_args(argv)
    return cmd_shapes(args) if args.cmd == "shapes" else cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
