"""The value validators of instance-list files: each turns a YAML value into the field's value or
raises ValueError with what was expected; glob_problem checks a name glob."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ckgen.errors import brief, did_you_mean, non_ascii_key, shown
from ckgen.model.limits import MAX_K_BATCH
from ckgen.model.vocab import FusionParts, Word, parse_fusion


def word(cls: type[Word]) -> Callable[[Any], Word]:
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


def integer(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {shown(v)}; allowed: {lo}..{hi}")
        if not lo <= v <= hi:
            raise ValueError(f"{v} is out of range; allowed: {lo}..{hi}")
        return v

    return parse


def triple(lo: int, hi: int, labels: str = "M, N, K") -> Callable[[Any], tuple[int, int, int]]:
    return ints(lo, hi, labels)  # type: ignore[return-value]


def ints(lo: int, hi: int, labels: str) -> Callable[[Any], tuple[int, ...]]:
    """A list of integers in lo..hi, one per label ('M, N, K')."""
    one = integer(lo, hi)
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


def pair(lo: int, hi: int) -> Callable[[Any], tuple[int, int]]:
    return ints(lo, hi, "load_waves, math_waves")  # type: ignore[return-value]


def vector(v: Any) -> tuple[int, int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v, v, v]
    return triple(1, 16, "a, b, c")(v)


def warp_tile(v: Any) -> tuple[int, int, int] | str:
    if v == "auto":
        return "auto"
    if not isinstance(v, list):
        raise ValueError(f"expected 'auto' or three integers [M, N, K], got {shown(v)}")
    return triple(1, 256)(v)  # up to wgmma's 64 x 256 x 16


def k_batch(v: Any) -> int:
    if v == "auto":
        return 0
    if isinstance(v, str):
        raise ValueError(
            f"expected 'auto' or an integer, got string {brief(v)}; allowed: auto, 0..{MAX_K_BATCH}"
        )
    return integer(0, MAX_K_BATCH)(v)


def fusion(v: Any) -> FusionParts:
    if not isinstance(v, str):
        raise ValueError(f"expected a fusion name such as bias_relu, got {shown(v)}")
    return parse_fusion(v)


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected a boolean, got {shown(v)}; allowed: true, false")
    return v


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
