"""The rules of the direct kernel (pipeline/depthwise.hpp, pipeline/direct_mma.hpp,
pipeline/direct_mma_bwd_weight.hpp)."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    DIRECT_GROUP_CHANNELS,
    DIRECT_MAX_PIXELS_PER_THREAD,
    DIRECT_MMA_BWD_FILTER_ROWS,
    DIRECT_MMA_BWD_GROUP_CHANNELS,
    DIRECT_MMA_BWD_MAX_LDS,
    DIRECT_MMA_CHANNEL_STEP,
    DIRECT_MMA_GROUP_CHANNELS,
    DIRECT_MMA_MAX_LDS,
    DIRECT_MMA_WARP_TILE,
    DIRECT_WARP_TILE,
    VECTOR_SIZES,
)
from ckgen.model.vocab import (
    DATATYPE_BYTES,
    Epilogue,
    MathUnit,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
)
from ckgen.space.estimate.direct import (
    direct_mma_bwd_ring,
    direct_mma_group_chunks,
    direct_mma_stage_bytes,
    direct_mma_stages,
    direct_mma_weight_bytes,
)
from ckgen.space.forms import is_direct_mma
from ckgen.space.rules.common import check_lds, check_registers
from ckgen.space.rules.context import RuleContext


def check_direct_fields(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if tuple(i.warp_tile) == DIRECT_MMA_WARP_TILE:
        if a.math_unit_for(i.datatype, DIRECT_MMA_WARP_TILE) is not MathUnit.MMA_SYNC:
            return (
                f"direct warp_tile {list(DIRECT_MMA_WARP_TILE)} is the mma.sync path: not for "
                f"{i.datatype.value} on {a.name} (use [1, 1, 1])"
            )
        if i.variant is not Variant.BACKWARD_WEIGHT and i.tile[2] not in DIRECT_MMA_GROUP_CHANNELS:
            return (
                f"direct warp_tile {list(DIRECT_MMA_WARP_TILE)} serves C = K = "
                f"{DIRECT_MMA_GROUP_CHANNELS} per group in forward / backward_data: tile K must be "
                "one of them"
            )
    elif i.warp_tile != DIRECT_WARP_TILE:
        return (
            f"direct warp_tile must be {list(DIRECT_WARP_TILE)} (FMA) or "
            f"{list(DIRECT_MMA_WARP_TILE)} (mma.sync, C = K = 8 per group)"
        )
    if i.waves[1] != 1 or i.waves[2] != 1:
        return "direct: waves must be [w, 1, 1] (w warps per block, no GEMM wave layout)"
    allowed: tuple[int, ...] = DIRECT_GROUP_CHANNELS
    if is_direct_mma(i):
        allowed = (
            DIRECT_MMA_BWD_GROUP_CHANNELS
            if i.variant is Variant.BACKWARD_WEIGHT
            else DIRECT_MMA_GROUP_CHANNELS
        )
    if i.tile[2] not in allowed:
        return (
            f"direct: tile K is the channels per group (C = K) served, one of {allowed} "
            "(1 = depthwise; 16 and 32 on the matrix path only)"
        )
    if i.scheduler is not Scheduler.INTRAWAVE:
        return "direct: scheduler must be intrawave (no matrix pipeline to interleave)"
    if i.epilogue is not Epilogue.DEFAULT:
        return "direct: epilogue must be default (each thread stores its own vectors)"
    if i.specialization is not Specialization.DEFAULT:
        return "direct: specialization must be default (the kernel takes any filter, stride, pad)"
    if i.groups_to_merge != 1:
        return "direct: groups_to_merge must be 1 (tile N already spans several groups)"
    if i.variant is not Variant.BACKWARD_WEIGHT:
        if i.k_batch != 1:
            return "direct forward / backward_data has no reduction to split: k_batch must be 1"
        if i.stage is not Stage.ONE:
            return "direct forward / backward_data has no split: stage must be one"
    elif i.reduction is not Reduction.SPLITK:
        return "direct backward_weight splits its reduction with k_batch (reduction splitk)"
    return None


def check_direct_layout(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    e = DATATYPE_BYTES[i.datatype]
    v = i.vec_c
    if v not in VECTOR_SIZES or (i.vec_a, i.vec_b) != (v, v):
        return (
            f"direct: vector must be [v, v, v] with v in {VECTOR_SIZES} (one group vector for "
            "every tensor)"
        )
    if v * e > 16:
        return f"vector size {v} x {e} bytes exceeds a 16-byte access"
    threads = i.waves[0] * a.warp_size
    pixels, chans, cg = i.tile
    if is_direct_mma(i):
        return _direct_mma_layout(i, a)
    if v % cg:
        return f"direct: vector {v} does not hold whole groups of {cg} channels (tile K)"
    if chans % v:
        return f"direct: tile N={chans} channels is not a multiple of the vector {v}"
    tg = chans // v
    if threads % tg:
        return f"direct: {threads} threads do not split into rows of {tg} channel vectors"
    rows = threads // tg
    if pixels % rows:
        return (
            f"direct: tile M={pixels} pixels is not a multiple of the {rows} pixel rows of threads"
        )
    if pixels // rows > DIRECT_MAX_PIXELS_PER_THREAD:
        return f"direct: {pixels // rows} pixels per thread > {DIRECT_MAX_PIXELS_PER_THREAD}"
    return None


def _direct_mma_layout(i: KernelInstance, a: ArchSpec) -> str | None:
    # Mirrors DirectMmaTraits' (forward / backward_data: warps over m16 pixel tiles x group sets)
    # and DirectMmaBwdTraits' static_asserts.
    pixels, chans, _ = i.tile
    if i.vec_c != 8:
        return "direct matrix path: vector must be [8, 8, 8] (16-byte group chunks)"
    if chans % DIRECT_MMA_CHANNEL_STEP:
        return (
            f"direct matrix path: tile N={chans} is not a multiple of "
            f"{DIRECT_MMA_CHANNEL_STEP} "
            "channels"
        )
    w, tiles, chunks = i.waves[0], pixels // 16, chans // 8
    if i.variant is Variant.BACKWARD_WEIGHT:
        if pixels % 16 or chunks % w:
            return (
                f"direct matrix path: tile M={pixels} must be a multiple of 16 and the {w} warps "
                f"must split the {chunks} channel chunks of tile N evenly"
            )
        if (w * a.warp_size) % chans:  # copies: threads / chunks a multiple of 8 (one swizzle each)
            return (
                f"direct matrix path: {w * a.warp_size} threads must be a multiple of tile "
                f"N={chans} "
                "(each thread copies every 8th-aligned column of one channel chunk)"
            )
    elif pixels % 16 or (tiles % w and w % tiles) or (w > tiles and chunks % (w // tiles)):
        return (
            f"direct matrix path: {w} warps must divide the {pixels} / 16 pixel tiles of tile M "
            f"or be a multiple of them that splits the {chunks} groups evenly"
        )
    elif (chunks // max(1, w // tiles)) % direct_mma_group_chunks(i):
        return (
            f"direct matrix path: a warp's {chunks // max(1, w // tiles)} channel chunks must be "
            f"whole groups of {i.tile[2]} channels"
        )
    if i.variant is Variant.BACKWARD_WEIGHT:
        if direct_mma_bwd_ring(i)[1] < 2 * DIRECT_MMA_BWD_FILTER_ROWS:
            return (
                f"direct matrix path: two gradient buffers and {2 * DIRECT_MMA_BWD_FILTER_ROWS} "
                "source "
                f"rows of {direct_mma_stage_bytes(i)} bytes do not fit {DIRECT_MMA_BWD_MAX_LDS} "
                "bytes "
                "of dynamic shared memory"
            )
    elif direct_mma_stages(i) < 2:
        return (
            f"direct matrix path: two stages of {direct_mma_stage_bytes(i)} bytes and "
            f"{direct_mma_weight_bytes(i)} bytes of weights do not fit {DIRECT_MMA_MAX_LDS} bytes "
            "of static shared memory"
        )
    return None


def check_direct_resources(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    # lds_bytes and register_estimate take the direct formulas for direct instances.
    return check_lds(i, a, ctx) or check_registers(i, a, ctx)
