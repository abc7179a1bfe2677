"""Deterministic instance names that encode every non-default parameter and parse back.

    grouped_conv_<variant>_<dtype>_<ndim>d_t<M>x<N>x<K>_w<M>x<N>x<K>_wt<M>x<N>x<K>_<pipeline>
        [_inter][_lm<load>x<math>][_swapab][_cshuffle]_v<a>x<b>x<c>[_<specialization>][_gm<n>]
        [_kb<n>][_sklin|_sktree][_persist][_2st][_bias|_ss|_bgrad][_<activation>][_res][_stats]
        [_o<dtype>]

The last tokens name a fused epilogue (forward): the channel operation (bias, scale_shift), the
activation (relu, relu6, lrelu, silu, gelutanh), the residual add, the output's per-channel
statistics (stats) and the output's datatype when it is not the inputs' (ofp32); or a backward
fusion:
bias_grad (bgrad) and a gradient mask (drelu, drelu6, dlrelu). An unfused instance has none of
them.

The pipeline token is the short name of a single-stage pipeline (``basic``, ``direct``) or the
pipeline's short name followed by its stage count (``ms3``, ``wavelet2``). Names use only
[a-z0-9_], so they are safe as C++ identifiers and
file names, and they work as glob filters (``grouped_conv_bwd_data_fp16_*wavelet*``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from ckgen.model.instance import KernelInstance, default_k_batch
from ckgen.model.vocab import (
    CONVERT_SHORT,
    RESIDUAL_SHORT,
    SINGLE_STAGE_PIPELINES,
    STATS_SHORT,
    Activation,
    ChannelOp,
    DataType,
    Epilogue,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
    by_short,
)

PREFIX = "grouped_conv_"
NAME_RE = re.compile(r"^[a-z0-9_]+$")


def _t(v: tuple[int, ...]) -> str:
    return "x".join(str(x) for x in v)


def instance_name(i: KernelInstance) -> str:
    parts = [
        PREFIX + i.variant.short,
        i.datatype.short,
        f"{i.ndim}d",
        "t" + _t(i.tile),
        "w" + _t(i.waves),
        "wt" + _t(i.warp_tile),
        i.pipeline.short
        if i.pipeline in SINGLE_STAGE_PIPELINES
        else f"{i.pipeline.short}{i.stages}",
    ]
    if i.scheduler is not Scheduler.INTRAWAVE:
        parts.append(i.scheduler.short)
    if i.pipeline in (Pipeline.WAVELET, Pipeline.WAVELET_TMA):
        parts.append(f"lm{i.load_waves}x{i.math_waves}")
    if i.swap_ab:
        parts.append("swapab")
    if i.epilogue is not Epilogue.DEFAULT:
        parts.append(i.epilogue.short)
    parts.append(f"v{i.vec_a}x{i.vec_b}x{i.vec_c}")
    if i.specialization is not Specialization.DEFAULT:
        parts.append(i.specialization.short)
    if i.groups_to_merge != 1:
        parts.append(f"gm{i.groups_to_merge}")
    if i.k_batch != default_k_batch(i.variant):
        parts.append(f"kb{i.k_batch}")
    if i.reduction is not Reduction.SPLITK:
        parts.append(i.reduction.short)
    if i.persistent:
        parts.append("persist")
    if i.stage is not Stage.ONE:
        parts.append(i.stage.short)
    if i.channel_op is not ChannelOp.NONE:
        parts.append(i.channel_op.short)
    if i.activation is not Activation.NONE:
        parts.append(i.activation.short)
    if i.residual:
        parts.append(RESIDUAL_SHORT)
    if i.stats:
        parts.append(STATS_SHORT)
    if i.out_datatype is not None:
        parts.append(CONVERT_SHORT + i.out_datatype.short)
    return "_".join(parts)


_TRIPLE = r"(\d+)x(\d+)x(\d+)"
_PIPE_RE = re.compile(r"^(basic|[a-z]+?)(\d*)$")


def parse_instance_name(name: str) -> KernelInstance:
    """The instance a name describes; ValueError when it is not a valid name."""
    if not name.startswith(PREFIX):
        raise ValueError(f"{name!r} does not start with {PREFIX!r}")
    rest = name[len(PREFIX) :]
    variant = None
    for v in sorted(Variant, key=lambda v: -len(v.short)):
        if rest.startswith(v.short + "_"):
            variant, rest = v, rest[len(v.short) + 1 :]
            break
    if variant is None:
        raise ValueError(f"{name!r}: unknown variant")
    toks = rest.split("_")

    def take(pattern: str) -> re.Match[str] | None:
        if toks and (m := re.fullmatch(pattern, toks[0])):
            toks.pop(0)
            return m
        return None

    def need(pattern: str, what: str) -> re.Match[str]:
        m = take(pattern)
        if m is None:
            raise ValueError(f"{name!r}: expected {what} at {'_'.join(toks)!r}")
        return m

    dtype = by_short(DataType, need("[a-z0-9]+", "datatype").group(0))
    ndim = int(need(r"([123])d", "ndim").group(1))
    tri = lambda m: (int(m.group(1)), int(m.group(2)), int(m.group(3)))  # noqa: E731
    tile = tri(need("t" + _TRIPLE, "tile"))
    waves = tri(need("w" + _TRIPLE, "waves"))
    warp_tile = tri(need("wt" + _TRIPLE, "warp tile"))
    ptok = need(r"[a-z]+\d*", "pipeline").group(0)
    single = {p.short: p for p in SINGLE_STAGE_PIPELINES}
    if ptok in single:
        pipeline, stages = single[ptok], 1
    else:
        m = re.fullmatch(r"([a-z]+)(\d+)", ptok)
        if not m:
            raise ValueError(f"{name!r}: bad pipeline token {ptok!r}")
        pipeline, stages = by_short(Pipeline, m.group(1)), int(m.group(2))
    kw: dict[str, object] = {}
    if take(Scheduler.INTERWAVE.short):
        kw["scheduler"] = Scheduler.INTERWAVE
    if m := take(r"lm(\d+)x(\d+)"):
        kw["load_waves"], kw["math_waves"] = int(m.group(1)), int(m.group(2))
    if take("swapab"):
        kw["swap_ab"] = True
    if take(Epilogue.CSHUFFLE.short):
        kw["epilogue"] = Epilogue.CSHUFFLE
    vm = need("v" + _TRIPLE, "vector sizes")
    kw["vec_a"], kw["vec_b"], kw["vec_c"] = tri(vm)
    for s in Specialization:
        if s is not Specialization.DEFAULT and take(s.short):
            kw["specialization"] = s
            break
    if m := take(r"gm(\d+)"):
        kw["groups_to_merge"] = int(m.group(1))
    kw["k_batch"] = int(m.group(1)) if (m := take(r"kb(\d+)")) else default_k_batch(variant)
    for r in Reduction:
        if r is not Reduction.SPLITK and take(r.short):
            kw["reduction"] = r
            break
    if take("persist"):
        kw["persistent"] = True
    if take(Stage.TWO.short):
        kw["stage"] = Stage.TWO
    for cls, key in ((ChannelOp, "channel_op"), (Activation, "activation")):
        for w in cls:
            if w.value != "none" and take(w.short):
                kw[key] = w
                break
    if take(RESIDUAL_SHORT):
        kw["residual"] = True
    if take(STATS_SHORT):
        kw["stats"] = True
    if m := take(CONVERT_SHORT + "(" + "|".join(d.short for d in DataType) + ")"):
        kw["out_datatype"] = by_short(DataType, m.group(1))
    if toks:
        raise ValueError(f"{name!r}: unexpected {'_'.join(toks)!r}")
    inst = KernelInstance(
        variant=variant,
        datatype=dtype,
        ndim=ndim,
        tile=tile,
        waves=waves,
        warp_tile=warp_tile,
        pipeline=pipeline,
        stages=stages,
        **kw,  # type: ignore[arg-type]
    )
    if instance_name(inst) != name:
        raise ValueError(f"{name!r} is not in canonical form ({instance_name(inst)!r})")
    return inst


def match_any(name: str, globs: Iterable[str]) -> bool:
    """True when ``name`` matches one of the shell globs (an empty list matches everything)."""
    globs = list(globs)
    return not globs or any(fnmatch.fnmatchcase(name, g) for g in globs)
