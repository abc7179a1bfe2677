"""Which form of its kernel family an instance is: the math unit it runs on, the direct kernel's
matrix path, and the forms of wavelet_tma (ping-pong, row form, patch, window)."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import DIRECT_MMA_WARP_TILE
from ckgen.model.vocab import MathUnit, Pipeline, Specialization, Variant


def math_unit(i: KernelInstance, a: ArchSpec) -> MathUnit:
    """The math unit an instance runs on: the direct pipeline uses plain FMA, or mma.sync on
    its matrix path; pointwise mma.sync."""
    if i.pipeline is Pipeline.POINTWISE:
        return MathUnit.MMA_SYNC
    if i.pipeline is Pipeline.DIRECT:
        return MathUnit.MMA_SYNC if is_direct_mma(i) else MathUnit.FMA
    return a.math_unit_for(i.datatype, i.warp_tile)


def is_direct_mma(i: KernelInstance) -> bool:
    """A direct instance on the matrix path (pipeline/direct_mma.hpp)."""
    return i.pipeline is Pipeline.DIRECT and tuple(i.warp_tile) == DIRECT_MMA_WARP_TILE


def is_pingpong(i: KernelInstance) -> bool:
    """A wavelet_tma instance whose two math warpgroups take turns on units, each with the whole
    tile: twice the math waves of its wave layout."""
    return (
        i.pipeline is Pipeline.WAVELET_TMA
        and i.math_waves == 2 * i.waves[0] * i.waves[1] * i.waves[2]
    )


# backward_weight's row form: (pipeline, variant, specialization); the C++ reads it from
# core/forms.hpp is_row_form (rendered by ``python -m ckgen.model.cxx``).
ROW_FORM = (Pipeline.WAVELET_TMA, Variant.BACKWARD_WEIGHT, Specialization.STRIDE1)


def is_row_form(i: KernelInstance) -> bool:
    """backward_weight's row form (TmaTraits::kRows): wavelet_tma stride1 on backward_weight, a tile
    one filter row's taps, a k tile a segment of an output row; the default stage layout."""
    pipeline, variant, specialization = ROW_FORM
    return i.pipeline is pipeline and i.specialization is specialization and i.variant is variant


def is_patch(i: KernelInstance) -> bool:
    """forward / backward_data stride1 on wavelet_tma (TmaTraits::kPatch): staged input patches
    beside a ring of B tiles."""
    return (
        i.pipeline is Pipeline.WAVELET_TMA
        and i.specialization is Specialization.STRIDE1
        and i.variant is not Variant.BACKWARD_WEIGHT
    )


def is_window(i: KernelInstance) -> bool:
    """window on wavelet_tma (pipeline/tma_window.hpp, pipeline/tma_window_weight.hpp): a tile a
    window of output rows x 8 columns, every tap read from one copied input patch."""
    return i.pipeline is Pipeline.WAVELET_TMA and i.specialization is Specialization.WINDOW
