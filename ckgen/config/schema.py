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
        not_on: [sm_90a]        # targets this space does not expand for (arch_specs.json names)
    include: []                 # name globs applied to the whole file
    exclude: []

Every field is listed in FIELDS with its meaning and allowed values (``ckgen schema`` prints
them). A field missing everywhere takes FIELDS' default; ``warp_tile: auto`` means every
matrix instruction the target has for the datatype.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckgen.config.fields import FIELDS
from ckgen.config.fields import FieldSpec as FieldSpec
from ckgen.config.fields import Parsed as Parsed
from ckgen.config.fields import schema_text as schema_text
from ckgen.config.loader import LineDict, LineList, load_yaml
from ckgen.config.values import GLOB_CHARS as GLOB_CHARS
from ckgen.config.values import glob_problem, word
from ckgen.errors import ConfigError, Where, brief, did_you_mean, non_ascii_key, shown, type_name
from ckgen.model.vocab import Variant

TOP_KEYS = ("variant", "description", "defaults", "instances", "spaces", "include", "exclude")
SPACE_EXTRA_KEYS = ("include", "exclude", "not_on")


@dataclass
class Entry:
    """One explicit instance or one space: candidate values per field (a one-element list for
    explicit instances), plus name filters."""

    values: dict[str, list[Any]]
    origin: str
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    not_on: list[str] = field(default_factory=list)  # targets the entry does not expand for
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


def _targets(path: Path, raw: Any, line: int, keypath: str) -> list[str]:
    """A space's not_on: target names of arch_specs.json."""
    from ckgen.model.arch import load_arch_specs

    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items:
        raise ConfigError(
            _where(path, line, keypath), f"expected a list of target names, got {shown(raw)}"
        )
    known = sorted(load_arch_specs())
    for idx, t in enumerate(items):
        if t not in known:
            ln = raw.item_lines[idx] if isinstance(raw, LineList) else line
            raise ConfigError(
                _where(path, ln, f"{keypath}[{idx}]"),
                f"unknown target {shown(t)}{did_you_mean(str(t), known)}; allowed: "
                + ", ".join(known),
            )
    return list(items)


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
    not_on: list[str] = []
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
        elif key == "not_on":
            not_on = _targets(path, val, kl, kp)
        else:
            values[key] = _field_values(path, key, val, kl, kp, many)
    return Entry(
        values=values,
        origin=f"{safe_origin(path)}:{line}",
        keypath=keypath,
        line=line,
        include=inc,
        exclude=exc,
        not_on=not_on,
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
            variant = word(Variant)(doc["variant"])
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


def matches(name: str, include: list[str], exclude: list[str]) -> bool:
    if include and not any(fnmatch.fnmatchcase(name, g) for g in include):
        return False
    return not any(fnmatch.fnmatchcase(name, g) for g in exclude)
