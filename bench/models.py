"""Whole-model training steps and inference forwards of the corpus models (bench/model_shapes.py)
with their convolutions through ckgen and through cuDNN, in one process on one GPU.

Per model, dtype (fp16 / bf16 by torch.autocast: parameters, BatchNorm and its statistics fp32),
phase (train: forward + backward + plain SGD update; infer: forward under no_grad, eval mode),
mode (eager; graph: the whole step captured as one CUDA graph; compile: torch.compile) and conv
backend:

  cudnn_bench  PyTorch's convs, torch.backends.cudnn.benchmark = True (the speedup reference)
  cudnn        PyTorch's convs, cudnn.benchmark = False (cuDNN's default heuristics)
  ckgen        ckgen.torch.convert(model): ckgen kernels chosen by the library's heuristic
  ckgen_tune   the same with ckgen.torch.benchmark = True (first calls autotune)
  ckgen_fused  ckgen.torch.convert(model.train(), fuse=True): Conv + bias + activation fused for
               training (training rows only; the library needs the fused configs, FUSED=1 in
               bench/device_models.sh)

(ckgen rows keep cudnn.benchmark on for the convs ckgen leaves to PyTorch.) Models are
channels-last. Times: the backends of a model, batch, phase, dtype and mode are warmed up
together, then timed side by side in --repeats interleaved rounds (bench/timing.py: host-bound
steps drift with the CPU by tens of percent within a minute); a row's time is its median.
Gradients (train, eager; one step, no update, dropout off): the worst conv layer's normalised L2
error ||g - g32|| / ||g32|| of the weight gradients, grad_err against an fp32 cuDNN step (TF32
off) on the same weights, input and upstream gradient (a random-init network can amplify
rounding a lot, cuDNN's too), layer_grad_err against each conv's weight gradient computed in
fp32 from the very inputs the low-precision step gave it (the kernels' own error); cudnn_* are
cudnn_bench's errors of the same model and dtype.
compile rows count graph breaks (torch._dynamo.explain) and those inside ckgen.

Every row goes to --csv as soon as its group is measured; --resume FILE skips the rows FILE already
holds (measured or failed; not those whose status begins with "skipped": out of budget, no ckgen
library, CUDA failed earlier) and appends the new ones to it. Order:
phase, mode, model, batch, dtype, backend (training rows first: the targets are about them).

    CKGEN_TORCH_LIB=build/lib/libckgen_dispatch.so python3 bench/models.py --csv models.csv \\
        --models resnet50,mobilenet_v2 --dtypes fp16 --budget-s 500 --summary --plot models.png
    python3 bench/models.py --report-only --csv models.csv --summary --plot models.png
    python3 bench/models.py --kernel-globs --models resnet50,r3d_18 --dtypes fp16,bf16

Needs torch and torchvision (torchaudio for wav2vec2_base); matplotlib for --plot (else skipped).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import result_rows
from result_rows import num, read_rows

HERE = Path(__file__).resolve().parent
COLUMNS = (
    "model", "batch", "phase", "dtype", "mode", "backend", "ms", "speedup_vs_cudnn", "grad_err",
    "cudnn_grad_err", "layer_grad_err", "cudnn_layer_grad_err", "graph_breaks", "ckgen_breaks",
    "converted", "left", "status", "gpu",
)  # fmt: skip
# the order each key runs; ckgen before ckgen_tune, whose picks are autotuned (model_steps.prepare)
BACKENDS = ("cudnn_bench", "cudnn", "ckgen", "ckgen_tune", "ckgen_fused")
DEFAULT_BACKENDS = BACKENDS[
    :4
]  # ckgen_fused when asked for (its kernels are not the default set's)
CKGEN = ("ckgen", "ckgen_tune")  # the backends the user-path targets are about
LIBRARY = (*CKGEN, "ckgen_fused")  # the backends that need a ckgen library
REFERENCE = "cudnn_bench"
ERR = ("grad_err", "layer_grad_err")  # each beside cudnn_bench's: cudnn_grad_err, ...
MODES = ("eager", "graph", "compile")
PHASES = ("train", "infer")
DTYPES = ("fp16", "bf16")
NDIM = {"image": 2, "video": 3, "audio": 1}
GRAPH_TARGET = {"resnet50": 1.10, "resnext50_32x4d": 1.10, "wide_resnet50_2": 1.10}
EST_S = {"eager": 10.0, "graph": 15.0, "compile": 120.0}  # a row's cost before one is seen


class Key(NamedTuple):
    model: str
    batch: int
    phase: str
    dtype: str
    mode: str
    backend: str

    @classmethod
    def of(cls, row: dict) -> Key:
        return cls(row["model"], int(row["batch"]), row["phase"], row["dtype"], row["mode"],
                   row["backend"])  # fmt: skip

    def group(self) -> tuple:
        """The rows that share a cuDNN reference time."""
        return self[:5]


def _models() -> list[Any]:
    from model_shapes import MODELS

    return list(MODELS)


def _list(kind: str, allowed: Iterable[str], none: bool = False) -> Callable[[str], list[str]]:
    """A comma-separated list of `allowed` values; 'all'; and, with `none`, 'none' (empty)."""
    allowed = tuple(allowed)

    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if items == ["all"]:
            return list(allowed)
        if none and items == ["none"]:
            return []
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"{kind}: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(allowed)}"
            )
        return items

    return parse


def parse_args(argv: list[str] | None = None, names: Iterable[str] | None = None) -> Any:
    names = list(names) if names is not None else [m.name for m in _models()]
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", type=_list("models", names), default=names)
    ap.add_argument("--compile-models", type=_list("compile models", names, none=True),
                    default=None, help="models with compile rows: all (of --models, the "
                    "default), none, or a list")  # fmt: skip
    ap.add_argument("--dtypes", type=_list("dtypes", DTYPES), default=list(DTYPES))
    ap.add_argument("--phases", type=_list("phases", PHASES), default=list(PHASES))
    ap.add_argument("--modes", type=_list("modes", MODES), default=list(MODES))
    ap.add_argument("--backends", type=_list("backends", BACKENDS), default=list(DEFAULT_BACKENDS))
    ap.add_argument("--image-batch", type=int, default=32, help="training batch, image models")
    ap.add_argument("--clip-batch", type=int, default=8, help="training batch, video and audio")
    ap.add_argument("--infer-batches", type=lambda s: [int(v) for v in s.split(",")], default=[1])
    ap.add_argument("--batch", action="append", default=[], metavar="MODEL=N",
                    help="training batch of one model (repeatable)")  # fmt: skip
    ap.add_argument("--lr", type=float, default=1e-4, help="SGD step size (0: no update)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20, help="most steps of a backend per round")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--target-ms", type=float, default=300.0,
                    help="time of the slowest backend per round (fewer iters)")  # fmt: skip
    ap.add_argument("--compile-mode", default="", help="torch.compile mode (default: default)")
    ap.add_argument("--budget-s", type=float, default=0.0, help="wall-clock budget (0: none)")
    ap.add_argument("--csv", type=Path, default=Path("models.csv"))
    ap.add_argument("--resume", type=Path, help="rows measured before: skipped, appended to")
    ap.add_argument("--plot", type=Path, help="per-model bar chart (PNG)")
    ap.add_argument("--summary", action="store_true", help="ratio table and the issue's targets")
    ap.add_argument("--report-only", action="store_true", help="read --csv; measure nothing")
    ap.add_argument("--kernel-globs", action="store_true",
                    help="print the ckgen kernel globs the selected models and dtypes need")  # fmt: skip
    ap.add_argument(
        "--lib", help="libckgen_dispatch.so or its build dir (default: CKGEN_TORCH_LIB)"
    )
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args(argv)
    if a.compile_models is None:
        a.compile_models = list(a.models)
    for item in a.batch:
        name, _, n = item.partition("=")
        if name not in names or not n.isdigit():
            ap.error(f"--batch {item}: expected MODEL=N with MODEL one of the corpus")
    a.batches = {k: int(v) for k, v in (item.split("=") for item in a.batch)}
    return a


def train_batch(spec: Any, args: Any) -> int:
    if spec.name in args.batches:
        return int(args.batches[spec.name])
    return args.image_batch if spec.family == "image" else args.clip_batch


def plan(args: Any, specs: list[Any]) -> Iterator[Key]:
    """Every row to measure, in order: phase, mode, model, batch, dtype, backend."""
    chosen = [s for s in specs if s.name in args.models]
    for phase in [p for p in PHASES if p in args.phases]:
        for mode in [m for m in MODES if m in args.modes]:
            for s in chosen:
                if mode == "compile" and s.name not in args.compile_models:
                    continue
                batches = [train_batch(s, args)] if phase == "train" else args.infer_batches
                for b in batches:
                    for dt in [d for d in DTYPES if d in args.dtypes]:
                        for be in [x for x in BACKENDS if x in args.backends]:
                            yield Key(s.name, b, phase, dt, mode, be)


def groups(keys: Iterable[Key]) -> Iterator[list[Key]]:
    """The plan's rows in groups that share a cuDNN reference (consecutive in plan order): the
    backends of one model, batch, phase, dtype and mode, timed side by side."""
    group: list[Key] = []
    for k in keys:
        if group and k.group() != group[0].group():
            yield group
            group = []
        group.append(k)
    if group:
        yield group


def kernel_globs(args: Any, specs: list[Any]) -> list[str]:
    nds = sorted({NDIM[s.family] for s in specs if s.name in args.models})
    return [f"grouped_conv_*_{dt}_{nd}d_*" for dt in args.dtypes for nd in nds]


class Budget:
    """Skips a row when the budget cannot hold it: elapsed + the last row of its mode's cost."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock, self.t0 = seconds, clock, clock()
        self.est = dict(EST_S)

    def allows(self, mode: str, rows: int = 1) -> bool:
        """Whether `rows` rows of mode (a group's first `rows`) fit in what is left."""
        return not self.seconds or self.clock() - self.t0 + rows * self.est[mode] <= self.seconds

    def record(self, mode: str, seconds: float) -> None:
        self.est[mode] = seconds


class Writer(result_rows.Writer):
    """The CSV (rewritten with the resumed rows first) and the resume file, appended row by row."""

    def __init__(self, path: Path, resume: Path | None = None) -> None:
        super().__init__(path, resume, COLUMNS, Key.of, fmt)


def fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}" if abs(v) < 1e-2 else f"{v:.4f}"
    return str(v)


# ----------------------------------------------------------------------------- measuring
def measure_all(args: Any, writer: Writer, log: Callable[[str], None] = print) -> None:
    os.environ["CKGEN_AUTOTUNE"] = "0"  # the heuristic rows must not autotune
    import model_steps as ms
    import torch

    specs = {s.name: s for s in _models()}
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to PyTorch (--device cpu: a dry run, cuDNN rows)")
    gpu = torch.cuda.get_device_name() if cuda else "cpu"
    reg, args.lib_error = None, ""
    if cuda and any(b in LIBRARY for b in args.backends):
        try:
            import ckgen.torch as ct
            from ckgen.runtime.library import KernelLibrary

            reg = KernelLibrary.load(args.lib) if args.lib else ct.default_registry()
            log(f"ckgen library: {reg}")
        except Exception as ex:  # noqa: BLE001 - ckgen rows get the reason as status
            args.lib_error = ms.short(ex)
            log(f"no ckgen library: {args.lib_error}")
    ref_ms = {Key.of(r).group(): num(r.get("ms")) for r in writer.done.values()
              if r["backend"] == REFERENCE}  # fmt: skip
    ref_err = {(r["model"], r["dtype"], c): num(r.get(c)) for r in writer.done.values()
               for c in ERR if r["backend"] == REFERENCE and r["mode"] == "eager"}  # fmt: skip
    args.runs = {  # the (batch, training) forwards of each model, for ckgen's kernel check
        s.name: [(train_batch(s, args), True)] * ("train" in args.phases)
        + [(b, False) for b in args.infer_batches] * ("infer" in args.phases)
        for s in specs.values()
    }
    entries: dict[str, Any] = {}

    def entry_of(model: str) -> Any:
        entry = entries.get(model)
        if entry is None:
            log(f"[{time.strftime('%H:%M:%S')}] {model}: building")
            try:
                entry = entries[model] = ms.Entry(specs[model], args.device)
            except Exception as ex:  # noqa: BLE001 - every row of the model says why
                entry = entries[model] = ms.RowError("error: build: " + ms.short(ex))
        if isinstance(entry, ms.RowError):
            raise entry
        return entry

    def guarded(key: Key, row: dict, fn: Callable[[], Any]) -> Any:
        """fn's value; None where it raised, with the row's status saying what."""
        try:
            return fn()
        except ms.RowError as ex:
            row["status"] = str(ex)
        except torch.cuda.OutOfMemoryError:
            row["status"] = "oom"
        except Exception as ex:  # noqa: BLE001 - the row records it, the run goes on
            kind = "compile_error: " if key.mode == "compile" else "error: "
            row["status"] = kind + ms.short(ex)
        return None

    budget = Budget(args.budget_s)
    dead = ""  # a CUDA error the context does not survive: the rows after it are not run
    for group in groups(plan(args, list(specs.values()))):
        todo = [k for k in group if k not in writer.done]
        if not todo:
            continue
        t0 = time.monotonic()
        rows = {k: {**k._asdict(), "gpu": gpu, "status": "skipped"} for k in todo}
        live: list[Key] = []
        for k in todo:
            if dead:
                rows[k]["status"] = f"skipped: CUDA failed before ({dead})"
            elif budget.allows(k.mode, len(live) + 1):
                live.append(k)
        if live and live[0].mode == "compile":  # each check resets dynamo: all before compiling
            for k in live:
                guarded(k, rows[k], lambda k=k: ms.check_breaks(entry_of(k.model), k, rows[k],
                                                                reg, args, log))  # fmt: skip
        steps: dict[str, Callable[[], Any]] = {}
        for k in live:
            if rows[k]["status"] != "skipped":
                continue  # its break check failed
            first = not steps  # the first step prepared clears ckgen's caches (ms.prepare)
            fn = guarded(k, rows[k], lambda k=k: ms.prepare(entry_of(k.model), k, rows[k], reg,
                                                             args, log, first))  # fmt: skip
            if fn is not None:
                steps[k.backend] = fn
        if steps:
            timed = [k for k in live if k.backend in steps]
            switch = lambda b: ms.set_backend(b, reg if cuda else None, clear=False)  # noqa: E731
            times = guarded(timed[0], rows[timed[0]],
                            lambda: ms.interleaved_ms(steps, args, switch, cuda))  # fmt: skip
            for k in timed:
                if times is None:
                    rows[k]["status"] = rows[timed[0]]["status"]
                else:
                    rows[k]["ms"], rows[k]["status"] = times[k.backend], "ok"
        steps.clear()
        try:
            if live and live[0].mode == "compile":
                torch._dynamo.reset()
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
        except Exception as ex:  # noqa: BLE001 - e.g. an illegal address: the context is gone
            dead = ms.short(ex)
            for k in live:
                rows[k]["status"] = f"error: {dead}"
        took = time.monotonic() - t0
        if live:
            budget.record(live[0].mode, took / len(live))
        for key in todo:
            row = rows[key]
            ms_ = num(row.get("ms"))
            if key.backend == REFERENCE:
                ref_ms[key.group()] = ms_
                if key.mode == "eager" and key.phase == "train":
                    for c in ERR:
                        ref_err[(key.model, key.dtype, c)] = num(row.get(c))
        for key in todo:
            row = rows[key]
            ms_ = num(row.get("ms"))
            ref = ref_ms.get(key.group())
            if ms_ and ref:
                row["speedup_vs_cudnn"] = ref / ms_
            for c in ERR:
                if row.get(c) is not None:
                    row["cudnn_" + c] = ref_err.get((key.model, key.dtype, c))
            writer.write(row)
            cells = [f"{k}={fmt(row[k])}" for k in COLUMNS[:-2] if row.get(k) is not None]
            log(" ".join(cells) + f" [{row['status']}] ({took:.1f} s, group)")


# ----------------------------------------------------------------------------- reporting
def _speedups(rows: list[dict]) -> dict[Key, float]:
    return {Key.of(r): s for r in rows if (s := num(r.get("speedup_vs_cudnn"))) is not None}


def _models_of(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["model"] for r in rows))


def targets(rows: list[dict]) -> list[tuple[str, str, str, str]]:
    """(target, ckgen backend, verdict: met / NOT met / incomplete / not measured, detail) of the
    issue's three targets, on the training rows, every dtype measured, against cudnn_bench."""
    sp = _speedups(rows)
    by_key = {Key.of(r): r for r in rows}
    models = _models_of(rows)
    out = []
    specs = [
        ("eager training step >= cuDNN on every model", "eager", lambda m: 1.0),
        ("CUDA-graph training step >= 1.10x cuDNN(benchmark) on resnet50/resnext50/wide_resnet50,"
         " >= 1.0x elsewhere", "graph", lambda m: GRAPH_TARGET.get(m, 1.0)),
        ("torch.compile training step: 0 ckgen graph breaks and >= torch.compile + cuDNN",
         "compile", lambda m: 1.0),
    ]  # fmt: skip
    for title, mode, need in specs:
        for be in CKGEN:
            keys = [k for k in by_key if k.mode == mode and k.phase == "train" and k.backend == be]
            if not keys:
                out.append((title, be, "not measured", ""))
                continue
            fails, missing = [], []
            for m in models:
                mk = [k for k in keys if k.model == m]
                if not mk:
                    if mode != "compile":  # compile rows may cover a subset of the models
                        missing.append(m)
                    continue
                for k in mk:
                    s = sp.get(k)
                    if s is None:
                        missing.append(f"{m} {k.dtype} ({by_key[k].get('status')})")
                        continue
                    brk = num(by_key[k].get("ckgen_breaks")) or 0
                    if s < need(m) or brk > 0:
                        fails.append(
                            f"{m} {k.dtype} {s:.2f}x" + (f" {brk:.0f} breaks" if brk else "")
                        )
            verdict = "NOT met" if fails else "incomplete" if missing else "met"
            detail = "; ".join(
                x
                for x in (", ".join(fails), "missing: " + ", ".join(missing) if missing else "")
                if x
            )
            out.append((title, be, verdict, detail))
    return out


def summary(rows: list[dict]) -> str:
    """Per (phase, dtype): each model's cudnn_bench ms and the others' speedups over it, per mode."""
    sp = _speedups(rows)
    ms = {Key.of(r): v for r in rows if r["backend"] == REFERENCE and (v := num(r.get("ms")))}
    lines = []
    others = [b for b in BACKENDS if b != REFERENCE]
    combos = sorted({(k.phase, k.dtype) for k in sp}, key=lambda c: (PHASES.index(c[0]), c[1]))
    for phase, dt in combos:
        lines.append(f"{phase} {dt}: cuDNN benchmark=True ms, and speedups over it (its ms / ms)")
        keys = [k for k in sp if k.phase == phase and k.dtype == dt]
        modes = [m for m in MODES if any(k.mode == m for k in keys)]
        head = [f" {m + ' ms':>10}" + "".join(f" {c:>10}" for c in others) for m in modes]
        lines.append(f"{'model':24} {'batch':>5}" + " |".join(head))
        for m, b in dict.fromkeys((k.model, k.batch) for k in keys):
            cells = []
            for mode in modes:
                t = ms.get(Key(m, b, phase, dt, mode, REFERENCE))
                c = f" {t:>10.2f}" if t is not None else f" {'-':>10}"
                for be in others:
                    v = sp.get(Key(m, b, phase, dt, mode, be))
                    c += f" {v:>9.2f}x" if v is not None else f" {'-':>10}"
                cells.append(c)
            lines.append(f"{m:24} {b:>5}" + " |".join(cells))
        lines.append("")

    def g(v: Any) -> str:
        return "-" if num(v) is None else f"{num(v):.3g}"

    errs = [r for r in rows if r["backend"] in LIBRARY and num(r.get("grad_err")) is not None]
    if errs:
        lines.append(
            "conv weight gradients vs fp32, worst layer's ||g - g32|| / ||g32||, ckgen / cuDNN"
        )
        lines.append(
            "(step: the whole step in fp32; layer: each conv in fp32 on the inputs it saw):"
        )
        for r in errs:
            e = [f"{g(r.get(c))} / {g(r.get('cudnn_' + c))}" for c in ERR]
            lines.append(
                f"  {r['model']:24} {r['dtype']} {r['backend']:10} step {e[0]:17} layer {e[1]}"
            )
        lines.append("")
    brk = [r for r in rows if r["mode"] == "compile" and num(r.get("graph_breaks")) is not None]
    if brk:
        lines.append("torch.compile graph breaks (of them in ckgen):")
        lines += [f"  {r['model']:24} {r['phase']:5} {r['dtype']} {r['backend']:11} "
                  f"{r['graph_breaks']} ({r.get('ckgen_breaks') or 0})" for r in brk]  # fmt: skip
        lines.append("")
    bad = [r for r in rows if r.get("status") not in ("ok", "skipped")]
    n_skip = sum(r.get("status") == "skipped" for r in rows)
    if bad or n_skip:
        lines.append(f"{n_skip} rows skipped (budget); rows not measured:")
        lines += [f"  {' '.join(str(v) for v in Key.of(r))}: {r['status']}" for r in bad[:40]]
        lines += [f"  ... and {len(bad) - 40} more"] if len(bad) > 40 else []
        lines.append("")
    lines.append("targets (issue 49; training rows, against cudnn_bench):")
    for title, be, verdict, detail in targets(rows):
        lines.append(f"  [{verdict}] {be}: {title}" + (f" -- {detail}" if detail else ""))
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> str:
    """Bars per model: each backend's speedup over cudnn_bench, one panel per (mode, phase, dtype)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return f"--plot: matplotlib is not installed, {path} not written"
    sp = _speedups(rows)
    panels = sorted({(k.mode, k.phase, k.dtype) for k in sp},
                    key=lambda p: (PHASES.index(p[1]), MODES.index(p[0]), p[2]))  # fmt: skip
    if not panels:
        return f"--plot: no speedups to draw, {path} not written"
    models = _models_of(rows)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, len(models) * 0.9), 3.2 * len(panels)),
                             squeeze=False)  # fmt: skip
    others = [b for b in BACKENDS if b != REFERENCE]
    width = 0.8 / len(others)
    for ax, (mode, phase, dt) in zip(axes[:, 0], panels, strict=True):
        for j, be in enumerate(others):
            vals = [statistics.mean(v) if (v := [s for k, s in sp.items() if k.model == m and
                    k[2:] == (phase, dt, mode, be)]) else 0.0 for m in models]  # fmt: skip
            ax.bar([i + (j - (len(others) - 1) / 2) * width for i in range(len(models))], vals, width,
                   label=be)  # fmt: skip
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_title(f"{phase} {dt}, {mode}: speedup over cuDNN benchmark=True")
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right", fontsize=8)
        ax.legend(fontsize=7, ncol=len(others))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot -> {path}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    specs = _models()
    if args.kernel_globs:
        print(" ".join(kernel_globs(args, specs)))
        return 0
    if args.report_only:
        rows = read_rows(args.csv)
        if not rows:
            print(f"no rows in {args.csv}")
            return 1
    else:
        writer = Writer(args.csv, args.resume)
        try:
            measure_all(args, writer)
        finally:
            writer.close()
        rows = writer.rows
    if args.summary:
        print(summary(rows))
    if args.plot:
        print(plot(rows, args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
