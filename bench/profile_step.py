"""Where a model step's host time goes, per backend and mode: the steps of bench/models.py
(model_steps.prepare: built and warmed together), timed side by side in interleaved rounds
(bench/timing.py), then per step the GPU's busy time and kernels per step (torch.profiler), the
profiler's tables (self CPU time, device time) and cProfile's functions by own time (the Python
the op tables do not show; cProfile sees the calling thread only, not the autograd engine's).

    python3 bench/profile_step.py --models resnet50 --modes eager,compile,graph \\
        --backends cudnn_bench,ckgen --out /tmp/prof

Writes OUT/profile_steps.csv (model, dtype, mode, backend, wall_ms, wall_min_ms, rounds,
speedup_vs_cudnn, gpu_busy_ms, kernels, cpu_ops, status, gpu) and
OUT/<model>_<mode>_<backend>.txt; training steps only; the ckgen library from --lib or
CKGEN_TORCH_LIB.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import pstats
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from timing import interleaved_ms, summary

COLUMNS = ("model", "dtype", "mode", "backend", "wall_ms", "wall_min_ms", "rounds",
           "speedup_vs_cudnn", "gpu_busy_ms", "kernels", "cpu_ops", "status", "gpu")  # fmt: skip
REFERENCE = "cudnn_bench"


def _spec(name: str) -> Any:
    from model_shapes import MODELS

    for s in MODELS:
        if s.name == name:
            return s
    raise SystemExit(f"--models {name}: not a corpus model ({', '.join(m.name for m in MODELS)})")


def _profile(fn: Any, steps: int) -> tuple[float, int, int, str]:
    """(GPU busy ms per step, kernels per step, CPU ops per step, the two tables)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    events = prof.events()
    dev = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    busy_us = sum(e.device_time for e in dev)  # kernels and copies, as the GPU ran them
    cpu_ops = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CPU)
    avg = prof.key_averages()
    tables = (
        "self CPU time\n"
        + avg.table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=70)
        + "\n\ndevice time\n"
        + avg.table(sort_by="self_device_time_total", row_limit=30, max_name_column_width=70)
    )
    return busy_us / 1e3 / steps, round(len(dev) / steps), round(cpu_ops / steps), tables


def _python_profile(fn: Any, steps: int) -> str:
    import torch

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(35)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", default="resnet50", help="corpus models (comma-separated)")
    ap.add_argument("--dtype", default="fp16", help="fp16 or bf16")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--modes", default="eager,compile", help="eager, compile, graph")
    ap.add_argument("--backends", default="cudnn_bench,ckgen")
    ap.add_argument("--steps", type=int, default=10, help="steps per round, and profiled")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    ap.add_argument("--no-profile", action="store_true", help="timing rounds only")
    ap.add_argument(
        "--lib", help="libckgen_dispatch.so or its build dir (default: CKGEN_TORCH_LIB)"
    )
    ap.add_argument("--out", type=Path, default=Path("profile-out"))
    a = ap.parse_args(argv)
    import model_steps as ms
    import torch

    # what model_steps.prepare reads of bench/models.py's arguments
    a.warmup, a.lr, a.compile_mode, a.lib_error = 3, 1e-4, "", ""
    a.runs = {m: [(a.batch, True)] for m in a.models.split(",")}

    if a.dtype not in ms.DTYPES:
        ap.error(f"--dtype {a.dtype}: choose from {', '.join(ms.DTYPES)}")
    a.out.mkdir(parents=True, exist_ok=True)
    backends = a.backends.split(",")
    reg = None
    if any(b.startswith("ckgen") for b in backends):
        import ckgen.torch as ct
        from ckgen.runtime.library import KernelLibrary

        reg = KernelLibrary.load(a.lib) if a.lib else ct.default_registry()
    rows: list[dict[str, Any]] = []
    for name in a.models.split(","):
        entry = ms.Entry(_spec(name), "cuda")
        for mode in a.modes.split(","):
            steps: dict[str, Any] = {}
            for backend in backends:
                row = {"model": name, "dtype": a.dtype, "mode": mode, "backend": backend,
                       "gpu": torch.cuda.get_device_name()}  # fmt: skip
                rows.append(row)
                key = SimpleNamespace(model=name, batch=a.batch, phase="train", dtype=a.dtype,
                                      mode=mode, backend=backend)  # fmt: skip
                try:
                    steps[backend] = ms.prepare(entry, key, row, reg, a, lambda s: None,
                                                clear=not steps)  # fmt: skip
                    row["status"] = "ok"
                except Exception as ex:  # noqa: BLE001 - the row's status
                    row["status"] = ms.short(ex)
            switch = lambda b: ms.set_backend(b, reg, clear=False)  # noqa: E731
            times = interleaved_ms(steps, a.rounds, a.steps, switch, torch.cuda.synchronize)
            stats = summary(times, REFERENCE)
            for row in rows[-len(backends) :]:
                if row["backend"] not in stats:
                    print(",".join(str(row.get(c, "")) for c in COLUMNS), flush=True)
                    continue
                row.update(stats[row["backend"]])
                if not a.no_profile:
                    fn = steps[row["backend"]]
                    switch(row["backend"])
                    busy, kernels, cpu_ops, tables = _profile(fn, a.steps)
                    row.update(gpu_busy_ms=round(busy, 3), kernels=kernels, cpu_ops=cpu_ops)
                    tables += "\n\nPython (cProfile)\n" + _python_profile(fn, a.steps)
                    (a.out / f"{name}_{mode}_{row['backend']}.txt").write_text(tables)
                print(",".join(str(row.get(c, "")) for c in COLUMNS), flush=True)
            del steps
            torch._dynamo.reset()
    with open(a.out / "profile_steps.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
