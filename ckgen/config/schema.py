"""Instance-list files (configs/<variant>/*.yaml): schema, validation, and the parsed form.

A file::

    variant: forward            # optional when the file sits in configs/<variant>/
    description: what this set is for
    defaults:                   # field values every entry starts from
      datatype: [fp16, bf16]
    instances:                  # explicit instances: one value per field
      - {tile: [128, 128, 32], waves: [2, 2, 1], vector: [8, 8, 8]}
    spaces:                     # cartesian products: a list of values per field
      - tile: [[128, 128, 32], [64, 64, 32]]
        pipeline: [basic, multistage]
        stages: [1, 2, 3]
        include: ["*_ms*"]      # name globs applied to this space
    include: []                 # name globs applied to the whole file
    exclude: []

Every field is listed in FIELDS with its meaning and allowed values (``ckgen schema`` prints
them). A field missing everywhere takes FIELDS' default; ``warp_tile: auto`` means every
matrix instruction the target has for the datatype.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckgen.config.loader import LineDict, LineList, load_yaml
from ckgen.errors import ConfigError, Where, brief, did_you_mean, non_ascii_key, shown, type_name
from ckgen.model.limits import MAX_K_BATCH, MAX_TILE_DIM
from ckgen.model.vocab import (
    DataType,
    Epilogue,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
    Word,
)

Parsed = Any


def _word(cls: type[Word]) -> Callable[[Any], Word]:
    allowed = cls.allowed()
    what = cls.__name__.lower()

    def parse(v: Any) -> Word:
        if not isinstance(v, str):
            raise ValueError(
                f"expected a {what} name, got {shown(v)}; allowed: {', '.join(allowed)}"
            )
        try:
            return cls(v)
        except ValueError:
            odd = non_ascii_key(v, allowed, what="value")
            if odd is not None:
                raise ValueError(f"{odd}; allowed: {', '.join(allowed)}") from None
            raise ValueError(
                f"{brief(v)} is not a known {what}{did_you_mean(v, allowed)}; allowed: "
                f"{', '.join(allowed)}"
            ) from None

    return parse


def _int(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {shown(v)}; allowed: {lo}..{hi}")
        if not lo <= v <= hi:
            raise ValueError(f"{v} is out of range; allowed: {lo}..{hi}")
        return v

    return parse


def _triple(lo: int, hi: int, labels: str = "M, N, K") -> Callable[[Any], tuple[int, int, int]]:
    return _ints(lo, hi, labels)  # type: ignore[return-value]


def _ints(lo: int, hi: int, labels: str) -> Callable[[Any], tuple[int, ...]]:
    """A list of integers in lo..hi, one per label ('M, N, K')."""
    one = _int(lo, hi)
    names = [n.strip() for n in labels.split(",")]
    words = {2: "two", 3: "three"}

    def parse(v: Any) -> tuple[int, ...]:
        if not isinstance(v, list):
            raise ValueError(
                f"expected a list of {words[len(names)]} integers [{labels}], got {shown(v)}"
            )
        if len(v) != len(names):
            raise ValueError(
                f"expected {words[len(names)]} integers [{labels}], got {len(v)}: {brief(v)}"
            )
        out = []
        for name, x in zip(names, v, strict=False):
            try:
                out.append(one(x))
            except ValueError as ex:
                raise ValueError(f"{name}: {ex}") from None
        return tuple(out)

    return parse


def _pair(lo: int, hi: int) -> Callable[[Any], tuple[int, int]]:
    return _ints(lo, hi, "load_waves, math_waves")  # type: ignore[return-value]


def _vector(v: Any) -> tuple[int, int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v, v, v]
    return _triple(1, 16, "a, b, c")(v)


def _warp_tile(v: Any) -> tuple[int, int, int] | str:
    if v == "auto":
        return "auto"
    if not isinstance(v, list):
        raise ValueError(f"expected 'auto' or three integers [M, N, K], got {shown(v)}")
    return _triple(1, 256)(v)  # up to wgmma's 64 x 256 x 16


def _k_batch(v: Any) -> int:
    if v == "auto":
        return 0
    if isinstance(v, str):
        raise ValueError(
            f"expected 'auto' or an integer, got string {brief(v)}; allowed: auto, 0..{MAX_K_BATCH}"
        )
    return _int(0, MAX_K_BATCH)(v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected a boolean, got {shown(v)}; allowed: true, false")
    return v


@dataclass(frozen=True)
class FieldSpec:
    parse: Callable[[Any], Parsed]
    doc: str
    default: Any
    is_list_value: bool = False  # a single value is itself a YAML list (triples, pairs)


FIELDS: dict[str, FieldSpec] = {
    "datatype": FieldSpec(
        _word(DataType),
        "element type (fp32 accumulation): " + ", ".join(DataType.allowed()),
        DataType.FP16,
    ),
    "ndim": FieldSpec(_int(1, 3), "spatial dimensions: 1, 2 or 3", 2),
    "tile": FieldSpec(
        _triple(1, MAX_TILE_DIM),
        "block tile [M, N, K] of the implicit GEMM (direct: [pixels, channels, channels per "
        "group])",
        (128, 128, 32),
        True,
    ),
    "waves": FieldSpec(
        _triple(1, 16),
        "waves (warps) per block along [M, N, K] (direct: [w, 1, 1])",
        (2, 2, 1),
        True,
    ),
    "warp_tile": FieldSpec(
        _warp_tile,
        "matrix instruction [M, N, K], or 'auto' for every legal one (direct: [1, 1, 1] FMA, [16, "
        "8, 16] mma.sync: forward / backward_data 8-channel groups, backward_weight groups of "
        "1-8)",
        "auto",
        True,
    ),
    "pipeline": FieldSpec(
        _word(Pipeline), "main loop: " + ", ".join(Pipeline.allowed()), Pipeline.BASIC
    ),
    "stages": FieldSpec(
        _int(1, 16),
        "buffers in flight (basic, direct: 1; multistage, wavelet, wavelet_tma: 2..8)",
        1,
    ),
    "scheduler": FieldSpec(
        _word(Scheduler),
        "instruction scheduling (AMD): " + ", ".join(Scheduler.allowed()),
        Scheduler.INTRAWAVE,
    ),
    "wavelet": FieldSpec(
        _pair(0, 16), "[load_waves, math_waves] of the wavelet pipeline", (0, 0), True
    ),
    "epilogue": FieldSpec(
        _word(Epilogue), "how C is stored: " + ", ".join(Epilogue.allowed()), Epilogue.DEFAULT
    ),
    "swap_ab": FieldSpec(
        _bool,
        "wavelet_tma forward / backward_data with tile N 64: the MMA computes the transposed tile "
        "(output channels on the instruction's M, tile M / warpgroups pixels on its N): fewer "
        "shared-memory bytes per FLOP",
        False,
    ),
    "vector": FieldSpec(
        _vector, "elements per global access [a, b, c] (or one integer for all)", (8, 8, 8), True
    ),
    "specialization": FieldSpec(
        _word(Specialization),
        "problem specialization: " + ", ".join(Specialization.allowed()),
        Specialization.DEFAULT,
    ),
    "groups_to_merge": FieldSpec(
        _int(1, 1024), "groups computed by one tile (1, 2, 4, ..., 32)", 1
    ),
    "k_batch": FieldSpec(
        _k_batch,
        "split-K count, or 'auto' (chosen per problem / RunOptions::k_batch); forward and "
        "backward_data: 1 never splits",
        None,
    ),
    "reduction": FieldSpec(
        _word(Reduction),
        "backward_weight reduction: " + ", ".join(Reduction.allowed()),
        Reduction.SPLITK,
    ),
    "persistent": FieldSpec(_bool, "StreamK: persistent data-parallel section", False),
    "stage": FieldSpec(
        _word(Stage), "split-K: one-stage (atomics) or two-stage (workspace + reduce)", Stage.ONE
    ),
}

TOP_KEYS = ("variant", "description", "defaults", "instances", "spaces", "include", "exclude")
SPACE_EXTRA_KEYS = ("include", "exclude")


@dataclass
class Entry:
    """One explicit instance or one space: candidate values per field (a one-element list for
    explicit instances), plus name filters."""

    values: dict[str, list[Any]]
    origin: str
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    explicit: bool = False  # from 'instances:' (the user named this one configuration)
    keypath: str = ""  # 'spaces[2]', 'instances[0]'
    line: int = 0


@dataclass
class ConfigFile:
    path: Path
    variant: Variant
    description: str
    entries: list[Entry]
    include: list[str]
    exclude: list[str]


def _where(path: Path, line: int | None, keypath: str) -> Where:
    return Where(path, line, keypath)


GLOB_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_*?[]!"


def glob_problem(g: Any) -> str | None:
    """Why ``g`` is not an instance-name glob, or None. Config include/exclude and the CLI's
    --kernels both go through this one check: names are [a-z0-9_], so a glob never needs a path
    separator, '..', quotes or shell characters."""
    if not isinstance(g, str):
        return f"expected a name glob (string), got {shown(g)}"
    if not g:
        return "empty name glob"
    bad = sorted({ch for ch in g if ch not in GLOB_CHARS})
    if bad:
        chars = " ".join(repr(ch) for ch in bad[:10]) + (
            f" … {len(bad) - 10} more" if len(bad) > 10 else ""
        )
        return (
            f"{brief(g)} is not a name glob (bad characters: {chars}); allowed: a-z 0-9 _ * ? [ ] !"
        )
    return _bracket_problem(g)


def _bracket_problem(g: str) -> str | None:
    """Unbalanced '[' / ']' (fnmatch would take them literally, and no name contains either)."""
    i, n = 0, len(g)
    while i < n:
        ch = g[i]
        if ch == "]":
            return f"{brief(g)}: unbalanced ']' at position {i + 1} (no '[' opens it)"
        if ch == "[":
            j = i + 1
            if j < n and g[j] == "!":
                j += 1
            if j < n and g[j] == "]":
                j += 1
            while j < n and g[j] != "]":
                j += 1
            if j >= n:
                return (
                    f"{brief(g)}: unbalanced '[' at position {i + 1} (a character class "
                    "'[...]' needs its closing ']')"
                )
            i = j
        i += 1
    return None


def _globs(path: Path, raw: Any, line: int, keypath: str) -> list[str]:
    if isinstance(raw, str):
        raw = LineList([raw])
        raw.line, raw.item_lines = line, [line]
    if not isinstance(raw, list):
        raise ConfigError(
            _where(path, line, keypath), f"expected a list of name globs, got {shown(raw)}"
        )
    for idx, g in enumerate(raw):
        why = glob_problem(g)
        if why is not None:
            ln = raw.item_lines[idx] if isinstance(raw, LineList) else line
            raise ConfigError(_where(path, ln, f"{keypath}[{idx}]"), why)
    return list(raw)


def _field_values(
    path: Path, fname: str, raw: Any, line: int, keypath: str, many: bool
) -> list[Any]:
    spec = FIELDS[fname]
    if many and isinstance(raw, list) and not raw:
        raise ConfigError(_where(path, line, keypath), "empty list: give at least one value")
    if many:
        # A space: a list of values. For list-valued fields, a flat list is one value.
        if isinstance(raw, list) and not (
            spec.is_list_value and (not raw or not isinstance(raw[0], list))
        ):
            items = list(raw)
            lines = raw.item_lines if isinstance(raw, LineList) else [line] * len(items)
        else:
            items, lines = [raw], [line]
        if not items:
            raise ConfigError(_where(path, line, keypath), "empty list: give at least one value")
    else:
        items, lines = [raw], [line]
    out = []
    for idx, (item, ln) in enumerate(zip(items, lines, strict=False)):
        kp = f"{keypath}[{idx}]" if many and len(items) > 1 else keypath
        try:
            out.append(spec.parse(item))
        except ValueError as ex:
            raise ConfigError(_where(path, ln, kp), str(ex)) from None
    return out


def _entry(
    path: Path, raw: Any, line: int, keypath: str, many: bool, base: dict[str, list[Any]]
) -> Entry:
    if not isinstance(raw, dict):
        raise ConfigError(
            _where(path, line, keypath), f"expected a mapping of fields, got {shown(raw)}"
        )
    values = dict(base)
    inc: list[str] = []
    exc: list[str] = []
    allowed = list(FIELDS) + (list(SPACE_EXTRA_KEYS) if many else [])
    for key, val in raw.items():
        kl = raw.key_lines.get(key, line) if isinstance(raw, LineDict) else line
        kp = f"{keypath}.{key_text(key)}"
        if key not in allowed:
            raise ConfigError(_where(path, kl, kp), unknown_key(key, allowed))
        if key == "include":
            inc = _globs(path, val, kl, kp)
        elif key == "exclude":
            exc = _globs(path, val, kl, kp)
        else:
            values[key] = _field_values(path, key, val, kl, kp, many)
    return Entry(
        values=values,
        origin=f"{safe_origin(path)}:{line}",
        keypath=keypath,
        line=line,
        include=inc,
        exclude=exc,
        explicit=not many,
    )


def key_text(key: Any) -> str:
    """A key as it appears in a key path (long keys shortened)."""
    k = str(key)
    return k if len(k) <= 60 else f"{k[:60]}… ({len(k) - 60} more characters)"


def unknown_key(key: Any, allowed: list[str]) -> str:
    """The message for a key that is not allowed: a non-ASCII look-alike is pointed at."""
    odd = non_ascii_key(key, allowed) if isinstance(key, str) else None
    if odd is not None:
        return f"{odd}; allowed: {', '.join(allowed)}"
    return (
        f"unknown key {brief(key, 60)}{did_you_mean(str(key), allowed)}; allowed: "
        f"{', '.join(allowed)}"
    )


def safe_origin(path: Path) -> str:
    """The config path as it may appear in generated C++ comments: a file name is not validated
    input, so anything but plain path characters (a newline would end the comment) becomes '?'."""
    return "".join(
        ch if ch.isascii() and (ch.isalnum() or ch in "/._-+@ ") else "?" for ch in str(path)
    )


def infer_variant(path: Path) -> Variant | None:
    try:
        return Variant(path.resolve().parent.name)
    except ValueError:
        return None


def load_config(path: Path, variant_fallback: Variant | None = None) -> ConfigFile:
    """Parse and validate one instance-list file; ConfigError (file:line: key path) otherwise.
    A file without 'variant:' outside configs/<variant>/ takes ``variant_fallback`` (--variant)."""
    doc = load_yaml(path)
    if doc is None:
        raise ConfigError(Where(path, 1), "the file is empty: give 'instances' or 'spaces'")
    if not isinstance(doc, dict):
        raise ConfigError(
            Where(path, getattr(doc, "line", 1)),
            f"the top level must be a mapping (keys: {', '.join(TOP_KEYS)}), got {type_name(doc)}",
        )
    lines = doc.key_lines if isinstance(doc, LineDict) else {}
    for key in doc:
        if key not in TOP_KEYS:
            raise ConfigError(
                Where(path, lines.get(key), key_text(key)),
                unknown_key(key, list(TOP_KEYS)),
            )
    inferred = infer_variant(path)
    if "variant" in doc:
        try:
            variant = _word(Variant)(doc["variant"])
        except ValueError as ex:
            raise ConfigError(Where(path, lines.get("variant"), "variant"), str(ex)) from None
        assert isinstance(variant, Variant)
        if inferred is not None and inferred is not variant:
            raise ConfigError(
                Where(path, lines.get("variant"), "variant"),
                f"{variant.value!r} contradicts the directory the file is in "
                f"({path.resolve().parent.name}/); "
                f"move the file or fix the variant",
            )
    elif inferred is not None:
        variant = inferred
    elif variant_fallback is not None:
        variant = variant_fallback
    else:
        raise ConfigError(
            Where(path, 1, "variant"),
            f"missing 'variant' (one of {', '.join(Variant.allowed())}; or give one --variant)",
        )
    desc = doc.get("description", "")
    if not isinstance(desc, str):
        raise ConfigError(
            Where(path, lines.get("description"), "description"),
            f"expected a string, got {type_name(desc)}",
        )

    base: dict[str, list[Any]] = {}
    if "defaults" in doc:
        d = doc["defaults"]
        dl = lines.get("defaults", 1)
        if not isinstance(d, dict):
            raise ConfigError(
                Where(path, dl, "defaults"), f"expected a mapping of fields, got {shown(d)}"
            )
        base = _entry(path, d, dl, "defaults", True, {}).values

    entries: list[Entry] = []
    for key, many in (("instances", False), ("spaces", True)):
        if key not in doc:
            continue
        seq = doc[key]
        sl = lines.get(key, 1)
        if not isinstance(seq, list):
            raise ConfigError(
                Where(path, sl, key), f"expected a list of mappings, got {type_name(seq)}"
            )
        if not seq:
            raise ConfigError(
                Where(path, sl, key), "empty list: give at least one entry (or drop the key)"
            )
        for idx, item in enumerate(seq):
            il = seq.item_lines[idx] if isinstance(seq, LineList) else sl
            il = getattr(item, "line", il)
            entries.append(_entry(path, item, il, f"{key}[{idx}]", many, base))
    if not entries:
        raise ConfigError(Where(path, 1), "no 'instances' or 'spaces': nothing to expand")
    inc = (
        _globs(path, doc["include"], lines.get("include", 1), "include") if "include" in doc else []
    )
    exc = (
        _globs(path, doc["exclude"], lines.get("exclude", 1), "exclude") if "exclude" in doc else []
    )
    return ConfigFile(
        path=path, variant=variant, description=desc, entries=entries, include=inc, exclude=exc
    )


def schema_text() -> str:
    """Human-readable schema (``ckgen schema``)."""
    rows = [
        f"  {k:16s} {v.doc} (default: {_show_default(k, v.default)})" for k, v in FIELDS.items()
    ]
    return "Fields of an instance or space entry:\n" + "\n".join(rows) + "\n"


def _show_default(name: str, d: Any) -> str:
    if name == "k_batch":
        return "auto for backward_weight, 1 otherwise"
    if isinstance(d, Word):
        return d.value
    if isinstance(d, tuple):
        return "[" + ", ".join(map(str, d)) + "]"
    return str(d).lower() if isinstance(d, bool) else str(d)


def matches(name: str, include: list[str], exclude: list[str]) -> bool:
    if include and not any(fnmatch.fnmatchcase(name, g) for g in include):
        return False
    return not any(fnmatch.fnmatchcase(name, g) for g in exclude)
