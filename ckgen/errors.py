"""Errors that reach the user as one clear message and exit code 2."""

from __future__ import annotations

import difflib
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
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=2, cutoff=0.6)
    if not close:
        return ""
    ratio = difflib.SequenceMatcher(None, str(word), close[-1]).ratio()
    if len(close) == 2 and ratio >= 0.8:
        return f" (did you mean {close[0]!r} or {close[1]!r}?)"
    return f" (did you mean {close[0]!r}?)"


def shown(v: object) -> str:
    """A parsed value for a message: its YAML type and its value ('string 'big'', 'null')."""
    return "null" if v is None else f"{type_name(v)} {v!r}"


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
