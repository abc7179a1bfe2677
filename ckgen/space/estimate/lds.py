"""Shared memory an instance needs (the "lds" and "direct_resources" rules)."""

from __future__ import annotations

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import LDS_ROW_PAD_BYTES
from ckgen.model.vocab import DATATYPE_BYTES, GRAD_MASKS, Epilogue, MathUnit, Pipeline, Variant
from ckgen.space.estimate.direct import direct_lds_bytes
from ckgen.space.estimate.tma import tma_lds_bytes


def lds_bytes(i: KernelInstance, a: ArchSpec | None = None) -> int:
    """Shared memory of the main loop or of the cshuffle epilogue's C tile, whichever is larger
    (they reuse the same buffer). Mirrors ConfigTraits::kSmemBytes (templates/include/ckgen/
    core/config_traits.hpp): per stage one A and one B tile stored along their contiguous global
    dimension
    (A is K-major except in backward_weight, B only in forward), each row padded by 16 bytes or
    one vector, whichever is larger. wgmma instances (arch given) store unpadded core-matrix
    tiles; wavelet adds two 8-byte mbarriers per stage; a multistage gradient mask a second A
    tile per stage (the saved output y). The direct kernel and wavelet_tma have their own layouts
    (direct_lds_bytes, tma_lds_bytes)."""
    if i.pipeline is Pipeline.DIRECT:
        return direct_lds_bytes(i, a.warp_size if a is not None else 64)
    if i.pipeline is Pipeline.WAVELET_TMA:
        return tma_lds_bytes(i)
    e = DATATYPE_BYTES[i.datatype]
    tm, tn, tk = i.tile
    pad_a = max(LDS_ROW_PAD_BYTES // e, i.vec_a)
    pad_b = max(LDS_ROW_PAD_BYTES // e, i.vec_b)
    if a is not None and a.math_unit_for(i.datatype, i.warp_tile) is MathUnit.WGMMA:
        pad_a = pad_b = 0
    a_k_major = i.variant is not Variant.BACKWARD_WEIGHT
    b_k_major = i.variant is Variant.FORWARD
    a_tile = tm * (tk + pad_a) if a_k_major else tk * (tm + pad_a)
    b_tile = tn * (tk + pad_b) if b_k_major else tk * (tn + pad_b)
    a_tiles = 2 if i.pipeline is Pipeline.MULTISTAGE and i.activation in GRAD_MASKS else 1
    main = max(1, i.stages) * (a_tiles * a_tile + b_tile) * e
    cshuffle = tm * (tn * 4 + LDS_ROW_PAD_BYTES) if i.epilogue is Epilogue.CSHUFFLE else 0
    barriers = 16 * i.stages if i.pipeline is Pipeline.WAVELET else 0
    return max(main, cshuffle) + barriers
