"""YAML loading that remembers the line of every key and list item, and refuses duplicate keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ckgen.errors import ConfigError, Where


class LineDict(dict):
    """A mapping that knows the 1-based line of itself and of each key (the line the key is
    written on, which is where an error about that key or its value is reported)."""

    line: int = 0
    key_lines: dict[Any, int]


class LineList(list):
    """A sequence that knows the 1-based line of itself and of each item."""

    line: int = 0
    item_lines: list[int]


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise ConfigError(
                Where(loader.name, knode.start_mark.line + 1), "keys must be plain scalars"
            )
        if key in out:
            raise ConfigError(
                Where(loader.name, knode.start_mark.line + 1),
                f"duplicate key {key!r} (first on line {out.key_lines[key]})",
            )
        out[key] = loader.construct_object(vnode, deep=True)
        out.key_lines[key] = knode.start_mark.line + 1
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(n, deep=True) for n in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [n.start_mark.line + 1 for n in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_yaml(path: Path) -> Any:
    """The document in ``path``; ConfigError (file:line) for unreadable files and bad YAML."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(Where(path), "no such file") from None
    except IsADirectoryError:
        raise ConfigError(Where(path), "is a directory, not a YAML file") from None
    except OSError as ex:
        raise ConfigError(Where(path), f"cannot read: {ex.strerror or ex}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as ex:
        line = data.count(b"\n", 0, ex.start) + 1
        raise ConfigError(
            Where(path, line), f"not UTF-8 text (byte 0x{data[ex.start]:02x})"
        ) from None
    loader = None
    try:
        loader = _Loader(text)
        loader.name = str(path)
        return loader.get_single_data()
    except yaml.MarkedYAMLError as ex:
        raise ConfigError(*_syntax_error(path, ex)) from None
    except yaml.reader.ReaderError as ex:
        line = text.count("\n", 0, ex.position) + 1
        raise ConfigError(
            Where(path, line), f"YAML error: control character U+{ex.character:04X} is not allowed"
        ) from None
    except yaml.YAMLError as ex:
        raise ConfigError(Where(path), f"YAML error: {ex}") from None
    except RecursionError:
        raise ConfigError(Where(path), "YAML nesting is too deep") from None
    finally:
        if loader is not None:
            loader.dispose()


def _syntax_error(path: Path, ex: yaml.MarkedYAMLError) -> tuple[Where, str]:
    """file:line of the problem and one line saying what is wrong (and where the construct that
    was left open started, when that is elsewhere)."""
    mark = ex.problem_mark or ex.context_mark
    line = mark.line + 1 if mark else None
    what = ex.problem or ex.context or "invalid YAML"
    if ex.context and ex.problem:
        ctx = ex.context
        if ex.context_mark is not None and ex.context_mark.line + 1 != line:
            ctx += f" (line {ex.context_mark.line + 1})"
        what = f"{ctx}: {what}"
    if "'\\t'" in what or "\t" in what:
        what += " (tabs are not allowed in YAML indentation: use spaces)"
    return Where(path, line), f"YAML syntax error: {what}"
