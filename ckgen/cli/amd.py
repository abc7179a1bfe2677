"""AMD: device-only compile, ISA and resource checks of a generated project (check-isa)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import cast

import click
from rich.console import JustifyMethod
from rich.table import Table

from ckgen.cli.app import main
from ckgen.cli.common import file_option, make_console, output_option


@main.command("check-isa", short_help="AMD: compile each instance device-only and check its ISA.")
@output_option("Directory written by `ckgen generate --arch <gfx...>`.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(0, 256),
    default=0,
    show_default=True,
    help="Parallel compiles (0: one per CPU).",
)
@click.option("--kernels", "kernels", multiple=True, help="Only instances matching these globs.")
@file_option(
    "--resources-out",
    help="Also write the measured resources here (for `ckgen generate --resources`).",
)
@click.option(
    "--no-manifest", is_flag=True, help="Do not write the 'resources' section into manifest.json."
)
def check_isa(
    out: Path, jobs: int, kernels: tuple[str, ...], resources_out: Path | None, no_manifest: bool
) -> None:
    """Compile every instance of a generated AMD project device-only (arch_specs.json's compiler
    command), check its ISA holds the matrix instructions (v_mfma / v_wmma) and report VGPR, AGPR,
    SGPR, LDS, scratch and occupancy. Exits 1 when a check fails."""
    import fnmatch

    from rich.markup import escape as _esc

    from ckgen.runtime.isa import (
        check_project,
        resources_document,
        write_manifest_resources,
    )

    sel = (lambda n: any(fnmatch.fnmatchcase(n, g) for g in kernels)) if kernels else None
    arch, results = check_project(out, jobs=jobs, kernels=sel)
    t = Table(
        title=f"{len(results)} instances for {arch.name} "
        f"({arch.compiler.get('device_only_compiler')}, device only)"
    )
    for col, just in (
        ("name", "left"),
        ("mm", "right"),
        ("exp", "right"),
        ("vgpr", "right"),
        ("agpr", "right"),
        ("sgpr", "right"),
        ("lds", "right"),
        ("scratch", "right"),
        ("occ", "right"),
        ("est", "right"),
        ("status", "left"),
    ):
        t.add_column(col, justify=cast(JustifyMethod, just), no_wrap=col == "name")
    for r in results:
        t.add_row(
            r.name,
            str(r.matrix_insts),
            str(r.matrix_expected),
            str(r.vgpr),
            str(r.agpr),
            str(r.sgpr),
            str(r.lds_bytes),
            str(r.scratch_bytes),
            str(r.occupancy),
            str(r.estimate),
            "ok" if r.ok else "[red]" + _esc("; ".join(r.failures)) + "[/]",
        )
    make_console().print(t)
    doc = resources_document(arch, results)
    if not no_manifest:
        write_manifest_resources(out, doc)
    if resources_out is not None:
        resources_out.parent.mkdir(parents=True, exist_ok=True)
        resources_out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    bad = [r for r in results if not r.ok]
    click.echo(
        f"{len(results) - len(bad)} ok, {len(bad)} failed "
        f"(matrix instructions: {sum(r.matrix_insts for r in results)} in total)"
    )
    if bad:
        sys.exit(1)
