"""Fused backward instances against their plain tiles, from one profiler run that timed both
(bench/device_fused_backward.sh).

    python3 bench/fused_pairs.py shapes --out shapes.csv [--models a,b] [--ndim 2] [--batch 32]
    python3 bench/fused_pairs.py report prof.csv --suffix _bgrad --out pairs.csv
    python3 bench/fused_pairs.py torch-report layers.csv shapes.csv [--arch sm_90a]
    python3 bench/fused_pairs.py mask-time shapes.csv --out mask.csv   (a GPU, PyTorch)
    python3 bench/fused_pairs.py report prof.csv --suffix _drelu --unfused mask.csv --shapes shapes.csv
    python3 bench/fused_pairs.py picks BUILD_DIR shapes.csv --fusion drelu --out picks.csv  (a GPU)
    python3 bench/fused_pairs.py report prof.csv --suffix _drelu --picks picks.csv

`shapes`: the unique layers of bench/shapes/models.csv of the given models, ndim and batch, without
the depthwise ones (they run the direct kernels), in the profiler's shape format.
`report`: per layer the best fused instance (name ending in --suffix) against the best plain one
and the best plain one's own twin, written to --out; prints the geomean of best fused / best
plain over all layers and over those whose plain time is above 20 us, and the spread.
With --unfused (backward gradient masks), also per layer the unfused path, the best plain time
plus PyTorch's mask of dy (threshold_backward, timed by `mask-time`), and plus the least time a
separate mask can take (read dy and y, write the product: three times dy's bytes at the target's
bandwidth, arch_specs.json).
`picks`: what select() of the built library (BUILD_DIR) answers per layer for the plain and the
fused request, by the cost model and with the shipped tuning database of the GPU; `report --picks`
adds each pick's time over the best of its kind (plain or fused) in the same profile.
`mask-time`: PyTorch's threshold_backward over each layer's dy (fp16, CUDA-graph replay), the
unfused mask of a dReLU backward.
`torch-report`: bench/train_fused.py's layers CSV (dw + db through ckgen.torch) with the shapes it
ran: the bias_grad kernel against the plain kernel plus PyTorch's sum of dy, and against the plain
kernel plus the least time any separate sum can take (dy's bytes at the target's bandwidth,
arch_specs.json): the bound no unfused kernel pair beats.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

from corpus_shapes import CorpusRow, dedupe, read_corpus, write_shapes

from ckgen.model.arch import get_arch
from ckgen.model.problem import SHAPE_COLUMNS, load_shapes
from ckgen.model.vocab import DATATYPE_BYTES, DataType

MODELS = (
    "resnet50", "resnext50_32x4d", "vgg16_bn", "mobilenet_v2", "densenet121",
    "retinanet_resnet50_fpn",
)  # fmt: skip
BIG_MS = 0.02
_N, _C, _K = (SHAPE_COLUMNS.index(c) - 1 for c in ("N", "C", "K"))  # in CorpusRow.cells


def corpus_layers(
    rows: list[CorpusRow], models: tuple[str, ...], ndim: int, batch: int
) -> list[CorpusRow]:
    """The unique problems (corpus_shapes.dedupe) of the corpus rows of `models` with this ndim
    and batch, depthwise rows left out."""
    keep = [
        r
        for r in rows
        if r.model in models
        and r.ndim == ndim
        and int(r.cells[_N]) == batch
        and not (r.cells[_C] == "1" and r.cells[_K] == "1")
    ]
    return dedupe(keep)[0]


def _geomean(v: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def pairs(
    rows: list[dict[str, str]], suffix: str, ignore: tuple[str, ...] = ()
) -> list[dict[str, str]]:
    """Per shape with both kinds timed: best plain, best fused, the best plain's twin (instances
    whose names end in one of `ignore`, other fusions of the same run, are neither)."""
    by_shape: dict[str, dict[str, float]] = {}
    for r in rows:
        if r.get("ms") and not (ignore and r["instance"].endswith(ignore)):
            by_shape.setdefault(r["shape"], {})[r["instance"]] = float(r["ms"])
    out = []
    for shape, t in sorted(by_shape.items()):
        plain = {n: ms for n, ms in t.items() if not n.endswith(suffix)}
        fused = {n: ms for n, ms in t.items() if n.endswith(suffix)}
        if not plain or not fused:
            continue
        bp = min(plain, key=lambda n: plain[n])
        bf = min(fused, key=lambda n: fused[n])
        twin = t.get(bp + suffix)
        out.append({
            "shape": shape,
            "plain_instance": bp,
            "plain_ms": f"{plain[bp]:.5f}",
            "fused_instance": bf,
            "fused_ms": f"{fused[bf]:.5f}",
            "twin_ms": f"{twin:.5f}" if twin is not None else "",
            "best_fused_over_best_plain": f"{fused[bf] / plain[bp]:.4f}",
        })  # fmt: skip
    return out


def dy_bytes(shapes: Path, dtype: DataType = DataType.FP16) -> dict[str, int]:
    """Bytes of each layer's dy (the forward's output) in a profiler shapes file."""
    return {
        p.name: p.N * p.G * p.K * math.prod(p.output) * DATATYPE_BYTES[dtype]
        for p in load_shapes(shapes)
    }


def add_unfused(
    out: list[dict[str, str]], mask_ms: dict[str, float], dy: dict[str, int], gbs: float
) -> None:
    """Adds the unfused columns to pairs() rows: best plain + the measured mask, + the mask's
    least time (3 x dy's bytes at gbs), and the best fused over each."""
    for o in out:
        plain, fused = float(o["plain_ms"]), float(o["fused_ms"])
        least = plain + 3 * dy[o["shape"]] / (gbs * 1e6) if o["shape"] in dy else float("nan")
        measured = plain + mask_ms[o["shape"]] if o["shape"] in mask_ms else float("nan")
        o["unfused_ms"] = f"{measured:.5f}"
        o["fused_over_unfused"] = f"{fused / measured:.4f}"
        o["fused_over_least_unfused"] = f"{fused / least:.4f}"


def unfused_summary(out: list[dict[str, str]]) -> str:
    lines = []
    for col, what in (
        ("fused_over_unfused", "best plain + PyTorch's mask"),
        ("fused_over_least_unfused", "best plain + the mask's least time"),
    ):
        r = sorted(float(o[col]) for o in out if not math.isnan(float(o[col])))
        if r:
            lines.append(
                f"best fused / ({what}): {_geomean(r):.3f} (median {r[len(r) // 2]:.3f}, worst "
                f"{r[-1]:.3f}); slower on {sum(x > 1.0 for x in r)} of {len(r)}, > 5 %: "
                f"{sum(x > 1.05 for x in r)}"
            )
    return "\n".join(lines)


def mask_time(shapes: Path, repeat: int = 20) -> dict[str, float]:
    """Milliseconds of PyTorch's threshold_backward(dy, y, 0) on each layer's fp16 dy, channels-last,
    by CUDA-graph replay (median of 5 replays of `repeat` calls)."""
    import torch  # the GPU machine's; imported here so the other commands need none

    out = {}
    for p in load_shapes(shapes):
        shape = (p.N, *p.output, p.G * p.K)
        dy = torch.randn(shape, device="cuda", dtype=torch.float16)
        y = torch.randn(shape, device="cuda", dtype=torch.float16).relu_()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3):
                torch.ops.aten.threshold_backward(dy, y, 0)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(repeat):
                torch.ops.aten.threshold_backward(dy, y, 0)
        times = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / repeat)
        out[p.name] = sorted(times)[2]
    return out


def select_picks(
    build: Path,
    shapes: Path,
    fusion: str,
    variant: str,
    datatype: str = "fp16",
    db: Path | None = None,
) -> list[dict[str, str]]:
    """select()'s pick per layer of `shapes` for the plain and the `fusion` request, by the cost
    model ("cost") and with a tuning database ("db": `db`, else the shipped one of this GPU; none
    where none matches). `build`: a built project, or an offline library (offline_dispatch.py)."""
    from ckgen.errors import CkgenError
    from ckgen.runtime.library import KernelLibrary

    lib = KernelLibrary.load(build)
    problems = load_shapes(shapes)
    out: list[dict[str, str]] = []
    for source in ("cost", "db"):
        if source == "db":
            if db is not None:
                lib.load_tuning_db(db, force=True)
            elif lib.load_shipped_tuning_db(quiet=True) is None:
                break
        for p in problems:
            for f in ("none", fusion):
                try:
                    sel = lib.select(p, variant, datatype, fusion=None if f == "none" else f)
                    name, kb = sel.name, str(sel.k_batch)
                except CkgenError:
                    name, kb = "", ""
                out.append({"shape": p.name, "fusion": f, "source": source, "instance": name,
                            "k_batch": kb})  # fmt: skip
    return out


def add_picks(
    out: list[dict[str, str]], rows: list[dict[str, str]], picks: list[dict[str, str]]
) -> str:
    """Adds each pick's time over the best of its kind (pick_<source>_<plain|fused> columns) to
    pairs() rows; returns the summary: per source and kind, the geomean pick / best and how many
    layers' picks are within 10 % (a pick the profile did not time counts as a miss)."""
    timed: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if r.get("ms"):
            t = timed.setdefault((r["shape"], r["instance"]), {})
            t[r.get("k_batch", "")] = min(float(r["ms"]), t.get(r.get("k_batch", ""), math.inf))
    by_row = {o["shape"]: o for o in out}
    ratios: dict[str, list[float]] = {}
    misses: dict[str, int] = {}
    for pk in picks:
        o = by_row.get(pk["shape"])
        if o is None:
            continue
        kind = "plain" if pk["fusion"] == "none" else "fused"
        col = f"pick_{pk['source']}_{kind}"
        best = float(o["plain_ms" if kind == "plain" else "fused_ms"])
        t = timed.get((pk["shape"], pk["instance"]), {})
        ms = t.get(pk["k_batch"], min(t.values(), default=math.nan))
        o[col] = pk["instance"]
        o[col + "_over_best"] = f"{ms / best:.4f}"
        if math.isnan(ms):
            misses[col] = misses.get(col, 0) + 1
        else:
            ratios.setdefault(col, []).append(ms / best)
    lines = []
    for col in sorted(set(ratios) | set(misses)):
        r = ratios.get(col, [])
        n = len(r) + misses.get(col, 0)
        lines.append(
            f"{col}: pick / best {_geomean(r):.3f} geomean (worst {max(r, default=math.nan):.3f}), "
            f"within 10 % on {sum(x <= 1.10 for x in r)} of {n} ({misses.get(col, 0)} untimed)"
        )
    return "\n".join(lines)


def summary(out: list[dict[str, str]]) -> str:
    r = sorted(float(o["best_fused_over_best_plain"]) for o in out)
    if not r:
        return "no layer has both a fused and a plain time"
    big = [float(o["best_fused_over_best_plain"]) for o in out if float(o["plain_ms"]) > BIG_MS]
    twin = [float(o["twin_ms"]) / float(o["plain_ms"]) for o in out if o["twin_ms"]]
    twins = f"; the best plain's fused twin / it: {_geomean(twin):.3f} ({len(twin)} layers)"
    return (
        f"{len(r)} layers: best fused / best plain {_geomean(r):.3f} (median {r[len(r) // 2]:.3f}, "
        f"worst {r[-1]:.3f}, best {r[0]:.3f}); plain > {BIG_MS * 1e3:.0f} us: {len(big)} layers, "
        f"{_geomean(big):.3f}; > 5 % slower: {sum(x > 1.05 for x in r)}, > 10 %: "
        f"{sum(x > 1.10 for x in r)}" + (twins if twin else "")
    )


def torch_report(rows: list[dict[str, str]], shapes: Path, arch: str) -> str:
    """The summary of train_fused.py's layer rows: fused / (plain + PyTorch's sum) and fused /
    (plain + dy's bytes at the bandwidth of arch)."""
    gbs = get_arch(arch).bandwidth_gbs
    probs = {p.name: p for p in load_shapes(shapes)}
    torch_sum, bound, big = [], [], []
    for r in rows:
        if not r.get("fused_ms") or r["shape"] not in probs:
            continue
        p = probs[r["shape"]]
        dy = p.N * p.G * p.K * math.prod(p.output) * DATATYPE_BYTES[DataType(r["datatype"])]
        fused, plain = float(r["fused_ms"]), float(r["plain_ms"])
        least = plain + dy / (gbs * 1e6)
        torch_sum.append(fused / float(r["unfused_ms"]))
        bound.append(fused / least)
        if plain > BIG_MS:
            big.append(fused / least)
    if not bound:
        return "no layer has a fused time"
    b = sorted(bound)
    return (
        f"{len(b)} layers, dw + db: bias_grad kernel / (plain kernel + PyTorch's sum) "
        f"{_geomean(torch_sum):.3f}; / (plain kernel + dy read once at {gbs:.0f} GB/s) "
        f"{_geomean(b):.3f} (median {b[len(b) // 2]:.3f}, worst {b[-1]:.3f}, slower: "
        f"{sum(x > 1.0 for x in b)}); plain > {BIG_MS * 1e3:.0f} us: {_geomean(big):.3f} "
        f"({len(big)} layers)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("shapes", help="corpus layers in the profiler's shape format")
    s.add_argument("--out", required=True)
    s.add_argument("--models", default=",".join(MODELS))
    s.add_argument("--ndim", type=int, default=2)
    s.add_argument("--batch", type=int, default=32)
    r = sub.add_parser("report", help="best fused against best plain per layer")
    r.add_argument("profile")
    r.add_argument("--suffix", default="_bgrad", help="name suffix of the fused instances")
    r.add_argument("--out", default="")
    r.add_argument("--ignore", action="append", default=[], help="name suffix left out (repeat)")
    r.add_argument("--unfused", default="", help="mask-time's CSV: compare with the unfused path")
    r.add_argument("--shapes", type=Path, help="the profiled shapes (with --unfused)")
    r.add_argument("--arch", default="sm_90a", help="the target of the mask's least time")
    r.add_argument("--picks", default="", help="picks' CSV: add select()'s picks")
    k = sub.add_parser("picks", help="select()'s picks per layer (a GPU)")
    k.add_argument("build", type=Path, help="the built project (its build directory)")
    k.add_argument("shapes", type=Path)
    k.add_argument("--fusion", default="drelu")
    k.add_argument("--variant", default="backward_data")
    k.add_argument("--db", type=Path, help="this tuning database (default: the GPU's shipped one)")
    k.add_argument("--out", required=True)
    m = sub.add_parser("mask-time", help="PyTorch's mask of dy per layer (a GPU)")
    m.add_argument("shapes", type=Path)
    m.add_argument("--out", required=True)
    t = sub.add_parser("torch-report", help="train_fused.py's layers against the unfused ops")
    t.add_argument("layers")
    t.add_argument("shapes", type=Path)
    t.add_argument("--arch", default="sm_90a")
    a = ap.parse_args(argv)
    if a.cmd == "torch-report":
        with open(a.layers, newline="") as fh:
            print(torch_report(list(csv.DictReader(fh)), a.shapes, a.arch))
        return 0
    if a.cmd == "mask-time":
        times = mask_time(a.shapes)
        with open(a.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["shape", "mask_ms"])
            w.writerows([n, f"{ms:.5f}"] for n, ms in times.items())
        print(f"{len(times)} layers -> {a.out}")
        return 0
    if a.cmd == "picks":
        got = select_picks(a.build, a.shapes, a.fusion, a.variant, db=a.db)
        with open(a.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["shape", "fusion", "source", "instance", "k_batch"])
            w.writeheader()
            w.writerows(got)
        print(f"{len(got)} picks -> {a.out}")
        return 0
    if a.cmd == "shapes":
        rows = corpus_layers(read_corpus(), tuple(a.models.split(",")), a.ndim, a.batch)
        if not rows:
            print("fused_pairs: no corpus layer matches", file=sys.stderr)
            return 2
        write_shapes(Path(a.out), rows)
        print(f"{len(rows)} layers -> {a.out}")
        return 0
    with open(a.profile, newline="") as fh:
        prof = list(csv.DictReader(fh))
    out = pairs(prof, a.suffix, tuple(a.ignore))
    pick_lines = ""
    if a.picks and out:
        with open(a.picks, newline="") as fh:
            pick_lines = add_picks(out, prof, list(csv.DictReader(fh)))
    if a.unfused and out:
        if a.shapes is None:
            print("fused_pairs: --unfused needs --shapes", file=sys.stderr)
            return 2
        with open(a.unfused, newline="") as fh:
            mask_ms = {r["shape"]: float(r["mask_ms"]) for r in csv.DictReader(fh)}
        add_unfused(out, mask_ms, dy_bytes(a.shapes), get_arch(a.arch).bandwidth_gbs)
    if a.out and out:
        with open(a.out, "w", newline="") as fh:
            cols = list(dict.fromkeys(c for o in out for c in o))
            w = csv.DictWriter(fh, fieldnames=cols, restval="")
            w.writeheader()
            w.writerows(out)
    print(summary(out))
    if a.unfused and out:
        print(unfused_summary(out))
    if pick_lines:
        print(pick_lines)
    return 0 if out else 1


if __name__ == "__main__":
    sys.exit(main())
