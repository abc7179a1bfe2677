"""What the commands share: consoles, the instance selection options and their expansion, and
the checks of option values that reach CMake or the profilers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ckgen.cli.defaults import DEFAULT_ARCH, DEFAULT_OUTPUT, choose_arch
from ckgen.config.schema import glob_problem
from ckgen.emit.render import MANIFEST
from ckgen.errors import CkgenError, shown
from ckgen.model.arch import ArchSpec, get_arch, load_arch_specs
from ckgen.model.limits import MAX_K_BATCH
from ckgen.model.vocab import DataType, Pipeline, Platform, Variant
from ckgen.space.expand import (
    Expansion,
    Filters,
    default_config_paths,
    expand,
    load_configs,
)
from ckgen.space.rules import NO_CONTEXT, RuleContext

err_console = Console(stderr=True, highlight=False)
CONFIG_SETS = ("default", "tests", "profiler")


def make_console(stderr: bool = False) -> Console:
    """A console that does not fold long kernel names when the output is a file or a pipe."""
    c = Console(stderr=stderr, highlight=False)
    return c if c.is_terminal else Console(stderr=stderr, highlight=False, width=240)


def words(cls: Any) -> click.Choice:
    return click.Choice(cls.allowed())


def selection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option(
            "--variant",
            "variants",
            multiple=True,
            type=words(Variant),
            help="Variant(s); default: all three.",
        ),
        click.option(
            "--arch",
            default=None,
            help="Target from arch_specs.json (e.g. sm_90a, gfx942); default: $CKGEN_ARCH, else "
            f"the GPU found on this machine (nvidia-smi, rocminfo, amd-smi), else {DEFAULT_ARCH}.",
        ),
        click.option(
            "--config",
            "configs",
            multiple=True,
            type=PathArg(dir_okay=False),
            help="Instance-list YAML file(s); default: the shipped set (--set) per variant.",
        ),
        click.option(
            "--set",
            "config_set",
            type=click.Choice(CONFIG_SETS),
            default="default",
            show_default=True,
            help="Shipped config set used when no --config is given.",
        ),
        click.option(
            "--datatype",
            "datatypes",
            multiple=True,
            type=words(DataType),
            help="Keep only these datatypes.",
        ),
        click.option(
            "--ndim",
            "ndims",
            multiple=True,
            type=click.IntRange(1, 3),
            help="Keep only these ndims.",
        ),
        click.option(
            "--pipeline",
            "pipelines",
            multiple=True,
            type=words(Pipeline),
            help="Keep only these pipelines.",
        ),
        click.option(
            "--kernels",
            "kernels",
            multiple=True,
            help="Keep only instances whose name matches a glob, e.g. "
            "'grouped_conv_bwd_data_fp16_*'.",
        ),
        file_option(
            "--resources",
            "resources",
            help="Measured resources (`ckgen check-isa --resources-out FILE`, or a checked "
            "manifest.json): "
            "instances that spill or exceed LDS are rejected (rule 'measured').",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def resolve_arch(arch: str | None, quiet: bool = False) -> str:
    """--arch as given, else the default of ckgen.cli.defaults, named in one line on stderr."""
    choice = choose_arch(arch, load_arch_specs())
    if choice.source != "option" and not quiet:
        err_console.print(choice.note, markup=False, highlight=False, soft_wrap=True)
    return choice.arch


def expansion(
    variants: tuple[str, ...],
    arch: str | None,
    configs: tuple[Path, ...],
    config_set: str,
    datatypes: tuple[str, ...],
    ndims: tuple[int, ...],
    pipelines: tuple[str, ...],
    kernels: tuple[str, ...],
    resources: Path | None = None,
    quiet: bool = False,
) -> Expansion:
    spec = get_arch(resolve_arch(arch, quiet))
    ctx = rule_context(resources, spec.name)
    vs = [Variant(v) for v in variants] or list(Variant)
    paths = list(configs) if configs else default_config_paths(vs, config_set)
    for g in kernels:
        why = glob_problem(g)
        if why is not None:
            raise CkgenError(f"--kernels {g!r}: {why}")
    # One --variant names the variant of a file that does not say.
    all_cfgs = load_configs(paths, variant_fallback=vs[0] if len(set(vs)) == 1 else None)
    cfgs = [c for c in all_cfgs if c.variant in vs] if variants else all_cfgs
    if not cfgs:
        shown = "; ".join(f"{c.path} is {c.variant.value}" for c in all_cfgs)
        raise CkgenError(
            f"none of the config files is for --variant {', '.join(v.value for v in vs)} ({shown})"
        )
    filters = Filters(
        datatypes=tuple(DataType(d) for d in datatypes),
        ndims=tuple(ndims),
        pipelines=tuple(Pipeline(p) for p in pipelines),
        kernels=tuple(kernels),
    )
    exp = expand(cfgs, spec, filters, ctx)
    return exp


def warn_explicit_rejections(exp: Expansion) -> None:
    """An instance the user listed by hand and the rules refused is never dropped silently."""
    for r in exp.explicit_rejected:
        err_console.print(
            f"warning: {r.instance.origin}: explicit instance {r.name} rejected "
            f"[{r.rule}]: {r.reason}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    more = exp.explicit_rejected_count - len(exp.explicit_rejected)
    if more > 0:
        err_console.print(
            f"warning: … {more} more explicit instances rejected "
            "(`ckgen list-instances --show-rejected` counts them by reason)",
            markup=False,
            highlight=False,
        )


def require_instances(exp: Expansion) -> None:
    if exp.instances:
        return
    lines = [
        f"the expansion is empty: {exp.candidates} candidates, {exp.rejected_count} rejected, "
        f"{exp.duplicates} duplicates, {exp.filtered} filtered out"
    ]
    rows = exp.rejected_by_reason()
    if rows:
        lines[0] += "; top rejection reasons:"
    for rule, reason, n in rows[:5]:
        origin = exp.rule_origin.get(rule, "")
        lines.append(f"  {n:6d} x [{rule}] {reason}" + (f" (e.g. from {origin})" if origin else ""))
    if len(rows) > 5:
        lines.append(
            f"  ... and {len(rows) - 5} more rules: `ckgen list-instances --show-rejected` lists "
            "them all"
        )
    if exp.filtered:
        lines.append(
            f"  {exp.filtered:6d} x filtered out by --datatype/--ndim/--pipeline/--kernels or "
            "include/exclude globs"
        )
    raise CkgenError("\n".join(lines))


# What a GPU target looks like per platform: CUDA archs as CMake's CUDA_ARCHITECTURES spells
# them (80, 90a, 100f), AMD offload archs with optional target features (gfx90a:xnack+).
GPU_TARGET_RE = {
    Platform.NVIDIA: re.compile(r"^[0-9]{2,3}[af]?$"),
    Platform.AMD: re.compile(r"^gfx[0-9a-f]{3,4}(:(sramecc|xnack)[+-])*$"),
}
GPU_TARGET_EXAMPLE = {Platform.NVIDIA: "90a, 80", Platform.AMD: "gfx942, gfx90a:xnack+"}


def check_gpu_targets(plat: Platform, targets: str, source: str = "--gpu-targets") -> None:
    """--gpu-targets reaches CMake: only well-formed target names, separated by ',' or ';'.
    ``source`` names where the targets come from in the message."""
    for t in targets.replace(";", ",").split(","):
        if not GPU_TARGET_RE[plat].match(t.strip()):
            raise CkgenError(
                f"{source}: {t.strip()!r} is not a GPU target for {plat.value} "
                f"(e.g. {GPU_TARGET_EXAMPLE[plat]}; several separated by ',')"
            )


def check_launcher(launcher: str) -> None:
    """--launcher reaches CMake: a program name or path (the build also looks it up on PATH)."""
    if launcher and (
        launcher.startswith("-") or not all(c.isalnum() or c in "_-./+" for c in launcher)
    ):
        raise CkgenError(
            f"--launcher: {launcher!r} is not a program name or path (allowed: letters, digits, _ "
            "- . / +)"
        )


def rule_context(resources: Path | None, arch: str) -> RuleContext:
    """The rules' context: measured resources of `generate --resources FILE` (for ``arch`` only)."""
    if resources is None:
        return NO_CONTEXT
    from ckgen.runtime.isa import load_resources

    got, res = load_resources(resources)
    if got != arch:
        raise CkgenError(f"{resources}: measured resources are for {got}, not {arch}")
    return RuleContext(arch=got, measured=dict(res))


def k_batches(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    """--k-batch: comma-separated split counts 0..MAX_K_BATCH (0 = chosen per problem)."""
    out: list[int] = []
    for w in (w.strip() for w in value.split(",")):
        if not w:
            continue
        if not w.isdigit() or int(w) > MAX_K_BATCH:
            raise click.BadParameter(
                f"'{w}' is not a split count 0..{MAX_K_BATCH} (comma-separated, e.g. 0,1,4,16)"
            )
        out.append(int(w))
    return out


def csv_words(values: tuple[str, ...]) -> list[str]:
    return [w.strip() for v in values for w in v.split(",") if w.strip()]


def file_option(
    *decls: str, help: str | None = None, required: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option naming a file (not a directory), as a Path: a required one has no default (click
    refuses the command without it), an optional one is None when not given."""
    path = PathArg(dir_okay=False)
    if required:
        return click.option(*decls, required=True, type=path, help=help)
    return click.option(*decls, type=path, default=None, help=help)


def part_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--part: every shape of the shapes file, or its even / odd rows."""
    return click.option(
        "--part",
        type=click.Choice(["all", "even", "odd"]),
        default="all",
        show_default=True,
        help=help,
    )


def profile_selection(
    variants: tuple[str, ...], datatypes: tuple[str, ...], devices: str, kernels: tuple[str, ...]
) -> dict[str, Any]:
    """run_profile's keyword arguments for what --variant, --datatype, --devices and --kernels
    select (every profiled variant by default), with its progress printed on stderr."""
    from ckgen.tuning.profile import VARIANTS

    return {
        "variants": list(variants) or list(VARIANTS),
        "datatypes": list(datatypes),
        "devices": [d.strip() for d in devices.split(",") if d.strip()],
        "kernels": csv_words(kernels),
        "on_event": lambda m: err_console.print(escape(m)),
    }


class PathArg(click.Path):
    """click.Path (as a Path) whose empty value (an unset shell variable in `-o "$DIR"`) is an
    error, not the working directory."""

    def __init__(self, *, file_okay: bool = True, dir_okay: bool = True) -> None:
        super().__init__(path_type=Path, file_okay=file_okay, dir_okay=dir_okay)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            what = "a directory ('.' for the working one)" if self.dir_okay else "a file"
            self.fail(f"{value!r} is an empty path: give {what}", param, ctx)
        return super().convert(value, param, ctx)


def output_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """-o/--output: the project directory, ckgen-out/ of the working directory by default."""
    return click.option(
        "-o",
        "--output",
        "out",
        default=DEFAULT_OUTPUT,
        show_default=True,
        type=PathArg(file_okay=False),
        help=help,
    )


def project_manifest(out: Path) -> tuple[dict[str, Any], ArchSpec]:
    """The manifest.json that `ckgen generate` wrote into ``out``, and its target."""
    man = out / MANIFEST
    hint = "" if out == DEFAULT_OUTPUT else f" -o {out}"
    try:
        data = json.loads(man.read_text())
    except FileNotFoundError:
        raise CkgenError(f"{man} not found: run `ckgen generate{hint}` first") from None
    except (OSError, ValueError, RecursionError) as ex:
        why = "JSON nesting is too deep" if isinstance(ex, RecursionError) else str(ex)
        raise CkgenError(f"{man}: not a ckgen manifest ({why})") from None
    if not isinstance(data, dict):
        raise CkgenError(f"{man}: not a ckgen manifest (not a JSON object)")
    if "arch" not in data:
        raise CkgenError(f"{man}: not a ckgen manifest (no 'arch')")
    if not isinstance(data["arch"], str):
        raise CkgenError(f"{man}: arch: expected a target name, got {shown(data['arch'])}")
    try:
        return data, get_arch(data["arch"])
    except CkgenError as ex:
        raise CkgenError(f"{man}: arch: {ex}") from None


def project_arch(out: Path) -> ArchSpec:
    return project_manifest(out)[1]
