"""The fields of an instance or space entry (FIELDS): each one's validator, meaning and default,
and the human-readable schema ``ckgen schema`` prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ckgen.config.values import (
    boolean,
    fusion,
    integer,
    k_batch,
    pair,
    triple,
    vector,
    warp_tile,
    word,
)
from ckgen.model.limits import MAX_TILE_DIM
from ckgen.model.vocab import (
    Activation,
    ChannelOp,
    DataType,
    Epilogue,
    FusionParts,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Word,
)

Parsed = Any


@dataclass(frozen=True)
class FieldSpec:
    parse: Callable[[Any], Parsed]
    doc: str
    default: Any
    is_list_value: bool = False  # a single value is itself a YAML list (triples, pairs)


FIELDS: dict[str, FieldSpec] = {
    "datatype": FieldSpec(
        word(DataType),
        "element type (fp32 accumulation): " + ", ".join(DataType.allowed()),
        DataType.FP16,
    ),
    "ndim": FieldSpec(integer(1, 3), "spatial dimensions: 1, 2 or 3", 2),
    "tile": FieldSpec(
        triple(1, MAX_TILE_DIM),
        "block tile [M, N, K] of the implicit GEMM (direct: [pixels, channels, channels per "
        "group])",
        (128, 128, 32),
        True,
    ),
    "waves": FieldSpec(
        triple(1, 16),
        "waves (warps) per block along [M, N, K] (direct: [w, 1, 1])",
        (2, 2, 1),
        True,
    ),
    "warp_tile": FieldSpec(
        warp_tile,
        "matrix instruction [M, N, K], or 'auto' for every legal one (direct: [1, 1, 1] FMA, [16, "
        "8, 16] mma.sync: forward / backward_data 8-channel groups, backward_weight groups of "
        "1-8)",
        "auto",
        True,
    ),
    "pipeline": FieldSpec(
        word(Pipeline), "main loop: " + ", ".join(Pipeline.allowed()), Pipeline.BASIC
    ),
    "stages": FieldSpec(
        integer(1, 16),
        "buffers in flight (basic, direct: 1; multistage, wavelet, wavelet_tma: 2..8)",
        1,
    ),
    "scheduler": FieldSpec(
        word(Scheduler),
        "instruction scheduling (AMD): " + ", ".join(Scheduler.allowed()),
        Scheduler.INTRAWAVE,
    ),
    "wavelet": FieldSpec(
        pair(0, 16), "[load_waves, math_waves] of the wavelet pipeline", (0, 0), True
    ),
    "epilogue": FieldSpec(
        word(Epilogue), "how C is stored: " + ", ".join(Epilogue.allowed()), Epilogue.DEFAULT
    ),
    "swap_ab": FieldSpec(
        boolean,
        "wavelet_tma forward / backward_data with tile N 64: the MMA computes the transposed tile "
        "(output channels on the instruction's M, tile M / warpgroups pixels on its N): fewer "
        "shared-memory bytes per FLOP",
        False,
    ),
    "vector": FieldSpec(
        vector, "elements per global access [a, b, c] (or one integer for all)", (8, 8, 8), True
    ),
    "specialization": FieldSpec(
        word(Specialization),
        "problem specialization: " + ", ".join(Specialization.allowed()),
        Specialization.DEFAULT,
    ),
    "groups_to_merge": FieldSpec(
        integer(1, 1024), "groups computed by one tile (1, 2, 4, ..., 32)", 1
    ),
    "k_batch": FieldSpec(
        k_batch,
        "split-K count, or 'auto' (chosen per problem / RunOptions::k_batch); forward and "
        "backward_data: 1 never splits",
        None,
    ),
    "reduction": FieldSpec(
        word(Reduction),
        "backward_weight reduction: " + ", ".join(Reduction.allowed()),
        Reduction.SPLITK,
    ),
    "persistent": FieldSpec(boolean, "StreamK: persistent data-parallel section", False),
    "stage": FieldSpec(
        word(Stage), "split-K: one-stage (atomics) or two-stage (workspace + reduce)", Stage.ONE
    ),
    "fusion": FieldSpec(
        fusion,
        "fused operations: none, or <op>[_<activation>][_residual][_stats][_to_<datatype>] with op "
        + ", ".join(ChannelOp.allowed()[1:])
        + " and activation "
        + ", ".join(Activation.allowed()[1:])
        + "; forward: the epilogue act(op(acc) + beta * residual) (e.g. bias_relu,"
        " scale_shift_relu_residual), stats: also the per-channel sum and sum of squares of the"
        " output for a training BatchNorm, to_<datatype>: the output written in another datatype"
        " (" + ", ".join(DataType.allowed()) + "; e.g. bias_relu_to_fp32); backward: a gradient"
        " mask on dy (d*) and,"
        " backward_weight, bias_grad (e.g. drelu, bias_grad_drelu)",
        FusionParts(ChannelOp.NONE, Activation.NONE),
    ),
}


def schema_text() -> str:
    """Human-readable schema (``ckgen schema``)."""
    rows = [
        f"  {k:16s} {v.doc} (default: {_show_default(k, v.default)})" for k, v in FIELDS.items()
    ]
    return "Fields of an instance or space entry:\n" + "\n".join(rows) + "\n"


def _show_default(name: str, d: Any) -> str:
    if name == "k_batch":
        return "auto for backward_weight, 1 otherwise"
    if name == "fusion":
        return "none"
    if isinstance(d, Word):
        return d.value
    if isinstance(d, tuple):
        return "[" + ", ".join(map(str, d)) + "]"
    return str(d).lower() if isinstance(d, bool) else str(d)
