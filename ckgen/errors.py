"""Errors that reach the user as one clear message and exit code 2."""

from __future__ import annotations

import difflib
import itertools
import unicodedata
from dataclasses import dataclass
from pathlib import Path


class CkgenError(Exception):
    """A user-facing error: the CLI prints its message (no traceback) and exits with 2."""

    exit_code = 2


@dataclass
class Where:
    """A place in an input file: file, 1-based line, and the key path inside the document."""

    file: Path | str | None = None
    line: int | None = None
    path: str = ""

    def __str__(self) -> str:
        loc = str(self.file) if self.file is not None else "<input>"
        if self.line is not None:
            loc += f":{self.line}"
        return f"{loc}: {self.path}" if self.path else loc


class ConfigError(CkgenError):
    def __init__(self, where: Where, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}")


def did_you_mean(word: str, choices: list[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice (and a second one when it is about as
    close: 'stagse' -> 'stage' or 'stages'), or ''."""
    if len(str(word)) > 64:
        return ""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=2, cutoff=0.6)
    if not close:
        return ""
    ratio = difflib.SequenceMatcher(None, str(word), close[-1]).ratio()
    if len(close) == 2 and ratio >= 0.8:
        return f" (did you mean {close[0]!r} or {close[1]!r}?)"
    return f" (did you mean {close[0]!r}?)"


MAX_SHOWN = 80  # characters of a value a message shows


def clip(text: str, limit: int = 200) -> str:
    """Message text cut to ``limit`` characters ('… (N more characters)')."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def brief(v: object, limit: int = MAX_SHOWN) -> str:
    """repr(v) for a message, never longer than about ``limit`` characters: long strings end in
    '… (N more characters)', long lists and mappings show their first items and '… N more'."""
    if isinstance(v, str):
        if len(v) <= limit:
            return repr(v)
        return f"{v[:limit]!r}… ({len(v) - limit} more characters)"
    if isinstance(v, (list, tuple, dict)):
        n = limit // 2 + 1
        items = list(itertools.islice(v.items(), n)) if isinstance(v, dict) else list(v[:n])
        parts: list[str] = []
        used = 0
        for it in items:
            s = (
                f"{brief(it[0], limit // 2)}: {brief(it[1], limit // 2)}"
                if isinstance(v, dict)
                else brief(it, limit // 2)
            )
            if parts and used + len(s) > limit:
                break
            parts.append(s)
            used += len(s) + 2
            if used > limit:
                break
        more = len(v) - len(parts)
        body = ", ".join(parts) + (f", … {more} more" if more else "")
        return ("{" + body + "}") if isinstance(v, dict) else ("[" + body + "]")
    s = repr(v)
    return s if len(s) <= limit else f"{s[:limit]}… ({len(s) - limit} more characters)"


def shown(v: object) -> str:
    """A parsed value for a message: its YAML type and its value ('string 'big'', 'null'),
    shortened with brief()."""
    return "null" if v is None else f"{type_name(v)} {brief(v)}"


def type_name(v: object) -> str:
    """The YAML word for the type of a parsed value (for messages: 'list', not 'LineList')."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "mapping"
    if isinstance(v, list):
        return "list"
    return type(v).__name__


# Letters that look like ASCII ones (Cyrillic, Greek, fullwidth forms are also folded by NFKC).
_CONFUSABLE = str.maketrans(
    "аВсеԁһіјКМНоорѕТuхуАЕОРСХІЈαβεικνορτυχ",
    "aBcedhijKMHoopsTuxyAEOPCXIJabeikvoptux",
)


def non_ascii_key(key: str, choices: list[str], what: str = "key") -> str | None:
    """For a key with a non-ASCII character: "key 'tіle' has a non-ASCII character 'і' (U+0456
    CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I) at position 2; did you mean 'tile'?", else
    None. The suggestion folds look-alike letters to ASCII first, so it never looks identical to
    the key."""
    pos = next((n for n, ch in enumerate(key) if not ch.isascii()), None)
    if pos is None:
        return None
    ch = key[pos]
    name = unicodedata.name(ch, "unnamed character")
    msg = (
        f"{what} {brief(key, 40)} has a non-ASCII character {ch!r} (U+{ord(ch):04X} {name}) at "
        f"position {pos + 1}"
    )
    folded = unicodedata.normalize("NFKC", key[:64]).translate(_CONFUSABLE)
    if folded in choices:
        return msg + f"; did you mean {folded!r}?"
    close = difflib.get_close_matches(folded, choices, n=1, cutoff=0.6)
    return msg + (f"; did you mean {close[0]!r}?" if close else "")
