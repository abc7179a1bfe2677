"""Convolution problems on the Python side: the shapes CSV format (name,ndim,G,N,C,K,input,
filter,stride,dilation,pad_left,pad_right; sizes as 'HxW'), and the JSON form the tuning
database stores. Host-only (no GPU, no compiled library)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError, ConfigError, Where, brief, did_you_mean

Dims = tuple[int, int, int]


def _dims(v: int | Sequence[int], ndim: int, fill: int, what: str) -> Dims:
    if isinstance(v, int):
        vals = [v] * ndim
    else:
        vals = [int(x) for x in v]
    if len(vals) != ndim:
        raise CkgenError(f"{what}: expected {ndim} values for a {ndim}D problem, got {list(vals)}")
    return tuple([fill] * (3 - ndim) + vals)  # type: ignore[return-value]


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


# Descriptive columns a shapes file may add (which model, how often it runs a layer): the
# profiler's parser (host/shapes.hpp) skips them too; any other column is an error there.
SHAPE_EXTRA_COLUMNS = ("model", "count")
INT64_MAX = 2**63 - 1
_INT_RE = re.compile(r"[+-]?[0-9]+")
_DIMS_HINT = "write e.g. 56x56 for 2D, 16x56x56 for 3D"


def _int_cell(text: str, low: int, high: int = INT64_MAX) -> int | str:
    """The integer in a cell (the profiler's parse_int64: optional sign, digits), or why not."""
    if not _INT_RE.fullmatch(text):
        return f"{brief(text)} is not an integer"
    # (int() refuses 4300+ digits: a longer number is out of range either way)
    v = int(text) if len(text) <= 20 else (INT64_MAX + 1) * (-1 if text[0] == "-" else 1)
    if not low <= v <= high:
        more = high == INT64_MAX and v < low
        return f"{v if len(text) <= 20 else brief(text)} is out of range; allowed: " + (
            f"{low} or more" if more else f"{low}..{high}"
        )
    return v


def _dims_cell(text: str, ndim: int, low: int) -> Dims | str:
    """'56x56' as 3 spatial dims, or why not: exactly ``ndim`` values >= ``low`` (1; pads 0), the
    leading unused dims ``low`` too."""
    parts = text.split("x")
    if len(parts) != ndim:
        return f"{brief(text)} has {len(parts)} value(s), ndim is {ndim} ({_DIMS_HINT})"
    vals = []
    for part in parts:
        v = _int_cell(part.strip(), low)
        if isinstance(v, str):
            return f"{brief(text)}: {v}"
        vals.append(v)
    return tuple([low] * (3 - ndim) + vals)  # type: ignore[return-value]


def load_shapes(path: Path) -> list[Problem]:
    """The problems of a shapes CSV, in file order, read by the rules of the profiler's parser
    (templates/include/ckgen/host/shapes.hpp), so that a file ckgen accepts is one the profilers
    run: a header naming the columns (any order; 'model' and 'count' may be added), one
    comma-separated row per problem, blank lines and '#' lines skipped. ConfigError naming
    file:line: column and what is allowed for anything else."""
    from ckgen.config.loader import read_text

    path = Path(path)
    text = read_text(path, "shapes file")

    def err(line: int, column: str, msg: str) -> ConfigError:
        return ConfigError(Where(path, line, column), msg)

    if text.startswith("\ufeff"):
        raise err(
            1, "", "the file starts with a byte-order mark (U+FEFF): save it as UTF-8 without one"
        )
    need = ",".join(SHAPE_COLUMNS)
    allowed = (*SHAPE_COLUMNS, *SHAPE_EXTRA_COLUMNS)
    cols: dict[str, int] = {}
    width = 0
    seen: dict[str, int] = {}
    out: list[Problem] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        t = raw.strip()
        if not t or t.startswith("#"):
            continue
        cells = [c.strip() for c in t.split(",")]
        if not width:
            for i, c in enumerate(cells):
                if c in cols:
                    raise err(n, "", f"column {brief(c)} appears twice in the header")
                cols[c] = i
            width = len(cells)
            missing = [c for c in SHAPE_COLUMNS if c not in cols]
            unknown = [c for c in cols if c not in allowed]
            if missing:
                extra = (
                    f"; unknown column {brief(unknown[0])}{did_you_mean(unknown[0], missing)}"
                    if unknown
                    else ""
                )
                raise err(n, "", f"missing column(s) {', '.join(missing)} (need {need}){extra}")
            if unknown:
                raise err(
                    n,
                    "",
                    f"unknown column {brief(unknown[0])}; allowed: {need} "
                    f"(and {', '.join(SHAPE_EXTRA_COLUMNS)})",
                )
            continue
        if len(cells) != width:
            raise err(n, "", f"expected {width} fields (one per header column), got {len(cells)}")

        def cell(c: str, row: list[str] = cells) -> str:
            return row[cols[c]]

        name = cell("name")
        if not name:
            raise err(n, "name", "empty shape name")
        if name in seen:
            raise err(n, "name", f"duplicate shape name {brief(name)} (first on line {seen[name]})")
        ints: dict[str, int] = {}
        for c in ("ndim", "G", "N", "C", "K"):
            v = _int_cell(cell(c), 1, 3 if c == "ndim" else INT64_MAX)
            if isinstance(v, str):
                raise err(n, c, v)
            ints[c] = v
        nd = ints["ndim"]
        dims: dict[str, Dims] = {}
        for c in ("input", "filter", "stride", "dilation", "pad_left", "pad_right"):
            d = _dims_cell(cell(c), nd, 0 if c.startswith("pad_") else 1)
            if isinstance(d, str):
                raise err(n, c, d)
            dims[c] = d
        p = Problem(
            ndim=nd,
            G=ints["G"],
            N=ints["N"],
            C=ints["C"],
            K=ints["K"],
            input=dims["input"],
            filter=dims["filter"],
            stride=dims["stride"],
            dilation=dims["dilation"],
            pad_l=dims["pad_left"],
            pad_r=dims["pad_right"],
            name=name,
        )
        if min(p.output[3 - nd :]) < 1:
            raise err(
                n,
                "filter",
                f"the filter {cell('filter')} (dilation {cell('dilation')}) does not fit the "
                f"input {cell('input')} padded by {cell('pad_left')} / {cell('pad_right')}: the "
                "output is empty",
            )
        seen[name] = n
        out.append(p)
    if not width:
        raise ConfigError(Where(path), f"no header: the first line names the columns ({need})")
    if not out:
        raise ConfigError(Where(path), "no shapes: the file has a header and no rows")
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
