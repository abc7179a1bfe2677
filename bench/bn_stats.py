"""The separate statistics pass that forward stats (a conv epilogue's channel sums) replaces:
PyTorch's torch.batch_norm_stats over each layer's output (what a training BatchNorm reads of
it), timed by CUDA-graph replay, and the fused conv against conv + that pass.

    python3 bench/bn_stats.py time shapes.csv --out bn.csv [--dtype fp16]   # on a GPU
    python3 bench/bn_stats.py report pairs.csv bn.csv                        # anywhere

`pairs.csv`: bench/fused_pairs.py report --suffix _stats (best plain, best stats instance and
the best plain one's twin per layer, from one profiler run).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

from ckgen.model.problem import load_shapes

COLUMNS = ("shape", "out_elems", "stats_ms")


def time_shapes(shapes: Path, out: Path, dtype: str, reps: int = 20) -> None:
    import torch

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    rows = []
    for p in load_shapes(shapes):
        shape = (p.N, p.G * p.K, *tuple(p.output)[3 - p.ndim :])
        fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(len(shape))
        y = torch.randn(shape, device="cuda", dtype=dt)
        y = y.to(memory_format=fmt) if fmt else y
        for _ in range(3):
            torch.batch_norm_stats(y, 1e-5)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s), torch.cuda.graph(g):
            for _ in range(reps):
                torch.batch_norm_stats(y, 1e-5)
        torch.cuda.synchronize()
        g.replay()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(5):
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) / reps)
        rows.append({"shape": p.name, "out_elems": y.numel(), "stats_ms": f"{sorted(ts)[2]:.5f}"})
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def _geomean(v: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def report(pairs: Path, bn: Path) -> str:
    sep = {r["shape"]: float(r["stats_ms"]) for r in csv.DictReader(bn.open())}
    fused_sep, fused_plain, twin = [], [], []
    for r in csv.DictReader(pairs.open()):
        if r["shape"] not in sep:
            continue
        f, p = float(r["fused_ms"]), float(r["plain_ms"])
        fused_sep.append(f / (p + sep[r["shape"]]))
        fused_plain.append(f / p)
        if r.get("twin_ms"):
            twin.append(float(r["twin_ms"]) / p)
    if not fused_sep:
        return "no layer in both files"
    return (
        f"{len(fused_sep)} layers: best stats instance / (best plain + batch_norm_stats) "
        f"{_geomean(fused_sep):.3f} (worst {max(fused_sep):.3f}, faster on "
        f"{sum(x < 1 for x in fused_sep)}); / best plain alone {_geomean(fused_plain):.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time", help="time batch_norm_stats per shape (GPU)")
    t.add_argument("shapes", type=Path)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--dtype", choices=("fp16", "bf16"), default="fp16")
    r = sub.add_parser("report", help="fused against conv + the separate pass")
    r.add_argument("pairs", type=Path)
    r.add_argument("bn", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "time":
        time_shapes(a.shapes, a.out, a.dtype)
    else:
        print(report(a.pairs, a.bn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
