"""Workflow commands over a generated project: build (CMake + Ninja) and profile (sharded over
GPUs). Thin wrappers over ckgen.runtime and ckgen.tuning."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import click
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from ckgen.cli.app import main
from ckgen.cli.common import (
    check_gpu_targets,
    check_launcher,
    csv_words,
    err_console,
    file_option,
    k_batches,
    make_console,
    output_option,
    profile_selection,
    project_arch,
    words,
)
from ckgen.cli.project import write_cmake
from ckgen.config.schema import glob_problem
from ckgen.errors import CkgenError
from ckgen.model.vocab import DataType, Variant


@main.command("build", short_help="Configure (CMake, Ninja) and build a generated project.")
@output_option("Directory written by `ckgen generate` (CMakeLists.txt is emitted when missing).")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(0, 1024),
    default=0,
    show_default=True,
    help="Parallel compiles (0: ninja's default).",
)
@click.option("--launcher", default="", help="Compiler launcher (ccache, sccache, distcc).")
@click.option(
    "--kernels", "kernels", multiple=True, help="Build only instances matching these globs."
)
@click.option("--gpu-targets", default=None, help="CUDA archs (90a) or AMD offload archs (gfx942).")
@click.option(
    "--target",
    "targets",
    multiple=True,
    help="Ninja targets (default all: kernels, profilers, tests, ckgen_dispatch).",
)
@click.option("--no-tests", is_flag=True, help="Do not build the GoogleTest binaries.")
@click.option("--no-profilers", is_flag=True, help="Do not build the profiler binaries.")
def build_cmd(
    out: Path,
    jobs: int,
    launcher: str,
    kernels: tuple[str, ...],
    gpu_targets: str | None,
    targets: tuple[str, ...],
    no_tests: bool,
    no_profilers: bool,
) -> None:
    """Configure (CMake, Ninja generator) and build a generated project into OUTPUT/build, with
    a progress bar from Ninja's [n/m] lines."""
    import shutil

    from ckgen.runtime.build import configure, ninja

    arch = project_arch(out)
    # The option values that reach CMake are checked before CMakeLists.txt is written or CMake
    # runs (a missing CMakeLists.txt is written even when the launcher is not installed yet).
    if gpu_targets is not None:
        check_gpu_targets(arch.platform, gpu_targets)
    for g in kernels:
        if glob_problem(g) is not None:
            raise CkgenError(f"--kernels {g!r}: {glob_problem(g)}")
    check_launcher(launcher)
    if not (out / "CMakeLists.txt").is_file():
        gpus = gpu_targets or arch.cuda_arch or arch.name
        check_gpu_targets(arch.platform, gpus)
        write_cmake(out, arch.platform, gpus, launcher, arch.name)
    if launcher and shutil.which(launcher) is None:
        raise CkgenError(f"--launcher {launcher!r} is not on PATH")
    configure(
        out,
        out / "build",
        gpu_targets=gpu_targets,
        launcher=launcher,
        kernels=csv_words(kernels),
        profilers=not no_profilers,
        tests=not no_tests,
    )
    console = Console(stderr=True)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("[bold]building[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[what]}", style="dim"),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    ) as prog:
        task = prog.add_task("build", total=None, what="")

        shown = [0]

        def step(done: int, total: int, what: str) -> None:
            prog.update(task, completed=done, total=total, what=escape(what.split("/")[-1][:60]))
            if not console.is_terminal and (done == total or done * 10 // total > shown[0]):
                shown[0] = done * 10 // total  # logs get a line per 10 %
                err_console.print(f"[{done}/{total}] {escape(what)}", soft_wrap=True)

        res = ninja(out / "build", jobs=jobs, targets=list(targets), progress=step)
    click.echo(f"built {out / 'build'}: {res.steps} step(s) in {res.seconds:.1f} s")


@main.command("profile", short_help="Run the profilers over a shapes file, one process per GPU.")
@output_option("Project built by `ckgen build -o OUTPUT`.")
@file_option("--shapes", required=True, help="Shapes CSV.")
@click.option(
    "--variant",
    "variants",
    multiple=True,
    type=words(Variant),
    help="Variants (default all built).",
)
@click.option(
    "--datatype", "datatypes", multiple=True, type=words(DataType), help="Datatypes (default all)."
)
@click.option(
    "--devices", default="", help="GPU indices to shard over, e.g. 0,1,2,3 (default: all visible)."
)
@click.option("--kernels", "kernels", multiple=True, help="Only instances matching these globs.")
@click.option("--shape", "shape_glob", default="", help="Only shapes matching this glob.")
@click.option(
    "--verify", type=click.Choice(["none", "cpu", "gpu", "auto"]), default="gpu", show_default=True
)
@click.option("--warmup", type=click.IntRange(0), default=5, show_default=True)
@click.option("--repeat", type=click.IntRange(1), default=10, show_default=True)
@click.option(
    "--k-batch",
    "k_batch",
    default="",
    callback=k_batches,
    help="Split counts to try, e.g. 0,1,4,16 (0 = chosen per problem; instances that never "
    "split run once).",
)
@click.option(
    "--split-reduce",
    "split_reduce",
    type=click.Choice(["auto", "workspace", "cluster"]),
    default="auto",
    show_default=True,
    help="How split reductions add up (backward_weight copy-engine instances; "
    "the others refuse anything but auto).",
)
@click.option(
    "--streamk-blocks",
    "streamk_blocks",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="StreamK grid size (0 = the instance's default).",
)
@file_option("--csv", "csv_out", help="Merged results (default OUTPUT/profile/results.csv).")
@click.option(
    "--timeout", type=click.IntRange(1), default=3600, show_default=True, help="Seconds in all."
)
def profile_cmd(
    out: Path,
    shapes: Path,
    variants: tuple[str, ...],
    datatypes: tuple[str, ...],
    devices: str,
    kernels: tuple[str, ...],
    shape_glob: str,
    verify: str,
    warmup: int,
    repeat: int,
    k_batch: list[int],
    split_reduce: str,
    streamk_blocks: int,
    csv_out: Path | None,
    timeout: int,
) -> None:
    """Run the profiler binaries over a shapes file, one process per GPU (instances sharded
    round-robin, CUDA_VISIBLE_DEVICES per process), merge the CSVs and show the best per shape."""
    from ckgen.tuning.profile import best_rows, run_profile

    run = run_profile(
        out,
        shapes,
        **profile_selection(variants, datatypes, devices, kernels),
        shape_glob=shape_glob,
        verify=verify,
        warmup=warmup,
        repeat=repeat,
        k_batches=k_batch,
        split_reduce=split_reduce,
        streamk_blocks=streamk_blocks,
        csv_out=csv_out,
        timeout=timeout,
    )
    best_table(best_rows(run.rows), f"best per shape ({len(run.rows)} rows -> {run.csv})")
    for s in run.failed:
        err_console.print(
            f"[red]{s.variant} on GPU {s.device}: exit {s.rc}[/] (log {escape(str(s.log))})"
        )
    if run.failed:
        sys.exit(1)


def best_table(rows: list[dict[str, str]], title: str) -> None:
    t = Table(title=title)
    for col, just in (
        ("variant", "left"),
        ("dtype", "left"),
        ("shape", "left"),
        ("instance", "left"),
        ("k_batch", "right"),
        ("ms", "right"),
        ("TFLOPS", "right"),
        ("GB/s", "right"),
    ):
        t.add_column(col, justify=cast(JustifyMethod, just), no_wrap=col in ("shape", "instance"))
    for r in rows:
        t.add_row(
            r["variant"],
            r["datatype"],
            r["shape"],
            r["instance"],
            r.get("k_batch", ""),
            r["ms"],
            r.get("tflops", ""),
            r.get("gbps", ""),
        )
    make_console().print(t)
