"""A fused epilogue (forward) or backward fusion (gradient mask, bias_grad) as the runtime asks
for it: the operations (Epilogue, from a fusion spelling such as ``bias_relu_residual`` or
``bias_grad_drelu``) and the C API's structs for them, ckgen_epilogue (the operations, as
vocabulary codes) and ckgen_epilogue_args (the operands), rendered into
dispatch/ckgen_dispatch.h by ``python -m ckgen.model.cxx``. Host-only."""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.model.vocab import (
    GRAD_MASKS,
    Activation,
    ChannelOp,
    DataType,
    fusion_spelling,
    parse_fusion,
)

# ckgen_epilogue, field by field: C name, C type, array length (0: a scalar). Codes are the
# members' positions in ChannelOp / Activation (the C++ enums' values); residual, stats 0 or 1;
# out_datatype 0 (the inputs' datatype) or 1 + the position in DataType.
C_EPILOGUE_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("channel_op", "int32_t", 0),
    ("activation", "int32_t", 0),
    ("residual", "int32_t", 0),
    ("stats", "int32_t", 0),
    ("out_datatype", "int32_t", 0),
)

# ckgen_epilogue_args (ckgen::EpilogueArgs): bias (G*K fp32; scale_shift's shift), scale (G*K
# fp32), residual (the output's shape, layout and datatype), beta (residual scale), alpha
# (leaky_relu's and dleaky_relu's slope), y (a gradient mask's saved forward output: dy's shape,
# layout and datatype), db (bias_grad's G*K fp32 output), stats (the 2*G*K fp32 output of a
# forward with stats: the sums of y per channel, then the sums of y squared).
C_EPILOGUE_ARGS_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("bias", "const float*", 0),
    ("scale", "const float*", 0),
    ("residual", "const void*", 0),
    ("beta", "float", 0),
    ("alpha", "float", 0),
    ("y", "const void*", 0),
    ("db", "float*", 0),
    ("stats", "float*", 0),
)


@dataclass(frozen=True)
class Epilogue:
    """The operations of a fused forward epilogue, ``y = act(op(acc) + beta * residual)``, or of
    a backward fusion (``drelu``, ``bias_grad_drelu``: dy times a gradient mask, bias_grad);
    ``stats``: a forward also writes the per-channel sum and sum of squares of its output;
    ``out_datatype``: a forward writes its output in this datatype (None: the inputs').

    ``Epilogue.parse("bias_relu")``; ``Epilogue()`` is a plain convolution."""

    channel_op: ChannelOp = ChannelOp.NONE
    activation: Activation = Activation.NONE
    residual: bool = False
    stats: bool = False
    out_datatype: DataType | None = None

    @staticmethod
    def parse(fusion: str | Epilogue | None) -> Epilogue:
        """From a fusion spelling (``none``, ``bias_relu``, ``scale_shift_silu_residual``, ...),
        an Epilogue or None (plain). ValueError for anything else."""
        if fusion is None:
            return PLAIN
        if isinstance(fusion, Epilogue):
            return fusion
        if not isinstance(fusion, str):
            raise ValueError(f"fusion must be a string such as 'bias_relu', got {fusion!r}")
        return Epilogue(*parse_fusion(fusion))

    @staticmethod
    def from_codes(
        channel_op: int, activation: int, residual: int, stats: int = 0, out_datatype: int = 0
    ) -> Epilogue:
        return Epilogue(
            list(ChannelOp)[channel_op],
            list(Activation)[activation],
            bool(residual),
            bool(stats),
            list(DataType)[out_datatype - 1] if out_datatype else None,
        )

    @property
    def fusion(self) -> str:
        return fusion_spelling(
            self.channel_op, self.activation, self.residual, self.stats, self.out_datatype
        )

    @property
    def fused(self) -> bool:
        return self != PLAIN

    @property
    def codes(self) -> tuple[int, int, int, int, int]:
        """(channel_op, activation, residual, stats, out_datatype) as ckgen_epilogue holds
        them."""
        out = list(DataType).index(self.out_datatype) + 1 if self.out_datatype else 0
        return (
            list(ChannelOp).index(self.channel_op),
            list(Activation).index(self.activation),
            int(self.residual),
            int(self.stats),
            out,
        )

    def output_datatype(self, datatype: DataType | str) -> DataType:
        """The datatype of the output of a convolution on ``datatype`` inputs."""
        if self.out_datatype is not None:
            return self.out_datatype
        return datatype if isinstance(datatype, DataType) else DataType(datatype)

    @property
    def needs_bias(self) -> bool:
        return self.channel_op in (ChannelOp.BIAS, ChannelOp.SCALE_SHIFT)

    @property
    def needs_y(self) -> bool:
        """A gradient mask: the saved forward output y."""
        return self.activation in GRAD_MASKS

    @property
    def needs_db(self) -> bool:
        """bias_grad: the G*K fp32 bias gradient it writes."""
        return self.channel_op is ChannelOp.BIAS_GRAD

    @property
    def needs_stats(self) -> bool:
        """stats: the 2*G*K fp32 sums (then sums of squares) of the output it writes."""
        return self.stats

    @property
    def needs_scale(self) -> bool:
        return self.channel_op is ChannelOp.SCALE_SHIFT

    def __str__(self) -> str:
        return self.fusion


PLAIN = Epilogue()
