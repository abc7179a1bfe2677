"""The vocabulary of ckgen: every enumerated value, its YAML spelling, its short name
(used in instance names) and its C++ tag.

This module is the single source of truth for these words. The C++ header
``templates/include/ckgen/core/vocab.hpp`` is rendered from it
(``python -m ckgen.model.vocab``) and a
test checks that the committed copy is current.
"""

from __future__ import annotations

import enum
from typing import NamedTuple, TypeVar


class Word(enum.Enum):
    """An enumerated value with a YAML spelling (``value``), a short name and a C++ tag."""

    short: str
    cpp: str

    def __new__(cls, value: str, short: str = "", cpp: str = "") -> Word:
        obj = object.__new__(cls)
        obj._value_ = value
        obj.short = short
        obj.cpp = cpp
        return obj

    def __str__(self) -> str:
        return self.value

    # Members are singletons compared by identity: identity hashing is exact and much faster
    # than Enum's name hashing (the expansion hashes millions of them).
    __hash__ = object.__hash__

    @classmethod
    def allowed(cls) -> list[str]:
        return [m.value for m in cls]

    @classmethod
    def cpp_type(cls) -> str:
        return cls.__name__

    @property
    def cpp_ref(self) -> str:
        return f"ckgen::{type(self).__name__}::{self.cpp}"


class Variant(Word):
    FORWARD = ("forward", "fwd", "Forward")
    BACKWARD_DATA = ("backward_data", "bwd_data", "BackwardData")
    BACKWARD_WEIGHT = ("backward_weight", "bwd_weight", "BackwardWeight")


class DataType(Word):
    FP16 = ("fp16", "fp16", "FP16")
    BF16 = ("bf16", "bf16", "BF16")
    FP32 = ("fp32", "fp32", "FP32")


DATATYPE_BYTES = {DataType.FP16: 2, DataType.BF16: 2, DataType.FP32: 4}


class Pipeline(Word):
    """The main loop. basic / multistage / wavelet are implicit-GEMM pipelines (LDS tiles, matrix
    instructions); wavelet_tma is the sm_90a forward wavelet whose load warpgroup feeds wgmma
    through the tensor-memory-access engine (templates/include/ckgen/pipeline/tma_ws.hpp); direct is
    no GEMM at all: depthwise convolution (C = K = 1 per group) or small groups
    (C = K = tile K per group) with each thread looping over the filter taps
    (templates/include/ckgen/depthwise.hpp); pointwise is the sm_90a GEMM of 1x1 layers at unit
    strides without padding (forward, backward_data), whose row tiles are contiguous in memory and
    move as single bulk copies (templates/include/ckgen/pipeline/pointwise.hpp)."""

    BASIC = ("basic", "basic", "Basic")
    MULTISTAGE = ("multistage", "ms", "Multistage")
    WAVELET = ("wavelet", "wavelet", "Wavelet")
    WAVELET_TMA = ("wavelet_tma", "wltma", "WaveletTma")
    DIRECT = ("direct", "direct", "Direct")
    POINTWISE = ("pointwise", "pw", "Pointwise")


# Pipelines that run exactly one stage: their name token carries no stage count.
SINGLE_STAGE_PIPELINES = (Pipeline.BASIC, Pipeline.DIRECT)
# The warp-specialized pipelines (load waves + math waves).
WAVELET_PIPELINES = (Pipeline.WAVELET, Pipeline.WAVELET_TMA)


class Scheduler(Word):
    INTRAWAVE = ("intrawave", "intra", "Intrawave")
    INTERWAVE = ("interwave", "inter", "Interwave")


class Epilogue(Word):
    DEFAULT = ("default", "direct", "Default")
    CSHUFFLE = ("cshuffle", "cshuffle", "CShuffle")


class Specialization(Word):
    DEFAULT = ("default", "spdef", "Default")
    FILTER1X1_PAD0 = ("filter1x1_pad0", "f1x1p0", "Filter1x1Pad0")
    FILTER1X1_STRIDE1_PAD0 = ("filter1x1_stride1_pad0", "f1x1s1p0", "Filter1x1Stride1Pad0")
    # wavelet_tma at stride 1. forward / backward_data: a block stages its input rows once per
    # channel chunk and reads every filter tap from them (no im2col copy per tap);
    # backward_weight (width stride 1, the row form): a tile is one filter row's taps x 64
    # input channels, a k tile a segment of an output row whose x pixels every tap shares
    STRIDE1 = ("stride1", "s1", "Stride1")
    # wavelet_tma forward of 64-channel groups (C = K = 64) at stride 1: a block keeps its group's
    # filter in shared memory, a tile is a window of output rows x 8 columns whose input patch is
    # copied once and read by every tap (templates/include/ckgen/pipeline/tma_window.hpp)
    WINDOW = ("window", "win", "Window")


class ChannelOp(Word):
    """Fused per-output-channel operation, with fp32 vectors of G*K values indexed by g*K + k.
    Forward, on the fp32 accumulator: bias (acc + bias) or scale_shift (acc * scale + bias: a
    folded BatchNorm). backward_weight: bias_grad also writes db[g*K + k], the fp32 sum of dy
    (after its gradient mask) over the images and output pixels."""

    NONE = ("none", "none", "Identity")
    BIAS = ("bias", "bias", "Bias")
    SCALE_SHIFT = ("scale_shift", "ss", "ScaleShift")
    BIAS_GRAD = ("bias_grad", "bgrad", "BiasGrad")


class Activation(Word):
    """Fused activation. Forward: applied after the channel operation and the residual add;
    relu6 clamps to [0, 6]; leaky_relu's slope is a run-time argument. Backward (the d* words,
    GRAD_MASKS): the activation's gradient mask, computed from the saved forward output y (dy's
    shape, layout and type) and multiplied into dy as it is loaded: drelu (y > 0), drelu6
    (0 < y < 6), dleaky_relu (1 where y > 0, else the slope)."""

    NONE = ("none", "none", "Identity")
    RELU = ("relu", "relu", "Relu")
    RELU6 = ("relu6", "relu6", "Relu6")
    LEAKY_RELU = ("leaky_relu", "lrelu", "LeakyRelu")
    SILU = ("silu", "silu", "Silu")
    GELU_TANH = ("gelu_tanh", "gelutanh", "GeluTanh")
    DRELU = ("drelu", "drelu", "DRelu")
    DRELU6 = ("drelu6", "drelu6", "DRelu6")
    DLEAKY_RELU = ("dleaky_relu", "dlrelu", "DLeakyRelu")


# The backward gradient masks (applied to dy) and the forward activation each is the gradient of.
GRAD_MASKS: dict[Activation, Activation] = {
    Activation.DRELU: Activation.RELU,
    Activation.DRELU6: Activation.RELU6,
    Activation.DLEAKY_RELU: Activation.LEAKY_RELU,
}
# The channel operations of the backward passes (the others are forward epilogue operations).
BACKWARD_CHANNEL_OPS: frozenset[ChannelOp] = frozenset({ChannelOp.BIAS_GRAD})


# The residual add's spelling in a fusion value and its name token.
RESIDUAL = "residual"
RESIDUAL_SHORT = "res"
# Forward statistics of the written output for a following training BatchNorm: per output
# channel the fp32 sum and sum of squares of y over the images and pixels (cuDNN's "genstats").
STATS = "stats"
STATS_SHORT = "stats"
# Output datatype conversion: the output is written in another datatype than the inputs
# (``to_fp32``: an fp16 convolution writing fp32). Spelled ``to_<datatype>`` last in a fusion
# value; name token ``o<datatype short>`` (``ofp32``).
CONVERT = "to"
CONVERT_SHORT = "o"


class Reduction(Word):
    """How backward_weight splits its long reduction dimension."""

    SPLITK = ("splitk", "splitk", "SplitK")
    STREAMK_LINEAR = ("streamk_linear", "sklin", "StreamKLinear")
    STREAMK_TREE = ("streamk_tree", "sktree", "StreamKTree")


class Stage(Word):
    """One-stage (fp32 atomics straight into an fp32 workspace, then convert) or two-stage
    (per-split fp32 partials in a workspace, then a reduce + convert kernel)."""

    ONE = ("one", "1st", "One")
    TWO = ("two", "2st", "Two")


class MathUnit(Word):
    """The matrix-instruction family a target provides (from arch_specs.json)."""

    MMA_SYNC = ("mma_sync", "mma", "MmaSync")
    WGMMA = ("wgmma", "wgmma", "Wgmma")
    MFMA = ("mfma", "mfma", "Mfma")
    WMMA = ("wmma", "wmma", "Wmma")
    FMA = ("fma", "fma", "Fma")


class Platform(Word):
    NVIDIA = ("nvidia", "nv", "Nvidia")
    AMD = ("amd", "amd", "Amd")


LAYOUTS: dict[int, tuple[str, str, str]] = {
    1: ("NWGC", "GKXC", "NWGK"),
    2: ("NHWGC", "GKYXC", "NHWGK"),
    3: ("NDHWGC", "GKZYXC", "NDHWGK"),
}

ALL_WORDS: tuple[type[Word], ...] = (
    Variant,
    DataType,
    Pipeline,
    Scheduler,
    Epilogue,
    ChannelOp,
    Activation,
    Specialization,
    Reduction,
    Stage,
    MathUnit,
    Platform,
)

W = TypeVar("W", bound=Word)


def parse_word(cls: type[W], text: str) -> W:
    """The member of ``cls`` spelled ``text`` (YAML spelling); ValueError otherwise."""
    try:
        return cls(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a {cls.__name__.lower()}; allowed: {', '.join(cls.allowed())}"
        ) from None


def by_short(cls: type[W], short: str) -> W:
    for m in cls:
        if m.short == short:
            return m
    raise ValueError(f"{short!r} is not a short {cls.__name__.lower()} name")


class FusionParts(NamedTuple):
    """The parts of a fusion spelling: channel op, activation, residual add, statistics and
    the output's datatype (None: the inputs')."""

    channel_op: ChannelOp
    activation: Activation
    residual: bool = False
    stats: bool = False
    out_datatype: DataType | None = None


def fusion_spelling(
    op: ChannelOp,
    act: Activation,
    residual: bool,
    stats: bool = False,
    out_datatype: DataType | None = None,
) -> str:
    """The YAML spelling of a fused epilogue: ``<op>[_<activation>][_residual][_stats]
    [_to_<datatype>]`` without the parts that are off (``bias_relu``,
    ``scale_shift_relu_residual``, ``silu``, ``stats``, ``bias_relu_to_fp32``), ``none`` when
    nothing is fused."""
    parts = [w.value for w in (op, act) if w.value != "none"]
    parts += [RESIDUAL] * residual + [STATS] * stats
    if out_datatype is not None:
        parts.append(f"{CONVERT}_{out_datatype.value}")
    return "_".join(parts) or "none"


def parse_fusion(text: str) -> FusionParts:
    """The parts of a fusion spelling; ValueError otherwise."""
    if text == "none":
        return FusionParts(ChannelOp.NONE, Activation.NONE)
    rest, out = text, None
    for d in DataType:
        tail = f"{CONVERT}_{d.value}"
        if rest == tail or rest.endswith(f"_{tail}"):
            out, rest = d, rest[: -len(tail)].rstrip("_")
            break
    if out is not None and not rest:
        return FusionParts(ChannelOp.NONE, Activation.NONE, out_datatype=out)
    found: list[Word | str] = []
    slots: tuple[list[Word | str], ...] = (
        [*list(ChannelOp)[1:]],
        [*list(Activation)[1:]],
        [RESIDUAL],
        [STATS],
    )
    for options in slots:
        for w in sorted(options, key=lambda w: -len(str(w))):
            if rest == str(w) or rest.startswith(f"{w}_"):
                found.append(w)
                rest = rest[len(str(w)) + 1 :]
                break
    op = next((w for w in found if isinstance(w, ChannelOp)), ChannelOp.NONE)
    act = next((w for w in found if isinstance(w, Activation)), Activation.NONE)
    parts = FusionParts(op, act, RESIDUAL in found, STATS in found, out)
    if rest or not found or fusion_spelling(*parts) != text:
        raise ValueError(
            f"{text!r} is not a fusion: none, or <op>[_<activation>][_{RESIDUAL}][_{STATS}]"
            f"[_{CONVERT}_<datatype>] with op one of {', '.join(ChannelOp.allowed()[1:])}, "
            f"activation one of {', '.join(Activation.allowed()[1:])} and datatype one of "
            f"{', '.join(DataType.allowed())} (each part optional), e.g. bias_relu, "
            "scale_shift_relu_stats, bias_relu_to_fp32, bias_grad_drelu"
        )
    return parts


def render_cpp_header() -> str:
    """The C++ mirror of this module (templates/include/ckgen/core/vocab.hpp)."""
    lines = [
        "// Rendered from ckgen/model/vocab.py by `python -m ckgen.model.vocab`; do not edit by "
        "hand.",
        "#pragma once",
        "",
        "namespace ckgen {",
        "",
    ]
    for cls in ALL_WORDS:
        members = ", ".join(m.cpp for m in cls)
        lines.append(f"enum class {cls.__name__} {{ {members} }};")
        lines.append(f"inline constexpr const char* to_string({cls.__name__} v) {{")
        lines.append("  switch (v) {")
        for m in cls:
            lines.append(f'    case {cls.__name__}::{m.cpp}: return "{m.value}";')
        lines.append("  }")
        lines.append('  return "?";')
        lines.append("}")
        lines.append("")
    predicates: list[tuple[str, str, list[str]]] = [
        ("is_grad_mask", "Activation", [m.cpp for m in GRAD_MASKS]),
        ("is_backward_op", "ChannelOp", [m.cpp for m in ChannelOp if m in BACKWARD_CHANNEL_OPS]),
    ]
    for fn, cls_name, cases in predicates:
        test = " || ".join(f"v == {cls_name}::{m}" for m in cases)
        lines.append(f"inline constexpr bool {fn}({cls_name} v) {{ return {test}; }}")
    lines.append("")
    lines.append("// An activation's token in instance names (Activation.short, model/naming.py).")
    lines.append("inline constexpr const char* name_token(Activation v) {")
    lines.append("  switch (v) {")
    for m in Activation:
        lines.append(f'    case Activation::{m.cpp}: return "{m.short}";')
    lines.append("  }")
    lines.append('  return "?";')
    lines.append("}")
    lines.append("")
    lines.append("// The bytes of one element (DATATYPE_BYTES).")
    lines.append("inline constexpr int elem_bytes(DataType v) {")
    lines.append("  switch (v) {")
    for m in DataType:
        lines.append(f"    case DataType::{m.cpp}: return {DATATYPE_BYTES[m]};")
    lines.append("  }")
    lines.append("  return 0;")
    lines.append("}")
    lines.append("")
    lines.append("}  // namespace ckgen")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_cpp_header(), end="")
