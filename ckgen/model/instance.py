"""KernelInstance: one fully specified kernel configuration."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any

from ckgen.model.vocab import (
    LAYOUTS,
    Activation,
    ChannelOp,
    DataType,
    Epilogue,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
    Word,
    fusion_spelling,
)

Triple = tuple[int, int, int]


@dataclass(frozen=True, order=False)
class KernelInstance:
    variant: Variant
    datatype: DataType
    ndim: int
    tile: Triple
    waves: Triple
    warp_tile: Triple
    pipeline: Pipeline = Pipeline.BASIC
    stages: int = 1
    scheduler: Scheduler = Scheduler.INTRAWAVE
    load_waves: int = 0
    math_waves: int = 0
    epilogue: Epilogue = Epilogue.DEFAULT
    swap_ab: bool = False
    vec_a: int = 8
    vec_b: int = 8
    vec_c: int = 8
    specialization: Specialization = Specialization.DEFAULT
    groups_to_merge: int = 1
    k_batch: int = 1
    reduction: Reduction = Reduction.SPLITK
    persistent: bool = False
    stage: Stage = Stage.ONE
    # The fused epilogue (forward): act(op(acc) + beta * residual), in fp32 before conversion,
    # and (stats) the per-channel sum and sum of squares of the written output; backward: a
    # gradient mask on dy (the d* activations) and bias_grad (channel_op).
    channel_op: ChannelOp = ChannelOp.NONE
    activation: Activation = Activation.NONE
    residual: bool = False
    stats: bool = False
    # The output's datatype when it is not the inputs' (a fused conversion; None: datatype).
    out_datatype: DataType | None = None
    # Where it came from (file:line); not part of its identity.
    origin: str = field(default="", compare=False, hash=False)

    @cached_property
    def name(self) -> str:
        from ckgen.model.naming import instance_name

        return instance_name(self)

    @property
    def layouts(self) -> tuple[str, str, str]:
        return LAYOUTS[self.ndim]

    @property
    def fusion(self) -> str:
        """The fused epilogue's spelling (``none`` for a plain convolution)."""
        return fusion_spelling(
            self.channel_op, self.activation, self.residual, self.stats, self.out_datatype
        )

    @property
    def fused(self) -> bool:
        return self.fusion != "none"

    @property
    def output_datatype(self) -> DataType:
        """The datatype the output is written in."""
        return self.out_datatype or self.datatype

    @property
    def threads(self) -> int:
        """Waves per block (math waves plus load waves for wavelet)."""
        return self.waves[0] * self.waves[1] * self.waves[2] + self.load_waves

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Word):
                v = v.value
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out


def default_k_batch(variant: Variant) -> int:
    """0 means 'chosen per problem' and is the default for backward_weight; the others do not
    split."""
    return 0 if variant is Variant.BACKWARD_WEIGHT else 1


INSTANCE_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(KernelInstance) if f.name != "origin"
)

__all__ = ["KernelInstance", "INSTANCE_FIELDS", "default_k_batch", "asdict"]
