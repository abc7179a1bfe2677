"""Commands that turn config files into a generated project: list-instances, generate,
emit-cmake, schema, archs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ckgen.cli.app import main
from ckgen.cli.common import (
    check_gpu_targets,
    check_launcher,
    err_console,
    expansion,
    make_console,
    output_option,
    project_manifest,
    require_instances,
    selection_options,
    warn_explicit_rejections,
    words,
)
from ckgen.config.schema import schema_text
from ckgen.emit.cmake import render_cmake
from ckgen.emit.output import Plan, apply, check_writable, plan
from ckgen.emit.render import MANIFEST, render_project
from ckgen.errors import CkgenError
from ckgen.model.arch import load_arch_specs
from ckgen.model.vocab import Platform, Variant
from ckgen.space.expand import Expansion


@main.command("list-instances", short_help="List the valid instances for one target.")
@selection_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "names"]),
    default="table",
    show_default=True,
)
@click.option(
    "--show-rejected",
    is_flag=True,
    help="Also print rejected candidates, grouped by reason with counts.",
)
def list_instances(fmt: str, show_rejected: bool, **sel: Any) -> None:
    """List the valid instances of the selected configs for one target.

    With no options: every variant's default instances for the default target (--arch). An
    empty list is an error (exit code 2) that names the most frequent rejection reasons."""
    exp = expansion(**sel)
    warn_explicit_rejections(exp)
    if not exp.instances and not show_rejected:
        require_instances(exp)
    if fmt == "names":
        click.echo("".join(i.name + "\n" for i in exp.instances), nl=False)
    elif fmt == "json":
        doc: dict[str, Any] = {
            "arch": exp.arch.name,
            "count": len(exp.instances),
            "instances": [i.to_json() for i in exp.instances],
        }
        if show_rejected:
            doc["rejected"] = [
                {"rule": r, "reason": why, "count": n} for r, why, n in exp.rejected_by_reason()
            ]
        click.echo(json.dumps(doc, indent=1))
    elif fmt == "csv":
        buf = io.StringIO()
        if exp.instances:
            rows = [i.to_json() for i in exp.instances]
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow(
                    {k: "x".join(map(str, v)) if isinstance(v, list) else v for k, v in r.items()}
                )
        click.echo(buf.getvalue(), nl=False)
    else:
        console = make_console()
        t = Table(title=f"{len(exp.instances)} instances for {exp.arch.name}", show_lines=False)
        t.add_column("name", no_wrap=True)
        for col in ("variant", "dtype", "nd", "tile", "waves", "warp tile", "pipeline", "vec"):
            t.add_column(col, no_wrap=True)
        for i in exp.instances:
            t.add_row(
                i.name,
                i.variant.value,
                i.datatype.value,
                str(i.ndim),
                "x".join(map(str, i.tile)),
                "x".join(map(str, i.waves)),
                "x".join(map(str, i.warp_tile)),
                i.pipeline.value + (f"/{i.stages}" if i.stages > 1 else ""),
                f"{i.vec_a}/{i.vec_b}/{i.vec_c}",
            )
        console.print(t)
        console.print(
            f"{len(exp.instances)} valid, {exp.rejected_count} rejected, {exp.duplicates} "
            "duplicates, "
            f"{exp.filtered} filtered out, {exp.candidates} candidates"
        )
    if show_rejected and fmt != "json":
        console = make_console(stderr=fmt != "table")
        t = Table(title=f"{exp.rejected_count} rejected candidates by reason")
        t.add_column("count", justify="right")
        t.add_column("rule")
        t.add_column("reason", overflow="fold")
        for rule, reason, n in exp.rejected_by_reason():
            t.add_row(str(n), rule, escape(reason))
        console.print(t)
    require_instances(exp)


@main.command()
@selection_options
@output_option("Output directory of the generated project.")
@click.option(
    "--shard-size",
    type=click.IntRange(1, 4096),
    default=1,
    show_default=True,
    help="Instances per translation unit.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Render in parallel.",
)
@click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def generate(out: Path, shard_size: int, jobs: int, dry_run: bool, quiet: bool, **sel: Any) -> None:
    """Generate the kernel sources of a project into OUTPUT.

    Writes instance headers, translation units, registry, profiler and test sources and
    manifest.json (with a sha256 per file). Only changed files are written. A file the previous
    manifest listed that is no longer generated is removed only when it is a regular file
    inside OUTPUT whose content is still what ckgen wrote; anything else is left and named."""
    exp = expansion(quiet=quiet, **sel)
    warn_explicit_rejections(exp)
    require_instances(exp)
    if not dry_run:
        check_writable(out)
    files = _render_with_progress(exp, shard_size, jobs, quiet or dry_run)
    pl = plan(out, files, extra_owned=("CMakeLists.txt",))
    if dry_run:
        for rel in sorted(pl.write):
            click.echo(("update " if (out / rel).exists() else "create ") + rel)
        for rel in pl.remove:
            click.echo("remove " + rel)
        _report_left(pl)
        click.echo(
            f"{len(pl.write)} to write, {len(pl.remove)} to remove, {pl.unchanged} unchanged (dry "
            "run)"
        )
        return
    apply(pl)
    if not quiet:
        _report_left(pl)
        counts = ", ".join(
            f"{sum(1 for i in exp.instances if i.variant is v)} {v.value}"
            for v in Variant
            if any(i.variant is v for i in exp.instances)
        )
        click.echo(
            f"{len(exp.instances)} instances for {exp.arch.name} ({counts}) -> {out}: "
            f"{len(pl.write)} written, {len(pl.remove)} removed, {pl.unchanged} unchanged"
        )


def _report_left(pl: Plan) -> None:
    for line in pl.notes():
        err_console.print(f"note: {line}", markup=False, highlight=False, soft_wrap=True)


def _render_with_progress(
    exp: Expansion, shard_size: int, jobs: int, quiet: bool
) -> dict[str, bytes]:
    n = len(exp.instances)
    console = Console(stderr=True)
    if quiet or n < 200 or not console.is_terminal:
        return render_project(
            exp.instances, exp.arch, shard_size=shard_size, jobs=jobs, filtered=exp.filtered > 0
        )
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("rendering"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as prog:
        task = prog.add_task("render", total=n)
        return render_project(
            exp.instances,
            exp.arch,
            shard_size=shard_size,
            jobs=jobs,
            progress=lambda k: prog.advance(task, k),
            filtered=exp.filtered > 0,
        )


def write_cmake(out: Path, plat: Platform, targets: str, launcher: str, arch_name: str) -> Plan:
    """Write OUTPUT/CMakeLists.txt alone: the generated sources the manifest lists stay."""
    pl = plan(
        out,
        {"CMakeLists.txt": render_cmake(plat, targets, launcher, arch_name).encode()},
        prune=False,
    )
    apply(pl)
    return pl


@main.command("emit-cmake")
@output_option("Directory written by `ckgen generate`.")
@click.option(
    "--platform",
    type=words(Platform),
    default=None,
    help="nvidia or amd; default: the one in OUTPUT/manifest.json.",
)
@click.option(
    "--gpu-targets",
    default=None,
    help="CUDA archs (90a) or AMD offload archs (gfx942); default: the ones in "
    "OUTPUT/manifest.json.",
)
@click.option("--launcher", default="", help="Compiler launcher: ccache, sccache or distcc.")
def emit_cmake(out: Path, platform: str | None, gpu_targets: str | None, launcher: str) -> None:
    """Write CMakeLists.txt for a generated project.

    The platform and GPU targets default to what `ckgen generate` recorded in OUTPUT's
    manifest.json. Targets: ckgen_kernels, ckgen_profiler_<variant>,
    test_grouped_conv_<variant>."""
    data, arch = project_manifest(out)
    recorded = data.get("platform")
    plat = Platform(platform) if platform else arch.platform
    if recorded not in (None, arch.platform.value):
        raise CkgenError(
            f"{out / MANIFEST}: platform {recorded!r} does not match arch {arch.name} "
            f"({arch.platform.value})"
        )
    if plat is not arch.platform:
        raise CkgenError(
            f"the project was generated for {arch.name} ({arch.platform.value}), not {plat.value}"
        )
    recorded_targets = data.get("gpu_targets")
    source = "--gpu-targets"
    if gpu_targets is not None:
        targets = gpu_targets
    elif isinstance(recorded_targets, str) and recorded_targets:
        targets = recorded_targets
        source = f"{out / MANIFEST}: gpu_targets"
    else:
        targets = arch.cuda_arch or arch.name
    check_gpu_targets(plat, targets, source)
    check_launcher(launcher)
    pl = write_cmake(out, plat, targets, launcher, arch.name)
    chosen = "" if platform and gpu_targets else f", from {out / MANIFEST}"
    click.echo(
        f"{out / 'CMakeLists.txt'}: {'written' if pl.write else 'unchanged'} "
        f"(platform {plat.value}, targets {targets}{chosen})"
    )


@main.command()
def schema() -> None:
    """Print the fields of an instance-list YAML file."""
    click.echo(schema_text(), nl=False)


@main.command()
def archs() -> None:
    """List the targets of arch_specs.json."""
    t = Table(title="targets (arch_specs.json)")
    for col in (
        "arch",
        "platform",
        "warp",
        "LDS bytes",
        "CUs",
        "datatypes",
        "pipelines",
        "description",
    ):
        t.add_column(col)
    for name, a in load_arch_specs().items():
        t.add_row(
            name,
            a.platform.value,
            str(a.warp_size),
            str(a.lds_bytes),
            str(a.compute_units),
            ",".join(d.value for d in a.datatypes),
            ",".join(p.value for p in a.pipelines),
            a.description,
        )
    make_console().print(t)
