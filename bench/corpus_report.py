"""The model-zoo benchmark (issue 50, item 8): the best default instance of every corpus layer
against cuDNN, per model.

    python3 bench/corpus_report.py --map corpus_map.csv --cudnn cudnn_fp16.csv cudnn_bf16.csv \\
        --out-dir bench/results prof_*.csv prof_*.csv.gz

Inputs: profiler CSVs over the corpus' unique problems (.csv / .csv.gz; several runs merge:
the fastest row per problem, variant and datatype wins), cuDNN CSVs of bench/peer_corpus.py
(or bench/peer_cudnn.py) over the same problems, and corpus_map.csv of bench/corpus_shapes.py.
Writes to --out-dir:

  <date>_<gpu>_models.csv        one row per corpus row x variant x datatype measured by both:
                                 shape,variant,datatype,instance,ms,tflops,cudnn_ms,
                                 cudnn_tflops,speedup,gpu,model (shape: the corpus row's name;
                                 a problem shared by several models has one row per model, with
                                 the same measurement)
  <date>_<gpu>_models.md         geomean speedup per model x variant x datatype (and over the
                                 unique problems), lowest row per model, rows without cuDNN or
                                 without an instance
  <date>_<gpu>_models.png        the per-model geomeans as bars (matplotlib; skipped with a
                                 message when it is not installed)

--tag replaces <date>_<gpu> (e.g. a device run's partial output).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

from fastest import fastest_rows
from heuristic_eval import read_rows

HERE = Path(__file__).resolve().parent

COLUMNS = (
    "shape",
    "variant",
    "datatype",
    "instance",
    "ms",
    "tflops",
    "cudnn_ms",
    "cudnn_tflops",
    "speedup",
    "gpu",
    "model",
)
VARIANTS = ("forward", "backward_data", "backward_weight")


def geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def best_rows(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], dict[str, str]]:
    """(shape, variant, datatype) -> fastest timed row that did not fail."""
    return fastest_rows(rows, lambda r: r.get("verified") not in ("fail", "error"))


def read_cudnn(paths: list[Path]) -> dict[tuple[str, str, str], dict[str, str]]:
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    if float(r["cudnn_ms"]) > 0:
                        out[(r["shape"], r["variant"], r["datatype"])] = r
                except (KeyError, ValueError):
                    continue
    return out


def merge(
    prof: list[dict[str, str]],
    cudnn: dict[tuple[str, str, str], dict[str, str]],
    mapping: list[dict[str, str]],
) -> tuple[list[dict[str, str]], dict[str, int]]:
    """The benchmark rows (COLUMNS) and counts of what could not be compared."""
    best = best_rows(prof)
    measured = {(v, d) for (_s, v, d) in best}
    out: list[dict[str, str]] = []
    missing = {"no_instance": 0, "no_cudnn": 0}
    for v, d in sorted(measured, key=lambda k: (VARIANTS.index(k[0]), k[1])):
        for m in mapping:
            s = m["shape"]
            r = best.get((s, v, d))
            c = cudnn.get((s, v, d))
            if r is None:
                missing["no_instance"] += 1
                continue
            if c is None:
                missing["no_cudnn"] += 1
                continue
            ms, cms = float(r["ms"]), float(c["cudnn_ms"])
            tf = r.get("tflops", "")
            out.append(
                {
                    "shape": m["row"],
                    "variant": v,
                    "datatype": d,
                    "instance": r["instance"],
                    "ms": f"{ms:.5f}",
                    "tflops": f"{float(tf):.2f}" if tf else "",
                    "cudnn_ms": f"{cms:.5f}",
                    "cudnn_tflops": c.get("cudnn_tflops", ""),
                    "speedup": f"{cms / ms:.3f}",
                    "gpu": r.get("gpu") or c.get("gpu", ""),
                    "model": m["model"],
                }
            )
    return out, missing


def table(
    rows: list[dict[str, str]], mapping: list[dict[str, str]], missing: dict[str, int]
) -> str:
    keys = sorted(
        {(r["variant"], r["datatype"]) for r in rows}, key=lambda k: (VARIANTS.index(k[0]), k[1])
    )
    models = sorted({m["model"] for m in mapping})
    row_shape = {m["row"]: m["shape"] for m in mapping}
    by: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by[(r["model"], r["variant"], r["datatype"])].append(r)
    head = " | ".join(f"{v} {d}" for v, d in keys)
    lines = [
        "# Best default instance against cuDNN, per model",
        "",
        "Geomean speedup (cuDNN ms / ckgen ms) over each model's corpus rows; in brackets the "
        "lowest row. `all (unique)`: over the unique problems (a problem several models share "
        "counts once).",
        "",
        f"| model | rows | {head} |",
        "| --- | --- | " + " | ".join("---" for _ in keys) + " |",
    ]
    for mdl in models:
        cells = []
        n = 0
        for v, d in keys:
            rs = by.get((mdl, v, d), [])
            n = max(n, len(rs))
            g = geomean([float(r["speedup"]) for r in rs])
            lo = min(rs, key=lambda r: float(r["speedup"])) if rs else None
            cells.append(
                "-" if g is None or lo is None else f"{g:.2f} ({float(lo['speedup']):.2f})"
            )
        lines.append(f"| {mdl} | {n} | " + " | ".join(cells) + " |")
    cells = []
    n = 0
    for v, d in keys:
        uniq = {}
        for r in rows:
            if (r["variant"], r["datatype"]) == (v, d):
                uniq[row_shape.get(r["shape"], r["shape"])] = float(r["speedup"])
        n = max(n, len(uniq))
        g = geomean(list(uniq.values()))
        cells.append("-" if g is None else f"**{g:.2f}**")
    lines.append(f"| all (unique) | {n} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Not compared (corpus row x variant x datatype): {missing['no_instance']} without a "
        f"measured instance, {missing['no_cudnn']} without a cuDNN time.",
        "",
        "Slowest rows against cuDNN:",
        "",
        "| row | variant | datatype | ms | cuDNN ms | speedup | instance |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(rows, key=lambda r: float(r["speedup"]))[:15]:
        lines.append(
            f"| {r['shape']} | {r['variant']} | {r['datatype']} | {r['ms']} | {r['cudnn_ms']} "
            f"| {r['speedup']} | {r['instance']} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, str]], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: plot skipped (pip install matplotlib)"
    dts = sorted({r["datatype"] for r in rows})
    models = sorted({r["model"] for r in rows})
    if not dts:
        return "no rows: plot skipped"
    fig, axes = plt.subplots(len(dts), 1, figsize=(12, 4.5 * len(dts)), squeeze=False)
    width = 0.27
    for ax, d in zip(axes[:, 0], dts, strict=True):
        for j, v in enumerate(VARIANTS):
            ys = []
            for mdl in models:
                g = geomean(
                    [
                        float(r["speedup"])
                        for r in rows
                        if (r["model"], r["variant"], r["datatype"]) == (mdl, v, d)
                    ]
                )
                ys.append(g or 0.0)
            ax.bar([i + (j - 1) * width for i in range(len(models))], ys, width, label=v)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("geomean speedup over cuDNN")
        ax.set_title(f"best default instance vs cuDNN per model, {d}")
        ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot -> {path}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", type=Path, nargs="+")
    ap.add_argument("--cudnn", type=Path, nargs="+", required=True)
    ap.add_argument("--map", type=Path, required=True)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--tag", default="", help="file name stem (default <date>_<gpu>)")
    a = ap.parse_args(argv)
    prof = read_rows(a.profiles)
    cudnn = read_cudnn(a.cudnn)
    with open(a.map, newline="") as f:
        mapping = list(csv.DictReader(f))
    rows, missing = merge(prof, cudnn, mapping)
    gpu = next((r["gpu"] for r in rows if r["gpu"]), "gpu")
    tag = a.tag or f"{time.strftime('%Y-%m-%d')}_{gpu.split()[-1]}"
    a.out_dir.mkdir(parents=True, exist_ok=True)
    out = a.out_dir / f"{tag}_models.csv"
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    md = table(rows, mapping, missing)
    (a.out_dir / f"{tag}_models.md").write_text(md)
    print(md)
    print(f"{len(rows)} rows -> {out}")
    print(plot(rows, a.out_dir / f"{tag}_models.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
