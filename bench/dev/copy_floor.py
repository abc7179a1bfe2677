"""What a graph-replayed device copy of a layer's bytes costs on this GPU: the practical floor
of a memory-bound direct kernel timed the way the profiler times it (back-to-back launches in
one CUDA graph, events around the replay, median of the samples).

    python3 bench/dev/copy_floor.py [--csv out.csv]

Rows: the input -> output copy of the depthwise / small-group / grouped coverage layers
(x and y of the same size: the forward pass's bytes), and a 16-byte copy (the launch alone).
"""
from __future__ import annotations

import argparse
import csv
import sys

import torch

# name: elements of x (= elements of y), NHWC fp16
LAYERS = {
    "launch_only_16B": 8,
    "dw_3x3_g256_56": 8 * 56 * 56 * 256,
    "dw_3x3s2_g512_28(x)": 8 * 28 * 28 * 512,
    "resnext_3x3_g32_c4_56": 8 * 56 * 56 * 128,
    "resnext_3x3_g32_c8_28": 8 * 28 * 28 * 256,
    "grouped_3x3_g4_c64_100": 2 * 100 * 100 * 256,
}


def time_graph(fn, iters: int = 200, repeat: int = 9) -> float:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    g.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) * 1e3 / iters)
    samples.sort()
    return samples[len(samples) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", help="write the rows here too")
    args = ap.parse_args()
    rows = []
    for name, n in LAYERS.items():
        x = torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        us = time_graph(lambda: y.copy_(x))
        mb = 2 * n * 2 / 1e6
        rows.append({"layer": name, "mbytes_moved": f"{mb:.2f}", "copy_us": f"{us:.2f}",
                     "gbs": f"{mb * 1e3 / us:.0f}"})
        print(f"{name:26s} {mb:7.2f} MB moved  {us:7.2f} us  {mb * 1e3 / us:6.0f} GB/s")
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
