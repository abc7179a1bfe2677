"""Tuning commands over a built project: tune (the tuning database), check-heuristic (selection vs
best) and report (tables and plots against cuDNN). Thin wrappers over ckgen.tuning."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ckgen.cli.app import main
from ckgen.cli.common import (
    PathArg,
    err_console,
    file_option,
    k_batches,
    make_console,
    output_option,
    part_option,
    profile_selection,
    project_arch,
    words,
)
from ckgen.emit.output import check_writable
from ckgen.errors import CkgenError
from ckgen.model.arch import get_arch
from ckgen.model.vocab import DataType, Variant


@main.command("tune", short_help="Time every instance per shape; write the tuning database.")
@output_option("Project built by `ckgen build -o OUTPUT`.")
@file_option("--shapes", required=True, help="Shapes CSV.")
@file_option("--db", "db_path", help="Tuning database to write (default OUTPUT/tuning_db.json).")
@file_option(
    "--from-csv",
    "from_csv",
    help="Build the database from existing profile results instead of profiling.",
)
@part_option(
    "Tune on every shape, or on the even / odd rows of the shapes file (hold the rest out)."
)
@click.option("--variant", "variants", multiple=True, type=words(Variant))
@click.option("--datatype", "datatypes", multiple=True, type=words(DataType))
@click.option("--devices", default="", help="GPU indices to shard over (default: all visible).")
@click.option("--kernels", "kernels", multiple=True, help="Only instances matching these globs.")
@click.option(
    "--k-batch",
    "k_batch",
    default="0,1,2,4,8,16,32",
    show_default=True,
    callback=k_batches,
    help="Split counts to time (every variant; instances that never split run once).",
)
@click.option(
    "--verify", type=click.Choice(["none", "cpu", "gpu", "auto"]), default="gpu", show_default=True
)
@click.option("--timeout", type=click.IntRange(1), default=3600, show_default=True)
@click.option(
    "--keep",
    type=click.IntRange(1),
    default=None,
    help="Keep each shape's N fastest (instance, k_batch) (default: every one timed).",
)
def tune_cmd(
    out: Path,
    shapes: Path,
    db_path: Path | None,
    from_csv: Path | None,
    part: str,
    variants: tuple[str, ...],
    datatypes: tuple[str, ...],
    devices: str,
    kernels: tuple[str, ...],
    k_batch: list[int],
    verify: str,
    timeout: int,
    keep: int | None,
) -> None:
    """Time every instance (and split count) per shape and write the tuning database
    the dispatcher reads (load it with CKGEN_TUNING_DB=FILE or KernelLibrary.load_tuning_db)."""
    from ckgen.model.problem import load_shapes
    from ckgen.tuning.profile import read_results, run_profile
    from ckgen.tuning.tune import build_db, split_shapes, write_db

    problems = load_shapes(shapes)
    names = split_shapes(problems, part)
    arch = project_arch(out)
    path = db_path or out / "tuning_db.json"
    check_writable(path.parent)  # before an hour of profiling, not after
    if from_csv is not None:
        rows = read_results(from_csv)
    else:
        run = run_profile(
            out,
            shapes,
            **profile_selection(variants, datatypes, devices, kernels),
            only_shapes=(f"tune_shapes_{part}.csv", names),
            verify=verify,
            k_batches=k_batch,
            csv_out=out / "profile" / f"tune_{part}.csv",
            timeout=timeout,
        )
        rows = run.rows
        for s in run.failed:
            err_console.print(
                f"[yellow]warning:[/] {s.variant} on GPU {s.device}: exit {s.rc} (log "
                f"{escape(str(s.log))})"
            )
    db = build_db(rows, problems, arch=arch.name, shapes=names, keep=keep)
    if not db["entries"]:  # an empty database is not written (nor one replaced by it)
        src = from_csv if from_csv is not None else "the profile run"
        rows_of = "" if part == "all" else f" (its {part} rows)"
        raise CkgenError(
            f"no timed results in {src} for the shapes of {shapes}{rows_of}: the tuning database "
            f"{path} is not written"
        )
    write_db(path, db)
    click.echo(f"{path}: {len(db['entries'])} entries ({part} shapes of {shapes.name})")


@main.command(
    "check-heuristic", short_help="Compare the selected kernel with the best one per shape."
)
@output_option("Project built by `ckgen build -o OUTPUT` (its lib/libckgen_dispatch.so selects).")
@file_option(
    "--results",
    required=True,
    help="Profile results CSV with every instance timed (e.g. from `ckgen profile`).",
)
@file_option("--shapes", required=True)
@file_option(
    "--db", "db_path", help="Tuning database to select with (default: none, the cost model)."
)
@part_option("Shapes to judge on (the ones NOT tuned on).")
@file_option("--json", "json_out")
def check_heuristic(
    out: Path, results: Path, shapes: Path, db_path: Path | None, part: str, json_out: Path | None
) -> None:
    """Heuristic quality: for each profiled shape, the selected kernel's measured time over the
    best instance's (no GPU needed: times come from RESULTS)."""
    from ckgen.model.problem import load_shapes
    from ckgen.runtime.library import KernelLibrary
    from ckgen.tuning.profile import read_results
    from ckgen.tuning.tune import evaluate, read_db, split_shapes, summarize

    # Bad input files are named (with their line and key) before the library loads.
    if db_path is not None:
        read_db(db_path)
    problems = load_shapes(shapes)
    rows = read_results(results)
    if json_out is not None:
        check_writable(json_out.parent)
    reg = KernelLibrary.load(out / "build")
    reg.load_tuning_db(db_path)
    q = evaluate(reg, rows, problems, split_shapes(problems, part), cost_model_only=db_path is None)
    t = Table(
        title=f"selection vs best ({'tuning db ' + db_path.name if db_path else 'cost model'}, "
        f"{part} shapes)"
    )
    for col in ("variant", "dtype", "shape", "selected", "source", "ms", "best ms", "ratio"):
        t.add_column(col, no_wrap=col in ("shape", "selected"))
    for x in q:
        t.add_row(
            x.variant,
            x.datatype,
            x.shape,
            x.selected,
            x.source,
            f"{x.selected_ms:.4f}" if x.selected_ms is not None else "-",
            f"{x.best_ms:.4f}",
            f"{x.ratio:.3f}" if x.ratio is not None else "-",
        )
    make_console().print(t)
    summ = summarize(q)
    click.echo(json.dumps(summ, indent=1))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(
            json.dumps(
                {"summary": summ, "rows": [x.__dict__ | {"ratio": x.ratio} for x in q]}, indent=1
            )
            + "\n"
        )


@main.command("report", short_help="Markdown table and plots of profiled results vs cuDNN.")
@file_option("--results", required=True, help="Profile results CSV (`ckgen profile`).")
@file_option("--cudnn", help="cuDNN results CSV (columns shape,variant,datatype,cudnn_ms,...).")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=PathArg(file_okay=False),
    help="Directory for report.md, speedup.png, speedup_<variant>.png, roofline.png.",
)
@click.option(
    "--arch",
    default="sm_90a",
    show_default=True,
    help="Target whose peak and bandwidth draw the roof.",
)
def report_cmd(results: Path, cudnn: Path | None, out: Path, arch: str) -> None:
    """Markdown table (best per shape, cuDNN time, speedup, geomean per variant) and speedup /
    roofline plots (matplotlib optional: skipped with a message)."""
    from ckgen.tuning.report import load, markdown, plots

    spec = get_arch(arch)
    rows = load(results, cudnn)
    check_writable(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(markdown(rows))
    click.echo(f"{out / 'report.md'}: {len(rows)} shape rows")
    peak = spec.peak_tflops.get(DataType("fp16"), max(spec.peak_tflops.values(), default=1.0))
    res = plots(rows, out, peak, spec.bandwidth_gbs)
    if isinstance(res, str):
        err_console.print(f"[yellow]note:[/] {escape(res)}")
    else:
        for p in res:
            click.echo(f"{p}: written")
