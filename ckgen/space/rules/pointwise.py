"""The rules of the pointwise kernel (templates/include/ckgen/pipeline/pointwise.hpp): 1x1
convolutions at unit strides without padding, forward and backward_data, on sm_90a's bulk copies
and mma.sync. Its shared memory depends on the problem (the filter of every group, two source
tiles and two output tiles), so the host face checks it per call; here only the fields."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    POINTWISE_CHUNK,
    POINTWISE_MAX_M_TILES,
    POINTWISE_STAGES,
    POINTWISE_TILE_K,
    POINTWISE_WARP_TILE,
    POINTWISE_WAVES,
)
from ckgen.model.vocab import (
    DATATYPE_BYTES,
    Epilogue,
    Scheduler,
    Specialization,
    Variant,
)
from ckgen.space.estimate.registers import pointwise_register_estimate
from ckgen.space.rules.context import RuleContext


def check_pointwise_fields(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.pipeline not in a.pipelines:
        return None  # the "pipeline" rule says so
    if i.variant is Variant.BACKWARD_WEIGHT:
        return "pointwise computes forward and backward_data (backward_weight reduces over pixels)"
    if i.specialization is not Specialization.FILTER1X1_STRIDE1_PAD0:
        return (
            "pointwise: specialization must be filter1x1_stride1_pad0 (the kernel's only problems)"
        )
    if DATATYPE_BYTES[i.datatype] != 2:
        return "pointwise: fp16 or bf16 (mma.sync m16n8k16)"
    if tuple(i.warp_tile) != POINTWISE_WARP_TILE:
        return f"pointwise: warp_tile must be {list(POINTWISE_WARP_TILE)} (mma.sync)"
    w = i.waves[0]
    if w not in POINTWISE_WAVES or i.waves[1] != 1 or i.waves[2] != 1:
        return f"pointwise: waves must be [w, 1, 1] with w in {POINTWISE_WAVES}"
    tm, tn, tk = i.tile
    if tn != POINTWISE_CHUNK or tk != POINTWISE_TILE_K:
        return (
            f"pointwise: tile N is the {POINTWISE_CHUNK} output columns a warp accumulates at once "
            f"and tile K one k{POINTWISE_TILE_K} step: tile [M, {POINTWISE_CHUNK}, "
            f"{POINTWISE_TILE_K}]"
        )
    if tm % (16 * w) != 0 or not 1 <= tm // (16 * w) <= POINTWISE_MAX_M_TILES:
        return (
            f"pointwise: tile M must be 16 x waves x (1..{POINTWISE_MAX_M_TILES}) rows (m16 "
            "tiles a warp)"
        )
    if i.stages != POINTWISE_STAGES:
        return f"pointwise: stages must be {POINTWISE_STAGES} (source tiles in flight)"
    if (i.vec_a, i.vec_b, i.vec_c) != (8, 8, 8):
        return "pointwise: vector must be [8, 8, 8] (rows move as 16-byte multiples)"
    if i.epilogue is not Epilogue.CSHUFFLE:
        return "pointwise: epilogue must be cshuffle (the output rows go through shared memory)"
    if i.scheduler is not Scheduler.INTRAWAVE:
        return "pointwise: scheduler must be intrawave"
    if i.groups_to_merge != 1 or i.swap_ab or i.k_batch != 1:
        return "pointwise: groups_to_merge 1, k_batch 1, no swap_ab (a block takes every group)"
    if i.fused:
        return "pointwise: no fused epilogue"
    return None


def check_pointwise_resources(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    regs = pointwise_register_estimate(i, a)
    if regs > a.registers_per_thread:
        return f"pointwise: register estimate {regs} exceeds {a.registers_per_thread}"
    return None
