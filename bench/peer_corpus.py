"""cuDNN's time (through PyTorch) for every problem of a shapes CSV, in a time box: the corpus
version of bench/peer_cudnn.py (same method: channels-last tensors, cudnn.benchmark on, the GPU
time per call from CUDA-graph replay of a loop of calls), with fewer repeats, the datatypes
asked for, no eager timing, and the CSV written row by row.

    python3 bench/peer_corpus.py --datatype fp16,bf16 --time-limit 200 --out cudnn.csv corpus.csv

Columns (those of peer_cudnn.py that bench/compare.py and bench/corpus_report.py read):
shape,variant,datatype,cudnn_ms,cudnn_tflops,gpu. Asymmetric padding, which PyTorch's conv
cannot express, is timed on an input larger by the two sides' difference (as if padded
beforehand; the conv pads the symmetric part): cuDNN's kernels on the same problem, without
the padding copy a PyTorch user would also pay (`--asymmetric skip` leaves those rows out). Rows that fail (out of
memory, ...) are printed as skipped. When the time limit passes, the remaining problems are
left out (the count is printed); shapes files ordered round-robin over models
(bench/corpus_shapes.py) keep the coverage even.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from pathlib import Path

VARIANTS = ("forward", "backward_data", "backward_weight")


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--datatype", default="fp16,bf16")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--time-limit", type=float, default=0, help="seconds (0: none)")
    ap.add_argument("--target-ms", type=float, default=1.0, help="GPU time per timed replay")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument(
        "--asymmetric",
        choices=("prepad", "skip"),
        default="prepad",
        help="asymmetric padding: time the conv on a pre-padded input, or skip the row",
    )
    a = ap.parse_args(argv)
    torch.backends.cudnn.benchmark = True
    dev = "cuda"
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    dtypes = [d for d in a.datatype.split(",") if d]
    variants = [v for v in a.variants.split(",") if v]
    gpu = torch.cuda.get_device_name()
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), gpu, flush=True)

    def timed(fn) -> float:
        """Median ms per call over reps replays of a graph of `inner` calls."""
        fn()  # cudnn.benchmark chooses its algorithm on the first call
        torch.cuda.synchronize()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        inner = max(1, min(200, int(a.target_ms / max(s.elapsed_time(e), 1e-3))))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(inner):
                fn()
        g.replay()
        ts = []
        for _ in range(a.reps):
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / inner)
        del g
        return statistics.median(ts)

    def vec(s: str, nd: int) -> list[int]:
        v = [int(x) for x in str(s).split("x")]
        return v * nd if len(v) == 1 else v

    def measure(row, dn, inp, flt, st, dil, pl, pr) -> list[list[str]]:
        """cuDNN's rows of one problem and datatype (tensors freed on return). Asymmetric
        padding: the input grows by pl - min(pl, pr) before and pr - min(pl, pr) after in each
        dimension (as if padded beforehand), the conv pads min(pl, pr)."""
        nd = int(row["ndim"])
        G, N, C, K = (int(row[k]) for k in ("G", "N", "C", "K"))
        mf = {1: None, 2: torch.channels_last, 3: torch.channels_last_3d}[nd]
        pad = [min(a_, b_) for a_, b_ in zip(pl, pr, strict=True)]
        inp = [i + a_ + b_ - 2 * p_ for i, a_, b_, p_ in zip(inp, pl, pr, pad, strict=True)]
        x = torch.randn(N, G * C, *inp, device=dev, dtype=dts[dn])
        w = torch.randn(G * K, C, *flt, device=dev, dtype=dts[dn])
        if mf is not None:
            x = x.contiguous(memory_format=mf)
            w = w.contiguous(memory_format=mf)
        conv = torch.ops.aten.convolution
        bwd = torch.ops.aten.convolution_backward
        zeros = [0] * nd
        y = conv(x, w, None, st, pad, dil, False, zeros, G)
        dy = torch.randn_like(y)
        flops = 2.0 * G * N * K * C * math.prod(flt) * math.prod(y.shape[2:])
        fns = {
            "forward": lambda: conv(x, w, None, st, pad, dil, False, zeros, G),
            "backward_data": lambda: bwd(
                dy, x, w, None, st, pad, dil, False, zeros, G, [True, False, False]
            ),
            "backward_weight": lambda: bwd(
                dy, x, w, None, st, pad, dil, False, zeros, G, [False, True, False]
            ),
        }
        out = []
        for v in variants:
            ms = timed(fns[v])
            out.append([row["name"], v, dn, f"{ms:.5f}", f"{flops / ms / 1e9:.2f}", gpu])
        return out

    rows = []
    for sf in a.shapes:
        with open(sf, newline="") as f:
            rows += list(
                csv.DictReader(line for line in f if line.strip() and not line.startswith("#"))
            )
    t0 = time.perf_counter()
    done = skipped = 0
    with open(a.out, "w", newline="") as f:
        wr = csv.writer(f, lineterminator="\n")
        wr.writerow(["shape", "variant", "datatype", "cudnn_ms", "cudnn_tflops", "gpu"])
        for i, row in enumerate(rows):
            if a.time_limit and time.perf_counter() - t0 > a.time_limit:
                print(
                    f"time limit {a.time_limit} s: {len(rows) - i} of {len(rows)} problems left out"
                )
                break
            if i % 50 == 0:
                print(f"{i} / {len(rows)} problems, {time.perf_counter() - t0:.0f} s", flush=True)
            nd = int(row["ndim"])
            inp, flt = vec(row["input"], nd), vec(row["filter"], nd)
            st, dil = vec(row["stride"], nd), vec(row["dilation"], nd)
            pl, pr = vec(row["pad_left"], nd), vec(row["pad_right"], nd)
            if pl != pr and a.asymmetric == "skip":
                print("skip", row["name"], "asymmetric padding")
                skipped += 1
                continue
            for dn in dtypes:
                try:
                    wr.writerows(measure(row, dn, inp, flt, st, dil, pl, pr))
                    done += 1
                except Exception as ex:  # noqa: BLE001  (out of memory, unsupported, ...)
                    print("skip", row["name"], dn, type(ex).__name__, str(ex)[:200])
                    skipped += 1
                    torch.cuda.synchronize()
            f.flush()
    print(
        f"{done} (problem, datatype) timed, {skipped} skipped in {time.perf_counter() - t0:.1f} s "
        f"-> {a.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
