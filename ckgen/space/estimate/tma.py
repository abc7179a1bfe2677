"""Shared memory of the wavelet_tma kernels (pipeline/tma_ws.hpp, pipeline/tma_window.hpp,
pipeline/tma_window_weight.hpp)."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    TMA_BIAS_GRAD_ONES_BYTES,
    TMA_PATCH_BUFFERS,
    TMA_ROW_BYTES,
    TMA_SLAB_ELEMS_PER_WARP,
    TMA_SMEM_SLACK,
    TMA_WINDOW_CHANNELS,
    TMA_WINDOW_COLUMNS,
    TMA_WINDOW_WEIGHT_PART_BYTES,
)
from ckgen.model.vocab import DATATYPE_BYTES, GRAD_MASKS, ChannelOp, Epilogue, Pipeline, Variant
from ckgen.space.estimate.registers import accumulators_per_thread
from ckgen.space.forms import is_patch, is_window


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
    return (
        taps * TMA_WINDOW_CHANNELS * TMA_ROW_BYTES
        + i.stages * patch
        + 2 * tm * TMA_ROW_BYTES
        + 8 * (2 + 2 * i.stages)
        + TMA_SMEM_SLACK
    )


def tma_lds_bytes(i: KernelInstance) -> int:
    """A wavelet_tma instance: a ring of A and B tiles of one 128-byte row per tile row (the
    patch form: a ring of B tiles beside staged input patches; the window form: its own layout),
    an mbarrier pair per stage, the cshuffle slabs of the math warps, bias_grad's all-ones
    operand, and the alignment slack; a gradient mask copies y's A tile (patch form: y's patch)
    beside dy's."""
    if is_window(i):
        return window_lds_bytes(i)
    e = DATATYPE_BYTES[i.datatype]
    tm, tn, _ = i.tile
    copies = 2 if i.activation in GRAD_MASKS else 1  # dy's A tile (or patch), and y's
    slabs = i.math_waves * TMA_SLAB_ELEMS_PER_WARP * e if i.epilogue is Epilogue.CSHUFFLE else 0
    if is_patch(i):
        # B ring + two staged input patches of at least tile M pixels each (the patch grows
        # with the problem's row width; the kernel refuses problems whose patch does not fit)
        return (
            (i.stages * tn + TMA_PATCH_BUFFERS * copies * tm) * TMA_ROW_BYTES
            + 16 * (i.stages + TMA_PATCH_BUFFERS)
            + slabs
            + TMA_SMEM_SLACK
        )
    ones = TMA_BIAS_GRAD_ONES_BYTES if i.channel_op is ChannelOp.BIAS_GRAD else 0
    return (
        i.stages * (copies * tm + tn) * TMA_ROW_BYTES
        + 16 * i.stages
        + slabs
        + ones
        + TMA_SMEM_SLACK
    )


def tma_min_blocks(i: KernelInstance, a: ArchSpec) -> int:
    """The resident blocks a forward wavelet_tma instance's launch bounds ask the compiler to fit:
    2 where a math thread holds at most 64 accumulators and two blocks fit the target's shared
    memory, unless its epilogue holds more than a channel op and an activation (a residual or
    stats, which need their registers); else 1. Without it a tile of two warpgroups and a load
    warp that takes a few registers more than 96 a thread (a channel op's, or its own) runs one
    block an SM where two fit (288 threads: 96 registers on sm_90a). The backward variants keep
    one: their automatic splits count the resident blocks, and two made some of them slower."""
    if i.pipeline is not Pipeline.WAVELET_TMA or is_window(i) or i.variant is not Variant.FORWARD:
        return 1
    if i.residual or i.stats:
        return 1
    return 2 if accumulators_per_thread(i, a) <= 64 and 2 * tma_lds_bytes(i) <= a.lds_bytes else 1
