"""32-bit registers per thread an instance needs (the "registers" and "direct_resources" rules)."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    DIRECT_BWD_LINEAR_MAX_PIXELS,
    DIRECT_BWD_WINDOW_MAX_STRIDE,
    DIRECT_MMA_BWD_TAP_TILES,
    DIRECT_REGISTER_TAPS,
    POINTWISE_ACC_PER_M_TILE,
    POINTWISE_REGISTER_BASE,
)
from ckgen.model.vocab import (
    DATATYPE_BYTES,
    WAVELET_PIPELINES,
    MathUnit,
    Pipeline,
    Variant,
)
from ckgen.space.estimate.direct import (
    direct_layout,
    direct_mma_accumulators,
    direct_mma_group_chunks,
)
from ckgen.space.forms import is_direct_mma

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


def accumulators_per_thread(i: KernelInstance, a: ArchSpec) -> int:
    """fp32 accumulators a math thread holds: the block tile spread over the math threads of its
    waves (a ping-pong instance's warpgroups each hold the whole tile: its waves are one's)."""
    tm, tn, _ = i.tile
    wm, wn, wk = i.waves
    return tm * tn // (wm * wn * wk * a.warp_size)


def register_estimate(i: KernelInstance, a: ArchSpec) -> int:
    """32-bit registers per math thread: fp32 accumulators, the matrix operands of one k step,
    the global staging of one stage of A and B (data plus LOAD_ADDRESS_REGS per load, so small
    vectors cost more), and a fixed overhead per target family."""
    if i.pipeline is Pipeline.DIRECT:
        return direct_register_estimate(i, a)
    if i.pipeline is Pipeline.POINTWISE:
        return pointwise_register_estimate(i, a)
    tm, tn, tk = i.tile
    wm, wn, wk = i.waves
    e = DATATYPE_BYTES[i.datatype]
    threads = wm * wn * wk * a.warp_size
    acc = accumulators_per_thread(i, a)
    frag = ((tm // wm) * i.warp_tile[2] + (tn // wn) * i.warp_tile[2]) * e // 4 // a.warp_size
    if a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA:
        frag = 0  # operands straight from shared memory (descriptors)
    staging = 0
    if i.pipeline not in WAVELET_PIPELINES:
        for mn, vec in ((tm, i.vec_a), (tn, i.vec_b)):
            loads = -(-mn * tk // (vec * threads))
            staging += loads * (-(-vec * e // 4) + LOAD_ADDRESS_REGS)
    return acc + frag + staging + REGISTER_OVERHEAD_BY_FAMILY.get(a.family, REGISTER_OVERHEAD)


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
        # (and per partner chunk of a group of 16 / 32 channels its B offset and fragment)
        chunks = max(1, i.tile[1] // 8 // max(1, i.waves[0]))
        partners = direct_mma_group_chunks(i)
        return (
            direct_mma_accumulators(i)
            + chunks * (DIRECT_MMA_BWD_TAP_TILES + partners)
            + 4
            + 2 * partners
            + 40
            + overhead
        )
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


def pointwise_register_estimate(i: KernelInstance, a: ArchSpec) -> int:
    """32-bit registers a pointwise thread: its m16 tiles' accumulators and the rest."""
    return POINTWISE_ACC_PER_M_TILE * (i.tile[0] // (16 * i.waves[0])) + POINTWISE_REGISTER_BASE
