"""Refit a target's cost-model calibration (arch_specs.json `cost_calibration`: measured / estimated
time per variant and pipeline) from profiler CSVs, through an offline dispatch library built over
the same CSVs (bench/offline_dispatch.py), and judge the refit leave-one-model-out before it is
applied:

    python3 bench/offline_dispatch.py --out /tmp/off prof_forward.csv.gz ...
    python3 bench/calibration/cost_calibration.py --lib /tmp/off --shapes corpus.csv \\
        --map corpus_map.csv --arch sm_90a prof_forward.csv.gz ...

For every timed (instance, k_batch, problem) the library's estimate (which already carries the
shipped calibration) is read; per variant and pipeline the refit multiplies the shipped factor by
the square root of the median measured / estimated time (the square root: half the way, as the
shipped table was made). A pipeline's face (channel-padding copies) counts as its pipeline. The
refit is scored as the cost model alone would pick with it: the argmin of the corrected estimates
over the instances each problem timed, the corrections fitted without the model held out, the
share of corpus rows within 10 % of the best. A pipeline's refit is kept only where it raises
that share (one at a time, in name order); the others keep their factors. Prints the tables and
the `cost_calibration` block to put into arch_specs.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from ckgen.model.naming import parse_instance_name
from ckgen.model.problem import load_shapes
from ckgen.tuning.profile import read_rows

ROOT = Path(__file__).resolve().parents[2]
TOL = 1.10
FACE = "_cpad"  # a channel-padding face's name suffix (bench/offline_dispatch.py)

Timed = tuple[str, str, str, float, float]  # problem, variant, pipeline, ms, estimate (us)


def timed_rows(lib: Path, shapes: Path, profiles: list[Path]) -> list[Timed]:
    from ckgen.runtime.library import KernelLibrary

    reg = KernelLibrary.load(lib)
    reg.load_tuning_db(None)
    problems = {p.name: p for p in load_shapes(shapes)}
    est: dict[tuple[str, str, str, int], float] = {}
    estimated: set[str] = set()  # variants whose candidates are in est
    out: list[Timed] = []
    for path in profiles:
        rows = [r for r in read_rows(path) if r.get("datatype") == "fp16"]
        for v in sorted({r["variant"] for r in rows} - estimated):
            estimated.add(v)
            for name, p in problems.items():
                try:
                    cs = reg.candidates(p, v, "fp16", 1000)
                except Exception:  # noqa: BLE001  (no instance serves it)
                    continue
                for c in cs:
                    est[(v, name, c.kernel.name, c.k_batch)] = c.estimate_us
        for r in rows:
            k = (r["variant"], r["shape"], r["instance"], int(r["k_batch"]))
            ms = float(r["ms"] or 0)
            if k in est and ms > 0:
                name = r["instance"].removesuffix(FACE)  # a face counts as its instance
                pipe = parse_instance_name(name).pipeline.value
                out.append((r["shape"], r["variant"], pipe, ms * 1e3, est[k]))
    return out


def fit(rows: list[Timed]) -> dict[tuple[str, str], float]:
    """sqrt(median measured / estimated) per (variant, pipeline)."""
    res: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _s, v, pipe, us, e in rows:
        res[(v, pipe)].append(us / e)
    return {k: math.sqrt(statistics.median(x)) for k, x in res.items()}


def held_out_score(
    rows: list[Timed], layers: list[dict[str, str]], variant: str, pipes: set[str]
) -> tuple[float, float]:
    """Share of the variant's corpus rows within TOL of the best, and the geomean picked / best,
    the cost model picking among the timed instances with the refit of `pipes` (fitted without
    the row's model)."""
    models_of: dict[str, set[str]] = defaultdict(set)
    for x in layers:
        models_of[x["shape"]].add(x["model"])
    own = [r for r in rows if r[1] == variant]
    by_problem: dict[str, list[Timed]] = defaultdict(list)
    for r in own:
        by_problem[r[0]].append(r)
    n = within = 0
    logs = 0.0
    for m in sorted({x["model"] for x in layers}):
        corr = fit([r for r in own if m not in models_of[r[0]]]) if pipes else {}
        corr = {k: c for k, c in corr.items() if k[1] in pipes}
        for x in layers:
            cs = by_problem.get(x["shape"])
            if x["model"] != m or not cs:
                continue
            best = min(c[3] for c in cs)
            pick = min(cs, key=lambda c: c[4] * corr.get((variant, c[2]), 1.0))
            n += 1
            within += pick[3] / best <= TOL
            logs += math.log(pick[3] / best)
    return (within / n if n else 0.0), (math.exp(logs / n) if n else 1.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", type=Path, nargs="+")
    ap.add_argument("--lib", type=Path, required=True, help="bench/offline_dispatch.py --out")
    ap.add_argument("--shapes", type=Path, required=True)
    ap.add_argument("--map", type=Path, required=True, help="corpus map (shape,row,model,count)")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument(
        "--specs",
        type=Path,
        default=ROOT / "arch_specs.json",
        help="the table the library was built with",
    )
    a = ap.parse_args(argv)
    rows = timed_rows(a.lib, a.shapes, a.profiles)
    with open(a.map, newline="") as f:
        layers = list(csv.DictReader(f))
    specs = json.loads(a.specs.read_text())
    shipped = specs[a.arch]["cost_calibration"]
    corr = fit(rows)
    print(f"{len(rows)} timed (instance, problem) pairs")
    print("| variant | pipeline | timed | shipped | refit |")
    print("| --- | --- | --- | --- | --- |")
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        counts[(r[1], r[2])] += 1
    for (v, pipe), c in sorted(corr.items()):
        old = shipped[v][pipe]
        print(f"| {v} | {pipe} | {counts[(v, pipe)]} | {old:.3f} | {old * c:.3f} |")
    print("\n| variant | held out, shipped | held out, refit | pipelines refit |")
    print("| --- | --- | --- | --- |")
    for v in sorted({r[1] for r in rows}):
        w0, g0 = held_out_score(rows, layers, v, set())
        # a pipeline's refit is kept where it raises the held-out share without raising the
        # geomean; one that changes no pick (a pipeline the corpus never picks) keeps its factor
        kept: set[str] = set()
        w, g = w0, g0
        for pipe in sorted({p for (cv, p) in corr if cv == v}):
            w1, g1 = held_out_score(rows, layers, v, kept | {pipe})
            if w1 > w and g1 <= g:
                kept.add(pipe)
                w, g = w1, g1
        names = ", ".join(sorted(kept)) or "none"
        print(f"| {v} | {100 * w0:.1f} %, {g0:.3f} | {100 * w:.1f} %, {g:.3f} | {names} |")
        for pipe in kept:
            shipped[v][pipe] = round(shipped[v][pipe] * corr[(v, pipe)], 3)
    print(f"\n{a.arch} cost_calibration:\n{json.dumps(shipped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
