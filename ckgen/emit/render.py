"""Rendering: an Expansion -> the files of the generated project, in memory, byte-deterministic."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from ckgen import __version__
from ckgen.model.arch import ArchSpec, get_arch
from ckgen.model.instance import KernelInstance
from ckgen.model.naming import NAME_RE, parse_instance_name
from ckgen.model.vocab import Pipeline, Variant
from ckgen.resources import share_dir, templates_dir, testing_dir
from ckgen.space.estimate.tma import tma_min_blocks
from ckgen.space.forms import math_unit

MANIFEST = "manifest.json"
# 2: "tool", "tool_version", "gpu_targets" and "sha256" (the content hash of every file listed
# in "files" but the manifest itself) were added.
MANIFEST_VERSION = 2
MANIFEST_FORMAT = "ckgen-manifest"


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        autoescape=False,
    )


def render_template(name: str, **ctx: object) -> str:
    return environment().get_template(name).render(**ctx)


@dataclass(frozen=True)
class Unit:
    """One translation unit: its source path (relative to the project) and its instances."""

    variant: Variant
    source: str
    names: tuple[str, ...]


def plan_units(instances: list[KernelInstance], shard_size: int) -> list[Unit]:
    units: list[Unit] = []
    for v in Variant:
        names = [i.name for i in instances if i.variant is v]
        if shard_size <= 1:
            units += [Unit(v, f"instances/{v.value}/{n}.cpp", (n,)) for n in names]
        else:
            for k in range(0, len(names), shard_size):
                units.append(
                    Unit(
                        v,
                        f"instances/{v.value}/shard_{k // shard_size:04d}.cpp",
                        tuple(names[k : k + shard_size]),
                    )
                )
    return units


def render_instance_header(inst: KernelInstance, arch: ArchSpec) -> str:
    if not NAME_RE.match(inst.name):  # names reach C++ identifiers and paths: never anything else
        raise ValueError(f"refusing instance name {inst.name!r}")
    return render_template(
        "project/instance.hpp.j2",
        inst=inst,
        arch=arch.name,
        layouts=inst.layouts,
        math_unit=math_unit(inst, arch),
        warp_size=arch.warp_size,
        min_blocks=tma_min_blocks(inst, arch),
    )


def _render_headers_chunk(args: tuple[str, list[str], list[str]]) -> list[str]:
    """Worker for --jobs: re-creates instances from their names (names are the full config)."""
    arch_name, names, origins = args
    arch = get_arch(arch_name)
    out = []
    for n, o in zip(names, origins, strict=False):
        inst = parse_instance_name(n)
        object.__setattr__(inst, "origin", o)
        out.append(render_instance_header(inst, arch))
    return out


def _library_files() -> dict[str, bytes]:
    root = templates_dir() / "include"
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".hpp", ".h", ".inc"):
            files[f"include/{p.relative_to(root).as_posix()}"] = p.read_bytes()
    files.update({f"testing/{p.name}": p.read_bytes() for p in sorted(testing_dir().glob("*.hpp"))})
    return files


def _shape_files() -> dict[str, bytes]:
    root = templates_dir() / "project" / "shapes"
    return {f"shapes/{p.name}": p.read_bytes() for p in sorted(root.glob("*.csv"))}


def _dispatch_files(arch: ArchSpec) -> dict[str, bytes]:
    """The dispatcher's project files (dispatcher engineer's): the C API sources and headers,
    dispatcher.cmake (included by CMakeLists.txt), and the arch numbers of the cost model
    rendered from arch_specs.json into include/ckgen/generated/arch_params.hpp."""
    root = templates_dir() / "project" / "dispatch"
    files = {
        f"dispatch/{p.name}": p.read_bytes()
        for p in sorted(root.iterdir())
        if p.is_file() and p.suffix in (".h", ".hpp", ".cpp", ".cmake")
    }
    files["dispatcher.cmake"] = files.pop("dispatch/dispatcher.cmake")
    files["include/ckgen/generated/arch_params.hpp"] = render_template(
        "project/dispatch/arch_params.hpp.j2",
        a=arch,
        peak={d.value: v for d, v in arch.peak_tflops.items()},
        calibration=[[arch.calibration(v, p) for p in Pipeline] for v in Variant],
        variants=[v.value for v in Variant],
        pipelines=[p.value for p in Pipeline],
    ).encode()
    return files


def _origin_rel(origin: str) -> str:
    """Config origin relative to ckgen's share dir when inside it (so output is machine
    independent)."""
    path, _, line = origin.rpartition(":")
    rel = _rel_config_path(path, os.getcwd())
    return f"{rel}:{line}" if line else rel


@cache
def _rel_config_path(path: str, cwd: str) -> str:
    # Cached (per working directory, as a relative path resolves against it): every instance
    # of a file shares its path, and resolve() costs a few stat calls.
    try:
        return Path(path).resolve().relative_to(share_dir().resolve()).as_posix()
    except ValueError:
        return Path(path).name


def render_project(
    instances: list[KernelInstance],
    arch: ArchSpec,
    shard_size: int = 1,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    filtered: bool = False,
) -> dict[str, bytes]:
    """Every file of the generated project (CMakeLists.txt excepted: ``emit-cmake``). filtered:
    the instances are a selection of their configs (recorded for the tests' coverage checks)."""
    insts = [
        inst if not inst.origin else _with_origin(inst, _origin_rel(inst.origin))
        for inst in instances
    ]
    files: dict[str, bytes] = {}
    headers = _render_headers(insts, arch, jobs, progress)
    for inst, text in zip(insts, headers, strict=False):
        files[f"instances/{inst.variant.value}/{inst.name}.hpp"] = text.encode()
    units = plan_units(insts, shard_size)
    for u in units:
        files[u.source] = render_template("project/shard.cpp.j2", names=u.names).encode()
    variants = [v for v in Variant if any(i.variant is v for i in insts)]
    files["instances.cmake"] = render_template(
        "project/instances.cmake.j2",
        arch=arch.name,
        filtered=filtered,
        variants=variants,
        units_by_variant=[(v, [u for u in units if u.variant is v]) for v in variants],
    ).encode()
    files["registry/registry.cpp"] = render_template("project/registry.cpp.j2").encode()
    for v in variants:
        files[f"profiler/profiler_{v.value}.cpp"] = render_template(
            "project/profiler.cpp.j2", variant=v
        ).encode()
        files[f"tests/test_grouped_conv_{v.value}.cpp"] = render_template(
            "project/test.cpp.j2", variant=v
        ).encode()
    files.update(_library_files())
    files.update(_shape_files())
    files.update(_dispatch_files(arch))
    manifest = {
        "format": MANIFEST_FORMAT,
        "manifest_version": MANIFEST_VERSION,
        "tool": "ckgen",
        "tool_version": __version__,
        "arch": arch.name,
        "platform": arch.platform.value,
        "gpu_targets": arch.cuda_arch or arch.name,
        "warp_size": arch.warp_size,
        "variants": [v.value for v in variants],
        "shard_size": shard_size,
        "instances": [i.to_json() for i in insts],
        "files": sorted(files) + [MANIFEST],
        "sha256": {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())},
    }
    files[MANIFEST] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    return files


def _with_origin(inst: KernelInstance, origin: str) -> KernelInstance:
    new = KernelInstance(
        **{k: getattr(inst, k) for k in inst.__dataclass_fields__ if k != "origin"}, origin=origin
    )
    return new


def _render_headers(
    insts: list[KernelInstance], arch: ArchSpec, jobs: int, progress: Callable[[int], None] | None
) -> list[str]:
    if jobs <= 1 or len(insts) < 64:
        out = []
        for n, inst in enumerate(insts):
            out.append(render_instance_header(inst, arch))
            if progress and n % 50 == 49:
                progress(50)
        if progress:
            progress(len(insts) % 50)
        return out
    chunk = max(16, len(insts) // (jobs * 4))
    work = [
        (
            arch.name,
            [i.name for i in insts[k : k + chunk]],
            [i.origin for i in insts[k : k + chunk]],
        )
        for k in range(0, len(insts), chunk)
    ]
    out = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(_render_headers_chunk, work):
            out.extend(part)
            if progress:
                progress(len(part))
    return out
