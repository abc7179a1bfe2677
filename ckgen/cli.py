"""The ckgen command line: a thin click layer over config -> expand -> render -> output."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from .arch import get_arch, load_arch_specs
from .config import glob_problem, schema_text
from .errors import CkgenError
from .expand import Expansion, Filters, default_config_paths, expand, load_configs
from .output import Plan, apply, check_writable, plan
from .render import MANIFEST, render_cmake, render_project
from .vocab import DataType, Pipeline, Platform, Variant

err_console = Console(stderr=True, highlight=False)
CONFIG_SETS = ("default", "tests", "profiler")


def _console(stderr: bool = False) -> Console:
    """A console that does not fold long kernel names when the output is a file or a pipe."""
    c = Console(stderr=stderr, highlight=False)
    return c if c.is_terminal else Console(stderr=stderr, highlight=False, width=240)


def _fail(ex: CkgenError) -> None:
    # The message is text, not markup: '[M, N, K]' or a glob like '[ab]*' must print as written.
    err_console.print(f"[bold red]error:[/] {escape(str(ex))}", markup=True, soft_wrap=True)
    sys.exit(ex.exit_code)


INTERNAL_ERROR_EXIT = 1


class CkgenGroup(click.Group):
    """Turns CkgenError into one clear line and exit code 2 (no traceback). Anything else that
    escapes a command is a bug in ckgen: one 'internal error' line and exit code 1, with the
    traceback only when CKGEN_DEBUG is set."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CkgenError as ex:
            _fail(ex)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, BrokenPipeError):
            raise
        except Exception as ex:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("CKGEN_DEBUG"):
                raise
            err_console.print(
                f"[bold red]internal error:[/] {escape(type(ex).__name__)}: {escape(str(ex))}\n"
                "This is a bug in ckgen; rerun with CKGEN_DEBUG=1 for the traceback and report it.",
                markup=True, soft_wrap=True,
            )
            sys.exit(INTERNAL_ERROR_EXIT)


def _words(cls: Any) -> click.Choice:
    return click.Choice(cls.allowed())


def selection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--variant", "variants", multiple=True, type=_words(Variant), help="Variant(s); default: all three."),
        click.option("--arch", required=True, help="Target from arch_specs.json (e.g. sm_90a, gfx942)."),
        click.option("--config", "configs", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
                     help="Instance-list YAML file(s); default: the shipped set (--set) per variant."),
        click.option("--set", "config_set", type=click.Choice(CONFIG_SETS), default="default", show_default=True,
                     help="Shipped config set used when no --config is given."),
        click.option("--datatype", "datatypes", multiple=True, type=_words(DataType), help="Keep only these datatypes."),
        click.option("--ndim", "ndims", multiple=True, type=click.IntRange(1, 3), help="Keep only these ndims."),
        click.option("--pipeline", "pipelines", multiple=True, type=_words(Pipeline), help="Keep only these pipelines."),
        click.option("--kernels", "kernels", multiple=True,
                     help="Keep only instances whose name matches a glob, e.g. 'grouped_conv_bwd_data_fp16_*'."),
        click.option("--resources", "resources", type=click.Path(path_type=Path, dir_okay=False), default=None,
                     help="Measured resources (`ckgen check-isa --resources-out FILE`, or a checked manifest.json): "
                          "instances that spill or exceed LDS are rejected (rule 'measured')."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _expansion(variants: tuple[str, ...], arch: str, configs: tuple[Path, ...], config_set: str,
               datatypes: tuple[str, ...], ndims: tuple[int, ...], pipelines: tuple[str, ...],
               kernels: tuple[str, ...], resources: Path | None = None) -> Expansion:
    spec = get_arch(arch)
    if resources is not None:
        _use_resources(resources, spec.name)
    vs = [Variant(v) for v in variants] or list(Variant)
    paths = list(configs) if configs else default_config_paths(vs, config_set)
    for g in kernels:
        why = glob_problem(g)
        if why is not None:
            raise CkgenError(f"--kernels {g!r}: {why}")
    all_cfgs = load_configs(paths)
    cfgs = [c for c in all_cfgs if c.variant in vs] if variants else all_cfgs
    if not cfgs:
        shown = "; ".join(f"{c.path} is {c.variant.value}" for c in all_cfgs)
        raise CkgenError(f"none of the config files is for --variant {', '.join(v.value for v in vs)} ({shown})")
    filters = Filters(
        datatypes=tuple(DataType(d) for d in datatypes),
        ndims=tuple(ndims),
        pipelines=tuple(Pipeline(p) for p in pipelines),
        kernels=tuple(kernels),
    )
    exp = expand(cfgs, spec, filters)
    return exp


def _warn_explicit_rejections(exp: Expansion) -> None:
    """An instance the user listed by hand and the rules refused is never dropped silently."""
    for r in exp.rejected:
        if r.explicit:
            err_console.print(f"warning: {r.instance.origin}: explicit instance {r.name} rejected "
                              f"[{r.rule}]: {r.reason}", markup=False, highlight=False, soft_wrap=True)


def _require_instances(exp: Expansion) -> None:
    if exp.instances:
        return
    lines = [f"the expansion is empty: {exp.candidates} candidates, {len(exp.rejected)} rejected, "
             f"{exp.duplicates} duplicates, {exp.filtered} filtered out"]
    rows = exp.rejected_by_reason()
    if rows:
        lines[0] += "; top rejection reasons:"
    for rule, reason, n in rows[:5]:
        origin = next((r.instance.origin for r in exp.rejected if r.rule == rule and r.instance.origin), "")
        lines.append(f"  {n:6d} x [{rule}] {reason}" + (f" (e.g. from {origin})" if origin else ""))
    if len(rows) > 5:
        lines.append(f"  ... and {len(rows) - 5} more rules: `ckgen list-instances --show-rejected` lists them all")
    if exp.filtered:
        lines.append(f"  {exp.filtered:6d} x filtered out by --datatype/--ndim/--pipeline/--kernels or include/exclude globs")
    raise CkgenError("\n".join(lines))


@click.group(cls=CkgenGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ckgen")
def main() -> None:
    """ckgen: generate grouped-convolution kernels (forward, backward_data, backward_weight)
    from YAML instance lists and arch_specs.json, plus the CMake project that builds them.

    \b
    Typical session:
      ckgen list-instances --variant backward_data --arch gfx942 --datatype fp16
      ckgen generate --arch sm_90a -o build/gen
      ckgen emit-cmake -o build/gen --platform nvidia --gpu-targets 90a
      cmake -S build/gen -B build/gen/build -G Ninja && ninja -C build/gen/build
    """


@main.command("list-instances")
@selection_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "names"]), default="table", show_default=True)
@click.option("--show-rejected", is_flag=True, help="Also print rejected candidates, grouped by reason with counts.")
def list_instances(fmt: str, show_rejected: bool, **sel: Any) -> None:
    """List the valid instances of the selected configs for one target. An empty list is an
    error (exit code 2) that names the most frequent rejection reasons."""
    exp = _expansion(**sel)
    _warn_explicit_rejections(exp)
    if not exp.instances and not show_rejected:
        _require_instances(exp)
    out = click.get_text_stream("stdout")
    if fmt == "names":
        for i in exp.instances:
            out.write(i.name + "\n")
    elif fmt == "json":
        doc: dict[str, Any] = {"arch": exp.arch.name, "count": len(exp.instances),
                               "instances": [i.to_json() for i in exp.instances]}
        if show_rejected:
            doc["rejected"] = [{"rule": r, "reason": why, "count": n} for r, why, n in exp.rejected_by_reason()]
        out.write(json.dumps(doc, indent=1) + "\n")
    elif fmt == "csv":
        buf = io.StringIO()
        if exp.instances:
            rows = [i.to_json() for i in exp.instances]
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: "x".join(map(str, v)) if isinstance(v, list) else v for k, v in r.items()})
        out.write(buf.getvalue())
    else:
        console = _console()
        t = Table(title=f"{len(exp.instances)} instances for {exp.arch.name}", show_lines=False)
        t.add_column("name", no_wrap=True)
        for col in ("variant", "dtype", "nd", "tile", "waves", "warp tile", "pipeline", "vec"):
            t.add_column(col, no_wrap=True)
        for i in exp.instances:
            t.add_row(i.name, i.variant.value, i.datatype.value, str(i.ndim), "x".join(map(str, i.tile)),
                      "x".join(map(str, i.waves)), "x".join(map(str, i.warp_tile)),
                      i.pipeline.value + (f"/{i.stages}" if i.stages > 1 else ""),
                      f"{i.vec_a}/{i.vec_b}/{i.vec_c}")
        console.print(t)
        console.print(f"{len(exp.instances)} valid, {len(exp.rejected)} rejected, {exp.duplicates} duplicates, "
                      f"{exp.filtered} filtered out, {exp.candidates} candidates")
    if show_rejected and fmt != "json":
        console = _console(stderr=fmt != "table")
        t = Table(title=f"{len(exp.rejected)} rejected candidates by reason")
        t.add_column("count", justify="right")
        t.add_column("rule")
        t.add_column("reason", overflow="fold")
        for rule, reason, n in exp.rejected_by_reason():
            t.add_row(str(n), rule, escape(reason))
        console.print(t)
    _require_instances(exp)


@main.command()
@selection_options
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Output directory of the generated project.")
@click.option("--shard-size", type=click.IntRange(1, 4096), default=1, show_default=True,
              help="Instances per translation unit.")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True, help="Render in parallel.")
@click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def generate(out: Path, shard_size: int, jobs: int, dry_run: bool, quiet: bool, **sel: Any) -> None:
    """Generate instance headers, translation units, registry, profiler and test sources and
    manifest.json into OUTPUT. Only changed files are written; stale ones are removed."""
    exp = _expansion(**sel)
    _warn_explicit_rejections(exp)
    _require_instances(exp)
    if not dry_run:
        check_writable(out)
    files = _render_with_progress(exp, shard_size, jobs, quiet or dry_run)
    pl = plan(out, files, extra_owned=("CMakeLists.txt",))
    if dry_run:
        for rel in sorted(pl.write):
            click.echo(("update " if (out / rel).exists() else "create ") + rel)
        for rel in pl.remove:
            click.echo("remove " + rel)
        click.echo(f"{len(pl.write)} to write, {len(pl.remove)} to remove, {pl.unchanged} unchanged (dry run)")
        return
    apply(pl)
    if not quiet:
        counts = ", ".join(f"{sum(1 for i in exp.instances if i.variant is v)} {v.value}"
                           for v in Variant if any(i.variant is v for i in exp.instances))
        click.echo(f"{len(exp.instances)} instances for {exp.arch.name} ({counts}) -> {out}: "
                   f"{len(pl.write)} written, {len(pl.remove)} removed, {pl.unchanged} unchanged")


def _render_with_progress(exp: Expansion, shard_size: int, jobs: int, quiet: bool) -> dict[str, bytes]:
    n = len(exp.instances)
    console = Console(stderr=True)
    if quiet or n < 200 or not console.is_terminal:
        return render_project(exp.instances, exp.arch, shard_size=shard_size, jobs=jobs)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("rendering"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as prog:
        task = prog.add_task("render", total=n)
        return render_project(exp.instances, exp.arch, shard_size=shard_size, jobs=jobs,
                              progress=lambda k: prog.advance(task, k))


def _write_cmake(out: Path, plat: Platform, targets: str, launcher: str, arch_name: str) -> Plan:
    """Write OUTPUT/CMakeLists.txt alone: the generated sources the manifest lists stay."""
    pl = plan(out, {"CMakeLists.txt": render_cmake(plat, targets, launcher, arch_name).encode()})
    pl.remove = []
    apply(pl)
    return pl


@main.command("emit-cmake")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Directory written by `ckgen generate`.")
@click.option("--platform", type=_words(Platform), default=None, help="nvidia or amd; default: the target's.")
@click.option("--gpu-targets", default=None, help="CUDA archs (90a) or AMD offload archs (gfx942); default: the target's.")
@click.option("--launcher", default="", help="Compiler launcher: ccache, sccache or distcc.")
def emit_cmake(out: Path, platform: str | None, gpu_targets: str | None, launcher: str) -> None:
    """Write CMakeLists.txt for a generated project (targets ckgen_kernels,
    ckgen_profiler_<variant>, test_grouped_conv_<variant>)."""
    man = out / MANIFEST
    try:
        data = json.loads(man.read_text())
        arch = get_arch(data["arch"])
    except FileNotFoundError:
        raise CkgenError(f"{man} not found: run `ckgen generate -o {out}` first") from None
    except (OSError, ValueError, KeyError, TypeError) as ex:
        raise CkgenError(f"{man}: not a ckgen manifest ({ex})") from None
    plat = Platform(platform) if platform else arch.platform
    if plat is not arch.platform:
        raise CkgenError(f"the project was generated for {arch.name} ({arch.platform.value}), not {plat.value}")
    targets = gpu_targets if gpu_targets is not None else (arch.cuda_arch or arch.name)
    _check_gpu_targets(plat, targets)
    if launcher and (launcher.startswith("-") or not all(c.isalnum() or c in "_-./+" for c in launcher)):
        raise CkgenError(f"--launcher: {launcher!r} is not a program name or path (allowed: letters, digits, _ - . / +)")
    pl = _write_cmake(out, plat, targets, launcher, arch.name)
    click.echo(f"{out / 'CMakeLists.txt'}: {'written' if pl.write else 'unchanged'} "
               f"(platform {plat.value}, targets {targets})")


# What a GPU target looks like per platform: CUDA archs as CMake's CUDA_ARCHITECTURES spells
# them (80, 90a, 100f), AMD offload archs with optional target features (gfx90a:xnack+).
GPU_TARGET_RE = {
    Platform.NVIDIA: re.compile(r"^[0-9]{2,3}[af]?$"),
    Platform.AMD: re.compile(r"^gfx[0-9a-f]{3,4}(:(sramecc|xnack)[+-])*$"),
}
GPU_TARGET_EXAMPLE = {Platform.NVIDIA: "90a, 80", Platform.AMD: "gfx942, gfx90a:xnack+"}


def _check_gpu_targets(plat: Platform, targets: str) -> None:
    """--gpu-targets reaches CMake: only well-formed target names, separated by ',' or ';'."""
    for t in targets.replace(";", ",").split(","):
        if not GPU_TARGET_RE[plat].match(t.strip()):
            raise CkgenError(
                f"--gpu-targets: {t.strip()!r} is not a GPU target for {plat.value} "
                f"(e.g. {GPU_TARGET_EXAMPLE[plat]}; several separated by ',')"
            )


@main.command()
def schema() -> None:
    """Print the fields of an instance-list YAML file."""
    click.echo(schema_text(), nl=False)


@main.command()
def archs() -> None:
    """List the targets of arch_specs.json."""
    t = Table(title="targets (arch_specs.json)")
    for col in ("arch", "platform", "warp", "LDS bytes", "CUs", "datatypes", "pipelines", "description"):
        t.add_column(col)
    for name, a in load_arch_specs().items():
        t.add_row(name, a.platform.value, str(a.warp_size), str(a.lds_bytes), str(a.compute_units),
                  ",".join(d.value for d in a.datatypes), ",".join(p.value for p in a.pipelines), a.description)
    _console().print(t)


# ------------------------------------------------------------------------------------------
# AMD: device-only compile, ISA and resource checks (ckgen/isa.py)
# ------------------------------------------------------------------------------------------
def _use_resources(path: Path, arch: str) -> None:
    from .isa import load_resources
    from .rules import set_measured

    got, res = load_resources(path)
    if got != arch:
        raise CkgenError(f"{path}: measured resources are for {got}, not {arch}")
    set_measured(got, res)


@main.command("check-isa")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Directory written by `ckgen generate --arch <gfx...>`.")
@click.option("-j", "--jobs", type=click.IntRange(0, 256), default=0, show_default=True,
              help="Parallel compiles (0: one per CPU).")
@click.option("--kernels", "kernels", multiple=True, help="Only instances matching these globs.")
@click.option("--resources-out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the measured resources here (for `ckgen generate --resources`).")
@click.option("--no-manifest", is_flag=True, help="Do not write the 'resources' section into manifest.json.")
def check_isa(out: Path, jobs: int, kernels: tuple[str, ...], resources_out: Path | None, no_manifest: bool) -> None:
    """Compile every instance of a generated AMD project device-only (arch_specs.json's compiler
    command), check its ISA holds the matrix instructions (v_mfma / v_wmma) and report VGPR, AGPR,
    SGPR, LDS, scratch and occupancy. Exits 1 when a check fails."""
    import fnmatch

    from rich.markup import escape as _esc

    from .isa import check_project, resources_document, write_manifest_resources

    sel = (lambda n: any(fnmatch.fnmatchcase(n, g) for g in kernels)) if kernels else None
    arch, results = check_project(out, jobs=jobs, kernels=sel)
    t = Table(title=f"{len(results)} instances for {arch.name} ({arch.compiler.get('device_only_compiler')}, device only)")
    for col, just in (("name", "left"), ("mm", "right"), ("exp", "right"), ("vgpr", "right"), ("agpr", "right"),
                      ("sgpr", "right"), ("lds", "right"), ("scratch", "right"), ("occ", "right"), ("est", "right"),
                      ("status", "left")):
        t.add_column(col, justify=just, no_wrap=col == "name")
    for r in results:
        t.add_row(r.name, str(r.matrix_insts), str(r.matrix_expected), str(r.vgpr), str(r.agpr), str(r.sgpr),
                  str(r.lds_bytes), str(r.scratch_bytes), str(r.occupancy), str(r.estimate),
                  "ok" if r.ok else "[red]" + _esc("; ".join(r.failures)) + "[/]")
    _console().print(t)
    doc = resources_document(arch, results)
    if not no_manifest:
        write_manifest_resources(out, doc)
    if resources_out is not None:
        resources_out.parent.mkdir(parents=True, exist_ok=True)
        resources_out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    bad = [r for r in results if not r.ok]
    click.echo(f"{len(results) - len(bad)} ok, {len(bad)} failed "
               f"(matrix instructions: {sum(r.matrix_insts for r in results)} in total)")
    if bad:
        sys.exit(1)


# ------------------------------------------------------------------------------------------
# Workflow: build, profile (sharded over GPUs), tune (tuning DB), heuristic check, report.
# Thin wrappers; the logic is in ckgen/build.py, profile.py, tune.py, report.py.
# ------------------------------------------------------------------------------------------
def _k_batches(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    """--k-batch: comma-separated split counts 0..64 (0 = chosen per problem)."""
    out: list[int] = []
    for w in (w.strip() for w in value.split(",")):
        if not w:
            continue
        if not w.isdigit() or int(w) > 64:
            raise click.BadParameter(f"'{w}' is not a split count 0..64 (comma-separated, e.g. 0,1,4,16)")
        out.append(int(w))
    return out


def _csv_words(values: tuple[str, ...]) -> list[str]:
    return [w.strip() for v in values for w in v.split(",") if w.strip()]


def _project_arch(out: Path):
    try:
        return get_arch(json.loads((out / MANIFEST).read_text())["arch"])
    except FileNotFoundError:
        raise CkgenError(f"{out / MANIFEST} not found: run `ckgen generate -o {out}` first") from None
    except (OSError, ValueError, KeyError, TypeError) as ex:
        raise CkgenError(f"{out / MANIFEST}: not a ckgen manifest ({ex})") from None


@main.command("build")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Directory written by `ckgen generate` (CMakeLists.txt is emitted when missing).")
@click.option("-j", "--jobs", type=click.IntRange(0, 1024), default=0, show_default=True,
              help="Parallel compiles (0: ninja's default).")
@click.option("--launcher", default="", help="Compiler launcher (ccache, sccache, distcc).")
@click.option("--kernels", "kernels", multiple=True, help="Build only instances matching these globs.")
@click.option("--gpu-targets", default=None, help="CUDA archs (90a) or AMD offload archs (gfx942).")
@click.option("--target", "targets", multiple=True,
              help="Ninja targets (default all: kernels, profilers, tests, ckgen_dispatch).")
@click.option("--no-tests", is_flag=True, help="Do not build the GoogleTest binaries.")
@click.option("--no-profilers", is_flag=True, help="Do not build the profiler binaries.")
def build_cmd(out: Path, jobs: int, launcher: str, kernels: tuple[str, ...], gpu_targets: str | None,
              targets: tuple[str, ...], no_tests: bool, no_profilers: bool) -> None:
    """Configure (CMake, Ninja generator) and build a generated project into OUTPUT/build, with
    a progress bar from Ninja's [n/m] lines."""
    import shutil

    from .build import configure, ninja

    arch = _project_arch(out)
    if not (out / "CMakeLists.txt").is_file():
        gpus = gpu_targets or arch.cuda_arch or arch.name
        _check_gpu_targets(arch.platform, gpus)
        _write_cmake(out, arch.platform, gpus, launcher, arch.name)
    for g in kernels:
        if glob_problem(g) is not None:
            raise CkgenError(f"--kernels {g!r}: {glob_problem(g)}")
    if launcher and shutil.which(launcher) is None:
        raise CkgenError(f"--launcher {launcher!r} is not on PATH")
    configure(out, out / "build", gpu_targets=gpu_targets, launcher=launcher, kernels=_csv_words(kernels),
              profilers=not no_profilers, tests=not no_tests)
    console = Console(stderr=True)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]building[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[what]}", style="dim"), console=console, transient=False,
                  disable=not console.is_terminal) as prog:
        task = prog.add_task("build", total=None, what="")

        shown = [0]

        def step(done: int, total: int, what: str) -> None:
            prog.update(task, completed=done, total=total, what=escape(what.split("/")[-1][:60]))
            if not console.is_terminal and (done == total or done * 10 // total > shown[0]):
                shown[0] = done * 10 // total  # logs get a line per 10 %
                err_console.print(f"[{done}/{total}] {escape(what)}", soft_wrap=True)

        res = ninja(out / "build", jobs=jobs, targets=list(targets), progress=step)
    click.echo(f"built {out / 'build'}: {res.steps} step(s) in {res.seconds:.1f} s")


@main.command("profile")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Project built by `ckgen build -o OUTPUT`.")
@click.option("--shapes", required=True, type=click.Path(path_type=Path, dir_okay=False), help="Shapes CSV.")
@click.option("--variant", "variants", multiple=True, type=_words(Variant), help="Variants (default all built).")
@click.option("--datatype", "datatypes", multiple=True, type=_words(DataType), help="Datatypes (default all).")
@click.option("--devices", default="", help="GPU indices to shard over, e.g. 0,1,2,3 (default: all visible).")
@click.option("--kernels", "kernels", multiple=True, help="Only instances matching these globs.")
@click.option("--shape", "shape_glob", default="", help="Only shapes matching this glob.")
@click.option("--verify", type=click.Choice(["none", "cpu", "gpu", "auto"]), default="gpu", show_default=True)
@click.option("--warmup", type=click.IntRange(0), default=5, show_default=True)
@click.option("--repeat", type=click.IntRange(1), default=10, show_default=True)
@click.option("--k-batch", "k_batch", default="", callback=_k_batches,
              help="Split counts to try, e.g. 0,1,4,16 (0 = chosen per problem; instances that never "
                   "split run once).")
@click.option("--split-reduce", "split_reduce", type=click.Choice(["auto", "workspace", "cluster"]), default="auto",
              show_default=True, help="How split reductions add up (backward_weight copy-engine instances; "
                                      "the others refuse anything but auto).")
@click.option("--streamk-blocks", "streamk_blocks", type=click.IntRange(0), default=0, show_default=True,
              help="StreamK grid size (0 = the instance's default).")
@click.option("--csv", "csv_out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Merged results (default OUTPUT/profile/results.csv).")
@click.option("--timeout", type=click.IntRange(1), default=3600, show_default=True, help="Seconds in all.")
def profile_cmd(out: Path, shapes: Path, variants: tuple[str, ...], datatypes: tuple[str, ...], devices: str,
                kernels: tuple[str, ...], shape_glob: str, verify: str, warmup: int, repeat: int,
                k_batch: list[int], split_reduce: str, streamk_blocks: int, csv_out: Path | None,
                timeout: int) -> None:
    """Run the profiler binaries over a shapes file, one process per GPU (instances sharded
    round-robin, CUDA_VISIBLE_DEVICES per process), merge the CSVs and show the best per shape."""
    from .profile import VARIANTS, best_rows, run_profile

    run = run_profile(out, shapes, variants=list(variants) or list(VARIANTS), datatypes=list(datatypes),
                      devices=[d.strip() for d in devices.split(",") if d.strip()], kernels=_csv_words(kernels),
                      shape_glob=shape_glob, verify=verify, warmup=warmup, repeat=repeat, k_batches=k_batch,
                      split_reduce=split_reduce, streamk_blocks=streamk_blocks, csv_out=csv_out, timeout=timeout,
                      on_event=lambda m: err_console.print(escape(m)))
    _best_table(best_rows(run.rows), f"best per shape ({len(run.rows)} rows -> {run.csv})")
    for s in run.failed:
        err_console.print(f"[red]{s.variant} on GPU {s.device}: exit {s.rc}[/] (log {escape(str(s.log))})")
    if run.failed:
        sys.exit(1)


def _best_table(rows: list[dict[str, str]], title: str) -> None:
    t = Table(title=title)
    for col, just in (("variant", "left"), ("dtype", "left"), ("shape", "left"), ("instance", "left"),
                      ("k_batch", "right"), ("ms", "right"), ("TFLOPS", "right"), ("GB/s", "right")):
        t.add_column(col, justify=just, no_wrap=col in ("shape", "instance"))
    for r in rows:
        t.add_row(r["variant"], r["datatype"], r["shape"], r["instance"], r.get("k_batch", ""), r["ms"],
                  r.get("tflops", ""), r.get("gbps", ""))
    _console().print(t)


@main.command("tune")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Project built by `ckgen build -o OUTPUT`.")
@click.option("--shapes", required=True, type=click.Path(path_type=Path, dir_okay=False), help="Shapes CSV.")
@click.option("--db", "db_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Tuning database to write (default OUTPUT/tuning_db.json).")
@click.option("--from-csv", "from_csv", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Build the database from existing profile results instead of profiling.")
@click.option("--part", type=click.Choice(["all", "even", "odd"]), default="all", show_default=True,
              help="Tune on every shape, or on the even / odd rows of the shapes file (hold the rest out).")
@click.option("--variant", "variants", multiple=True, type=_words(Variant))
@click.option("--datatype", "datatypes", multiple=True, type=_words(DataType))
@click.option("--devices", default="", help="GPU indices to shard over (default: all visible).")
@click.option("--kernels", "kernels", multiple=True, help="Only instances matching these globs.")
@click.option("--k-batch", "k_batch", default="0,1,2,4,8,16,32", show_default=True, callback=_k_batches,
              help="Split counts to time (every variant; instances that never split run once).")
@click.option("--verify", type=click.Choice(["none", "cpu", "gpu", "auto"]), default="gpu", show_default=True)
@click.option("--timeout", type=click.IntRange(1), default=3600, show_default=True)
def tune_cmd(out: Path, shapes: Path, db_path: Path | None, from_csv: Path | None, part: str,
             variants: tuple[str, ...], datatypes: tuple[str, ...], devices: str, kernels: tuple[str, ...],
             k_batch: list[int], verify: str, timeout: int) -> None:
    """Time every instance (and split count) per shape and write the tuning database
    the dispatcher reads (load it with CKGEN_TUNING_DB=FILE or Registry.load_tuning_db)."""
    from .profile import VARIANTS, read_rows, run_profile
    from .shapes import load_shapes
    from .tune import build_db, split_shapes, write_db

    problems = load_shapes(shapes)
    names = split_shapes(problems, part)
    arch = _project_arch(out)
    if from_csv is not None:
        rows = read_rows(from_csv)
    else:
        sub = out / "profile" / f"tune_shapes_{part}.csv"
        from .shapes import write_shapes

        sub.parent.mkdir(parents=True, exist_ok=True)
        write_shapes(sub, [p for p in problems if p.name in names])
        run = run_profile(out, sub, variants=list(variants) or list(VARIANTS), datatypes=list(datatypes),
                          devices=[d.strip() for d in devices.split(",") if d.strip()], kernels=_csv_words(kernels),
                          verify=verify, k_batches=k_batch, csv_out=out / "profile" / f"tune_{part}.csv",
                          timeout=timeout, on_event=lambda m: err_console.print(escape(m)))
        rows = run.rows
        for s in run.failed:
            err_console.print(f"[yellow]warning:[/] {s.variant} on GPU {s.device}: exit {s.rc} (log {escape(str(s.log))})")
    db = build_db(rows, problems, arch=arch.name, shapes=names)
    path = db_path or out / "tuning_db.json"
    write_db(path, db)
    click.echo(f"{path}: {len(db['entries'])} entries ({part} shapes of {shapes.name})")
    if not db["entries"]:
        raise CkgenError("no timed results: the tuning database is empty")


@main.command("check-heuristic")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Project built by `ckgen build -o OUTPUT` (its lib/libckgen_dispatch.so selects).")
@click.option("--results", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Profile results CSV with every instance timed (e.g. from `ckgen profile`).")
@click.option("--shapes", required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--db", "db_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Tuning database to select with (default: none, the cost model).")
@click.option("--part", type=click.Choice(["all", "even", "odd"]), default="all", show_default=True,
              help="Shapes to judge on (the ones NOT tuned on).")
@click.option("--json", "json_out", type=click.Path(path_type=Path, dir_okay=False), default=None)
def check_heuristic(out: Path, results: Path, shapes: Path, db_path: Path | None, part: str,
                    json_out: Path | None) -> None:
    """Heuristic quality: for each profiled shape, the selected kernel's measured time over the
    best instance's (no GPU needed: times come from RESULTS)."""
    from .profile import read_rows
    from .registry import Registry
    from .shapes import load_shapes
    from .tune import evaluate, split_shapes, summarize

    reg = Registry.load(out / "build")
    reg.load_tuning_db(db_path)
    problems = load_shapes(shapes)
    q = evaluate(reg, read_rows(results), problems, split_shapes(problems, part), cost_model_only=db_path is None)
    t = Table(title=f"selection vs best ({'tuning db ' + db_path.name if db_path else 'cost model'}, {part} shapes)")
    for col in ("variant", "dtype", "shape", "selected", "source", "ms", "best ms", "ratio"):
        t.add_column(col, no_wrap=col in ("shape", "selected"))
    for x in q:
        t.add_row(x.variant, x.datatype, x.shape, x.selected, x.source,
                  f"{x.selected_ms:.4f}" if x.selected_ms is not None else "-", f"{x.best_ms:.4f}",
                  f"{x.ratio:.3f}" if x.ratio is not None else "-")
    _console().print(t)
    summ = summarize(q)
    click.echo(json.dumps(summ, indent=1))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"summary": summ, "rows": [x.__dict__ | {"ratio": x.ratio} for x in q]},
                                       indent=1) + "\n")


@main.command("report")
@click.option("--results", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Profile results CSV (`ckgen profile`).")
@click.option("--cudnn", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="cuDNN results CSV (columns shape,variant,datatype,cudnn_ms,...).")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Directory for report.md, speedup.png, speedup_<variant>.png, roofline.png.")
@click.option("--arch", default="sm_90a", show_default=True, help="Target whose peak and bandwidth draw the roof.")
def report_cmd(results: Path, cudnn: Path | None, out: Path, arch: str) -> None:
    """Markdown table (best per shape, cuDNN time, speedup, geomean per variant) and speedup /
    roofline plots (matplotlib optional: skipped with a message)."""
    from .report import load, markdown, plots

    spec = get_arch(arch)
    rows = load(results, cudnn)
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


if __name__ == "__main__":
    main()
