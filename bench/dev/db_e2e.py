"""GPU machine: the shipped H100 tuning database end to end through ckgen.torch on grouped g4
backward_weight (G = 4, C = K = 64, N = 2, 100x100, 3x3, pad 1, fp16): which instance select()
takes without and with the database, the result against PyTorch's fp32 weight gradient on fresh
random inputs (a fresh, unwritten dw each call), and each selection's time (CUDA events, median).

    python3 bench/dev/db_e2e.py   (prints; builds two instances into the JIT cache)
"""
import statistics

import torch

import ckgen
import ckgen.torch as ct
from ckgen.resources import tuning_dir

KERNELS = ["grouped_conv_bwd_weight_fp16_2d_t64x192x64_w4x1x1_wt64x192x16_wltma4_lm1x4_cshuffle_v8x8x8_s1",
           "grouped_conv_bwd_weight_fp16_2d_t64x256x64_w4x1x1_wt64x256x16_wltma4_lm1x8_cshuffle_v8x8x8"]


def main() -> None:
    reg = ckgen.Registry.build("default", arch="sm_90a", kernels=KERNELS, max_workers=16)
    g, n, c, k, hw = 4, 2, 64, 64, 100
    x = torch.randn(n, g * c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    dy = torch.randn(n, g * k, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    wshape = (g * k, c, 3, 3)
    ref = torch.nn.grad.conv2d_weight(x.float(), wshape, dy.float(), padding=1, groups=g)
    p = ct.make_problem(x.shape, wshape, 1, 1, 1, g)
    for label, db in (("cost model", None), ("shipped database", tuning_dir() / "sm_90a_H100.json")):
        reg.load_tuning_db(db)
        sel = reg.select(p, "backward_weight", "fp16")
        dw = ct.conv_backward_weight(x, dy, wshape, padding=1, groups=g, registry=reg)
        torch.cuda.synchronize()
        err = (dw.float() - ref).abs().max().item() / ref.abs().max().item()
        ts = []
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                ct.conv_backward_weight(x, dy, wshape, padding=1, groups=g, registry=reg)
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / 10 * 1000)
        print(f"{label:17s} {sel.name} (k_batch {sel.k_batch}, {sel.source}): max rel err {err:.2e}, "
              f"{statistics.median(ts):.1f} us a call (eager, host launch included)", flush=True)
        assert err < 2e-2, err


if __name__ == "__main__":
    main()
