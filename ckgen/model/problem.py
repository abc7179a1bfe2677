"""Convolution problems on the Python side: the shapes CSV format (name,ndim,G,N,C,K,input,
filter,stride,dilation,pad_left,pad_right; sizes as 'HxW'), and the JSON form the tuning
database stores. Host-only (no GPU, no compiled library)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError

Dims = tuple[int, int, int]


def _dims(v: int | Sequence[int], ndim: int, fill: int, what: str) -> Dims:
    if isinstance(v, int):
        vals = [v] * ndim
    else:
        vals = [int(x) for x in v]
    if len(vals) != ndim:
        raise CkgenError(f"{what}: expected {ndim} values for a {ndim}D problem, got {list(vals)}")
    return tuple([fill] * (3 - ndim) + vals)  # type: ignore[return-value]


def _parse_x(text: str, ndim: int, fill: int, what: str) -> Dims:
    try:
        vals = [int(t) for t in text.strip().split("x")]
    except ValueError:
        raise CkgenError(f"{what}: {text!r} is not sizes like 3x3") from None
    if len(vals) == 1 and ndim > 1:
        vals = vals * ndim
    return _dims(vals, ndim, fill, what)


# The C API's problem struct (ckgen_problem of dispatch/ckgen_dispatch.h, rendered by
# ``python -m ckgen.model.cxx``; ckgen.runtime.capi.CProblem), field by field: C name, C type,
# array length (0: a scalar), the Problem attribute it holds (None: 0). Sizes as 3 spatial dims
# (D, H, W) like ckgen::ConvProblem, whose fields are these less `reserved`, plus the computed
# `out`.
C_PROBLEM_FIELDS: tuple[tuple[str, str, int, str | None], ...] = (
    ("ndim", "int32_t", 0, "ndim"),
    ("reserved", "int32_t", 0, None),
    ("G", "int64_t", 0, "G"),
    ("N", "int64_t", 0, "N"),
    ("C", "int64_t", 0, "C"),
    ("K", "int64_t", 0, "K"),
    ("in", "int64_t", 3, "input"),
    ("filter", "int64_t", 3, "filter"),
    ("stride", "int64_t", 3, "stride"),
    ("dilation", "int64_t", 3, "dilation"),
    ("pad_l", "int64_t", 3, "pad_l"),
    ("pad_r", "int64_t", 3, "pad_r"),
)


@dataclass(frozen=True)
class Problem:
    """A grouped convolution (C and K per group), held as 3 spatial dims like ckgen::ConvProblem.

    ``Problem.make(G=1, N=2, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)``"""

    ndim: int
    G: int
    N: int
    C: int
    K: int
    input: Dims
    filter: Dims
    stride: Dims = (1, 1, 1)
    dilation: Dims = (1, 1, 1)
    pad_l: Dims = (0, 0, 0)
    pad_r: Dims = (0, 0, 0)
    name: str = field(default="", compare=False)

    @staticmethod
    def make(
        *,
        C: int,
        K: int,
        input: Sequence[int],
        filter: Sequence[int],
        G: int = 1,
        N: int = 1,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        pad: int | Sequence[int] = 0,
        pad_l: int | Sequence[int] | None = None,
        pad_r: int | Sequence[int] | None = None,
        name: str = "",
    ) -> Problem:
        nd = len(input)
        if not 1 <= nd <= 3 or len(filter) != nd:
            raise CkgenError(
                f"input {list(input)} and filter {list(filter)} must have 1..3 equal dims"
            )
        return Problem(
            ndim=nd,
            G=G,
            N=N,
            C=C,
            K=K,
            input=_dims(input, nd, 1, "input"),
            filter=_dims(filter, nd, 1, "filter"),
            stride=_dims(stride, nd, 1, "stride"),
            dilation=_dims(dilation, nd, 1, "dilation"),
            pad_l=_dims(pad if pad_l is None else pad_l, nd, 0, "pad_l"),
            pad_r=_dims(pad if pad_r is None else pad_r, nd, 0, "pad_r"),
            name=name,
        )

    @property
    def output(self) -> Dims:
        out = []
        for i in range(3):
            eff = (self.filter[i] - 1) * self.dilation[i] + 1
            span = self.input[i] + self.pad_l[i] + self.pad_r[i] - eff
            out.append(0 if span < 0 else span // self.stride[i] + 1)
        return tuple(out)  # type: ignore[return-value]

    def flops(self) -> float:
        f = self.filter[0] * self.filter[1] * self.filter[2]
        o = self.output
        return 2.0 * self.G * self.N * self.K * self.C * f * o[0] * o[1] * o[2]

    def to_json(self) -> dict[str, Any]:
        return {
            "ndim": self.ndim,
            "G": self.G,
            "N": self.N,
            "C": self.C,
            "K": self.K,
            "in": list(self.input),
            "filter": list(self.filter),
            "stride": list(self.stride),
            "dilation": list(self.dilation),
            "pad_l": list(self.pad_l),
            "pad_r": list(self.pad_r),
        }

    @staticmethod
    def from_json(d: dict[str, Any], name: str = "") -> Problem:
        return Problem(
            ndim=int(d["ndim"]),
            G=int(d["G"]),
            N=int(d["N"]),
            C=int(d["C"]),
            K=int(d["K"]),
            input=tuple(d["in"]),
            filter=tuple(d["filter"]),
            stride=tuple(d["stride"]),
            dilation=tuple(d["dilation"]),
            pad_l=tuple(d["pad_l"]),
            pad_r=tuple(d["pad_r"]),
            name=name,
        )

    def key(self) -> tuple:
        return (
            self.ndim,
            self.G,
            self.N,
            self.C,
            self.K,
            self.input,
            self.filter,
            self.stride,
            self.dilation,
            self.pad_l,
            self.pad_r,
        )


SHAPE_COLUMNS = (
    "name",
    "ndim",
    "G",
    "N",
    "C",
    "K",
    "input",
    "filter",
    "stride",
    "dilation",
    "pad_left",
    "pad_right",
)


def load_shapes(path: Path) -> list[Problem]:
    """The problems of a shapes CSV (the profiler's format), in file order."""
    try:
        text = Path(path).read_text()
    except OSError as ex:
        raise CkgenError(f"cannot read shapes file {path}: {ex}") from None
    rows = list(
        csv.DictReader(
            line for line in text.splitlines() if line.strip() and not line.startswith("#")
        )
    )
    if not rows:
        raise CkgenError(f"{path}: no shapes")
    missing = [c for c in SHAPE_COLUMNS if c not in rows[0]]
    if missing:
        raise CkgenError(
            f"{path}: missing column(s) {', '.join(missing)} (need {','.join(SHAPE_COLUMNS)})"
        )
    out = []
    for n, r in enumerate(rows, start=2):
        try:
            nd = int(r["ndim"])
            out.append(
                Problem(
                    ndim=nd,
                    G=int(r["G"]),
                    N=int(r["N"]),
                    C=int(r["C"]),
                    K=int(r["K"]),
                    input=_parse_x(r["input"], nd, 1, "input"),
                    filter=_parse_x(r["filter"], nd, 1, "filter"),
                    stride=_parse_x(r["stride"], nd, 1, "stride"),
                    dilation=_parse_x(r["dilation"], nd, 1, "dilation"),
                    pad_l=_parse_x(r["pad_left"], nd, 0, "pad_left"),
                    pad_r=_parse_x(r["pad_right"], nd, 0, "pad_right"),
                    name=r["name"].strip(),
                )
            )
        except (ValueError, TypeError, CkgenError) as ex:
            raise CkgenError(f"{path}:{n}: {ex}") from None
    return out


def write_shapes(path: Path, problems: Iterable[Problem]) -> None:
    def x(d: Dims, nd: int) -> str:
        return "x".join(str(v) for v in d[3 - nd :])

    lines = [",".join(SHAPE_COLUMNS)]
    for p in problems:
        lines.append(
            ",".join(
                [
                    p.name,
                    str(p.ndim),
                    str(p.G),
                    str(p.N),
                    str(p.C),
                    str(p.K),
                    x(p.input, p.ndim),
                    x(p.filter, p.ndim),
                    x(p.stride, p.ndim),
                    x(p.dilation, p.ndim),
                    x(p.pad_l, p.ndim),
                    x(p.pad_r, p.ndim),
                ]
            )
        )
    Path(path).write_text("\n".join(lines) + "\n")
