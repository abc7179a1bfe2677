"""KernelLibrary.build: render the project, configure it with CMake and compile the kernels and
lib/libckgen_dispatch.so with Ninja, cached in cache_dir by a content hash of the rendered files,
the compiler's version and the flags (building the same set again compiles nothing)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ckgen.errors import CkgenError

if TYPE_CHECKING:
    from ckgen.runtime.library import KernelLibrary

CACHE_ENV = "CKGEN_CACHE_DIR"
CACHE_VERSION = "1"
LIB_NAME = "libckgen_dispatch.so"


def cache_root(cache_dir: Path | str | None = None) -> Path:
    """cache_dir, else $CKGEN_CACHE_DIR, else ~/.cache/ckgen."""
    return Path(
        cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ckgen"
    ).expanduser()


def build(
    cls: type[KernelLibrary],
    configs: str | Path | Sequence[str | Path] | None = "default",
    arch: str = "sm_90a",
    *,
    max_workers: int = 0,
    kernels: str | Sequence[str] = (),
    variants: Sequence[str] = (),
    datatypes: Sequence[str] = (),
    cache_dir: Path | str | None = None,
    gpu_targets: str | None = None,
    launcher: str = "",
    progress: Callable[[int, int, str], None] | None = None,
    timeout: float = 3600,
    shard_size: int = 1,
) -> KernelLibrary:
    """Generate, compile (cmake + ninja -j max_workers; 0 = one per CPU) and load.

    configs: a shipped config set name ('default', 'tests', ...), YAML paths, or None
    (default set). kernels: name globs. shard_size: instances per translation unit (as
    ``generate --shard-size``: fewer, larger units build a large set about twice as fast).
    The project and its build live in cache_dir/<hash> (default $CKGEN_CACHE_DIR or
    ~/.cache/ckgen); the hash covers the rendered files, the compiler's version and the
    flags, so the same request is a cache hit that compiles nothing."""
    from ckgen.emit.cmake import render_cmake
    from ckgen.emit.output import apply, plan
    from ckgen.emit.render import render_project
    from ckgen.model.arch import get_arch
    from ckgen.model.vocab import DataType, Variant
    from ckgen.runtime.build import compiler_identity, configure, ninja
    from ckgen.space.expand import (
        Filters,
        default_config_paths,
        expand,
        load_configs,
    )

    t0 = time.perf_counter()
    spec = get_arch(arch)
    vs = [Variant(v) for v in variants] or list(Variant)
    if configs is None or isinstance(configs, str) and not configs.endswith((".yaml", ".yml")):
        paths = default_config_paths(vs, configs or "default")
    else:
        seq = [configs] if isinstance(configs, (str, Path)) else list(configs)
        paths = [Path(c) for c in seq]
    globs = (kernels,) if isinstance(kernels, str) else tuple(kernels)
    cfgs = [c for c in load_configs(paths) if c.variant in vs]
    exp = expand(
        cfgs, spec, Filters(datatypes=tuple(DataType(d) for d in datatypes), kernels=globs)
    )
    if not exp.instances:
        raise CkgenError(
            f"no instance selected ({exp.candidates} candidates, "
            f"{exp.rejected_count} rejected, {exp.filtered} filtered out by "
            f"kernels={list(globs)})"
        )
    targets = gpu_targets or spec.cuda_arch or spec.name
    files = render_project(
        exp.instances, spec, shard_size=max(1, shard_size), filtered=exp.filtered > 0
    )
    files["CMakeLists.txt"] = render_cmake(spec.platform, targets, launcher, spec.name).encode()
    h = hashlib.sha256()
    h.update(
        f"ckgen-jit {CACHE_VERSION}\n{compiler_identity(spec.platform.value)}\n"
        f"targets={targets}\nlauncher={launcher}\n".encode()
    )
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    key = h.hexdigest()[:20]
    entry = cache_root(cache_dir) / f"{spec.name}-{key}"
    lib = entry / "build" / "lib" / LIB_NAME
    stamp = entry / "ok.json"
    entry.mkdir(parents=True, exist_ok=True)
    with open(entry / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per entry; others wait, then hit the cache
        if stamp.is_file() and lib.is_file():
            return cls(
                lib, project=entry / "src", build_seconds=time.perf_counter() - t0, cached=True
            )
        src = entry / "src"
        apply(plan(src, files))
        jobs = max_workers if max_workers > 0 else (os.cpu_count() or 1)
        configure(
            src,
            entry / "build",
            gpu_targets=targets,
            launcher=launcher,
            profilers=False,
            tests=False,
        )
        ninja(
            entry / "build",
            jobs=jobs,
            targets=["ckgen_dispatch"],
            progress=progress,
            timeout=timeout,
        )
        secs = time.perf_counter() - t0
        stamp.write_text(
            json.dumps(
                {
                    "arch": spec.name,
                    "instances": len(exp.instances),
                    "seconds": secs,
                    "max_workers": jobs,
                },
                indent=1,
            )
            + "\n"
        )
        return cls(lib, project=src, build_seconds=secs, cached=False)


def clear_cache(cache_dir: Path | str | None = None) -> None:
    shutil.rmtree(cache_root(cache_dir), ignore_errors=True)
