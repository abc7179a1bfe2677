"""Leave-one-model-out quality of the dispatcher over the model-zoo corpus (issue 49, item 4).

    python3 bench/heuristic_eval.py --lib GEN/build --shapes corpus.csv --map corpus_map.csv \\
        --out-dir OUT prof_forward_fp16.csv prof_backward_data_fp16.csv.gz ...

Inputs: profiler CSVs of every default instance over the corpus' unique problems
(bench/device_corpus.sh; .csv or .csv.gz), corpus.csv and corpus_map.csv of
bench/corpus_shapes.py, and the built project whose lib/libckgen_dispatch.so is the dispatcher
under test (ckgen.Registry; select() needs no GPU, only the library).

For every variant and datatype profiled, every corpus row (a layer of a model; a problem shared
by several models counts once for each), and each method, the (instance, k_batch) the method
picks is looked up in the measurements and compared with the best measured row of the problem:

  cost      select() with no tuning database: the cost model alone (the heuristic);
  lomo_db   select() with a tuning database built (ckgen.tuning.tune.build_db, the format
            `ckgen tune` writes and the dispatcher loads) from the measurements of the OTHER
            models only: every problem the held-out model runs is left out of it, also when
            another model shares it, so no held-out layer is an exact match;
  db        select() with the tuning database --db (e.g. a shipped one: configs/tuning);
  topk      the fastest measured of the cost model's first --topk (instance, k_batch) candidates
            (Registry.candidates with no database: what autotune times; --topk defaults to
            autotune's CKGEN_AUTOTUNE_TOPK default).

Out: outcomes.csv (one line per method x variant x datatype x corpus row: the pick, its time,
the best, the ratio) and summary.md (per method x variant x datatype: layers, share within
10 % of the best, within 3 %, geomean and worst picked / best, the count-weighted time ratio;
then the same per held-out model). A pick that was not measured (or no pick) counts as a miss.

The split count: the profiler rows are usually k_batch 0 (the instance's own choice); the cost
model is then restricted to the split counts measured (as `ckgen check-heuristic` does), so a
pick is always a measured pair when its instance was timed.

The scoring (timings_from_rows, score, summarize) is plain Python over rows and a pick function;
only LibraryPicker touches the library.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckgen.runtime.autotune import DEFAULT_TOPK
from ckgen.tuning.profile import read_rows as profile_rows

FAILED = ("fail", "error")
VARIANTS = ("forward", "backward_data", "backward_weight")
Pair = tuple[str, int]  # (instance, k_batch)
Key = tuple[str, str, str]  # (variant, datatype, shape)
Timings = dict[Key, dict[Pair, float]]


# ------------------------------------------------------------------------------ scoring
@dataclass(frozen=True)
class Layer:
    """One corpus row: a layer of a model, measured as the unique problem `shape`."""

    model: str
    row: str
    shape: str
    count: int = 1


@dataclass
class Outcome:
    method: str
    variant: str
    datatype: str
    model: str
    row: str
    shape: str
    count: int
    pick: str  # instance ('' when none), the fastest measured candidate for top-k methods
    k_batch: int
    source: str  # what the dispatcher said (tuning-db-nearest, cost-model, ...)
    pick_ms: float | None  # None: no pick, or the pick was not measured
    best: str
    best_ms: float

    @property
    def ratio(self) -> float | None:
        return None if self.pick_ms is None else self.pick_ms / self.best_ms


# pick(variant, datatype, layer) -> (candidates in the method's order, source); [] = no kernel
PickFn = Callable[[str, str, Layer], tuple[list[Pair], str]]


def read_rows(paths: Iterable[Path]) -> list[dict[str, str]]:
    """Profiler rows (.csv or .csv.gz), only the columns the evaluation uses; rows of a line cut
    short (a profiler killed while writing) are skipped."""
    need = ("shape", "variant", "datatype", "instance", "ms", "verified", "k_batch")
    keep = (*need, "gpu", "tflops")
    out: list[dict[str, str]] = []
    for p in paths:
        for r in profile_rows(Path(p)):
            if any(r.get(k) is None for k in need):
                continue
            out.append({k: r.get(k) or "" for k in keep})
    return out


def timings_from_rows(rows: Iterable[dict[str, str]]) -> Timings:
    """(variant, datatype, shape) -> (instance, k_batch) -> fastest ms, over timed rows that did
    not fail."""
    t: Timings = {}
    for r in rows:
        if not r.get("ms") or r.get("verified") in FAILED:
            continue
        try:
            ms = float(r["ms"])
            kb = int(r.get("k_batch") or 0)
        except ValueError:
            continue
        if not ms > 0:
            continue
        d = t.setdefault((r["variant"], r["datatype"], r["shape"]), {})
        k = (r["instance"], kb)
        d[k] = min(d.get(k, math.inf), ms)
    return t


def best_of(timed: dict[Pair, float]) -> tuple[Pair, float]:
    return min(timed.items(), key=lambda kv: (kv[1], kv[0]))


def score(
    method: str,
    layers: Sequence[Layer],
    timings: Timings,
    pick: PickFn,
    variants: Sequence[str],
    datatypes: Sequence[str],
    topk: int = 1,
) -> list[Outcome]:
    """One Outcome per (variant, datatype, layer) whose problem was measured. With topk > 1 the
    first topk candidates of the pick function count and the fastest measured one is the pick
    (autotune over the top k)."""
    out: list[Outcome] = []
    for v in variants:
        for d in datatypes:
            for layer in layers:
                timed = timings.get((v, d, layer.shape))
                if not timed:
                    continue
                (bname, _bkb), bms = best_of(timed)
                cands, source = pick(v, d, layer)
                cands = cands[: max(1, topk)]
                measured = [(timed[c], c) for c in cands if c in timed]
                if measured:
                    ms, (name, kb) = min(measured)
                    pick_ms: float | None = ms
                elif cands:
                    (name, kb), pick_ms = cands[0], None
                else:
                    name, kb, pick_ms = "", 0, None
                out.append(
                    Outcome(
                        method,
                        v,
                        d,
                        layer.model,
                        layer.row,
                        layer.shape,
                        layer.count,
                        name,
                        kb,
                        source,
                        pick_ms,
                        bname,
                        bms,
                    )
                )
    return out


def summarize(
    outcomes: Sequence[Outcome], tol: float = 0.10, tight: float = 0.03
) -> dict[str, Any]:
    """Share within tol / tight of the best (misses: picks not measured, no pick), geomean and
    worst ratio over the measured picks, and the count-weighted time ratio."""
    n = len(outcomes)
    ratios = [o.ratio for o in outcomes if o.ratio is not None]
    if not n:
        return {"layers": 0}
    timed = [o for o in outcomes if o.pick_ms is not None]
    weighted = (
        sum(o.count * (o.pick_ms or 0.0) for o in timed) / sum(o.count * o.best_ms for o in timed)
        if timed
        else None
    )
    return {
        "layers": n,
        "unmeasured": n - len(ratios),
        "within_tol": sum(r <= 1 + tol + 1e-12 for r in ratios) / n,
        "within_tight": sum(r <= 1 + tight + 1e-12 for r in ratios) / n,
        "exact": sum(r <= 1 + 1e-12 for r in ratios) / n,
        "geomean": math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None,
        "worst": max(ratios) if ratios else None,
        "weighted": weighted,
    }


def group(outcomes: Iterable[Outcome], *fields: str) -> dict[tuple[str, ...], list[Outcome]]:
    g: dict[tuple[str, ...], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        g[tuple(getattr(o, f) for f in fields)].append(o)
    return dict(sorted(g.items()))


def lomo_shapes(layers: Sequence[Layer], held_out: str) -> set[str]:
    """The problems a database for held-out model `held_out` may hold: those of the other models
    that the held-out model does not run itself."""
    own = {x.shape for x in layers if x.model == held_out}
    return {x.shape for x in layers if x.model != held_out and x.shape not in own}


def read_layers(map_csv: Path) -> list[Layer]:
    with open(map_csv, newline="") as f:
        return [
            Layer(r["model"], r["row"], r["shape"], int(r.get("count") or 1))
            for r in csv.DictReader(f)
        ]


OUTCOME_COLUMNS = (
    "method",
    "variant",
    "datatype",
    "model",
    "row",
    "shape",
    "count",
    "pick",
    "k_batch",
    "source",
    "pick_ms",
    "best",
    "best_ms",
    "ratio",
)


def outcome_cells(o: Outcome) -> list[str]:
    return [
        o.method,
        o.variant,
        o.datatype,
        o.model,
        o.row,
        o.shape,
        str(o.count),
        o.pick,
        str(o.k_batch),
        o.source,
        "" if o.pick_ms is None else f"{o.pick_ms:.6f}",
        o.best,
        f"{o.best_ms:.6f}",
        "" if o.ratio is None else f"{o.ratio:.4f}",
    ]


def _f(x: Any, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def summary_markdown(
    outcomes: Sequence[Outcome], tol: float = 0.10, tight: float = 0.03, notes: Sequence[str] = ()
) -> str:
    lines = [
        "# Dispatcher quality, leave one model out",
        "",
        f"within: picked / best <= {1 + tol:.2f} (tight: {1 + tight:.2f}); a pick that was not "
        "measured, or none, is a miss. geomean / worst over the measured picks; weighted: "
        "sum(count x picked ms) / sum(count x best ms).",
        "",
        "| method | variant | datatype | layers | within | tight | exact | geomean | worst | weighted | unmeasured |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (m, v, d), os_ in group(outcomes, "method", "variant", "datatype").items():
        s = summarize(os_, tol, tight)
        lines.append(
            f"| {m} | {v} | {d} | {s['layers']} | {_f(s['within_tol'], '.1%')} | "
            f"{_f(s['within_tight'], '.1%')} | {_f(s['exact'], '.1%')} | {_f(s['geomean'])} | "
            f"{_f(s['worst'])} | {_f(s['weighted'])} | {s['unmeasured']} |"
        )
    methods = sorted({o.method for o in outcomes})
    lines += [
        "",
        "## Per held-out model (share within; geomean)",
        "",
        "| model | variant | datatype | layers | " + " | ".join(methods) + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in methods) + " |",
    ]
    per = group(outcomes, "model", "variant", "datatype", "method")
    keys = sorted({k[:3] for k in per})
    for mdl, v, d in keys:
        cells = []
        n = 0
        for m in methods:
            os_ = per.get((mdl, v, d, m), [])
            s = summarize(os_, tol, tight)
            n = max(n, s["layers"])
            cells.append(
                "-" if not os_ else f"{_f(s['within_tol'], '.0%')}; {_f(s['geomean'], '.2f')}"
            )
        lines.append(f"| {mdl} | {v} | {d} | {n} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def target_notes(outcomes: Sequence[Outcome], tol: float, tight: float, topk: int) -> list[str]:
    """Issue 49's targets per variant and datatype: the heuristic alone (and with the other
    models' database) within tol on >= 85 % of the layers; the best within the cost model's
    top k (within tight) on >= 95 %."""
    out = []
    for (m, v, d), os_ in group(outcomes, "method", "variant", "datatype").items():
        s = summarize(os_, tol, tight)
        if m.startswith("top"):
            share, want, what = s["within_tight"], 0.95, f"within {tight:.0%}"
        else:
            share, want, what = s["within_tol"], 0.85, f"within {tol:.0%}"
        ok = "met" if share >= want else "NOT met"
        out.append(
            f"target {m} {v} {d}: {what} on {share:.1%} of {s['layers']} (>= {want:.0%}): {ok}"
        )
    return out


# ------------------------------------------------------------------------------ library
class LibraryPicker:
    """The dispatcher of a built library through ckgen.Registry: pick functions for score()."""

    def __init__(self, lib: Path, problems: dict[str, Any], kbs: Sequence[int] = ()) -> None:
        from ckgen.runtime.library import KernelLibrary

        self.reg = KernelLibrary.load(lib)
        self.problems = problems
        self.reg.load_tuning_db(None)
        if kbs:
            self.reg.set_k_batch_candidates(list(kbs))
        self._cost: dict[tuple[str, str, str, int], tuple[list[Pair], str]] = {}

    def _nokernel(self) -> type[Exception]:
        from ckgen.runtime.library import NoKernel

        return NoKernel

    def cost(self, v: str, d: str, layer: Layer) -> tuple[list[Pair], str]:
        key = (v, d, layer.shape, 1)
        if key not in self._cost:
            try:
                s = self.reg.select(self.problems[layer.shape], v, d, cost_model_only=True)
                self._cost[key] = ([(s.name, s.k_batch)], s.source)
            except self._nokernel():
                self._cost[key] = ([], "none")
        return self._cost[key]

    def topk(self, k: int) -> PickFn:
        def pick(v: str, d: str, layer: Layer) -> tuple[list[Pair], str]:
            key = (v, d, layer.shape, k)
            if key not in self._cost:
                try:
                    cs = self.reg.candidates(self.problems[layer.shape], v, d, k)
                    self._cost[key] = ([(c.name, c.k_batch) for c in cs], f"top{k}")
                except self._nokernel():
                    self._cost[key] = ([], "none")
            return self._cost[key]

        return pick

    def with_db(self, db_path: Path | None) -> PickFn:
        """select() after loading db_path (None: cleared)."""
        self.reg.load_tuning_db(db_path)
        memo: dict[tuple[str, str, str], tuple[list[Pair], str]] = {}

        def pick(v: str, d: str, layer: Layer) -> tuple[list[Pair], str]:
            key = (v, d, layer.shape)
            if key not in memo:
                try:
                    s = self.reg.select(self.problems[layer.shape], v, d)
                    memo[key] = ([(s.name, s.k_batch)], s.source)
                except self._nokernel():
                    memo[key] = ([], "none")
            return memo[key]

        return pick


def run(a: argparse.Namespace) -> int:
    from ckgen.model.problem import load_shapes
    from ckgen.tuning.tune import build_db, write_db

    t0 = time.perf_counter()
    problems = {p.name: p for p in load_shapes(a.shapes)}
    layers = [x for x in read_layers(a.map) if x.shape in problems]
    if a.models:
        layers = [x for x in layers if x.model in set(a.models.split(","))]
    rows = read_rows(a.profiles)
    timings = timings_from_rows(rows)
    variants = [v for v in VARIANTS if any(k[0] == v for k in timings)]
    datatypes = sorted({k[1] for k in timings})
    if a.variants:
        variants = [v for v in variants if v in a.variants.split(",")]
    if a.datatypes:
        datatypes = [d for d in datatypes if d in a.datatypes.split(",")]
    kbs = sorted(
        {kb for (v, _d, _s), t in timings.items() if v == "backward_weight" for _n, kb in t}
    )
    print(
        f"{len(rows)} profiler rows, {len(timings)} measured (variant, datatype, problem), "
        f"{len(layers)} corpus rows; variants {variants}, datatypes {datatypes}, "
        f"backward_weight k_batch {kbs or '-'}",
        flush=True,
    )
    gpu = next((r["gpu"] for r in rows if r.get("gpu")), "")
    picker = LibraryPicker(a.lib, problems, kbs)
    methods = a.methods.split(",")
    a.out_dir.mkdir(parents=True, exist_ok=True)
    out_csv = a.out_dir / "outcomes.csv"
    outcomes: list[Outcome] = []
    notes: list[str] = [
        f"{len(layers)} corpus rows, {len({x.shape for x in layers})} unique problems, "
        f"GPU {gpu or '?'}, library {picker.reg.lib_path}",
        f"backward_weight split counts measured and offered to the cost model: {kbs or '-'}",
    ]
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(OUTCOME_COLUMNS)

        def emit(os_: list[Outcome]) -> None:
            outcomes.extend(os_)
            w.writerows(outcome_cells(o) for o in os_)
            f.flush()

        if "cost" in methods:
            emit(score("cost", layers, timings, picker.cost, variants, datatypes))
            print(f"cost: done in {time.perf_counter() - t0:.1f} s", flush=True)
        if "topk" in methods:
            emit(
                score(
                    f"top{a.topk}",
                    layers,
                    timings,
                    picker.topk(a.topk),
                    variants,
                    datatypes,
                    topk=a.topk,
                )
            )
            print(f"top{a.topk}: done in {time.perf_counter() - t0:.1f} s", flush=True)
        if "db" in methods:
            if a.db is None:
                raise SystemExit("heuristic_eval: the db method needs --db FILE")
            emit(score("db", layers, timings, picker.with_db(a.db), variants, datatypes))
            picker.with_db(None)
            print(f"db: done in {time.perf_counter() - t0:.1f} s", flush=True)
        if "lomo_db" in methods:
            models = sorted({x.model for x in layers})
            keep_rows = [r for r in rows if r["variant"] in variants and r["datatype"] in datatypes]
            with tempfile.TemporaryDirectory() as tmp:
                for i, m in enumerate(models):
                    if a.time_limit and time.perf_counter() - t0 > a.time_limit:
                        notes.append(
                            f"lomo_db: time limit {a.time_limit} s reached; "
                            f"models not evaluated: {', '.join(models[i:])}"
                        )
                        print(notes[-1], flush=True)
                        break
                    t1 = time.perf_counter()
                    shapes = lomo_shapes(layers, m)
                    fold = [r for r in keep_rows if r["shape"] in shapes]
                    db = build_db(
                        fold, list(problems.values()), picker.reg.arch, keep=a.ranking_keep or None
                    )
                    path = Path(tmp) / f"db_{m}.json"
                    write_db(path, db)
                    pick = picker.with_db(path)
                    own = [x for x in layers if x.model == m]
                    emit(score("lomo_db", own, timings, pick, variants, datatypes))
                    print(
                        f"lomo_db {m}: {len(db['entries'])} entries, {len(own)} layers, "
                        f"{time.perf_counter() - t1:.1f} s",
                        flush=True,
                    )
            picker.with_db(None)
    notes += target_notes(outcomes, a.tol, a.tight, a.topk)
    notes.append(
        "The cost model's constants (dispatch/cost_model.hpp: kTmaRoundUs, kTmaWindow*, "
        "kDirect*, kRegisterStoreEfficiency and the utilisation terms; dispatch/tuning_db.hpp: "
        "the neighbour weights) are compile-time constants set on earlier measurements, and "
        "the per-pipeline calibration (arch_specs.json cost_calibration) is refit by "
        "bench/calibration/cost_calibration.py, which scores its refit leave-one-model-out. "
        "They are evaluated as shipped here: a leave-one-model-out fit of the constants needs "
        "one rebuilt library per setting (bench/offline_dispatch.py)."
    )
    md = summary_markdown(outcomes, a.tol, a.tight, notes)
    (a.out_dir / "summary.md").write_text(md)
    print(md)
    print(f"done in {time.perf_counter() - t0:.1f} s -> {out_csv}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", type=Path, nargs="+", help="profiler CSVs (.csv / .csv.gz)")
    ap.add_argument("--lib", type=Path, required=True, help="built project, build dir or .so")
    ap.add_argument("--shapes", type=Path, required=True, help="corpus.csv (corpus_shapes.py)")
    ap.add_argument("--map", type=Path, required=True, help="corpus_map.csv (corpus_shapes.py)")
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--methods", default="cost,topk,lomo_db")
    ap.add_argument("--db", type=Path, help="tuning database of the db method")
    ap.add_argument("--topk", type=int, default=DEFAULT_TOPK)
    ap.add_argument("--tol", type=float, default=0.10)
    ap.add_argument("--tight", type=float, default=0.03)
    ap.add_argument("--variants", default="")
    ap.add_argument("--datatypes", default="")
    ap.add_argument("--models", default="", help="only these models' rows (comma-separated)")
    ap.add_argument(
        "--time-limit", type=float, default=0, help="seconds; later LOMO folds are skipped"
    )
    ap.add_argument(
        "--ranking-keep",
        type=int,
        default=0,
        help="keep only the N best (instance, k_batch) of each database entry (0: all)",
    )
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
