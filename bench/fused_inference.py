"""Fused inference forwards: torchvision models in eval mode, channels-last, in fp16 / bf16 (the
model cast to the dtype), per model, batch and dtype in five modes:

  cudnn_graph   PyTorch with cuDNN (benchmark=True) and its separate BatchNorm / activation /
                add kernels, the forward captured as one CUDA graph (the speedup reference)
  ckgen_graph   ckgen.torch.convert(model, fuse=True): Conv+BN+activation(+residual) as one
                ckgen kernel each (ckgen::conv_fused), under a CUDA graph
  compile       torch.compile(model) of the unfused model, default mode
  compile_max   torch.compile(model, mode="max-autotune-no-cudagraphs")
  ckgen_compile torch.compile(mode="reduce-overhead") of the ckgen_graph model: ckgen's fused
                convolutions (custom ops, no graph break) with Inductor's kernels for the rest
                (pooling, upsampling, adds, concatenation), replayed as CUDA graphs

retinanet_resnet50_fpn runs its backbone, FPN and heads (the tensors the detector's loss and
post-processing start from): anchor generation, box decoding and NMS are data-dependent host
work that no CUDA graph captures and no convolution kernel changes.

Each row's outputs are compared with the unfused model's eager outputs in the same dtype
(max_err: the largest absolute difference; max_rel_err: that over the reference's largest
magnitude); fp32_err is the unfused low-precision model's own max_rel_err against fp32 (the
rounding floor). Times: CUDA events around back-to-back warmed-up calls, median of --repeats.
ckgen_graph rows also sum, over the fused model's FusedConv calls, each one's time alone and
that of ckgen's plain convolution of the same problem (conv_fused_ms, conv_plain_ms; the issue's
target: the epilogue rides free, within 5 %); --no-conv-sums leaves them out.

Rows run in three sections, each with its share of --budget-s (time a section leaves goes to the
next): the two graph modes of every model, then compile and ckgen_compile, then compile_max
(batch 32 first).
A row that does not fit is written with status=skipped; every row is written as it is measured.
--resume FILE keeps FILE's rows (but the skipped ones), measures the others and appends them to
FILE: repeated runs cover the whole table.

    CKGEN_TORCH_LIB=build/lib/libckgen_dispatch.so python3 bench/fused_inference.py \\
        --budget-s 400 --out-dir bench/results --summary --plot
    python3 bench/fused_inference.py --report-only --csv FILE --summary --plot
    python3 bench/fused_inference.py --kernel-globs --dtypes fp16,bf16

Needs torch and torchvision; matplotlib for --plot (else skipped, with a note).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import result_rows
from result_rows import num, read_rows, skipped

HERE = Path(__file__).resolve().parent
MODELS = ("resnet50", "resnext50_32x4d", "mobilenet_v2", "retinanet_resnet50_fpn")
MODES = ("cudnn_graph", "ckgen_graph", "compile", "compile_max", "ckgen_compile")
CKGEN_MODES = ("ckgen_graph", "ckgen_compile")
COMPILE_MODE = {
    "compile": "default", "compile_max": "max-autotune-no-cudagraphs",
    "ckgen_compile": "reduce-overhead",
}  # fmt: skip
SECTIONS = (("cudnn_graph", "ckgen_graph"), ("compile", "ckgen_compile"), ("compile_max",))
SHARES = (0.4, 0.25, 0.35)  # of the budget, per section
DTYPES = ("fp16", "bf16")
REFERENCE = "cudnn_graph"
COLUMNS = (
    "model", "batch", "datatype", "mode", "ms", "speedup_vs_cudnn", "max_err", "max_rel_err",
    "fp32_err", "fused", "left", "conv_fused_ms", "conv_plain_ms", "status", "gpu",
)  # fmt: skip
EST_S = {
    "cudnn_graph": 10.0, "ckgen_graph": 20.0, "compile": 60.0, "compile_max": 150.0,
    "ckgen_compile": 60.0,
}  # fmt: skip
TARGET_CUDNN = {"resnet50": 1.25, "resnext50_32x4d": 1.25}  # batch 32, against cudnn_graph
TARGET_COMPILE = 1.10  # every model, against compile
TARGET_LAYER = 1.05  # the fused layers' conv time against the plain conv of their problems


class Key(NamedTuple):
    model: str
    batch: int
    datatype: str
    mode: str


def _list(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if items == ["all"]:
            return list(allowed)
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"{bad or text!r}: choose from {', '.join(allowed)}")
        return items

    return parse


def parse_args(argv: list[str] | None = None) -> Any:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=_list(MODELS), default=list(MODELS))
    p.add_argument("--dtypes", type=_list(DTYPES), default=list(DTYPES))
    p.add_argument("--modes", type=_list(MODES), default=list(MODES))
    p.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",")], default=[32, 1])
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--detection-size", type=int, default=800)
    p.add_argument("--budget-s", type=float, default=0.0, help="0: no limit")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--target-ms", type=float, default=300.0)
    p.add_argument("--csv", type=Path, default=None, help="default: OUT_DIR/<date>_<gpu>_...")
    p.add_argument("--out-dir", type=Path, default=HERE / "results")
    p.add_argument(
        "--resume",
        type=Path,
        default=None,
        help="keep the rows of this CSV, measure the missing ones, append them to it",
    )
    p.add_argument("--lib", default="", help="libckgen_dispatch.so (default: CKGEN_TORCH_LIB)")
    p.add_argument(
        "--conv-sums",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ckgen_graph rows: also time each fused layer alone and ckgen's plain conv of its "
        "problem (the sums: conv_fused_ms, conv_plain_ms)",
    )
    p.add_argument(
        "--layers-csv",
        type=Path,
        default=None,
        help="with --conv-sums: append each fused layer's times and both picks to this CSV; "
        "with --summary (and --report-only), count the layers within 5 %% of their plain conv",
    )
    p.add_argument("--summary", action="store_true")
    p.add_argument("--plot", nargs="?", const="auto", default=None)
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--kernel-globs", action="store_true")
    return p.parse_args(argv)


def kernel_globs(dtypes: list[str]) -> list[str]:
    """The forward kernels the models need (all 2D): the default set's and fused.yaml's."""
    return [f"grouped_conv_fwd_{dt}_2d_*" for dt in dtypes]


def gpu_tag(name: str) -> str:
    """A file-name word for a GPU name: 'NVIDIA H200' -> 'H200'."""
    words = [w for w in name.replace("NVIDIA", "").split() if w not in ("GeForce", "Tesla")]
    tag = "_".join(words) or "gpu"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in tag)


def csv_path(out_dir: Path, gpu: str, date: str | None = None) -> Path:
    return out_dir / f"{date or time.strftime('%Y-%m-%d')}_{gpu_tag(gpu)}_fused_inference.csv"


def plan(args: Any) -> Iterator[tuple[int, Key]]:
    """(section, key) in the order rows run: the graph section model by model (both modes of a
    (model, batch, dtype) together), then each compile section, batch 32 first."""
    for s, modes in enumerate(SECTIONS):
        modes = [m for m in modes if m in args.modes]
        batches = args.batches if s == 0 else sorted(args.batches, reverse=True)
        if s == 0:
            for model in args.models:
                for b in batches:
                    for dt in args.dtypes:
                        for m in modes:
                            yield s, Key(model, b, dt, m)
        else:
            for dt in args.dtypes:
                for b in batches:
                    for model in args.models:
                        for m in modes:
                            yield s, Key(model, b, dt, m)


class Budget:
    """Section s may run until its cumulative share of the budget; a row runs when the time its
    mode took last (EST_S before one is seen) fits before that."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock, self.t0 = seconds, clock, clock()
        self.est = dict(EST_S)

    def deadline(self, section: int) -> float:
        return self.seconds * sum(SHARES[: section + 1])

    def allows(self, section: int, mode: str) -> bool:
        if not self.seconds:
            return True
        return self.clock() - self.t0 + self.est[mode] <= self.deadline(section)

    def record(self, mode: str, seconds: float) -> None:
        self.est[mode] = seconds


def fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def errors(out: list[Any], ref: list[Any]) -> tuple[float, float]:
    """(max abs difference, that over the reference's max magnitude) over paired tensors."""
    if len(out) != len(ref):
        return math.inf, math.inf
    worst = scale = 0.0
    for a, b in zip(out, ref, strict=True):
        worst = max(worst, float((a.float() - b.float()).abs().max()))
        scale = max(scale, float(b.float().abs().max()))
    return worst, worst / scale if scale else worst


def key_of(row: dict) -> Key:
    return Key(row["model"], int(row["batch"]), row["datatype"], row["mode"])


class Writer(result_rows.Writer):
    """The CSV, row by row; with resume, the rows that file holds (but the skipped ones) come
    first and count as done, and each new measured row is appended to it too."""

    def __init__(self, path: Path, resume: Path | None = None) -> None:
        super().__init__(path, resume, COLUMNS, key_of, fmt)


# ----------------------------------------------------------------------------- reporting
def _ms(rows: list[dict]) -> dict[Key, float]:
    out = {}
    for r in rows:
        v = num(r.get("ms"))
        if v:
            out[key_of(r)] = v
    return out


def targets(rows: list[dict]) -> list[tuple[str, str, str]]:
    """(target, verdict, detail) of the issue's targets: ckgen fused >= 1.25x cudnn_graph on
    resnet50 and resnext50_32x4d at batch 32; >= 1.1x compile on every model (each batch and
    dtype measured; 'not measured' where rows are missing)."""
    ms = _ms(rows)
    out = []
    for model, goal in TARGET_CUDNN.items():
        pairs = [(k.datatype, ms[k._replace(mode=REFERENCE)] / v) for k, v in ms.items()
                 if k.model == model and k.batch == 32 and k.mode == "ckgen_graph"
                 and k._replace(mode=REFERENCE) in ms]  # fmt: skip
        out.append(_verdict(f"{model} batch 32: ckgen_graph >= {goal}x cudnn_graph", pairs, goal))
    for model in MODELS:
        pairs = [(f"b{k.batch} {k.datatype}", ms[k._replace(mode="compile")] / v)
                 for k, v in ms.items() if k.model == model and k.mode == "ckgen_graph"
                 and k._replace(mode="compile") in ms]  # fmt: skip
        out.append(
            _verdict(f"{model}: ckgen_graph >= {TARGET_COMPILE}x compile", pairs, TARGET_COMPILE)
        )
        best = {}  # the faster of ckgen's two paths, per (batch, dtype) where both are measured
        for k, v in ms.items():
            if k.model == model and k.mode in CKGEN_MODES and k._replace(mode="compile") in ms:
                w = (k.batch, k.datatype)
                best[w] = max(best.get(w, 0.0), ms[k._replace(mode="compile")] / v)
        if any(k.model == model and k.mode == "ckgen_compile" for k in ms):
            pairs = [(f"b{b} {dt}", v) for (b, dt), v in best.items()]
            title = f"{model}: best of ckgen_graph / ckgen_compile >= {TARGET_COMPILE}x compile"
            out.append(_verdict(title, pairs, TARGET_COMPILE))
    pairs = [(f"{r['model']} b{r['batch']} {r['datatype']}",
              float(r["conv_plain_ms"]) / float(r["conv_fused_ms"])) for r in rows
             if r.get("mode") == "ckgen_graph" and num(r.get("conv_fused_ms"))
             and num(r.get("conv_plain_ms"))]  # fmt: skip
    goal = 1 / TARGET_LAYER
    out.append(_verdict(f"fused layers' conv time within {TARGET_LAYER - 1:.0%} of the plain conv "
                        f"(plain / fused >= {goal:.3f})", pairs, goal))  # fmt: skip
    return out


def _verdict(title: str, pairs: list[tuple[str, float]], goal: float) -> tuple[str, str, str]:
    if not pairs:
        return title, "not measured", ""
    verdict = "met" if all(s >= goal for _, s in pairs) else "missed"
    return title, verdict, ", ".join(f"{w} {s:.2f}x" for w, s in sorted(pairs))


def _table_order(k: tuple[str, int, str]) -> tuple[int, int, str]:
    """(model, batch, dtype) in the tables' order: MODELS', larger batches first, then dtype."""
    return (MODELS.index(k[0]) if k[0] in MODELS else 99, -k[1], k[2])


def summary(rows: list[dict]) -> str:
    lines = ["model                   batch dtype " + " ".join(f"{m:>12}" for m in MODES)]
    ms = _ms(rows)
    keys = sorted({(k.model, k.batch, k.datatype) for k in ms}, key=_table_order)
    for model, b, dt in keys:
        cells = []
        for m in MODES:
            v = ms.get(Key(model, b, dt, m))
            ref = ms.get(Key(model, b, dt, REFERENCE))
            cells.append(f"{v:7.3f} {ref / v:4.2f}x" if v and ref else f"{'-':>12}")
        lines.append(f"{model:<23} {b:>5} {dt:<5} " + " ".join(cells))
    errs = [r for r in rows if r.get("mode") in CKGEN_MODES and num(r.get("max_rel_err"))]
    if errs:
        worst = max(errs, key=lambda r: float(r["max_rel_err"]))
        lines.append(
            f"worst ckgen max_rel_err {float(worst['max_rel_err']):.3g} ({worst['model']} "
            f"b{worst['batch']} {worst['datatype']}; its fp32_err {worst.get('fp32_err')})"
        )
    sums = [r for r in rows if r.get("mode") == "ckgen_graph" and num(r.get("conv_fused_ms"))
            and num(r.get("conv_plain_ms"))]  # fmt: skip
    for r in sums:
        f, p = float(r["conv_fused_ms"]), float(r["conv_plain_ms"])
        lines.append(
            f"conv of the fused layers {r['model']} b{r['batch']} {r['datatype']}: fused {f:.3f} "
            f"ms, plain {p:.3f} ms ({f / p:.3f}x)"
        )
    n_skipped = sum(map(skipped, rows))
    lines.append(f"{len(rows)} rows, {n_skipped} skipped; ms and speedup over cudnn_graph")
    lines.append("targets (issue 51):")
    lines += [f"  [{v}] {t}" + (f" -- {d}" if d else "") for t, v, d in targets(rows)]
    return "\n".join(lines)


def layer_counts(layers: list[dict]) -> list[str]:
    """The issue's per-layer criterion over a --layers-csv: per model, batch and dtype, how many
    fused layers (each problem once) run within TARGET_LAYER of ckgen's plain conv of their
    problem, and the geomean fused / plain."""
    groups: dict[tuple[str, int, str], list[float]] = {}
    for r in layers:
        if num(r.get("ratio")) and float(r["ratio"]) > 0:
            key = (r["model"], int(r["batch"]), r["datatype"])
            groups.setdefault(key, []).append(float(r["ratio"]))
    lines = []
    for model, b, dt in sorted(groups, key=_table_order):
        v = groups[(model, b, dt)]
        within = sum(x <= TARGET_LAYER for x in v)
        geo = math.exp(sum(map(math.log, v)) / len(v))
        lines.append(
            f"fused layers of {model} b{b} {dt}: {within} of {len(v)} within "
            f"{TARGET_LAYER - 1:.0%} of their plain conv (geomean {geo:.3f}x)"
        )
    return lines


def plot(rows: list[dict], path: Path) -> str:
    """Bars of each mode's speedup over cudnn_graph per (model, batch), one panel per dtype."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return f"--plot: matplotlib is not installed, {path} not written"
    ms = _ms(rows)
    dts = [d for d in DTYPES if any(k.datatype == d for k in ms)]
    groups = sorted({(k.model, k.batch) for k in ms}, key=lambda g: (MODELS.index(g[0]), -g[1]))
    if not dts or not groups:
        return f"--plot: no rows to draw, {path} not written"
    others = [m for m in MODES if m != REFERENCE]
    fig, axes = plt.subplots(len(dts), 1, figsize=(max(8, len(groups)), 3.4 * len(dts)),
                             squeeze=False)  # fmt: skip
    w = 0.8 / len(others)
    for ax, dt in zip(axes[:, 0], dts, strict=True):
        for j, m in enumerate(others):
            vals = []
            for model, b in groups:
                ref, v = ms.get(Key(model, b, dt, REFERENCE)), ms.get(Key(model, b, dt, m))
                vals.append(ref / v if ref and v else 0.0)
            xs = [i + (j - (len(others) - 1) / 2) * w for i in range(len(groups))]
            ax.bar(xs, vals, w, label=m)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_title(f"inference {dt}: speedup over cuDNN + separate ops (CUDA graph)")
        ax.set_xticks(range(len(groups)), [f"{m} b{b}" for m, b in groups], rotation=30,
                      ha="right", fontsize=8)  # fmt: skip
        ax.legend(fontsize=7, ncol=len(others))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot -> {path}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.kernel_globs:
        print(" ".join(kernel_globs(args.dtypes)))
        return 0
    if args.report_only:
        if args.csv is None:
            raise SystemExit("--report-only needs --csv")
        rows = read_rows(args.csv)
        path = args.csv
    else:
        import fused_measure

        rows, path = fused_measure.run(args)
    if not rows:
        print(f"no rows in {path}")
        return 1
    if args.summary:
        print(summary(rows))
        if args.layers_csv and args.layers_csv.is_file():
            print("\n".join(layer_counts(read_rows(args.layers_csv))))
    if args.plot:
        out = Path(args.plot) if args.plot != "auto" else path.with_suffix(".png")
        print(plot(rows, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
