"""Host time ckgen.torch adds per convolution call, over the bare C launch (a benchmark for a GPU
machine, not a test).

The GPU is kept busy by a long torch.cuda._sleep first, so the calls only queue launches and the
wall time of a batch of calls is pure host time. Per layer it prints microseconds per call of:

  c_launch       ckgen_run through ctypes with a prebuilt problem struct (the floor)
  selection_run  Selection.run (the public Python API: builds the struct each call)
  ckgen_eager    ckgen.torch.conv, no grad (the eager path users take)
  ckgen_module   a converted nn.Conv2d (ckgen.torch.Conv2d, Parameters), no grad
  ckgen_op       torch.ops.ckgen.conv_forward through the dispatcher (what compiled graphs call)
  ckgen_train    ckgen.torch.conv forward + backward (3 launches) with autograd
  cudnn          F.conv2d, and cudnn_train forward + backward, for comparison

then "added" = ckgen_eager - c_launch (issue target: <= 10 us) and "train_added" =
ckgen_train - cudnn_train. bench/torch_host_cpu.py measures the Python path without a GPU.

    CKGEN_TORCH_LIB=build/lib/libckgen_dispatch.so python3 bench/torch_overhead.py [--csv out.csv]

Without CKGEN_TORCH_LIB it builds the fp16 2D default set (cached in ~/.cache/ckgen).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

import torch

import ckgen.torch as ct
from ckgen import Registry
from ckgen.runtime.capi import c_problem

PATHS = (
    "c_launch", "selection_run", "ckgen_eager", "ckgen_module", "ckgen_op", "ckgen_train",
    "cudnn", "cudnn_train", "added", "train_added",
)  # fmt: skip
LAYERS = [  # N, C, K, HW, filter, stride, pad (small: the GPU work never limits the loop)
    (1, 64, 64, 8, 3, 1, 1),
    (1, 256, 64, 8, 1, 1, 0),
    (1, 128, 128, 8, 3, 2, 1),
]


def _host_us(fn, calls: int = 40, reps: int = 9) -> float:
    """Median host microseconds per call of fn, with the GPU busy so nothing waits on it.

    A batch is `calls` calls: few enough that their launches (a training call makes several) stay
    well inside the launch queue, whose filling would block the host on the GPU. A sample whose
    batch outlasted the sleep queued ahead of it waited on the GPU: ValueError."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time queued ahead of the calls
        slept = torch.cuda.Event()
        slept.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
        if slept.query():
            raise ValueError(f"the GPU finished its sleep before {calls} calls were queued")
        torch.cuda.synchronize()
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU visible to PyTorch")
        return 2
    lib = os.environ.get("CKGEN_TORCH_LIB")
    reg = (
        Registry.load(lib)
        if lib
        else Registry.build("default", kernels=["grouped_conv_*_fp16_2d_*"], max_workers=0)
    )
    torch.backends.cudnn.benchmark = True
    rows = []
    for n, c, k, hw, f, s, p in LAYERS:
        x = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.float16)
        x = x.contiguous(memory_format=torch.channels_last)
        w = (torch.randn(k, c, f, f, device="cuda", dtype=torch.float16) * 0.1).contiguous(
            memory_format=torch.channels_last
        )
        y = ct.conv(x, w, None, s, p, registry=reg)
        prob = ct.make_problem(x.shape, w.shape, s, p)
        sel = reg.select(prob, "forward", "fp16")
        cp = c_problem(prob)
        run = reg._lib.ckgen_run
        idx, kb = sel.kernel.index, sel.k_batch
        px, pw, py = x.data_ptr(), w.data_ptr(), y.data_ptr()
        ws = torch.empty(max(sel.workspace_bytes(prob), 1), dtype=torch.uint8, device="cuda")
        pws = ws.data_ptr() if sel.workspace_bytes(prob) else 0
        stream = torch.cuda.current_stream().cuda_stream
        mod = ct.Conv2d(c, k, f, stride=s, padding=p, bias=False, registry=reg)
        mod = mod.to(device="cuda", dtype=torch.float16, memory_format=torch.channels_last)
        lid = ct.library_id(reg)
        conf = ((s, s), (p, p), (p, p), (1, 1), 1, lid)
        xg = x.clone().requires_grad_()
        wg = w.clone().requires_grad_()
        dy = torch.ones_like(y)

        def c_launch() -> None:
            assert run(idx, cp, px, pw, py, pws, stream, kb) == 0

        def selection_run() -> None:
            sel.run(prob, px, pw, py, pws, stream)

        def ckgen_eager() -> None:
            with torch.no_grad():
                ct.conv(x, w, None, s, p, registry=reg)

        def ckgen_module() -> None:
            with torch.no_grad():
                mod(x)

        def ckgen_op() -> None:
            with torch.no_grad():
                torch.ops.ckgen.conv_forward(x, w, None, *conf)

        def ckgen_train() -> None:
            ct.conv(xg, wg, None, s, p, registry=reg).backward(dy)

        def cudnn() -> None:
            with torch.no_grad():
                torch.nn.functional.conv2d(x, w, None, s, p)

        def cudnn_train() -> None:
            torch.nn.functional.conv2d(xg, wg, None, s, p).backward(dy)

        r = {"layer": f"n{n}c{c}k{k}_{hw}_f{f}s{s}p{p}", "kernel": sel.name}
        for name, fn in [
            ("c_launch", c_launch),
            ("selection_run", selection_run),
            ("ckgen_eager", ckgen_eager),
            ("ckgen_module", ckgen_module),
            ("ckgen_op", ckgen_op),
            ("ckgen_train", ckgen_train),
            ("cudnn", cudnn),
            ("cudnn_train", cudnn_train),
        ]:
            r[name] = round(_host_us(fn), 2)
        r["added"] = round(r["ckgen_eager"] - r["c_launch"], 2)
        r["train_added"] = round(r["ckgen_train"] - r["cudnn_train"], 2)
        rows.append(r)
        print(f"{r['layer']} ({r['kernel']}), host us per call:", flush=True)
        for name in PATHS:
            print(f"  {name:14} {r[name]:7.1f}", flush=True)
    worst = max(r["added"] for r in rows)
    print(f"added host time per ckgen.torch.conv call (worst layer): {worst:.1f} us (target <= 10)")
    print(f"{'path':14}" + "".join(f"{r['layer']:>24}" for r in rows))
    for name in PATHS:
        print(f"{name:14}" + "".join(f"{r[name]:24.1f}" for r in rows))
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
            wr.writeheader()
            wr.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
