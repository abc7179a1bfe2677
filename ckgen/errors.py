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
    """' (did you mean 'x'?)' for the closest choice, or ''."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
