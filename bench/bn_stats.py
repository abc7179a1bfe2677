"""The separate pass over each layer's output that a fused epilogue replaces, in PyTorch, timed
by CUDA-graph replay, and the fused conv against conv + that pass. --op stats: forward stats (a
conv epilogue's channel sums) against torch.batch_norm_stats (what a training BatchNorm reads of
the output); --op fp32 / bf16 / fp16: an output conversion (to_<datatype>) against the cast.

    python3 bench/bn_stats.py time shapes.csv --out bn.csv [--dtype fp16] [--op stats]  # GPU
    python3 bench/bn_stats.py report pairs.csv bn.csv                                   # anywhere

`pairs.csv`: bench/fused_pairs.py report --suffix _stats (or _ofp32, ...: best plain, best
fused instance and the best plain one's twin per layer, from one profiler run).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

from ckgen.model.problem import load_shapes

COLUMNS = ("shape", "out_elems", "op", "pass_ms")
OPS = ("stats", "fp32", "bf16", "fp16")


def time_shapes(shapes: Path, out: Path, dtype: str, op: str = "stats", reps: int = 20) -> None:
    import torch

    from ckgen.torch.checks import torch_dtype

    dt = torch_dtype(dtype)

    def separate(y: torch.Tensor) -> object:
        return torch.batch_norm_stats(y, 1e-5) if op == "stats" else y.to(torch_dtype(op))

    rows = []
    for p in load_shapes(shapes):
        shape = (p.N, p.G * p.K, *tuple(p.output)[3 - p.ndim :])
        fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(len(shape))
        y = torch.randn(shape, device="cuda", dtype=dt)
        y = y.to(memory_format=fmt) if fmt else y
        for _ in range(3):
            separate(y)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s), torch.cuda.graph(g):
            for _ in range(reps):
                separate(y)
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
        ms = f"{sorted(ts)[2]:.5f}"
        rows.append({"shape": p.name, "out_elems": y.numel(), "op": op, "pass_ms": ms})
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def _geomean(v: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def report(pairs: Path, bn: Path) -> str:
    passes = list(csv.DictReader(bn.open()))
    sep = {r["shape"]: float(r["pass_ms"]) for r in passes}
    op = passes[0]["op"] if passes else "stats"
    what = (
        ("stats instance", "batch_norm_stats") if op == "stats" else (f"to_{op}", f"cast to {op}")
    )
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
        f"{len(fused_sep)} layers: best {what[0]} / (best plain + {what[1]}) "
        f"{_geomean(fused_sep):.3f} (worst {max(fused_sep):.3f}, faster on "
        f"{sum(x < 1 for x in fused_sep)}); / best plain alone {_geomean(fused_plain):.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time", help="time the separate pass per shape (GPU)")
    t.add_argument("shapes", type=Path)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--dtype", choices=("fp16", "bf16", "fp32"), default="fp16")
    t.add_argument("--op", choices=OPS, default="stats", help="stats, or the cast's datatype")
    r = sub.add_parser("report", help="fused against conv + the separate pass")
    r.add_argument("pairs", type=Path)
    r.add_argument("bn", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "time":
        time_shapes(a.shapes, a.out, a.dtype, a.op)
    else:
        print(report(a.pairs, a.bn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
