"""YAML loading that remembers the line of every key and list item, and refuses duplicate keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, Where


class LineDict(dict):
    """A mapping that knows the 1-based line of itself and of each key."""

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
            raise ConfigError(Where(loader.name, knode.start_mark.line + 1), "keys must be plain scalars")
        if key in out:
            raise ConfigError(
                Where(loader.name, knode.start_mark.line + 1),
                f"duplicate key {key!r} (first on line {out.key_lines[key]})",
            )
        out[key] = loader.construct_object(vnode, deep=True)
        out.key_lines[key] = vnode.start_mark.line + 1
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
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(Where(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as ex:
        raise ConfigError(Where(path), f"cannot read: {ex}") from None
    loader = _Loader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as ex:
        mark = ex.problem_mark or ex.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(Where(path, line), f"YAML syntax error: {ex.problem or ex.context}") from None
    except yaml.YAMLError as ex:
        raise ConfigError(Where(path), f"YAML error: {ex}") from None
    finally:
        loader.dispose()
