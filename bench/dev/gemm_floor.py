"""The GEMM a convolution becomes, timed through cuBLAS beside the benchmark (GPU machine).

Usage: PYTHONPATH=bench python3 bench/dev/gemm_floor.py OUT.csv
For each row: the convolution's implicit GEMM as a batched matmul over its groups
(G x [M, Kred] @ [Kred, N], M = output pixels, Kred = taps x C, N = K), fp16 and bf16, operands
already laid out (no im2col): the time a GEMM of that shape takes on this GPU, the floor an
implicit-GEMM kernel of the same shape is measured against. Timing as bench/peer_cudnn.py
(CUDA-graph replay, median).
"""
import csv, sys

import torch

from peer_cudnn import auto_inner, timed  # run with PYTHONPATH=bench

ROWS = [  # name, G, M, Kred, N
    ("grouped_3x3_g4_c64_100", 4, 2 * 100 * 100, 9 * 64, 64),
    ("head_box_3x3_256_36_100", 1, 2 * 100 * 100, 9 * 256, 36),
    ("dw_like_k64_20000", 1, 4 * 2 * 100 * 100, 9 * 64, 64),
]


def main(out: str) -> None:
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "datatype", "form", "ms", "tflops"])
        for name, G, M, Kr, N in ROWS:
            for dt, tdt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
                a = torch.randn(G, M, Kr, device="cuda", dtype=tdt)
                b = torch.randn(G, Kr, N, device="cuda", dtype=tdt)
                bt = b.transpose(1, 2).contiguous()
                at = a.transpose(1, 2).contiguous()
                forms = {"pixels_x_weights": lambda: torch.bmm(a, b),
                         "weights_x_pixels": lambda: torch.bmm(bt, at)}
                for form, fn in forms.items():
                    ms = timed(fn, auto_inner(fn))
                    w.writerow([name, dt, form, f"{ms:.5f}", f"{2 * G * M * Kr * N / ms / 1e9:.1f}"])
                    print(name, dt, form, f"{ms * 1000:.2f} us", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
