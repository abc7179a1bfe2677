"""The rules of the implicit-GEMM kernels (basic, multistage, wavelet, wavelet_tma): the matrix
instruction, wave layout, tile divisibility, vectors and the combinations the template library
implements."""

from __future__ import annotations

from typing import Any

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    GROUPS_TO_MERGE,
    VECTOR_SIZES,
    WGMMA_PLAIN_N,
)
from ckgen.model.vocab import (
    DATATYPE_BYTES,
    WAVELET_PIPELINES,
    Epilogue,
    MathUnit,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Variant,
)
from ckgen.space.forms import is_window, math_unit
from ckgen.space.rules.context import RuleContext

# What the C++ template library (templates/include/ckgen) implements today. A configuration
# outside this set is valid for the hardware but has no code yet; it is rejected with that reason
# rather than generated into something that does not compile.
IMPLEMENTED: dict[str, set[Any]] = {
    "pipeline": {Pipeline.BASIC, Pipeline.MULTISTAGE, Pipeline.WAVELET, Pipeline.WAVELET_TMA},
    "epilogue": {Epilogue.DEFAULT, Epilogue.CSHUFFLE},
    "reduction": {Reduction.SPLITK, Reduction.STREAMK_LINEAR, Reduction.STREAMK_TREE},
    "math_unit": {MathUnit.MMA_SYNC, MathUnit.WGMMA, MathUnit.FMA, MathUnit.MFMA, MathUnit.WMMA},
    "scheduler": {Scheduler.INTRAWAVE},
    "groups_to_merge": {1, 2, 4, 8, 16, 32},
    "wave_k": {1},
}


def check_datatype(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.datatype not in a.warp_tiles:
        return f"{i.datatype.value} has no matrix path on {a.name}"
    return None


def check_warp_tile(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    legal = a.legal_warp_tiles(i.datatype)
    if i.warp_tile not in legal:
        shown = ", ".join("x".join(map(str, t)) for t in legal)
        return (
            f"warp tile {'x'.join(map(str, i.warp_tile))} is not a {i.datatype.value} matrix "
            f"instruction on {a.name} (legal: {shown})"
        )
    return None


def check_waves(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.waves not in a.wave_layouts:
        return f"wave layout {'x'.join(map(str, i.waves))} not legal on {a.name}"
    return None


def check_divisible(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
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


def check_vectors(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
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


def check_wgmma(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if a.math_unit_for(i.datatype, i.warp_tile) is not MathUnit.WGMMA:
        return None
    if i.pipeline not in WAVELET_PIPELINES:
        return "wgmma warp tiles (64 x N x 16) need a wavelet pipeline"
    if i.waves[0] % 4 or i.waves[2] != 1:
        return "wgmma needs wave layout M a multiple of 4 (warpgroups of 4 warps along M) and K 1"
    if i.pipeline is Pipeline.WAVELET and i.warp_tile[1] not in WGMMA_PLAIN_N:
        return f"wavelet (without the copy engine) implements wgmma N in {WGMMA_PLAIN_N}"
    return None


def check_merge(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.groups_to_merge not in GROUPS_TO_MERGE:
        return f"groups_to_merge {i.groups_to_merge} not in {GROUPS_TO_MERGE}"
    if i.groups_to_merge > 1 and i.variant is Variant.BACKWARD_WEIGHT:
        return (
            "groups_to_merge > 1 is for forward and backward_data (backward_weight: one group "
            "per tile)"
        )
    if i.groups_to_merge > 1 and i.pipeline is Pipeline.WAVELET:
        return "groups_to_merge > 1 is not yet combined with the wavelet pipeline"
    return None


def check_epilogue(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.epilogue is Epilogue.CSHUFFLE and i.pipeline is Pipeline.WAVELET:
        return (
            "cshuffle is not yet combined with the wavelet pipeline (all threads run the epilogue)"
        )
    return None


def check_specialization(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.specialization is Specialization.STRIDE1 and i.pipeline is not Pipeline.WAVELET_TMA:
        return "stride1 is a wavelet_tma specialization (staged input rows read by every tap)"
    if i.specialization is Specialization.WINDOW and i.pipeline is not Pipeline.WAVELET_TMA:
        return (
            "window is a wavelet_tma specialization (the group's filter resident, windows of "
            "output rows)"
        )
    if (
        i.specialization is not Specialization.DEFAULT
        and i.variant is Variant.BACKWARD_DATA
        and i.groups_to_merge > 1
    ):
        return "1x1 specializations do not combine with merged groups in backward_data"
    return None


def check_implemented(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
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
