"""Expansion: config entries x target -> validated, named, deduplicated KernelInstances."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckgen.config.schema import FIELDS, ConfigFile, Entry, load_config, matches
from ckgen.errors import CkgenError, ConfigError, Where
from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance, default_k_batch
from ckgen.model.naming import match_any
from ckgen.model.vocab import DataType, Pipeline, Variant
from ckgen.resources import configs_dir
from ckgen.space.rules import NO_CONTEXT, RuleContext, check


@dataclass(frozen=True)
class Rejected:
    instance: KernelInstance
    rule: str
    reason: str
    explicit: bool = False  # listed under 'instances:', so worth a warning of its own

    @property
    def name(self) -> str:
        return self.instance.name


@dataclass(frozen=True)
class Filters:
    """Selections from the command line (they narrow the output; they are not rejections)."""

    datatypes: tuple[DataType, ...] = ()
    ndims: tuple[int, ...] = ()
    pipelines: tuple[Pipeline, ...] = ()
    kernels: tuple[str, ...] = ()

    def keep_fields(self, i: KernelInstance) -> bool:
        return (
            (not self.datatypes or i.datatype in self.datatypes)
            and (not self.ndims or i.ndim in self.ndims)
            and (not self.pipelines or i.pipeline in self.pipelines)
        )


# One entry (an explicit instance with its defaults, or a space) may give at most this many
# candidates, counted from its value lists before anything is expanded.
MAX_ENTRY_CANDIDATES = 100_000
# Rejected candidates kept as examples (every rejection is counted by rule and reason).
REJECTED_SAMPLE = 1000
EXPLICIT_REJECTED_SAMPLE = 100


@dataclass
class Expansion:
    arch: ArchSpec
    instances: list[KernelInstance] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)  # the first REJECTED_SAMPLE
    explicit_rejected: list[Rejected] = field(default_factory=list)  # first of 'instances:'
    rejected_count: int = 0
    explicit_rejected_count: int = 0
    rejection_counts: dict[str, Counter[str]] = field(default_factory=dict)  # rule -> reasons
    rule_origin: dict[str, str] = field(default_factory=dict)  # rule -> first entry it hit
    duplicates: int = 0
    filtered: int = 0
    candidates: int = 0

    def reject(self, r: Rejected) -> None:
        self.rejected_count += 1
        self.rejection_counts.setdefault(r.rule, Counter())[r.reason] += 1
        if r.instance.origin:
            self.rule_origin.setdefault(r.rule, r.instance.origin)
        if len(self.rejected) < REJECTED_SAMPLE:
            self.rejected.append(r)
        if r.explicit:
            self.explicit_rejected_count += 1
            if len(self.explicit_rejected) < EXPLICIT_REJECTED_SAMPLE:
                self.explicit_rejected.append(r)

    def rejected_by_reason(self) -> list[tuple[str, str, int]]:
        """(rule, reason, count) grouped by rule, most frequent first. The reason shown is the
        most frequent message of the rule, with '(+N other messages)' when the rule gave several."""
        rows = []
        for rule, msgs in self.rejection_counts.items():
            top, _ = sorted(msgs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            extra = f" (+{len(msgs) - 1} other messages)" if len(msgs) > 1 else ""
            rows.append((rule, top + extra, sum(msgs.values())))
        return sorted(rows, key=lambda t: (-t[2], t[0]))


def _defaults(name: str, variant: Variant) -> list[Any]:
    if name == "k_batch":
        return [default_k_batch(variant)]
    return [FIELDS[name].default]


def _values(entry: Entry, variant: Variant) -> dict[str, list[Any]]:
    return {k: entry.values.get(k) or _defaults(k, variant) for k in FIELDS}


_ORDER = [k for k in FIELDS if k not in ("datatype", "warp_tile")]


def _warp_tiles(vals: dict[str, list[Any]], dtype: Any, arch: ArchSpec) -> list[Any]:
    tiles: list[Any] = []
    for wt in vals["warp_tile"]:
        if wt == "auto":
            tiles.extend(arch.warp_tiles.get(dtype, ()))
        else:
            tiles.append(wt)
    if not tiles:  # no matrix path for the datatype: let the datatype rule say so
        tiles = [(1, 1, 1)]
    return list(dict.fromkeys(tiles))


def entry_size(entry: Entry, variant: Variant, arch: ArchSpec) -> int:
    """How many candidates ``entry`` gives on ``arch``, from its value lists alone."""
    vals = _values(entry, variant)
    rest = math.prod(len(vals[k]) for k in _ORDER)
    return rest * sum(len(_warp_tiles(vals, d, arch)) for d in vals["datatype"])


def check_entry_size(cfg: ConfigFile, entry: Entry, arch: ArchSpec) -> int:
    """The entry's candidate count; ConfigError (file:line: key path) over MAX_ENTRY_CANDIDATES."""
    n = entry_size(entry, cfg.variant, arch)
    if n > MAX_ENTRY_CANDIDATES:
        vals = _values(entry, cfg.variant)
        factors = " x ".join(f"{k} {len(v)}" for k, v in vals.items() if len(v) > 1)
        raise ConfigError(
            Where(cfg.path, entry.line or None, entry.keypath),
            f"this entry gives {n} candidates on {arch.name} ({factors}); the limit is "
            f"{MAX_ENTRY_CANDIDATES} per entry: split it or shorten its value lists",
        )
    return n


def _candidates(entry: Entry, variant: Variant, arch: ArchSpec) -> Iterator[KernelInstance]:
    vals = _values(entry, variant)
    order = _ORDER
    for dtype in vals["datatype"]:
        for wt in _warp_tiles(vals, dtype, arch):
            for combo in itertools.product(*(vals[k] for k in order)):
                v = dict(zip(order, combo, strict=False))
                load, math_w = v["wavelet"]
                va, vb, vc = v["vector"]
                op, act, residual, stats, out_datatype = v["fusion"]
                yield KernelInstance(
                    variant=variant,
                    datatype=dtype,
                    ndim=v["ndim"],
                    tile=v["tile"],
                    waves=v["waves"],
                    warp_tile=wt,
                    pipeline=v["pipeline"],
                    stages=v["stages"],
                    scheduler=v["scheduler"],
                    load_waves=load,
                    math_waves=math_w,
                    epilogue=v["epilogue"],
                    swap_ab=v["swap_ab"],
                    vec_a=va,
                    vec_b=vb,
                    vec_c=vc,
                    specialization=v["specialization"],
                    groups_to_merge=v["groups_to_merge"],
                    k_batch=v["k_batch"],
                    reduction=v["reduction"],
                    persistent=v["persistent"],
                    stage=v["stage"],
                    channel_op=op,
                    activation=act,
                    residual=residual,
                    stats=stats,
                    out_datatype=out_datatype,
                    origin=entry.origin,
                )


def expand(
    configs: Iterable[ConfigFile],
    arch: ArchSpec,
    filters: Filters = Filters(),
    ctx: RuleContext = NO_CONTEXT,
) -> Expansion:
    """Candidates outside their entry's name globs (config include / exclude) are skipped, the
    rest deduplicated on their full configuration (a candidate one entry's globs leave out stays
    open to another entry or file), filtered on the command line's field selections, checked
    against the rules (rejections keep their reason; ``ctx`` carries measured resources), and the
    valid ones filtered by --kernels."""
    out = Expansion(arch=arch)
    seen: set[KernelInstance] = set()
    configs = list(configs)
    for cfg in configs:  # every entry's size is checked before the first one expands
        for entry in cfg.entries:
            check_entry_size(cfg, entry, arch)
    for cfg in configs:
        for entry in cfg.entries:
            if arch.name in entry.not_on:  # a space this target does not take
                continue
            include, exclude = entry.include + cfg.include, entry.exclude + cfg.exclude
            for inst in _candidates(entry, cfg.variant, arch):
                out.candidates += 1
                if inst in seen:
                    out.duplicates += 1
                    continue
                if not matches(
                    inst.name, include, exclude
                ):  # this entry's filter: another may take it
                    out.filtered += 1
                    continue
                seen.add(inst)
                if not filters.keep_fields(inst):
                    out.filtered += 1
                    continue
                bad = check(inst, arch, ctx)
                if bad is not None:
                    out.reject(Rejected(inst, bad[0], bad[1], entry.explicit))
                    continue
                if not match_any(inst.name, filters.kernels):
                    out.filtered += 1
                    continue
                out.instances.append(inst)
    variant_order = {v: n for n, v in enumerate(Variant)}
    out.instances.sort(key=lambda i: (variant_order[i.variant], i.name))
    return out


def default_config_paths(variants: Iterable[Variant], config_set: str) -> list[Path]:
    paths = []
    for v in variants:
        p = configs_dir() / v.value / f"{config_set}.yaml"
        if not p.is_file():
            raise CkgenError(f"no config set {config_set!r} for {v.value} (looked for {p})")
        paths.append(p)
    return paths


def load_configs(
    paths: Iterable[Path],
    variants: Iterable[Variant] | None = None,
    variant_fallback: Variant | None = None,
) -> list[ConfigFile]:
    """Load files; with ``variants`` given, keep only files of those variants. A file that names
    no variant (and is not in configs/<variant>/) takes ``variant_fallback``."""
    cfgs = [load_config(p, variant_fallback) for p in paths]
    if variants is not None:
        want = set(variants)
        cfgs = [c for c in cfgs if c.variant in want]
    return cfgs
