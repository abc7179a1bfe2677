"""Which kernels cuDNN runs for a shape (GPU machine): torch.profiler over a few calls after
cudnn.benchmark has chosen, printing each kernel's name, launch count per call and mean time.

  python3 bench/dev/cudnn_kernels.py SHAPES.csv NAME[,NAME...] [VARIANT ...]

With NCU_ONE=1 set (under `ncu --profile-from-start off`) each call runs once between
cudaProfilerStart / Stop instead, so Nsight Compute sees only cuDNN's kernels of that call.
SHAPES.csv is a problem-set CSV (name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right);
fp16 and bf16, channels-last, as ../shared/tools/peer_cudnn.py sets them up.
"""
import csv
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

torch.backends.cudnn.benchmark = True


def vec(s: str, nd: int) -> list[int]:
    v = [int(x) for x in str(s).split("x")]
    return v * nd if len(v) == 1 else v


def calls(row: dict, dtype: torch.dtype) -> dict:
    nd = int(row["ndim"])
    G, N, C, K = (int(row[k]) for k in ("G", "N", "C", "K"))
    inp, flt = vec(row["input"], nd), vec(row["filter"], nd)
    st, dil, pad = vec(row["stride"], nd), vec(row["dilation"], nd), vec(row["pad_left"], nd)
    mf = {1: None, 2: torch.channels_last, 3: torch.channels_last_3d}[nd]
    x = torch.randn(N, G * C, *inp, device="cuda", dtype=dtype)
    w = torch.randn(G * K, C, *flt, device="cuda", dtype=dtype)
    if mf is not None:
        x, w = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
    y = torch.ops.aten.convolution(x, w, None, st, pad, dil, False, [0] * nd, G)
    dy = torch.randn_like(y)
    bw = torch.ops.aten.convolution_backward
    return {
        "forward": lambda: torch.ops.aten.convolution(x, w, None, st, pad, dil, False, [0] * nd, G),
        "backward_data": lambda: bw(dy, x, w, None, st, pad, dil, False, [0] * nd, G, [True, False, False]),
        "backward_weight": lambda: bw(dy, x, w, None, st, pad, dil, False, [0] * nd, G, [False, True, False]),
    }


def main() -> None:
    shapes, names = sys.argv[1], set(sys.argv[2].split(","))
    variants = sys.argv[3:] or ["forward", "backward_data", "backward_weight"]
    print(torch.cuda.get_device_name(), "cudnn", torch.backends.cudnn.version())
    reps = 20
    for row in csv.DictReader(open(shapes)):
        if row["name"] not in names:
            continue
        for dtype in (torch.float16, torch.bfloat16):
            fns = calls(row, dtype)
            for v in variants:
                fn = fns[v]
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
                if os.environ.get("NCU_ONE"):
                    torch.cuda.profiler.start()
                    fn()
                    torch.cuda.synchronize()
                    torch.cuda.profiler.stop()
                    print(f"{row['name']} {v} {str(dtype)[6:]}: one call profiled")
                    continue
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(reps):
                        fn()
                    torch.cuda.synchronize()
                total = 0.0
                lines = []
                for e in prof.key_averages():
                    dev_us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
                    if e.count == 0 or dev_us <= 0 or e.key.startswith(("cudaLaunch", "cudaDevice", "cudaStream")):
                        continue
                    total += dev_us / reps
                    lines.append(f"    {dev_us / reps:8.2f} us/call  x{e.count / reps:.0f}  {e.key[:150]}")
                print(f"{row['name']} {v} {str(dtype)[6:]}: {total:.2f} us of kernels per call")
                print("\n".join(lines))


if __name__ == "__main__":
    main()
