"""The rules every kernel family answers: ndim, block size, pipeline and stages, wavelet waves,
scheduler, reduction, swap_ab, and the resource estimates against the target."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    MAX_K_BATCH,
    MAX_STAGES,
    MIN_STAGES,
    TMA_STATS_MAX_ACC,
    WAVELET_RATIOS,
)
from ckgen.model.vocab import (
    BACKWARD_CHANNEL_OPS,
    CONVERT,
    DATATYPE_BYTES,
    GRAD_MASKS,
    SINGLE_STAGE_PIPELINES,
    WAVELET_PIPELINES,
    Activation,
    ChannelOp,
    Epilogue,
    Pipeline,
    Platform,
    Reduction,
    Specialization,
    Stage,
    Variant,
)
from ckgen.space.estimate.lds import lds_bytes
from ckgen.space.estimate.registers import register_estimate
from ckgen.space.forms import is_direct_mma, is_pingpong
from ckgen.space.rules.context import RuleContext
from ckgen.space.rules.tma import check_wavelet_tma


def check_ndim(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    return None if i.ndim in (1, 2, 3) else f"ndim {i.ndim} not in 1, 2, 3"


def check_block_size(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    t = i.threads * a.warp_size
    return (
        None
        if t <= a.max_threads_per_block
        else f"{t} threads per block > {a.max_threads_per_block}"
    )


def check_pipeline(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.pipeline not in a.pipelines:
        return f"pipeline {i.pipeline.value} not available on {a.name}"
    if i.pipeline in SINGLE_STAGE_PIPELINES and i.stages != 1:
        return f"{i.pipeline.value} pipeline has exactly one stage"
    if i.pipeline not in SINGLE_STAGE_PIPELINES and not MIN_STAGES <= i.stages <= MAX_STAGES:
        return f"{i.pipeline.value} needs {MIN_STAGES}..{MAX_STAGES} stages"
    return None


def check_wavelet(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.pipeline not in WAVELET_PIPELINES:
        if i.load_waves or i.math_waves:
            return "load/math waves are only for the wavelet pipelines"
        return None
    if i.pipeline is Pipeline.WAVELET_TMA:
        return check_wavelet_tma(i, a)
    if a.platform is not Platform.NVIDIA:
        # the portable lockstep form (no mbarriers) compiles for AMD but has not run on one
        return "wavelet is verified on NVIDIA only (AMD lockstep form not yet run on a GPU)"
    if (i.load_waves, i.math_waves) not in WAVELET_RATIOS:
        return f"wavelet load/math ratio {i.load_waves}x{i.math_waves} not in {WAVELET_RATIOS}"
    if i.math_waves != i.waves[0] * i.waves[1] * i.waves[2]:
        return (
            f"wavelet math waves {i.math_waves} must equal the wave layout's "
            f"{i.waves[0] * i.waves[1] * i.waves[2]} waves"
        )
    return None


def check_scheduler(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.scheduler not in a.schedulers:
        return f"scheduler {i.scheduler.value} not available on {a.name} (wave{a.warp_size})"
    return None


def check_reduction(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
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


def check_swap_ab(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if i.swap_ab and i.pipeline is not Pipeline.WAVELET_TMA:
        return "swap_ab is a wavelet_tma option (the wgmma math warpgroups)"
    return None


def check_backward_fusion(i: KernelInstance) -> str | None:
    """The backward fusions: a gradient mask on dy (backward_data, backward_weight) and
    bias_grad (backward_weight), applied as the basic pipeline stages dy (block/tile_loader.hpp);
    a gradient mask alone also in the multistage pipeline (y copied beside dy) and in
    backward_data on wavelet_tma (y's tile copied beside dy's, pipeline/tma_traits.hpp kMask)."""
    f = i.fusion
    grad = i.activation in GRAD_MASKS or i.channel_op in BACKWARD_CHANNEL_OPS
    if i.variant is Variant.FORWARD:
        return f"fusion {f}: gradient masks and bias_grad are backward operations" if grad else None
    if i.stats:
        return f"fusion {f}: stats (the output's channel statistics) is a forward operation"
    if i.out_datatype is not None:
        conv = f"{CONVERT}_{i.out_datatype.value}"
        return f"fusion {f}: {conv} (output conversion) is a forward operation"
    if not grad or i.residual or i.activation not in (Activation.NONE, *GRAD_MASKS):
        return (
            f"fusion {f}: backward instances fuse a gradient mask "
            f"({', '.join(m.value for m in GRAD_MASKS)}) and, backward_weight, bias_grad only"
        )
    if i.channel_op not in (ChannelOp.NONE, *BACKWARD_CHANNEL_OPS):
        return f"fusion {f}: {i.channel_op.value} is a forward epilogue operation"
    if i.channel_op is ChannelOp.BIAS_GRAD and i.variant is not Variant.BACKWARD_WEIGHT:
        return f"fusion {f}: bias_grad is a backward_weight operation"
    if i.pipeline is Pipeline.WAVELET_TMA:
        # backward_weight's default form sums db from the A tiles (tma_ws_bias_grad.hpp)
        if (
            i.channel_op is ChannelOp.BIAS_GRAD
            and i.activation is Activation.NONE
            and i.specialization is Specialization.DEFAULT
        ):
            return None
        if (
            i.variant is Variant.BACKWARD_DATA
            and i.channel_op is ChannelOp.NONE
            and i.specialization in (Specialization.DEFAULT, Specialization.STRIDE1)
        ):
            return None
        return (
            f"fusion {f}: wavelet_tma fuses bias_grad alone, in backward_weight's default "
            "specialization, and a gradient mask alone, in backward_data's default and stride1 "
            "specializations"
        )
    if i.pipeline is Pipeline.MULTISTAGE and i.channel_op is not ChannelOp.NONE:
        return f"fusion {f}: the multistage pipeline fuses a gradient mask alone (bias_grad: basic)"
    if i.pipeline not in (Pipeline.BASIC, Pipeline.MULTISTAGE):
        return (
            f"fusion {f}: the backward fusions are applied as the basic or multistage pipeline "
            "stages dy"
        )
    if i.groups_to_merge != 1:
        return f"fusion {f}: the backward fusions need groups_to_merge 1"
    if i.channel_op is ChannelOp.BIAS_GRAD and (
        i.reduction is not Reduction.SPLITK or i.persistent
    ):
        return f"fusion {f}: bias_grad is summed by the split-K blocks (reduction splitk)"
    return None


def check_fusion(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    if not i.fused:
        return None
    if i.variant is not Variant.FORWARD or i.channel_op in BACKWARD_CHANNEL_OPS:
        return check_backward_fusion(i)
    if i.activation in GRAD_MASKS:
        return check_backward_fusion(i)
    if i.k_batch != 1 and i.pipeline is not Pipeline.WAVELET_TMA:
        return (
            f"fusion {i.fusion} needs k_batch 1 outside wavelet_tma: only wavelet_tma's split-K "
            "finish applies the epilogue to a split's sums"
        )
    if i.specialization is Specialization.WINDOW and (
        i.residual or i.stats or i.out_datatype is not None
    ):
        return (
            f"fusion {i.fusion}: the window kernel's epilogue applies a channel op and an "
            "activation only (no residual, stats or to_<datatype>)"
        )
    if i.out_datatype is not None and (why := check_convert(i)):
        return why
    return check_stats(i, a) if i.stats else None


def check_convert(i: KernelInstance) -> str | None:
    """to_<datatype>: the epilogue converts to another output datatype, vec_c elements a store
    (at most 16 bytes); wavelet_tma stores pairs from registers, and its CShuffle copy moves
    16-bit slabs (tma_ws_epilogue.hpp); the direct matrix path stores its input datatype."""
    out = i.out_datatype
    assert out is not None
    tag, size = f"fusion {i.fusion}", DATATYPE_BYTES[out]
    if out is i.datatype:
        return (
            f"{tag}: an {out.value} instance's output is {out.value} already (drop to_{out.value})"
        )
    if is_direct_mma(i):
        return f"{tag}: the direct matrix path writes its input datatype (the FMA tiles convert)"
    if i.pipeline is Pipeline.WAVELET_TMA:
        if size != 2 and i.epilogue is Epilogue.CSHUFFLE:
            return f"{tag}: wavelet_tma's CShuffle copy writes fp16 or bf16 (epilogue default does)"
        return None
    if i.vec_c * size > 16:
        return (
            f"{tag}: vec_c {i.vec_c} {out.value} outputs exceed a 16-byte store (vec_c at most "
            f"{16 // size})"
        )
    return None


def check_stats(i: KernelInstance, a: ArchSpec) -> str | None:
    """stats: the CShuffle epilogue sums the columns it stores: basic / multistage each thread
    over the rows of one column chunk, then the block's threads per column
    (epilogue/epilogue.hpp); wavelet_tma each lane over its rows of a 32-column chunk, then the
    warp's lanes by shuffles (tma_ws_epilogue.hpp ChunkStats)."""
    f = i.fusion
    if i.epilogue is not Epilogue.CSHUFFLE or i.pipeline not in (
        Pipeline.BASIC,
        Pipeline.MULTISTAGE,
        Pipeline.WAVELET_TMA,
    ):
        return (
            f"fusion {f}: stats is summed by the CShuffle epilogue of basic, multistage or "
            "wavelet_tma"
        )
    if i.k_batch != 1:
        return f"fusion {f}: stats needs k_batch 1 (a split's partial sums are not the output)"
    math_threads = i.waves[0] * i.waves[1] * i.waves[2] * a.warp_size
    if i.pipeline is Pipeline.WAVELET_TMA:
        if i.residual or i.swap_ab:
            return f"fusion {f}: wavelet_tma sums stats without residual or swap_ab"
        # a warp keeps 2 * tile N / 32 sums over its units and 16 over a chunk: beside more
        # than 64 accumulators a thread, ptxas spills (tiles 256x128 and ping-pong 64x256)
        acc = i.tile[0] * i.tile[1] // (128 if is_pingpong(i) else math_threads)
        if acc > TMA_STATS_MAX_ACC:
            return (
                f"fusion {f}: wavelet_tma stats needs at most {TMA_STATS_MAX_ACC} accumulators a "
                f"math thread ({acc} here)"
            )
        return None
    chunks = i.tile[1] // i.vec_c
    if math_threads % chunks:
        return (
            f"fusion {f}: stats needs the block's {math_threads} threads to be a multiple of the "
            f"tile's {chunks} column chunks (tile N {i.tile[1]} / vec_c {i.vec_c})"
        )
    return None


def check_lds(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    need = lds_bytes(i, a)
    return None if need <= a.lds_bytes else f"LDS {need} bytes > {a.lds_bytes} on {a.name}"


def check_registers(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    est = register_estimate(i, a)
    limit = a.registers_per_thread
    return None if est <= limit else f"register estimate {est} > {limit} per thread"
