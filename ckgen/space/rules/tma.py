"""The rules of wavelet_tma (pipeline/tma_ws.hpp, pipeline/tma_window.hpp,
pipeline/tma_window_weight.hpp)."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import (
    TMA_FORWARD_TILE_N,
    TMA_LOAD_WAVES,
    TMA_MATH_WAVES,
    TMA_MAX_TILE_M,
    TMA_PINGPONG_WAVES,
    TMA_ROW_BYTES,
    TMA_SLICES_M,
    TMA_SWAP_PIXELS,
    TMA_SWAP_TILE_N,
    TMA_TILE_N,
    TMA_WINDOW_CHANNELS,
    TMA_WINDOW_PIXELS,
    TMA_WINDOW_STAGES,
    TMA_WINDOW_WEIGHT_STAGES,
    TMA_WINDOW_WEIGHT_TAPS,
    TMA_WINDOW_WEIGHT_WAVES,
)
from ckgen.model.vocab import (
    DATATYPE_BYTES,
    Epilogue,
    MathUnit,
    Reduction,
    Specialization,
    Stage,
    Variant,
)
from ckgen.space.forms import is_pingpong, is_row_form, is_window


def _window(i: KernelInstance) -> str | None:
    tm, tn, _ = i.tile
    bw = i.variant is Variant.BACKWARD_WEIGHT
    common = (
        (
            i.ndim == 2 and i.variant is not Variant.BACKWARD_DATA,
            "specialization window is 2D forward or backward_weight",
        ),
        (
            tn == TMA_WINDOW_CHANNELS and tm in TMA_WINDOW_PIXELS,
            f"specialization window needs tile N {TMA_WINDOW_CHANNELS} (64-channel groups) and "
            "tile M "
            f"(8 x window rows) in {TMA_WINDOW_PIXELS}",
        ),
        (i.k_batch == 1, "specialization window does not split its reduction: k_batch 1"),
    )
    wn = TMA_WINDOW_WEIGHT_TAPS * TMA_WINDOW_CHANNELS
    variant = (
        (
            (
                i.warp_tile == (64, wn, 16) and not i.swap_ab,
                f"backward_weight window: warp tile (64, {wn}, 16) (a filter row's three taps), no "
                "swap_ab",
            ),
            (
                i.waves == TMA_WINDOW_WEIGHT_WAVES and i.math_waves == TMA_WINDOW_WEIGHT_WAVES[0],
                f"backward_weight window needs waves {list(TMA_WINDOW_WEIGHT_WAVES)} and math "
                "waves "
                f"{TMA_WINDOW_WEIGHT_WAVES[0]} (three warpgroups, one a filter row)",
            ),
            (
                i.epilogue is Epilogue.DEFAULT,
                "backward_weight window adds its sums from registers: epilogue default",
            ),
            (
                i.stages in TMA_WINDOW_WEIGHT_STAGES,
                f"backward_weight window takes stages in {TMA_WINDOW_WEIGHT_STAGES}",
            ),
        )
        if bw
        else (
            (
                i.warp_tile == (64, tm, 16) and i.swap_ab,
                "specialization window computes the transposed tile: swap_ab, warp tile (64, tile "
                "M, 16)",
            ),
            (
                i.waves == TMA_PINGPONG_WAVES and is_pingpong(i),
                f"specialization window needs waves {list(TMA_PINGPONG_WAVES)} and math waves "
                f"{2 * TMA_PINGPONG_WAVES[0]} (two warpgroups taking turns on windows)",
            ),
            (
                i.epilogue is Epilogue.CSHUFFLE,
                "specialization window stages its tile through shared memory: epilogue cshuffle",
            ),
            (
                i.stages in TMA_WINDOW_STAGES,
                f"specialization window takes stages (patch buffers) in {TMA_WINDOW_STAGES}",
            ),
        )
    )
    for ok, reason in common + variant:
        if not ok:
            return reason
    return None


def _tile_n(i: KernelInstance) -> tuple[int, ...]:
    return TMA_FORWARD_TILE_N if i.variant is Variant.FORWARD else TMA_TILE_N


def check_wavelet_tma(i: KernelInstance, a: ArchSpec) -> str | None:
    """What TmaTraits (pipeline/tma_ws.hpp) accepts, as one list of reasons. Any ndim: a 3D instance
    runs a problem whose depth is one tap (filter 1, stride 1, no depth padding) as 2D over N x D
    images (kernel_base.hpp, fold_depth) and any other through 5D im2col maps."""
    if is_window(i):
        return _window(i) or _wavelet_tma_common(i, a)
    math_waves = i.waves[0] * i.waves[1] * i.waves[2]
    tm, tn, _ = i.tile
    groups = i.waves[0] // 4
    checks = (
        (
            (i.math_waves == math_waves and math_waves in TMA_MATH_WAVES and i.waves[1:] == (1, 1))
            or (is_pingpong(i) and i.waves == TMA_PINGPONG_WAVES),
            f"wavelet_tma math waves = waves M in {TMA_MATH_WAVES}, waves (M, 1, 1); or ping-pong: "
            f"waves {list(TMA_PINGPONG_WAVES)}, math waves {2 * TMA_PINGPONG_WAVES[0]}",
        ),
        (
            not is_pingpong(i) or (not i.swap_ab and i.specialization is Specialization.DEFAULT),
            "ping-pong (two warpgroups taking turns on units) needs specialization default, no "
            "swap_ab",
        ),
        (
            i.swap_ab or (tn in _tile_n(i) and i.warp_tile == (64, tn, 16)),
            f"wavelet_tma needs tile N in {TMA_TILE_N} (forward: {TMA_FORWARD_TILE_N}) and warp "
            "tile (64, tile N, 16)",
        ),
        (
            i.swap_ab
            or (
                groups > 0
                and tm % (64 * groups) == 0
                and tm // (64 * groups) in TMA_SLICES_M
                and tm <= TMA_MAX_TILE_M
            ),
            f"wavelet_tma needs tile M = 64 x {TMA_SLICES_M} per math warpgroup, at most "
            f"{TMA_MAX_TILE_M}",
        ),
        # swap_ab: the instruction's M is the tile's 64 output channels, its N the warpgroup's
        # pixels
        (
            not i.swap_ab
            or (
                tn == TMA_SWAP_TILE_N
                and groups > 0
                and tm % groups == 0
                and tm <= TMA_MAX_TILE_M
                and i.warp_tile == (64, tm // groups, 16)
                and tm // groups in TMA_SWAP_PIXELS
            ),
            f"swap_ab needs tile N {TMA_SWAP_TILE_N} and warp tile (64, tile M / warpgroups, 16), "
            f"tile M / warpgroups in {TMA_SWAP_PIXELS}, tile M at most {TMA_MAX_TILE_M}",
        ),
        (
            not i.swap_ab or i.variant is not Variant.BACKWARD_WEIGHT,
            "swap_ab is for forward / backward_data",
        ),
        (
            not i.swap_ab or i.epilogue is Epilogue.DEFAULT,
            "swap_ab stores from registers (epilogue default): a thread's values of a pixel are 8 "
            "channels apart",
        ),
        (
            i.specialization in (Specialization.DEFAULT, Specialization.STRIDE1),
            "wavelet_tma has no 1x1 specializations (the im2col map covers them): default or "
            "stride1",
        ),
        # backward_weight's row form: one warpgroup's 64 output channels x a filter row's taps
        (
            not is_row_form(i)
            or (tm == 64 and i.waves == (4, 1, 1) and not is_pingpong(i) and tn >= 128),
            "backward_weight stride1 (one filter row's taps per tile) needs tile M 64, waves [4, "
            "1, 1], "
            "no ping-pong, tile N >= 128 (tile N / 64 = the filter width it serves)",
        ),
    )
    for ok, reason in checks:
        if not ok:
            return reason
    return _wavelet_tma_common(i, a)


def _wavelet_tma_common(i: KernelInstance, a: ArchSpec) -> str | None:
    """What every wavelet_tma kernel (pipeline/tma_ws.hpp, pipeline/tma_window.hpp) needs."""
    checks = (
        (
            a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA,
            "wavelet_tma needs a wgmma warp tile (64 x tile N x 16)",
        ),
        (
            i.load_waves == TMA_LOAD_WAVES,
            f"wavelet_tma has one load warp: load waves {TMA_LOAD_WAVES}",
        ),
        (
            i.tile[2] * DATATYPE_BYTES[i.datatype] == TMA_ROW_BYTES,
            f"wavelet_tma needs tile K x element bytes = {TMA_ROW_BYTES}",
        ),
        (
            (i.vec_a, i.vec_b, i.vec_c) == (8, 8, 8),
            "wavelet_tma moves 16-byte rows: vector [8, 8, 8]",
        ),
        (
            i.reduction is Reduction.SPLITK and i.stage is Stage.ONE,
            "wavelet_tma splits its reduction with fp32 reductions into one workspace: split-K, "
            "stage one (k_batch 1, auto or fixed)",
        ),
        (i.groups_to_merge == 1, "wavelet_tma does not merge groups"),
    )
    for ok, reason in checks:
        if not ok:
            return reason
    return None
