"""A gradient-masked backward_data against its unfused path as a training step runs them.

    python3 bench/mask_chain.py BUILD_DIR shapes.csv pairs.csv --out chain.csv   (a GPU, PyTorch)

Per layer of `pairs.csv` (bench/fused_pairs.py report's output), by CUDA-graph replay in one
process: the fused call (the masked instance reads dy and the saved output y) against the unfused
path, PyTorch's threshold_backward(dy, y, 0) followed by the plain instance on its result. Each
replay walks sets of buffers whose bytes exceed twice the GPU's L2 cache, so dy and y come from
memory as they do in a step (the mask timed alone over one buffer, `fused_pairs.py mask-time`, reads
them from L2). The two paths alternate, five replays each; the median counts. Pairs: the best
plain and the best masked instance of the profile (`best`) and, where the report has them,
select()'s picks with the tuning database (`pick_db`) and by the cost model (`pick_cost`).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path
from typing import Any

from fused_pairs import _geomean

from ckgen.model.problem import Problem, load_shapes

PAIRS = (
    ("best", "plain_instance", "fused_instance"),
    ("pick_db", "pick_db_plain", "pick_db_fused"),
    ("pick_cost", "pick_cost_plain", "pick_cost_fused"),
)


def buffer_sets(set_bytes: int, l2_bytes: int, cap: int = 16) -> int:
    """How many buffer sets a replay walks: their bytes at least twice the L2 cache (at most cap)."""
    return max(1, min(cap, -(-2 * l2_bytes // max(1, set_bytes))))


def summary(rows: list[dict[str, str]]) -> str:
    """Per pair kind: geomean fused / unfused, and how many layers are slower, > 5 % slower."""
    lines = []
    for kind, _, _ in PAIRS:
        r = [float(o[f"{kind}_ratio"]) for o in rows if o.get(f"{kind}_ratio")]
        if r:
            lines.append(
                f"{kind}: fused / (PyTorch mask + plain) {_geomean(r):.3f} geomean, worst "
                f"{max(r):.3f}; slower on {sum(x > 1.0 for x in r)} of {len(r)}, > 5 %: "
                f"{sum(x > 1.05 for x in r)}"
            )
    return "\n".join(lines)


def chain_times(
    build: Path, shapes: Path, pairs: list[dict[str, str]], repeat: int = 20
) -> list[dict[str, str]]:
    import torch  # the GPU machine's; imported here so the summary needs none

    from ckgen.runtime.library import KernelLibrary

    lib = KernelLibrary.load(build)
    problems = {p.name: p for p in load_shapes(shapes)}
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    out = []
    for row in pairs:
        p = problems.get(row["shape"])
        if p is None:
            continue
        o = {"shape": p.name}
        for kind, plain_col, fused_col in PAIRS:
            plain, fused = row.get(plain_col, ""), row.get(fused_col, "")
            if not plain or not fused:
                continue
            t_unfused, t_fused = _time_pair(torch, lib, p, plain, fused, l2, repeat)
            o[f"{kind}_plain"], o[f"{kind}_fused"] = plain, fused
            o[f"{kind}_unfused_ms"], o[f"{kind}_fused_ms"] = f"{t_unfused:.5f}", f"{t_fused:.5f}"
            o[f"{kind}_ratio"] = f"{t_fused / t_unfused:.4f}"
        out.append(o)
        print(p.name, {k: v for k, v in o.items() if k.endswith("ratio")}, flush=True)
    return out


def _time_pair(
    torch: Any, lib: Any, p: Problem, plain: str, fused: str, l2: int, repeat: int
) -> tuple[float, float]:
    """Milliseconds a call of (PyTorch's mask, then plain) and of fused, by CUDA-graph replay."""
    dt = torch.float16
    out_elems = p.N * math.prod(p.output) * p.G * p.K
    in_elems = p.N * math.prod(p.input) * p.G * p.C
    w = torch.randn(p.G * p.K * math.prod(p.filter) * p.C, device="cuda", dtype=dt)
    sets = buffer_sets((3 * out_elems + in_elems) * 2, l2)
    dy = [torch.randn(out_elems, device="cuda", dtype=dt) for _ in range(sets)]
    y = [torch.randn(out_elems, device="cuda", dtype=dt).relu_() for _ in range(sets)]
    dx = [torch.empty(in_elems, device="cuda", dtype=dt) for _ in range(sets)]
    kp, kf = lib[plain], lib[fused]
    ws_p = torch.empty(max(1, kp.workspace_bytes(p)), device="cuda", dtype=torch.uint8)
    ws_f = torch.empty(max(1, kf.workspace_bytes(p)), device="cuda", dtype=torch.uint8)

    def unfused(i: int) -> None:
        s = i % sets
        m = torch.ops.aten.threshold_backward(dy[s], y[s], 0)
        kp.run(p, dx[s], w, m, ws_p, torch.cuda.current_stream().cuda_stream)

    def fused_call(i: int) -> None:
        s = i % sets
        kf.run(p, dx[s], w, dy[s], ws_f, torch.cuda.current_stream().cuda_stream, y=y[s])

    graphs = []
    for body in (unfused, fused_call):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for i in range(sets):
                body(i)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(repeat * sets):
                body(i)
        graphs.append(g)
    times: list[list[float]] = [[], []]
    for _ in range(5):
        for j, g in enumerate(graphs):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            torch.cuda.synchronize()
            times[j].append(a.elapsed_time(b) / (repeat * sets))
    return sorted(times[0])[2], sorted(times[1])[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("build", type=Path, help="the built project (its build directory)")
    ap.add_argument("shapes", type=Path, help="the profiled shapes")
    ap.add_argument("pairs", type=Path, help="fused_pairs.py report's --out CSV")
    ap.add_argument("--repeat", type=int, default=10, help="walks over the buffer sets a replay")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    with open(a.pairs, newline="") as fh:
        pairs = list(csv.DictReader(fh))
    rows = chain_times(a.build, a.shapes, pairs, a.repeat)
    if not rows:
        print("mask_chain: no layer of the pairs is in the shapes", file=sys.stderr)
        return 1
    with open(a.out, "w", newline="") as fh:
        w = csv.DictWriter(
            fh, fieldnames=list(dict.fromkeys(c for o in rows for c in o)), restval=""
        )
        w.writeheader()
        w.writerows(rows)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
