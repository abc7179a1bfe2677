"""Sizing of the direct kernel (pipeline/depthwise.hpp, pipeline/direct_mma.hpp,
pipeline/direct_mma_bwd_weight.hpp): its
thread layout, the matrix path's staged rows, ring and accumulators, and its shared memory."""

from __future__ import annotations

from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    DIRECT_COMBINE_FLOATS,
    DIRECT_COMBINE_PAD,
    DIRECT_FILTER_ROW_PAD,
    DIRECT_MMA_BWD_FILTER_ROWS,
    DIRECT_MMA_BWD_MAX_LDS,
    DIRECT_MMA_BWD_MAX_STAGES,
    DIRECT_MMA_BWD_TAP_TILES,
    DIRECT_MMA_COLUMN_PAD,
    DIRECT_MMA_COLUMN_SLACK,
    DIRECT_MMA_MAX_LDS,
    DIRECT_MMA_MAX_STAGES,
    DIRECT_MMA_MAX_TAPS,
    DIRECT_MMA_NARROW_COLUMN_SLACK,
    DIRECT_REGISTER_TAPS,
)
from ckgen.model.vocab import DATATYPE_BYTES, Variant
from ckgen.space.forms import is_direct_mma


def direct_layout(i: KernelInstance, warp_size: int) -> tuple[int, int, int]:
    """(threads across groups, threads across pixels, pixels per thread) of a direct instance;
    mirrors DepthwiseTraits (templates/include/ckgen/depthwise.hpp)."""
    threads = i.waves[0] * i.waves[1] * i.waves[2] * warp_size
    tg = max(1, i.tile[1] // max(1, i.vec_c))
    rows = max(1, threads // tg)
    return tg, rows, max(1, i.tile[0] // rows)


def direct_mma_cols(pixels: int) -> int:
    """Staged source columns per filter row of a matrix-path block of `pixels` pixels (every
    variant; direct_mma_cols in schedule/direct_plan.hpp): + DIRECT_MMA_COLUMN_SLACK, 16-pixel
    blocks + DIRECT_MMA_NARROW_COLUMN_SLACK."""
    return pixels + (DIRECT_MMA_NARROW_COLUMN_SLACK if pixels <= 16 else DIRECT_MMA_COLUMN_SLACK)


def direct_mma_group_chunks(i: KernelInstance) -> int:
    """The 8-channel chunks of one group of a matrix-path instance (tile K / 8, at least 1): the
    weight planes of forward / backward_data, the B partners of backward_weight's A chunk."""
    return max(1, i.tile[2] // 8)


def direct_mma_stage_bytes(i: KernelInstance) -> int:
    """One staged source row of the matrix path: direct_mma_cols(tile M) columns of tile N
    channels and DIRECT_MMA_COLUMN_PAD bytes (DirectMmaTraits::kRowBytes); backward_weight
    unpadded (DirectMmaBwdTraits::kRowBytes)."""
    cols = direct_mma_cols(i.tile[0])
    if i.variant is Variant.BACKWARD_WEIGHT:
        return cols * i.tile[1] * DATATYPE_BYTES[i.datatype]
    return cols * (i.tile[1] * DATATYPE_BYTES[i.datatype] + DIRECT_MMA_COLUMN_PAD)


def direct_mma_bwd_ring(i: KernelInstance) -> tuple[int, int]:
    """backward_weight's (gradient buffers, ring rows) (DirectMmaBwdTraits::kStages / kRing,
    direct_bwd_stages): the most buffers S <= DIRECT_MMA_BWD_MAX_STAGES whose ring of source
    rows, in what DIRECT_MMA_BWD_MAX_LDS leaves, holds S + 2 * rows - 2 rows."""
    row = direct_mma_stage_bytes(i)
    pixels = i.tile[0] * i.tile[1] * DATATYPE_BYTES[i.datatype]

    def ring(s: int) -> int:
        return (DIRECT_MMA_BWD_MAX_LDS - s * pixels) // row

    s = DIRECT_MMA_BWD_MAX_STAGES
    while s > 2 and ring(s) < s + 2 * DIRECT_MMA_BWD_FILTER_ROWS - 2:
        s -= 1
    return s, ring(s)


def direct_mma_weight_bytes(i: KernelInstance) -> int:
    """The matrix path's staged weights: every tap's tile N x tile K (direct_mma_ring's
    weight_bytes); backward_weight stages none."""
    if i.variant is Variant.BACKWARD_WEIGHT:
        return 0
    return DIRECT_MMA_MAX_TAPS * i.tile[1] * i.tile[2] * DATATYPE_BYTES[i.datatype]


def direct_mma_stages(i: KernelInstance) -> int:
    """As many staged filter rows as the static shared memory holds beside the weights, at most
    DIRECT_MMA_MAX_STAGES (DirectMmaTraits::kStages)."""
    room = DIRECT_MMA_MAX_LDS - direct_mma_weight_bytes(i)
    return min(DIRECT_MMA_MAX_STAGES, max(0, room) // direct_mma_stage_bytes(i))


def direct_mma_accumulators(i: KernelInstance) -> int:
    """fp32 accumulators per lane of a matrix-path instance: forward / backward_data its m16
    pixel tiles x group chunks (DirectMmaTraits MT x GW x 4), backward_weight its channel chunks x
    their group's chunks (Cg / 8, at least 1) x DIRECT_MMA_BWD_TAP_TILES x 4
    (DirectMmaBwdTraits::kAcc)."""
    w, chunks = max(1, i.waves[0]), i.tile[1] // 8
    if i.variant is Variant.BACKWARD_WEIGHT:  # x the chunks of a group each chunk pairs with
        return max(1, chunks // w) * direct_mma_group_chunks(i) * DIRECT_MMA_BWD_TAP_TILES * 4
    tiles = max(1, i.tile[0] // 16)
    wm = min(w, tiles)
    return (tiles // wm) * (chunks // max(1, w // wm)) * 4


def direct_lds_bytes(i: KernelInstance, warp_size: int) -> int:
    """The matrix path: its staged filter rows and weights (DirectMmaTraits::kSmemBytes).
    FMA: forward / backward_data with Cg > 1 hold the block's 3x3 filter as fp32 (taps x Cg rows
    of Ct + 4), depthwise forward / backward_data use no shared memory; backward_weight sums its
    threads' fp32 partials through [pixel row][entry][Ct + pad] floats, as many of the entries a
    thread holds per channel (the 3x3 depthwise kernel: 9 taps, the larger of its two kernels;
    groups of Cg > 1: one tap at a time, Cg) as fit DIRECT_COMBINE_FLOATS, at least one."""
    if (
        is_direct_mma(i) and i.variant is Variant.BACKWARD_WEIGHT
    ):  # ring, gradient buffers, their units
        stages, ring = direct_mma_bwd_ring(i)
        return (
            ring * direct_mma_stage_bytes(i)
            + stages * i.tile[0] * i.tile[1] * DATATYPE_BYTES[i.datatype]
            + -(-4 * stages // 128) * 128
        )  # ptxas -v: the ints take 128 bytes (dynamic part aligned)
    if is_direct_mma(i):
        return direct_mma_stages(i) * direct_mma_stage_bytes(i) + direct_mma_weight_bytes(i)
    if i.variant is not Variant.BACKWARD_WEIGHT:
        cg = i.tile[2]
        return DIRECT_REGISTER_TAPS * cg * (i.tile[1] + DIRECT_FILTER_ROW_PAD) * 4 if cg > 1 else 0
    _, rows, _ = direct_layout(i, warp_size)
    ld = i.tile[1] + DIRECT_COMBINE_PAD
    entries = DIRECT_REGISTER_TAPS if i.tile[2] == 1 else i.tile[2]
    return rows * max(1, min(DIRECT_COMBINE_FLOATS // (rows * ld), entries)) * ld * 4
