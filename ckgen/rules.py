"""The validity rules: one table, arch-aware, each rule returning the reason it rejects.

Every candidate from the expansion is checked against RULES in order; the first rule that
returns a reason rejects it, and the reason is kept (``list-instances --show-rejected``).
Nothing else in ckgen decides whether an instance is valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .arch import ArchSpec
from .instance import KernelInstance
from .vocab import (
    DATATYPE_BYTES,
    SINGLE_STAGE_PIPELINES,
    Epilogue,
    MathUnit,
    Pipeline,
    Platform,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
)

# What the C++ template library (templates/include/ckgen) implements today. A configuration
# outside this set is valid for the hardware but has no code yet; it is rejected with that reason
# rather than generated into something that does not compile.
IMPLEMENTED = {
    "pipeline": {Pipeline.BASIC, Pipeline.MULTISTAGE, Pipeline.WAVELET, Pipeline.WAVELET_TMA},
    "epilogue": {Epilogue.DEFAULT, Epilogue.CSHUFFLE},
    "reduction": {Reduction.SPLITK, Reduction.STREAMK_LINEAR, Reduction.STREAMK_TREE},
    "math_unit": {MathUnit.MMA_SYNC, MathUnit.WGMMA, MathUnit.FMA, MathUnit.MFMA, MathUnit.WMMA},
    "scheduler": {Scheduler.INTRAWAVE},
    "groups_to_merge": {1, 2, 4, 8, 16, 32},
    "wave_k": {1},
}

VECTOR_SIZES = (1, 2, 4, 8)
MAX_STAGES = 8
MAX_K_BATCH = 64
GROUPS_TO_MERGE = (1, 2, 4, 8, 16, 32)
WAVELET_RATIOS = ((4, 4), (4, 2), (2, 2), (2, 1), (1, 1))
# The warp-specialized pipelines (load waves + math waves).
WAVELET_PIPELINES = (Pipeline.WAVELET, Pipeline.WAVELET_TMA)
# wavelet_tma (templates/include/ckgen/pipeline_tma.hpp, TmaTraits): one load warp, one or
# two wgmma math warpgroups of one to three m64 slices each, one 128-byte swizzle row per tile
# row (tile K x element bytes), an im2col box of at most 256 pixels, 1024 bytes of alignment
# slack in shared memory.
TMA_LOAD_WAVES = 1
TMA_MATH_WAVES = (4, 8)
# Ping-pong: waves (4, 1, 1) with twice the math waves: two warpgroups take turns on the
# block's units, each with the whole tile (TmaTraits::kPingPong).
TMA_PINGPONG_WAVES = (4, 1, 1)
TMA_TILE_N = (64, 128, 192, 256)
# swap_ab's pixels per warpgroup (the instruction's N) and the plain wavelet pipeline's wgmma N
# (mma_wgmma.hpp WarpWgmma): the widths those paths implement; 192 is the copy engine's alone.
TMA_SWAP_PIXELS = (64, 128, 256)
WGMMA_PLAIN_N = (64, 128, 256)
TMA_ROW_BYTES = 128
TMA_MAX_TILE_M = 256
TMA_SLICES_M = (1, 2, 3)  # m64 slices per math warpgroup
TMA_SMEM_SLACK = 1024
TMA_SWAP_TILE_N = 64  # swap_ab: the output channels of a tile fill one wgmma M
TMA_PATCH_BUFFERS = 2  # stride1: staged input patches (double-buffered across channel chunks)
# Specialization window (templates/include/ckgen/pipeline_tma_window.hpp): a tile is Tile M / 8
# output rows x 8 columns (the instruction's N, which mma_wgmma.hpp implements for these widths),
# 64-channel groups, two math warpgroups taking turns on windows, 2 or 4 patch buffers (stages);
# shared memory as detail::tma_window_smem_bytes lays it out for a 3x3 filter (the kernel refuses
# larger filters that do not fit the device). backward_weight (pipeline_tma_window_weight.hpp):
# the same windows as the reduction, three math warpgroups (one a filter row of a 3x3 filter, its
# three taps x 64 channels on the instruction's N), 2 to 4 stages of the window's dy and patch.
TMA_WINDOW_PIXELS = (64, 128, 160, 192, 256)
TMA_WINDOW_COLUMNS = 8
TMA_WINDOW_STAGES = (2, 4)  # even: each patch buffer has one reader warpgroup (TmaWindowTraits)
TMA_WINDOW_CHANNELS = 64
TMA_WINDOW_WEIGHT_STAGES = (2, 3, 4)  # every warpgroup reads every stage (TmaWindowWeightTraits)
TMA_WINDOW_WEIGHT_WAVES = (12, 1, 1)  # one warpgroup a filter row
TMA_WINDOW_WEIGHT_TAPS = 3  # a filter row's taps: the warp tile's N = 3 x 64
# the partial filter a block leaves for its cluster: 64 rows of 9 x 64 fp32 sums, 8 floats of
# padding a row (detail::kTmaWindowPartBytes)
TMA_WINDOW_WEIGHT_PART_BYTES = 64 * (9 * 64 + 8) * 4
# cshuffle epilogue: a slab of 16 rows x 40 elements per math warp.
TMA_SLAB_ELEMS_PER_WARP = 16 * 40
# Shared-memory rows are padded by 16 bytes against bank conflicts.
LDS_ROW_PAD_BYTES = 16
# Register estimate constants, calibrated against the compilers' reports (nvcc -Xptxas -v for
# sm_90a, clang-19 code-object metadata for gfx942 / gfx1100 / gfx1201; bench/NOTES.md,
# "Register estimate calibration"):
#   REGISTER_OVERHEAD   indices, pointers, loop state and epilogue temporaries per thread
#   LOAD_ADDRESS_REGS   what each in-flight global load of the staging keeps besides its data
#                       (64-bit address, valid flag): vector width 1 means many loads
#   REGISTER_OVERHEAD_BY_FAMILY  RDNA (wave32 WMMA) needs more: 40 puts the estimate's limit
#                       on the measured spill boundary (every RDNA4 spill and 78 of 90 RDNA3
#                       spills rejected, no non-spilling instance rejected)
REGISTER_OVERHEAD = 30
LOAD_ADDRESS_REGS = 4
REGISTER_OVERHEAD_BY_FAMILY = {"rdna3": 40, "rdna4": 40}

Check = Callable[[KernelInstance, ArchSpec], "str | None"]

# Which instances a rule judges: implicit-GEMM pipelines, the direct pipeline, or both.
GEMM, DIRECT, ALL = "gemm", "direct", "all"

# The direct kernel, templates/include/ckgen/depthwise.hpp: depthwise problems (C = K = 1 per
# group) and small groups (C = K = Cg per group). Its fields:
#   tile [P, Ct, Cg]  a block covers Ct channels (Ct / Cg groups) and P pixels (forward: output
#                     pixels, backward_data: input pixels, backward_weight: pixels per reduction
#                     step); Cg: the channels per group the instance serves (1 = depthwise)
#   waves [w, 1, 1]   w warps per block; Ct / vector threads across the channels, the rest across
#                     pixels, each thread P / (threads / (Ct / vector)) pixels
#   vector [v, v, v]  v consecutive channels (whole groups) per thread, one access of v elements
#                     per tensor
#   warp_tile         [1, 1, 1]: plain fp32 FMA; [16, 8, 16]: the matrix path (mma.sync targets,
#                     fp16 / bf16; vector 8, tile N a multiple of 64 channels, tile M the pixels
#                     of one row segment, a multiple of 16). forward / backward_data
#                     (direct_mma.hpp): C = K = 8 per group (tile K 8); w warps divide its m16
#                     tiles or are a multiple of them that splits the groups; per filter row M + 16
#                     staged source columns, 2-3 such stages plus 9 taps of weights within 48 KB.
#                     backward_weight (direct_mma_bwd_weight.hpp): tile K 1, 2, 4 or 8; w warps
#                     split the tile N / 8 channel chunks; a ring of source rows (M + 16 columns, 16-pixel M + 24)
#                     beside 2-8 buffers of M gradient pixels within 112 KB (dynamic), at least
#                     6 rows
# Everything else takes its default (no LDS pipeline, no merged groups, no epilogue choice, no
# specialization); backward_weight splits its reduction over N*Do*Ho*Wo with k_batch (0 = per
# problem) and stage one (fp32 atomics) or two (per-split partials + reduce).
DIRECT_WARP_TILE = (1, 1, 1)
DIRECT_MMA_WARP_TILE = (16, 8, 16)
DIRECT_MMA_GROUP_CHANNELS = 8  # kDirectMmaGroupChannels
DIRECT_MMA_CHANNEL_STEP = 64  # tile N: runs of 8 group chunks (the shared-memory swizzle)
DIRECT_MMA_MAX_LDS = 48 * 1024  # static shared memory (kDirectMmaMaxSmem)
DIRECT_MMA_MAX_STAGES = 4  # staged source rows (kDirectMmaMaxStages)
DIRECT_MMA_MAX_TAPS = 9  # taps whose weights are staged at once (kDirectMmaMaxTaps)
DIRECT_MMA_COLUMN_SLACK = 16  # staged columns per filter row beyond tile M (kDirectMmaColumnSlack)
DIRECT_MMA_COLUMN_PAD = 16  # forward / backward_data: bytes after a staged column (kDirectMmaColumnPad)
DIRECT_MMA_BWD_FILTER_ROWS = 3  # backward_weight: filter rows staged per unit (kDirectMmaBwdFilterRows)
DIRECT_MMA_BWD_MAX_STAGES = 8  # backward_weight: gradient buffers (kDirectMmaBwdMaxStages)
DIRECT_MMA_BWD_MAX_LDS = 112 * 1024  # backward_weight: dynamic shared memory (kDirectMmaBwdMaxSmem)
# backward_weight: staged columns beyond tile M (direct_bwd_cols): 24 for 16-pixel units, else 16
DIRECT_MMA_BWD_COLUMN_SLACK = {16: 24}
DIRECT_MMA_BWD_TAP_TILES = (DIRECT_MMA_MAX_TAPS + 1) // 2  # m16 tiles of two taps (kTapTiles)
DIRECT_MAX_PIXELS_PER_THREAD = 8
# backward_weight depthwise: the Linear 1x3x3 path (all nine taps' loads hoisted) serves up to
# this many pixels per thread; beyond, 3x3 problems take the window path (per filter row the
# (pp - 1) * stride + 3 columns, W stride 1 / 2) or the one-tap path (kDirectBwdLinearMaxPixels,
# direct_plan.hpp)
DIRECT_BWD_LINEAR_MAX_PIXELS = 2
DIRECT_BWD_WINDOW_MAX_STRIDE = 2
# The filter taps the direct kernel holds in registers (a compile-time 3x3 path; other filters
# take the generic path that reads the taps' weights per pixel step).
DIRECT_REGISTER_TAPS = 9
# The channels per group (C = K) a direct instance may serve: tile K. 1 = depthwise, 2 / 4 / 8 =
# small groups (backward_weight: one tap at a time, Cg x vector accumulators).
DIRECT_GROUP_CHANNELS = (1, 2, 4, 8)
# Floats of padding per row of the small-group filter in shared memory (depthwise.hpp kRow).
DIRECT_FILTER_ROW_PAD = 4
# backward_weight's block sums through shared memory (depthwise.hpp kDirectCombineFloats /
# kDirectCombinePad): at most this many floats, each (pixel row, entry) row of channels padded.
DIRECT_COMBINE_FLOATS = 5120
DIRECT_COMBINE_PAD = 4


@dataclass(frozen=True)
class Rule:
    id: str
    doc: str
    check: Check
    applies: str = ALL  # GEMM, DIRECT or ALL


def math_unit(i: KernelInstance, a: ArchSpec) -> MathUnit:
    """The math unit an instance runs on: the direct pipeline uses plain FMA, or mma.sync on
    its matrix path."""
    if i.pipeline is Pipeline.DIRECT:
        return MathUnit.MMA_SYNC if is_direct_mma(i) else MathUnit.FMA
    return a.math_unit_for(i.datatype, i.warp_tile)


def lds_bytes(i: KernelInstance, a: ArchSpec | None = None) -> int:
    """Shared memory of the main loop or of the cshuffle epilogue's C tile, whichever is larger
    (they reuse the same buffer). Mirrors ConfigTraits::kSmemBytes (templates/include/ckgen/
    config.hpp): per stage one A and one B tile stored along their contiguous global dimension
    (A is K-major except in backward_weight, B only in forward), each row padded by 16 bytes or
    one vector, whichever is larger. wgmma instances (arch given) store unpadded core-matrix
    tiles; wavelet adds two 8-byte mbarriers per stage."""
    if i.pipeline is Pipeline.DIRECT:
        return direct_lds_bytes(i, a.warp_size if a is not None else 64)
    e = DATATYPE_BYTES[i.datatype]
    tm, tn, tk = i.tile
    pad_a = max(LDS_ROW_PAD_BYTES // e, i.vec_a)
    pad_b = max(LDS_ROW_PAD_BYTES // e, i.vec_b)
    if is_window(i):
        return window_lds_bytes(i)
    if i.pipeline is Pipeline.WAVELET_TMA:
        slabs = i.math_waves * TMA_SLAB_ELEMS_PER_WARP * e if i.epilogue is Epilogue.CSHUFFLE else 0
        if is_patch(i):
            # B ring + two staged input patches of at least tile M pixels each (the patch grows
            # with the problem's row width; the kernel refuses problems whose patch does not fit)
            return ((i.stages * tn + TMA_PATCH_BUFFERS * tm) * TMA_ROW_BYTES + 16 * (i.stages + TMA_PATCH_BUFFERS)
                    + slabs + TMA_SMEM_SLACK)
        return i.stages * (tm + tn) * TMA_ROW_BYTES + 16 * i.stages + slabs + TMA_SMEM_SLACK
    if a is not None and a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA:
        pad_a = pad_b = 0
    a_k_major = i.variant is not Variant.BACKWARD_WEIGHT
    b_k_major = i.variant is Variant.FORWARD
    a = tm * (tk + pad_a) if a_k_major else tk * (tm + pad_a)
    b = tn * (tk + pad_b) if b_k_major else tk * (tn + pad_b)
    main = max(1, i.stages) * (a + b) * e
    cshuffle = tm * (tn * 4 + LDS_ROW_PAD_BYTES) if i.epilogue is Epilogue.CSHUFFLE else 0
    barriers = 16 * i.stages if i.pipeline is Pipeline.WAVELET else 0
    return max(main, cshuffle) + barriers


def register_estimate(i: KernelInstance, a: ArchSpec) -> int:
    """32-bit registers per math thread: fp32 accumulators, the matrix operands of one k step,
    the global staging of one stage of A and B (data plus LOAD_ADDRESS_REGS per load, so small
    vectors cost more), and a fixed overhead per target family."""
    if i.pipeline is Pipeline.DIRECT:
        return direct_register_estimate(i, a)
    tm, tn, tk = i.tile
    wm, wn, wk = i.waves
    e = DATATYPE_BYTES[i.datatype]
    threads = wm * wn * wk * a.warp_size
    acc = tm * tn // threads
    frag = ((tm // wm) * i.warp_tile[2] + (tn // wn) * i.warp_tile[2]) * e // 4 // a.warp_size
    if a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA:
        frag = 0  # operands straight from shared memory (descriptors)
    staging = 0
    if i.pipeline not in WAVELET_PIPELINES:
        for mn, vec in ((tm, i.vec_a), (tn, i.vec_b)):
            loads = -(-mn * tk // (vec * threads))
            staging += loads * (-(-vec * e // 4) + LOAD_ADDRESS_REGS)
    return acc + frag + staging + REGISTER_OVERHEAD_BY_FAMILY.get(a.family, REGISTER_OVERHEAD)


def direct_layout(i: KernelInstance, warp_size: int) -> tuple[int, int, int]:
    """(threads across groups, threads across pixels, pixels per thread) of a direct instance;
    mirrors DepthwiseTraits (templates/include/ckgen/depthwise.hpp)."""
    threads = i.waves[0] * i.waves[1] * i.waves[2] * warp_size
    tg = max(1, i.tile[1] // max(1, i.vec_c))
    rows = max(1, threads // tg)
    return tg, rows, max(1, i.tile[0] // rows)


def is_direct_mma(i: KernelInstance) -> bool:
    """A direct instance on the matrix path (direct_mma.hpp)."""
    return i.pipeline is Pipeline.DIRECT and tuple(i.warp_tile) == DIRECT_MMA_WARP_TILE


def direct_mma_stage_bytes(i: KernelInstance) -> int:
    """One staged source row of the matrix path: tile M + DIRECT_MMA_COLUMN_SLACK columns of tile N
    channels and DIRECT_MMA_COLUMN_PAD bytes (DirectMmaTraits::kRowBytes); backward_weight tile M +
    DIRECT_MMA_BWD_COLUMN_SLACK columns, unpadded (DirectMmaBwdTraits::kRowBytes)."""
    if i.variant is Variant.BACKWARD_WEIGHT:
        slack = DIRECT_MMA_BWD_COLUMN_SLACK.get(i.tile[0], DIRECT_MMA_COLUMN_SLACK)
        return (i.tile[0] + slack) * i.tile[1] * DATATYPE_BYTES[i.datatype]
    return (i.tile[0] + DIRECT_MMA_COLUMN_SLACK) * (i.tile[1] * DATATYPE_BYTES[i.datatype] + DIRECT_MMA_COLUMN_PAD)


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
    """The matrix path's staged weights: every tap's tile N x 8 (DirectMmaTraits::kWeightBytes);
    backward_weight stages none."""
    if i.variant is Variant.BACKWARD_WEIGHT:
        return 0
    return DIRECT_MMA_MAX_TAPS * i.tile[1] * 8 * DATATYPE_BYTES[i.datatype]


def direct_mma_stages(i: KernelInstance) -> int:
    """As many staged filter rows as the static shared memory holds beside the weights, at most
    DIRECT_MMA_MAX_STAGES (DirectMmaTraits::kStages)."""
    room = DIRECT_MMA_MAX_LDS - direct_mma_weight_bytes(i)
    return min(DIRECT_MMA_MAX_STAGES, max(0, room) // direct_mma_stage_bytes(i))


def direct_mma_accumulators(i: KernelInstance) -> int:
    """fp32 accumulators per lane of a matrix-path instance: forward / backward_data its m16
    pixel tiles x group chunks (DirectMmaTraits MT x GW x 4), backward_weight its channel chunks x
    DIRECT_MMA_BWD_TAP_TILES x 4 (DirectMmaBwdTraits::kAcc)."""
    w, chunks = max(1, i.waves[0]), i.tile[1] // 8
    if i.variant is Variant.BACKWARD_WEIGHT:
        return max(1, chunks // w) * DIRECT_MMA_BWD_TAP_TILES * 4
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
    if is_direct_mma(i) and i.variant is Variant.BACKWARD_WEIGHT:  # ring, gradient buffers, their units
        stages, ring = direct_mma_bwd_ring(i)
        return (ring * direct_mma_stage_bytes(i) + stages * i.tile[0] * i.tile[1] * DATATYPE_BYTES[i.datatype]
                + -(-4 * stages // 128) * 128)  # ptxas -v: the ints take 128 bytes (dynamic part aligned)
    if is_direct_mma(i):
        return direct_mma_stages(i) * direct_mma_stage_bytes(i) + direct_mma_weight_bytes(i)
    if i.variant is not Variant.BACKWARD_WEIGHT:
        cg = i.tile[2]
        return DIRECT_REGISTER_TAPS * cg * (i.tile[1] + DIRECT_FILTER_ROW_PAD) * 4 if cg > 1 else 0
    _, rows, _ = direct_layout(i, warp_size)
    ld = i.tile[1] + DIRECT_COMBINE_PAD
    entries = DIRECT_REGISTER_TAPS if i.tile[2] == 1 else i.tile[2]
    return rows * max(1, min(DIRECT_COMBINE_FLOATS // (rows * ld), entries)) * ld * 4


def direct_register_estimate(i: KernelInstance, a: ArchSpec) -> int:
    """32-bit registers per thread of a direct instance: fp32 accumulators (forward /
    backward_data: pixels x vector; backward_weight: taps x vector), the register-held filter
    (forward / backward_data: taps x vector fp32), loaded vectors in flight (forward /
    backward_data: one per pixel; backward_weight: the pixels' dy in fp32 and all their taps'
    inputs, which ptxas hoists), and the fixed overhead. Against ptxas -v (sm_90a, fp16 v8):
    backward_weight 4 pixels/thread -> 278 estimated, 255 used + spills (rejected); 2 -> 190,
    180 used; forward 4 pixels -> 150, 125-146 used (bf16 182). backward_weight beyond
    DIRECT_BWD_LINEAR_MAX_PIXELS holds the window's three filter rows at W stride 2: 4 pixels ->
    242 estimated, 204 (stride 1) / 213 (stride 2) used; 7 -> 338, 243 / 255 + spills (rejected).
    Since the stride-1 window runs two steps a loop iteration on NVIDIA (4+ pixels a thread),
    ptxas uses 250 at 4 pixels v8 and 200 at 8 pixels v4 (estimate 200), no spills."""
    e = DATATYPE_BYTES[i.datatype]
    overhead = REGISTER_OVERHEAD_BY_FAMILY.get(a.family, REGISTER_OVERHEAD)
    if is_direct_mma(i) and i.variant is Variant.BACKWARD_WEIGHT:
        # accumulators, the lane's ldmatrix offsets per chunk and tap tile, 6 fragment registers,
        # ~40 for the copies' pointers and the ring cursor (ptxas -v, sm_90a: 101-112 for one
        # chunk per warp; this gives 102)
        chunks = max(1, i.tile[1] // 8 // max(1, i.waves[0]))
        return direct_mma_accumulators(i) + chunks * (DIRECT_MMA_BWD_TAP_TILES + 1) + 6 + 40 + overhead
    if is_direct_mma(i):  # m16 x n8 accumulators, as many fragment registers, addresses
        return 2 * direct_mma_accumulators(i) + 16 + overhead
    _, _, pp = direct_layout(i, a.warp_size)
    v = i.vec_c
    packet = -(-v * e // 4)  # 32-bit registers of one loaded vector
    loaded = pp * packet
    if i.variant is Variant.BACKWARD_WEIGHT and i.tile[2] > 1:  # one tap: Cg x v accumulators
        regs = i.tile[2] * v + pp * v + loaded
    elif i.variant is Variant.BACKWARD_WEIGHT and pp <= DIRECT_BWD_LINEAR_MAX_PIXELS:
        regs = DIRECT_REGISTER_TAPS * v + pp * v + DIRECT_REGISTER_TAPS * loaded
    elif i.variant is Variant.BACKWARD_WEIGHT:  # window: three filter rows' columns in flight
        cols = (pp - 1) * DIRECT_BWD_WINDOW_MAX_STRIDE + 3
        regs = DIRECT_REGISTER_TAPS * v + pp * v + 3 * cols * packet
    elif i.tile[2] > 1:  # filter in shared memory: one tap's v weights, the pixels' inputs in fp32
        regs = pp * v + v + pp * v + loaded
    else:
        regs = pp * v + DIRECT_REGISTER_TAPS * v + loaded
    return regs + REGISTER_OVERHEAD_BY_FAMILY.get(a.family, REGISTER_OVERHEAD)


def _direct_fields(i: KernelInstance, a: ArchSpec) -> str | None:
    if tuple(i.warp_tile) == DIRECT_MMA_WARP_TILE:
        if a.math_unit_for(i.datatype, DIRECT_MMA_WARP_TILE) is not MathUnit.MMA_SYNC:
            return (f"direct warp_tile {list(DIRECT_MMA_WARP_TILE)} is the mma.sync path: not for "
                    f"{i.datatype.value} on {a.name} (use [1, 1, 1])")
        if i.variant is not Variant.BACKWARD_WEIGHT and i.tile[2] != DIRECT_MMA_GROUP_CHANNELS:
            return (f"direct warp_tile {list(DIRECT_MMA_WARP_TILE)} serves C = K = "
                    f"{DIRECT_MMA_GROUP_CHANNELS} per group in forward / backward_data: tile K must be "
                    f"{DIRECT_MMA_GROUP_CHANNELS}")
    elif i.warp_tile != DIRECT_WARP_TILE:
        return (f"direct warp_tile must be {list(DIRECT_WARP_TILE)} (FMA) or "
                f"{list(DIRECT_MMA_WARP_TILE)} (mma.sync, C = K = 8 per group)")
    if i.waves[1] != 1 or i.waves[2] != 1:
        return "direct: waves must be [w, 1, 1] (w warps per block, no GEMM wave layout)"
    if i.tile[2] not in DIRECT_GROUP_CHANNELS:
        return (f"direct: tile K is the channels per group (C = K) served, one of {DIRECT_GROUP_CHANNELS}"
                " (1 = depthwise)")
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


def _direct_layout(i: KernelInstance, a: ArchSpec) -> str | None:
    e = DATATYPE_BYTES[i.datatype]
    v = i.vec_c
    if v not in VECTOR_SIZES or (i.vec_a, i.vec_b) != (v, v):
        return f"direct: vector must be [v, v, v] with v in {VECTOR_SIZES} (one group vector for every tensor)"
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
        return f"direct: tile M={pixels} pixels is not a multiple of the {rows} pixel rows of threads"
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
        return f"direct matrix path: tile N={chans} is not a multiple of {DIRECT_MMA_CHANNEL_STEP} channels"
    w, tiles, chunks = i.waves[0], pixels // 16, chans // 8
    if i.variant is Variant.BACKWARD_WEIGHT:
        if pixels % 16 or chunks % w:
            return (f"direct matrix path: tile M={pixels} must be a multiple of 16 and the {w} warps "
                    f"must split the {chunks} channel chunks of tile N evenly")
        if (w * a.warp_size) % chans:  # copies: threads / chunks a multiple of 8 (one swizzle each)
            return (f"direct matrix path: {w * a.warp_size} threads must be a multiple of tile N={chans} "
                    "(each thread copies every 8th-aligned column of one channel chunk)")
    elif pixels % 16 or (tiles % w and w % tiles) or (w > tiles and chunks % (w // tiles)):
        return (f"direct matrix path: {w} warps must divide the {pixels} / 16 pixel tiles of tile M "
                f"or be a multiple of them that splits the {chunks} groups evenly")
    if i.variant is Variant.BACKWARD_WEIGHT:
        if direct_mma_bwd_ring(i)[1] < 2 * DIRECT_MMA_BWD_FILTER_ROWS:
            return (f"direct matrix path: two gradient buffers and {2 * DIRECT_MMA_BWD_FILTER_ROWS} source "
                    f"rows of {direct_mma_stage_bytes(i)} bytes do not fit {DIRECT_MMA_BWD_MAX_LDS} bytes "
                    "of dynamic shared memory")
    elif direct_mma_stages(i) < 2:
        return (f"direct matrix path: two stages of {direct_mma_stage_bytes(i)} bytes and "
                f"{direct_mma_weight_bytes(i)} bytes of weights do not fit {DIRECT_MMA_MAX_LDS} bytes "
                "of static shared memory")
    return None


def _direct_resources(i: KernelInstance, a: ArchSpec) -> str | None:
    # lds_bytes and register_estimate take the direct formulas for direct instances.
    return _lds(i, a) or _registers(i, a)


def _datatype(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.datatype not in a.warp_tiles:
        return f"{i.datatype.value} has no matrix path on {a.name}"
    return None


def _ndim(i: KernelInstance, a: ArchSpec) -> str | None:
    return None if i.ndim in (1, 2, 3) else f"ndim {i.ndim} not in 1, 2, 3"


def _warp_tile(i: KernelInstance, a: ArchSpec) -> str | None:
    legal = a.legal_warp_tiles(i.datatype)
    if i.warp_tile not in legal:
        shown = ", ".join("x".join(map(str, t)) for t in legal)
        return f"warp tile {'x'.join(map(str, i.warp_tile))} is not a {i.datatype.value} matrix instruction on {a.name} (legal: {shown})"
    return None


def _waves(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.waves not in a.wave_layouts:
        return f"wave layout {'x'.join(map(str, i.waves))} not legal on {a.name}"
    return None


def _block_size(i: KernelInstance, a: ArchSpec) -> str | None:
    t = i.threads * a.warp_size
    return None if t <= a.max_threads_per_block else f"{t} threads per block > {a.max_threads_per_block}"


def _divisible(i: KernelInstance, a: ArchSpec) -> str | None:
    if is_window(i) and i.variant is Variant.BACKWARD_WEIGHT:
        return None  # its warpgroups split the filter rows, not the tile: _window checks its shape
    group = 4 if a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA else 1
    # swap_ab: the instruction's M covers the tile's N (channels), its N the tile's M (pixels)
    wt = (i.warp_tile[1], i.warp_tile[0], i.warp_tile[2]) if i.swap_ab else i.warp_tile
    for d, name in enumerate("MNK"):
        step = i.waves[d] * wt[d] // (group if d == 0 else 1)  # wgmma: per warpgroup
        if i.tile[d] % step:
            return f"tile {name}={i.tile[d]} is not a multiple of waves x warp tile = {step}"
    return None


def _vectors(i: KernelInstance, a: ArchSpec) -> str | None:
    e = DATATYPE_BYTES[i.datatype]
    for name, v in (("a", i.vec_a), ("b", i.vec_b), ("c", i.vec_c)):
        if v not in VECTOR_SIZES:
            return f"vector size {name}={v} not in {VECTOR_SIZES}"
        if v * e > 16:
            return f"vector size {name}={v} x {e} bytes exceeds a 16-byte access"
    tm, tn, tk = i.tile
    if tk % i.vec_a or tk % i.vec_b:
        return f"tile K={tk} is not a multiple of the A/B vector sizes {i.vec_a}/{i.vec_b}"
    if tn % i.vec_c:
        return f"tile N={tn} is not a multiple of the C vector size {i.vec_c}"
    return None


def _pipeline(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.pipeline not in a.pipelines:
        return f"pipeline {i.pipeline.value} not available on {a.name}"
    if i.pipeline in SINGLE_STAGE_PIPELINES and i.stages != 1:
        return f"{i.pipeline.value} pipeline has exactly one stage"
    if i.pipeline not in SINGLE_STAGE_PIPELINES and not 2 <= i.stages <= MAX_STAGES:
        return f"{i.pipeline.value} needs 2..{MAX_STAGES} stages"
    return None


def _wavelet(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.pipeline not in WAVELET_PIPELINES:
        if i.load_waves or i.math_waves:
            return "load/math waves are only for the wavelet pipelines"
        return None
    if i.pipeline is Pipeline.WAVELET_TMA:
        return _wavelet_tma(i, a)
    if a.platform is not Platform.NVIDIA:
        # the portable lockstep form (no mbarriers) compiles for AMD but has not run on one
        return "wavelet is verified on NVIDIA only (AMD lockstep form not yet run on a GPU)"
    if (i.load_waves, i.math_waves) not in WAVELET_RATIOS:
        return f"wavelet load/math ratio {i.load_waves}x{i.math_waves} not in {WAVELET_RATIOS}"
    if i.math_waves != i.waves[0] * i.waves[1] * i.waves[2]:
        return f"wavelet math waves {i.math_waves} must equal the wave layout's {i.waves[0] * i.waves[1] * i.waves[2]} waves"
    return None


def is_pingpong(i: KernelInstance) -> bool:
    """A wavelet_tma instance whose two math warpgroups take turns on units, each with the whole
    tile: twice the math waves of its wave layout."""
    return i.pipeline is Pipeline.WAVELET_TMA and i.math_waves == 2 * i.waves[0] * i.waves[1] * i.waves[2]


def is_row_form(i: KernelInstance) -> bool:
    """backward_weight's row form (TmaTraits::kRows): wavelet_tma stride1 on backward_weight, a tile
    one filter row's taps, a k tile a segment of an output row; the default stage layout."""
    return (i.pipeline is Pipeline.WAVELET_TMA and i.specialization is Specialization.STRIDE1
            and i.variant is Variant.BACKWARD_WEIGHT)


def is_patch(i: KernelInstance) -> bool:
    """forward / backward_data stride1 on wavelet_tma (TmaTraits::kPatch): staged input patches
    beside a ring of B tiles."""
    return (i.pipeline is Pipeline.WAVELET_TMA and i.specialization is Specialization.STRIDE1
            and i.variant is not Variant.BACKWARD_WEIGHT)


def is_window(i: KernelInstance) -> bool:
    """window on wavelet_tma (pipeline_tma_window.hpp, pipeline_tma_window_weight.hpp): a tile a
    window of output rows x 8 columns, every tap read from one copied input patch."""
    return i.pipeline is Pipeline.WAVELET_TMA and i.specialization is Specialization.WINDOW


def window_lds_bytes(i: KernelInstance, taps: int = 9, reach: int = 2) -> int:
    """Shared memory of a window instance for a filter of `taps` taps reaching `reach` pixels past
    the window in each dimension (3x3: 9, 2): detail::tma_window_smem_bytes (forward: the
    filter, the patch buffers, two staging buffers) or detail::tma_window_weight_smem_bytes
    (backward_weight: stages of the window's dy and its patch, or the partial filter its cluster
    sums after the main loop, whichever is larger)."""
    tm = i.tile[0]
    patch = (TMA_WINDOW_COLUMNS + reach) * (tm // TMA_WINDOW_COLUMNS + reach) * TMA_ROW_BYTES
    patch = (patch + TMA_SMEM_SLACK - 1) // TMA_SMEM_SLACK * TMA_SMEM_SLACK
    if i.variant is Variant.BACKWARD_WEIGHT:  # the ring, or the partial filter after it
        ring = i.stages * (tm * TMA_ROW_BYTES + patch)
        return max(ring, TMA_WINDOW_WEIGHT_PART_BYTES) + 16 * i.stages + TMA_SMEM_SLACK
    return (taps * TMA_WINDOW_CHANNELS * TMA_ROW_BYTES + i.stages * patch + 2 * tm * TMA_ROW_BYTES
            + 8 * (2 + 2 * i.stages) + TMA_SMEM_SLACK)


def _window(i: KernelInstance) -> str | None:
    tm, tn, _ = i.tile
    bw = i.variant is Variant.BACKWARD_WEIGHT
    common = (
        (i.ndim == 2 and i.variant is not Variant.BACKWARD_DATA,
         "specialization window is 2D forward or backward_weight"),
        (tn == TMA_WINDOW_CHANNELS and tm in TMA_WINDOW_PIXELS,
         f"specialization window needs tile N {TMA_WINDOW_CHANNELS} (64-channel groups) and tile M "
         f"(8 x window rows) in {TMA_WINDOW_PIXELS}"),
        (i.k_batch == 1, "specialization window does not split its reduction: k_batch 1"),
    )
    wn = TMA_WINDOW_WEIGHT_TAPS * TMA_WINDOW_CHANNELS
    variant = (
        (i.warp_tile == (64, wn, 16) and not i.swap_ab,
         f"backward_weight window: warp tile (64, {wn}, 16) (a filter row's three taps), no swap_ab"),
        (i.waves == TMA_WINDOW_WEIGHT_WAVES and i.math_waves == TMA_WINDOW_WEIGHT_WAVES[0],
         f"backward_weight window needs waves {list(TMA_WINDOW_WEIGHT_WAVES)} and math waves "
         f"{TMA_WINDOW_WEIGHT_WAVES[0]} (three warpgroups, one a filter row)"),
        (i.epilogue is Epilogue.DEFAULT, "backward_weight window adds its sums from registers: epilogue default"),
        (i.stages in TMA_WINDOW_WEIGHT_STAGES,
         f"backward_weight window takes stages in {TMA_WINDOW_WEIGHT_STAGES}"),
    ) if bw else (
        (i.warp_tile == (64, tm, 16) and i.swap_ab,
         "specialization window computes the transposed tile: swap_ab, warp tile (64, tile M, 16)"),
        (i.waves == TMA_PINGPONG_WAVES and is_pingpong(i),
         f"specialization window needs waves {list(TMA_PINGPONG_WAVES)} and math waves "
         f"{2 * TMA_PINGPONG_WAVES[0]} (two warpgroups taking turns on windows)"),
        (i.epilogue is Epilogue.CSHUFFLE, "specialization window stages its tile through shared memory: epilogue cshuffle"),
        (i.stages in TMA_WINDOW_STAGES, f"specialization window takes stages (patch buffers) in {TMA_WINDOW_STAGES}"),
    )
    for ok, reason in common + variant:
        if not ok:
            return reason
    return None


def _wavelet_tma(i: KernelInstance, a: ArchSpec) -> str | None:
    """What TmaTraits (pipeline_tma.hpp) accepts, as one list of reasons. Any ndim: a 3D instance
    runs a problem whose depth is one tap (filter 1, stride 1, no depth padding) as 2D over N x D
    images (kernel_base.hpp, fold_depth) and any other through 5D im2col maps."""
    if is_window(i):
        return _window(i) or _wavelet_tma_common(i, a)
    math_waves = i.waves[0] * i.waves[1] * i.waves[2]
    tm, tn, _ = i.tile
    groups = i.waves[0] // 4
    checks = (
        ((i.math_waves == math_waves and math_waves in TMA_MATH_WAVES and i.waves[1:] == (1, 1))
         or (is_pingpong(i) and i.waves == TMA_PINGPONG_WAVES),
         f"wavelet_tma math waves = waves M in {TMA_MATH_WAVES}, waves (M, 1, 1); or ping-pong: "
         f"waves {list(TMA_PINGPONG_WAVES)}, math waves {2 * TMA_PINGPONG_WAVES[0]}"),
        (not is_pingpong(i) or (not i.swap_ab and i.specialization is Specialization.DEFAULT),
         "ping-pong (two warpgroups taking turns on units) needs specialization default, no swap_ab"),
        (i.swap_ab or (tn in TMA_TILE_N and i.warp_tile == (64, tn, 16)),
         f"wavelet_tma needs tile N in {TMA_TILE_N} and warp tile (64, tile N, 16)"),
        (i.swap_ab or (groups > 0 and tm % (64 * groups) == 0 and tm // (64 * groups) in TMA_SLICES_M and tm <= TMA_MAX_TILE_M),
         f"wavelet_tma needs tile M = 64 x {TMA_SLICES_M} per math warpgroup, at most {TMA_MAX_TILE_M}"),
        # swap_ab: the instruction's M is the tile's 64 output channels, its N the warpgroup's pixels
        (not i.swap_ab or (tn == TMA_SWAP_TILE_N and groups > 0 and tm % groups == 0 and tm <= TMA_MAX_TILE_M
                           and i.warp_tile == (64, tm // groups, 16) and tm // groups in TMA_SWAP_PIXELS),
         f"swap_ab needs tile N {TMA_SWAP_TILE_N} and warp tile (64, tile M / warpgroups, 16), "
         f"tile M / warpgroups in {TMA_SWAP_PIXELS}, tile M at most {TMA_MAX_TILE_M}"),
        (not i.swap_ab or i.variant is not Variant.BACKWARD_WEIGHT, "swap_ab is for forward / backward_data"),
        (not i.swap_ab or i.epilogue is Epilogue.DEFAULT,
         "swap_ab stores from registers (epilogue default): a thread's values of a pixel are 8 channels apart"),
        (i.specialization in (Specialization.DEFAULT, Specialization.STRIDE1),
         "wavelet_tma has no 1x1 specializations (the im2col map covers them): default or stride1"),
        # backward_weight's row form: one warpgroup's 64 output channels x a filter row's taps
        (not is_row_form(i)
         or (tm == 64 and i.waves == (4, 1, 1) and not is_pingpong(i) and tn >= 128),
         "backward_weight stride1 (one filter row's taps per tile) needs tile M 64, waves [4, 1, 1], "
         "no ping-pong, tile N >= 128 (tile N / 64 = the filter width it serves)"),
    )
    for ok, reason in checks:
        if not ok:
            return reason
    return _wavelet_tma_common(i, a)


def _wavelet_tma_common(i: KernelInstance, a: ArchSpec) -> str | None:
    """What every wavelet_tma kernel (pipeline_tma.hpp, pipeline_tma_window.hpp) needs."""
    checks = (
        (a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA,
         "wavelet_tma needs a wgmma warp tile (64 x tile N x 16)"),
        (i.load_waves == TMA_LOAD_WAVES, f"wavelet_tma has one load warp: load waves {TMA_LOAD_WAVES}"),
        (i.tile[2] * DATATYPE_BYTES[i.datatype] == TMA_ROW_BYTES, f"wavelet_tma needs tile K x element bytes = {TMA_ROW_BYTES}"),
        ((i.vec_a, i.vec_b, i.vec_c) == (8, 8, 8), "wavelet_tma moves 16-byte rows: vector [8, 8, 8]"),
        (i.reduction is Reduction.SPLITK and i.stage is Stage.ONE,
         "wavelet_tma splits its reduction with fp32 reductions into one workspace: split-K, "
         "stage one (k_batch 1, auto or fixed)"),
        (i.groups_to_merge == 1, "wavelet_tma does not merge groups"),
    )
    for ok, reason in checks:
        if not ok:
            return reason
    return None


def _wgmma(i: KernelInstance, a: ArchSpec) -> str | None:
    if a.math_unit_for(i.datatype, i.warp_tile) is not MathUnit.WGMMA:
        return None
    if i.pipeline not in WAVELET_PIPELINES:
        return "wgmma warp tiles (64 x N x 16) need a wavelet pipeline"
    if i.waves[0] % 4 or i.waves[2] != 1:
        return "wgmma needs wave layout M a multiple of 4 (warpgroups of 4 warps along M) and K 1"
    if i.pipeline is Pipeline.WAVELET and i.warp_tile[1] not in WGMMA_PLAIN_N:
        return f"wavelet (without the copy engine) implements wgmma N in {WGMMA_PLAIN_N}"
    return None


def _scheduler(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.scheduler not in a.schedulers:
        return f"scheduler {i.scheduler.value} not available on {a.name} (wave{a.warp_size})"
    return None


def _lds(i: KernelInstance, a: ArchSpec) -> str | None:
    need = lds_bytes(i, a)
    return None if need <= a.lds_bytes else f"LDS {need} bytes > {a.lds_bytes} on {a.name}"


def _registers(i: KernelInstance, a: ArchSpec) -> str | None:
    est = register_estimate(i, a)
    limit = a.registers_per_thread
    return None if est <= limit else f"register estimate {est} > {limit} per thread"


def _reduction(i: KernelInstance, a: ArchSpec) -> str | None:
    bw = i.variant is Variant.BACKWARD_WEIGHT
    if not bw:
        # forward / backward_data split-K: k_batch 1 never splits (the default), 0 = chosen per
        # problem or by RunOptions::k_batch, N = fixed; one- or two-stage like backward_weight.
        if i.reduction is not Reduction.SPLITK:
            return "StreamK is only for backward_weight"
        if i.k_batch != 1 and i.pipeline is Pipeline.WAVELET:
            return "split-K forward / backward_data is not yet combined with the wavelet pipeline"
    if not 0 <= i.k_batch <= MAX_K_BATCH:
        return f"k_batch {i.k_batch} not in 0..{MAX_K_BATCH} (0 = chosen per problem)"
    if i.persistent and i.reduction is Reduction.SPLITK:
        return "persistent is only for StreamK"
    if i.reduction is not Reduction.SPLITK:
        # StreamK (templates/include/ckgen/streamk.hpp): one launch, fp32 partial tiles + flags
        if i.k_batch != 0:
            return "StreamK sizes its own split: k_batch must be auto (0)"
        if i.stage is not Stage.ONE:
            return "StreamK combines partial tiles itself: stage must be one"
        if i.pipeline is Pipeline.WAVELET:
            return "StreamK is not yet combined with the wavelet pipeline (basic / multistage only)"
    return None


def _merge(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.groups_to_merge not in GROUPS_TO_MERGE:
        return f"groups_to_merge {i.groups_to_merge} not in {GROUPS_TO_MERGE}"
    if i.groups_to_merge > 1 and i.variant is Variant.BACKWARD_WEIGHT:
        return "groups_to_merge > 1 is for forward and backward_data (backward_weight: one group per tile)"
    if i.groups_to_merge > 1 and i.pipeline is Pipeline.WAVELET:
        return "groups_to_merge > 1 is not yet combined with the wavelet pipeline"
    return None


def _epilogue(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.epilogue is Epilogue.CSHUFFLE and i.pipeline is Pipeline.WAVELET:
        return "cshuffle is not yet combined with the wavelet pipeline (all threads run the epilogue)"
    return None


def _swap_ab(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.swap_ab and i.pipeline is not Pipeline.WAVELET_TMA:
        return "swap_ab is a wavelet_tma option (the wgmma math warpgroups)"
    return None


def _specialization(i: KernelInstance, a: ArchSpec) -> str | None:
    if i.specialization is Specialization.STRIDE1 and i.pipeline is not Pipeline.WAVELET_TMA:
        return "stride1 is a wavelet_tma specialization (staged input rows read by every tap)"
    if i.specialization is Specialization.WINDOW and i.pipeline is not Pipeline.WAVELET_TMA:
        return "window is a wavelet_tma specialization (the group's filter resident, windows of output rows)"
    if i.specialization is not Specialization.DEFAULT and i.variant is Variant.BACKWARD_DATA and i.groups_to_merge > 1:
        return "1x1 specializations do not combine with merged groups in backward_data"
    return None


# Measured resources fed back from `ckgen check-isa` (`generate --resources FILE`):
# arch -> instance name -> what the compiler reported (ckgen/isa.py InstanceResources.to_json).
# Empty unless a run loaded a file; the "measured" rule below is the only reader.
MEASURED: dict[str, dict[str, dict]] = {}


def set_measured(arch: str, resources: dict[str, dict]) -> None:
    MEASURED[arch] = dict(resources)


def measured_failures(res: dict, a: ArchSpec) -> list[str]:
    """Why measured resources make an instance unusable on ``a``: scratch (spills) or LDS over
    the target. check-isa and the "measured" rule both use this, so the limits live here only."""
    out = []
    scratch = int(res.get("scratch_bytes", 0))
    if scratch > 0:
        out.append(f"spills: {scratch} bytes of scratch per lane measured (VGPR {res.get('vgpr', 0)}, "
                   f"VGPR spills {res.get('vgpr_spill', 0)}, SGPR spills {res.get('sgpr_spill', 0)}, "
                   f"register estimate {res.get('estimate', '?')})")
    lds = int(res.get("lds_bytes", 0))
    if lds > a.lds_bytes:
        out.append(f"LDS {lds} bytes measured > {a.lds_bytes} on {a.name}")
    return out


def _measured(i: KernelInstance, a: ArchSpec) -> str | None:
    res = MEASURED.get(a.name, {}).get(i.name)
    if not res:
        return None
    bad = measured_failures(res, a)
    return bad[0] if bad else None


def _implemented(i: KernelInstance, a: ArchSpec) -> str | None:
    got = {
        "pipeline": i.pipeline,
        "epilogue": i.epilogue,
        "reduction": i.reduction,
        "math_unit": math_unit(i, a),
        "scheduler": i.scheduler,
        "groups_to_merge": i.groups_to_merge,
        "wave_k": i.waves[2],
    }
    for key, value in got.items():
        if value not in IMPLEMENTED[key]:
            shown = getattr(value, "value", value)
            return f"not yet in the template library: {key} {shown}"
    return None


RULES: tuple[Rule, ...] = (
    Rule("ndim", "ndim is 1, 2 or 3", _ndim),
    Rule("datatype", "the target has a matrix path for the datatype", _datatype, GEMM),
    Rule("warp_tile", "warp tile is a legal matrix instruction for target and datatype", _warp_tile, GEMM),
    Rule("waves", "wave layout is legal on the target", _waves, GEMM),
    Rule("direct_fields", "direct: the GEMM-only fields take their one documented value", _direct_fields, DIRECT),
    Rule("block_size", "threads per block within the target's limit", _block_size),
    Rule("divisible", "tile is a multiple of waves x warp tile in M, N, K", _divisible, GEMM),
    Rule("vectors", "vector sizes are 1/2/4/8, at most 16 bytes, dividing the tile", _vectors, GEMM),
    Rule("direct_layout", "direct: one group vector of at most 16 bytes; threads tile the block's groups and pixels", _direct_layout, DIRECT),
    Rule("pipeline", "pipeline available on the target, stage count fits the pipeline", _pipeline),
    Rule("wavelet", "load/math waves only for the wavelet pipelines, in the allowed ratios; wavelet_tma: what its template implements", _wavelet),
    Rule("wgmma", "wgmma warp tiles only with the wavelet pipeline and warpgroup wave layouts", _wgmma, GEMM),
    Rule("scheduler", "scheduler available on the target (interwave: AMD wave64 only)", _scheduler),
    Rule("reduction", "k_batch / StreamK / persistent: StreamK only for backward_weight, k_batch auto, one stage, not wavelet", _reduction),
    Rule("merge", "groups_to_merge in the allowed set; forward / backward_data only", _merge, GEMM),
    Rule("epilogue", "cshuffle combines with the pipeline", _epilogue, GEMM),
    Rule("specialization", "specialization combines with the rest", _specialization, GEMM),
    Rule("swap_ab", "swap_ab only for wavelet_tma", _swap_ab),
    Rule("lds", "shared memory of the pipeline fits the target", _lds, GEMM),
    Rule("registers", "register estimate fits the target", _registers, GEMM),
    Rule("direct_resources", "direct: shared memory and register estimate fit the target", _direct_resources, DIRECT),
    Rule("implemented", "the template library implements the configuration", _implemented, GEMM),
    Rule("measured", "no spills and LDS within the target, as measured by check-isa (generate --resources)", _measured),
)


def check(i: KernelInstance, a: ArchSpec) -> tuple[str, str] | None:
    """(rule id, reason) of the first rule that rejects ``i`` on ``a``, else None."""
    kind = DIRECT if i.pipeline is Pipeline.DIRECT else GEMM
    for r in RULES:
        if r.applies not in (ALL, kind):
            continue
        reason = r.check(i, a)
        if reason is not None:
            return r.id, reason
    return None
