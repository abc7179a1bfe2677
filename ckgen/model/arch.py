"""Targets: arch_specs.json loaded and validated into ArchSpec records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError, did_you_mean
from ckgen.model.vocab import DataType, MathUnit, Pipeline, Platform, Scheduler, Variant
from ckgen.resources import arch_specs_path

Triple = tuple[int, int, int]

# Numeric fields that must each name a source in the entry's "sources".
SOURCED_FIELDS = (
    "warp_size",
    "lds_bytes",
    "max_threads_per_block",
    "registers_per_thread",
    "register_file_bytes_per_cu",
    "compute_units",
    "peak_tflops",
    "bandwidth_gbs",
    "warp_tiles",
    "wave_layouts",
)


@dataclass(frozen=True)
class ArchSpec:
    name: str
    platform: Platform
    family: str
    description: str
    warp_size: int
    lds_bytes: int
    max_threads_per_block: int
    registers_per_thread: int
    register_file_bytes_per_cu: int
    compute_units: int
    math_units: dict[DataType, MathUnit]
    wave_layouts: tuple[Triple, ...]
    warp_tiles: dict[DataType, tuple[Triple, ...]]
    pipelines: tuple[Pipeline, ...]
    schedulers: tuple[Scheduler, ...]
    peak_tflops: dict[DataType, float]
    bandwidth_gbs: float
    compiler: dict[str, Any]
    sources: dict[str, str]
    # Warpgroup matrix instructions (sm_90a wgmma, 64 x N x 16 per group of 4 warps): legal
    # warp tiles besides warp_tiles, named explicitly (not part of warp_tile 'auto'); an instance
    # whose warp tile is one of them uses MathUnit.WGMMA (math_unit_for).
    warpgroup_tiles: dict[DataType, tuple[Triple, ...]] = None  # type: ignore[assignment]
    # The cost model's measured / estimated time per (variant, pipeline), where measured (the
    # dispatcher multiplies its estimate by it; 1 elsewhere).
    cost_calibration: dict[tuple[Variant, Pipeline], float] = None  # type: ignore[assignment]

    def calibration(self, variant: Variant, pipeline: Pipeline) -> float:
        return (self.cost_calibration or {}).get((variant, pipeline), 1.0)

    def math_unit_for(self, datatype: DataType, warp_tile: Any) -> MathUnit:
        """The math unit an instance of this datatype and warp tile runs on."""
        if tuple(warp_tile) in (self.warpgroup_tiles or {}).get(datatype, ()):
            return MathUnit.WGMMA
        return self.math_units[datatype]

    def legal_warp_tiles(self, datatype: DataType) -> tuple[Triple, ...]:
        return self.warp_tiles.get(datatype, ()) + (self.warpgroup_tiles or {}).get(datatype, ())

    @property
    def datatypes(self) -> tuple[DataType, ...]:
        return tuple(d for d in DataType if d in self.warp_tiles)

    @property
    def cuda_arch(self) -> str | None:
        return self.compiler.get("cuda_arch")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "platform": self.platform.value,
            "warp_size": self.warp_size,
            "lds_bytes": self.lds_bytes,
            "compute_units": self.compute_units,
        }


def _fail(path: Path, arch: str, msg: str) -> CkgenError:
    return CkgenError(f"{path}: {arch}: {msg}")


def _triple(v: Any) -> Triple:
    if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) and x > 0 for x in v)):
        raise ValueError(f"expected three positive integers, got {v!r}")
    return (v[0], v[1], v[2])


def _parse_entry(path: Path, name: str, e: dict[str, Any]) -> ArchSpec:
    try:
        srcs = e.get("sources", {})
        for f in SOURCED_FIELDS:
            if f not in e:
                raise ValueError(f"missing field {f!r}")
            if not isinstance(srcs.get(f), str) or not srcs[f].strip():
                raise ValueError(f"field {f!r} has no source in 'sources'")
        for f in (
            "warp_size",
            "lds_bytes",
            "max_threads_per_block",
            "registers_per_thread",
            "compute_units",
        ):
            if not isinstance(e[f], int) or e[f] <= 0:
                raise ValueError(f"{f} must be a positive integer")
        if e["warp_size"] not in (32, 64):
            raise ValueError("warp_size must be 32 or 64")
        tiles = {DataType(k): tuple(_triple(t) for t in v) for k, v in e["warp_tiles"].items()}
        units = {DataType(k): MathUnit(v) for k, v in e["math_units"].items()}
        if set(units) != set(tiles):
            raise ValueError("math_units and warp_tiles must name the same datatypes")
        return ArchSpec(
            name=name,
            platform=Platform(e["platform"]),
            family=str(e["family"]),
            description=str(e.get("description", "")),
            warp_size=e["warp_size"],
            lds_bytes=e["lds_bytes"],
            max_threads_per_block=e["max_threads_per_block"],
            registers_per_thread=e["registers_per_thread"],
            register_file_bytes_per_cu=e["register_file_bytes_per_cu"],
            compute_units=e["compute_units"],
            math_units=units,
            wave_layouts=tuple(_triple(t) for t in e["wave_layouts"]),
            warp_tiles=tiles,
            pipelines=tuple(Pipeline(p) for p in e["pipelines"]),
            schedulers=tuple(Scheduler(s) for s in e["schedulers"]),
            peak_tflops={DataType(k): float(v) for k, v in e["peak_tflops"].items()},
            bandwidth_gbs=float(e["bandwidth_gbs"]),
            compiler=dict(e["compiler"]),
            sources=dict(srcs),
            warpgroup_tiles={
                DataType(k): tuple(_triple(t) for t in v)
                for k, v in e.get("warpgroup_tiles", {}).items()
            },
            cost_calibration=_calibration(e.get("cost_calibration", {})),
        )
    except (KeyError, ValueError, TypeError) as ex:
        raise _fail(path, name, f"invalid entry: {ex}") from None


def _calibration(raw: dict[str, Any]) -> dict[tuple[Variant, Pipeline], float]:
    out: dict[tuple[Variant, Pipeline], float] = {}
    for v, per in raw.items():
        for p, f in per.items():
            if not float(f) > 0:
                raise ValueError(f"cost_calibration.{v}.{p}: {f!r} is not a positive number")
            out[(Variant(v), Pipeline(p))] = float(f)
    return out


@cache
def load_arch_specs(path: Path | None = None) -> dict[str, ArchSpec]:
    p = path or arch_specs_path()
    try:
        raw = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as ex:
        raise CkgenError(f"{p}: cannot read arch specs: {ex}") from None
    return {k: _parse_entry(p, k, v) for k, v in raw.items() if not k.startswith("_")}


def get_arch(name: str) -> ArchSpec:
    specs = load_arch_specs()
    if name not in specs:
        raise CkgenError(
            f"unknown arch {name!r}{did_you_mean(name, list(specs))}; known: {', '.join(specs)}"
        )
    return specs[name]
