"""The validity rules: one table, arch-aware, each rule returning the reason it rejects.

Every candidate from the expansion is checked against RULES in order; the first rule that
returns a reason rejects it, and the reason is kept (``list-instances --show-rejected``).
Nothing else in ckgen decides whether an instance is valid. The rules live by kernel family
(common, gemm, tma, direct) and read the limits of ckgen.model.limits and the resource estimates
of ckgen.space.estimate; measured resources come in through a RuleContext, never a global.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.vocab import Pipeline
from ckgen.space.rules.common import (
    check_block_size,
    check_fusion,
    check_lds,
    check_ndim,
    check_pipeline,
    check_reduction,
    check_registers,
    check_scheduler,
    check_swap_ab,
    check_wavelet,
)
from ckgen.space.rules.context import NO_CONTEXT, RuleContext
from ckgen.space.rules.direct import (
    check_direct_fields,
    check_direct_layout,
    check_direct_resources,
)
from ckgen.space.rules.gemm import (
    check_datatype,
    check_divisible,
    check_epilogue,
    check_implemented,
    check_merge,
    check_specialization,
    check_vectors,
    check_warp_tile,
    check_waves,
    check_wgmma,
)
from ckgen.space.rules.measured import (
    check_measured,
)
from ckgen.space.rules.pointwise import check_pointwise_fields, check_pointwise_resources

Check = Callable[[KernelInstance, ArchSpec, RuleContext], "str | None"]

# Which instances a rule judges: implicit-GEMM pipelines, the direct pipeline, the pointwise
# pipeline, or all of them.
GEMM, DIRECT, POINTWISE, ALL = "gemm", "direct", "pointwise", "all"


@dataclass(frozen=True)
class Rule:
    id: str
    doc: str
    check: Check
    applies: str = ALL  # GEMM, DIRECT, POINTWISE or ALL


RULES: tuple[Rule, ...] = (
    Rule("ndim", "ndim is 1, 2 or 3", check_ndim),
    Rule("datatype", "the target has a matrix path for the datatype", check_datatype, GEMM),
    Rule(
        "warp_tile",
        "warp tile is a legal matrix instruction for target and datatype",
        check_warp_tile,
        GEMM,
    ),
    Rule("waves", "wave layout is legal on the target", check_waves, GEMM),
    Rule(
        "direct_fields",
        "direct: the GEMM-only fields take their one documented value",
        check_direct_fields,
        DIRECT,
    ),
    Rule(
        "pointwise_fields",
        "pointwise: forward / backward_data of fp16 / bf16 1x1 layers; the fields its kernel takes",
        check_pointwise_fields,
        POINTWISE,
    ),
    Rule("block_size", "threads per block within the target's limit", check_block_size),
    Rule("divisible", "tile is a multiple of waves x warp tile in M, N, K", check_divisible, GEMM),
    Rule(
        "vectors",
        "vector sizes are 1/2/4/8, at most 16 bytes, dividing the tile",
        check_vectors,
        GEMM,
    ),
    Rule(
        "direct_layout",
        "direct: one group vector of at most 16 bytes; threads tile the block's groups and pixels",
        check_direct_layout,
        DIRECT,
    ),
    Rule(
        "pipeline",
        "pipeline available on the target, stage count fits the pipeline",
        check_pipeline,
    ),
    Rule(
        "wavelet",
        "load/math waves only for the wavelet pipelines, in the allowed ratios; wavelet_tma: what "
        "its template implements",
        check_wavelet,
    ),
    Rule(
        "wgmma",
        "wgmma warp tiles only with the wavelet pipeline and warpgroup wave layouts",
        check_wgmma,
        GEMM,
    ),
    Rule(
        "scheduler",
        "scheduler available on the target (interwave: AMD wave64 only)",
        check_scheduler,
    ),
    Rule(
        "reduction",
        "k_batch / StreamK / persistent: StreamK only for backward_weight, k_batch auto, one "
        "stage, not wavelet",
        check_reduction,
    ),
    Rule(
        "merge",
        "groups_to_merge in the allowed set; forward / backward_data only",
        check_merge,
        GEMM,
    ),
    Rule("epilogue", "cshuffle combines with the pipeline", check_epilogue, GEMM),
    Rule("specialization", "specialization combines with the rest", check_specialization, GEMM),
    Rule("swap_ab", "swap_ab only for wavelet_tma", check_swap_ab),
    Rule(
        "fusion",
        "fused epilogues: forward, k_batch 1 (any for wavelet_tma, whose split-K finish applies "
        "them), a pipeline whose epilogue applies them (the window kernel: a channel op and an "
        "activation only); "
        "backward: a gradient mask (and bias_grad for backward_weight) in the basic pipeline, "
        "a mask alone also in multistage, groups_to_merge 1, bias_grad with split-K; "
        "to_<datatype> (forward): vec_c within a 16-byte store, wavelet_tma into fp16 / bf16 only, "
        "not the direct matrix path",
        check_fusion,
    ),
    Rule("lds", "shared memory of the pipeline fits the target", check_lds, GEMM),
    Rule("registers", "register estimate fits the target", check_registers, GEMM),
    Rule(
        "direct_resources",
        "direct: shared memory and register estimate fit the target",
        check_direct_resources,
        DIRECT,
    ),
    Rule(
        "pointwise_resources",
        "pointwise: register estimate fits the target (shared memory: per problem, at run time)",
        check_pointwise_resources,
        POINTWISE,
    ),
    Rule(
        "implemented", "the template library implements the configuration", check_implemented, GEMM
    ),
    Rule(
        "measured",
        "no spills and LDS within the target, as measured by check-isa (generate --resources)",
        check_measured,
    ),
)


def check(i: KernelInstance, a: ArchSpec, ctx: RuleContext = NO_CONTEXT) -> tuple[str, str] | None:
    """(rule id, reason) of the first rule that rejects ``i`` on ``a``, else None; ``ctx`` carries
    measured resources (the "measured" rule)."""
    kind = {Pipeline.DIRECT: DIRECT, Pipeline.POINTWISE: POINTWISE}.get(i.pipeline, GEMM)
    for r in RULES:
        if r.applies not in (ALL, kind):
            continue
        reason = r.check(i, a, ctx)
        if reason is not None:
            return r.id, reason
    return None
