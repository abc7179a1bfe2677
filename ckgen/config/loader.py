"""Bounded YAML and JSON loading.

YAML is parsed by LibYAML's C parser when PyYAML has it (the pure-Python parser otherwise) and
built into Python objects here, event by event, so that every limit is checked while the
document is built, before anything large exists:

- a file is at most MAX_INPUT_BYTES (JSON files too);
- mappings and lists nest at most MAX_DEPTH deep;
- aliases add at most MAX_ALIAS_NODES nodes (a "billion laughs" document stops at the alias that
  crosses the limit);
- only the core tags (!!str, !!int, !!float, !!bool, !!null, !!seq, !!map) are accepted;
- duplicate keys and non-scalar keys are refused.

Every mapping remembers the 1-based line of itself and of each key, every list the line of
itself and of each item: errors about a value are reported on the line of its key.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from ckgen.errors import ConfigError, Where, brief, clip

MAX_INPUT_BYTES = 8 * 1024 * 1024  # instance lists, --resources and tuning databases
MAX_DEPTH = 64
MAX_ALIAS_NODES = 100_000

_ParserBase: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
HAVE_LIBYAML = _ParserBase is not yaml.SafeLoader

CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {CORE + t for t in ("str", "int", "float", "bool", "null")}
_SEQ_TAG = CORE + "seq"
_MAP_TAG = CORE + "map"


class LineDict(dict):
    """A mapping that knows the 1-based line of itself and of each key (the line the key is
    written on, which is where an error about that key or its value is reported)."""

    __slots__ = ("line", "key_lines")
    line: int
    key_lines: dict[Any, int]


class LineList(list):
    """A sequence that knows the 1-based line of itself and of each item."""

    __slots__ = ("line", "item_lines")
    line: int
    item_lines: list[int]


def short_tag(tag: str) -> str:
    return "!!" + tag[len(CORE) :] if tag.startswith(CORE) else tag


def read_input(path: Path, what: str = "file") -> bytes:
    """The bytes of ``path``, refusing files over MAX_INPUT_BYTES before reading them whole."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(Where(path), "no such file") from None
    except IsADirectoryError:
        raise ConfigError(Where(path), f"is a directory, not a {what}") from None
    except OSError as ex:
        raise ConfigError(Where(path), f"cannot read: {ex.strerror or ex}") from None
    if len(data) > MAX_INPUT_BYTES:
        try:
            size = f"{path.stat().st_size} bytes"
        except OSError:
            size = f"more than {MAX_INPUT_BYTES} bytes"
        raise ConfigError(
            Where(path),
            f"file too large: {size}; the limit is {MAX_INPUT_BYTES} bytes "
            f"({MAX_INPUT_BYTES // (1024 * 1024)} MiB): split it into several files",
        )
    return data


def read_text(path: Path, what: str = "file") -> str:
    """The UTF-8 text of ``path`` (read_input's size limit); ConfigError with the line of the
    first byte that is not UTF-8."""
    return _decode(path, read_input(path, what))


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as ex:
        line = data.count(b"\n", 0, ex.start) + 1
        raise ConfigError(
            Where(path, line), f"not UTF-8 text (byte 0x{data[ex.start]:02x})"
        ) from None


def load_yaml(path: Path) -> Any:
    """The document in ``path``; ConfigError (file:line) for unreadable files, bad YAML and
    documents over the limits."""
    text = read_text(path, "YAML file")
    loader = _ParserBase(text)
    # Building creates no reference cycles: the cycle collector would only slow large files.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _Builder(path, loader).document()
    except yaml.MarkedYAMLError as ex:
        raise ConfigError(*_syntax_error(path, text, ex)) from None
    except yaml.reader.ReaderError as ex:
        line = text.count("\n", 0, ex.position) + 1
        ch = ex.character if isinstance(ex.character, int) else ord(str(ex.character)[:1] or "?")
        raise ConfigError(
            Where(path, line), f"YAML error: control character U+{ch:04X} is not allowed"
        ) from None
    except yaml.YAMLError as ex:
        raise ConfigError(Where(path), f"YAML error: {clip(str(ex))}") from None
    finally:
        if gc_was_on:
            gc.enable()
        loader.dispose()


class _Builder:
    """Python objects from the parser's events, with the limits of this module."""

    def __init__(self, path: Path, loader: Any) -> None:
        self.path = path
        self.loader = loader
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        self.alias_nodes = 0
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.plain_cache: dict[str, Any] = {}
        # Where the builder is, for messages: the open collections, outermost first, each as
        # (object, has_key, key); set before every slow path (see node()).
        self.path_frames: list[tuple[Any, bool, Any]] = []

    def err(self, line: int, msg: str) -> ConfigError:
        return ConfigError(Where(self.path, line, self.keypath()), msg)

    def keypath(self) -> str:
        """Where the parser is: 'instances[0].tile' (the key or item being read)."""
        out = ""
        for obj, has_key, key in self.path_frames:
            if obj.__class__ is LineList:
                out += f"[{len(obj)}]"
            elif has_key:
                k = str(key)
                out += ("." if out else "") + (k if len(k) <= 40 else k[:40] + "…")
        n = len(self.path_frames)
        return out if len(out) <= 100 else f"{out[:100]}… ({n} levels)"

    def document(self) -> Any:
        ld = self.loader
        ld.get_event()  # stream start
        if ld.check_event(yaml.StreamEndEvent):
            ld.get_event()
            return None
        ld.get_event()  # document start
        value = self.node()
        ld.get_event()  # document end
        if not ld.check_event(yaml.StreamEndEvent):
            ev = ld.get_event()
            raise self.err(
                ev.start_mark.line + 1,
                "YAML syntax error: expected a single document in the stream, but found another "
                "document",
            )
        return value

    def scalar(self, ev: Any) -> Any:
        line = ev.start_mark.line + 1
        tag = ev.tag
        value = ev.value
        if tag is None or tag == "!":
            if not ev.implicit[0]:  # quoted
                return value
            hit = self.plain_cache.get(value)
            if hit is not None or value in self.plain_cache:
                return hit
            tag = self.resolver.resolve(ScalarNode, value, (True, False))
            if tag == CORE + "merge":
                raise self.err(line, "merge keys ('<<') are not supported: write the keys out")
            if tag == CORE + "str":
                out: Any = value
            else:
                out = self._construct(tag, value, line)
            if len(self.plain_cache) < 4096:
                self.plain_cache[value] = out
            return out
        if tag not in _SCALAR_TAGS:
            raise self.err(line, f"unsupported tag {clip(short_tag(tag), 60)} at line {line}")
        return value if tag == CORE + "str" else self._construct(tag, value, line)

    def _construct(self, tag: str, value: str, line: int) -> Any:
        ctor = self.constructor.yaml_constructors.get(tag)
        if ctor is None:  # e.g. !!timestamp, !!binary resolved implicitly: keep the text
            return value
        try:
            return ctor(self.constructor, ScalarNode(tag, value))
        except (ValueError, yaml.YAMLError):
            raise self.err(line, f"{brief(value, 60)} is not a valid {short_tag(tag)}") from None

    def node(self) -> Any:  # noqa: C901 - one loop on purpose: it sets the speed of large files
        """One complete node, iteratively (nesting depth never reaches Python's stack).

        The open collection is held in local variables and its ancestors as tuples on
        ``saved``: plain scalars from the cache and collection ends take the shortest path.
        ``count`` is the number of nodes built so far, aliases counted at their expanded size:
        an anchored node's size is its count at close minus its count at open. Before any slow
        path (which may raise), ``_at`` records the open collections for the message."""
        get = self.loader.get_event
        scalar_ev = yaml.ScalarEvent
        seq_ev, map_ev = yaml.SequenceStartEvent, yaml.MappingStartEvent
        cache = self.plain_cache
        missing = cache  # a sentinel no scalar value can be
        saved: list[tuple] = []
        # the open collection: object, is it a list, its line list / key-line map, its anchor,
        # the count when it opened, and (mappings) the key waiting for its value
        obj: Any = None
        is_list = False
        lines: Any = None
        anchor: str | None = None
        start = 0
        has_key = False
        key: Any = None
        key_line = 0
        count = 0
        max_depth = MAX_DEPTH

        while True:
            ev = get()
            cls = ev.__class__
            if cls is scalar_ev:
                count += 1
                if ev.anchor is None and ev.implicit[0]:  # plain, untagged
                    value = cache.get(ev.value, missing)
                    if value is not missing:  # the common case, attached here
                        if is_list:
                            obj.append(value)
                            lines.append(ev.start_mark.line + 1)
                            continue
                        if has_key:
                            obj[key] = value
                            lines[key] = key_line
                            has_key = False
                            continue
                        if value.__class__ is str and obj is not None and value not in obj:
                            key, key_line, has_key = value, ev.start_mark.line + 1, True
                            continue
                    line = ev.start_mark.line + 1
                    if value is missing:
                        self._at(saved, obj, has_key, key)
                        value = self.scalar(ev)
                else:
                    line = ev.start_mark.line + 1
                    self._at(saved, obj, has_key, key)
                    value = self.scalar(ev)
                    if ev.anchor:
                        self.anchors[ev.anchor] = (value, 1)
            elif cls is seq_ev or cls is map_ev:
                count += 1
                line = ev.start_mark.line + 1
                if (
                    ev.tag is not None
                    or len(saved) >= max_depth
                    or (obj is not None and not is_list and not has_key)
                ):
                    self._at(saved, obj, has_key, key)
                    self._check_start(ev, cls is map_ev, obj, is_list, has_key, len(saved), line)
                saved.append((obj, is_list, lines, anchor, start, has_key, key, key_line))
                if cls is map_ev:
                    obj = LineDict()
                    lines = obj.key_lines = {}
                    is_list = False
                else:
                    obj = LineList()
                    lines = obj.item_lines = []
                    is_list = True
                obj.line = line
                anchor = ev.anchor
                start = count - 1
                has_key = False
                if anchor:
                    self.open_anchors.add(anchor)
                continue
            elif cls is yaml.AliasEvent:
                line = ev.start_mark.line + 1
                self._at(saved, obj, has_key, key)
                value, size = self._alias(ev, line)
                count += size
            else:  # sequence / mapping end
                value, line = obj, obj.line
                if anchor:
                    self.open_anchors.discard(anchor)
                    self.anchors[anchor] = (value, count - start)
                obj, is_list, lines, anchor, start, has_key, key, key_line = saved.pop()
            if obj is None:
                return value
            if is_list:
                obj.append(value)
                lines.append(line)
            elif has_key:
                obj[key] = value
                lines[key] = key_line
                has_key = False
            elif value.__class__ is str and value not in obj:
                key, key_line, has_key = value, line, True
            else:
                self._at(saved, obj, has_key, key)
                self._check_key(obj, value, line)
                key, key_line, has_key = value, line, True

    def _at(self, saved: list[tuple], obj: Any, has_key: bool, key: Any) -> None:
        """Record the open collections (node()'s ancestors on ``saved`` and the open one) for
        keypath()."""
        frames = [(s[0], s[5], s[6]) for s in saved[1:]]
        if obj is not None:
            frames.append((obj, has_key, key))
        self.path_frames = frames

    def _check_start(
        self,
        ev: Any,
        is_map: bool,
        obj: Any,
        is_list: bool,
        has_key: bool,
        depth: int,
        line: int,
    ) -> None:
        if ev.tag not in (None, "!", _MAP_TAG if is_map else _SEQ_TAG):
            raise self.err(line, f"unsupported tag {clip(short_tag(ev.tag), 60)} at line {line}")
        if obj is not None and not is_list and not has_key:
            raise self.err(line, "keys must be plain scalars")
        if depth >= MAX_DEPTH:
            raise self.err(line, f"nesting deeper than {MAX_DEPTH} levels (lists and mappings)")

    def _alias(self, ev: Any, line: int) -> tuple[Any, int]:
        if ev.anchor in self.open_anchors:
            raise self.err(
                line,
                f"YAML syntax error: recursive alias {clip(ev.anchor, 40)!r} "
                "(it refers to the node that contains it)",
            )
        if ev.anchor not in self.anchors:
            raise self.err(
                line, f"YAML syntax error: found undefined alias {clip(ev.anchor, 40)!r}"
            )
        value, size = self.anchors[ev.anchor]
        self.alias_nodes += size
        if self.alias_nodes > MAX_ALIAS_NODES:
            raise self.err(
                line,
                f"alias *{clip(ev.anchor, 40)} expands to {size} nodes: aliases may add at most "
                f"{MAX_ALIAS_NODES} nodes to a document (an alias bomb?)",
            )
        return value, size

    def _check_key(self, obj: Any, value: Any, line: int) -> None:
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            raise self.err(line, "keys must be plain scalars")
        if value in obj:
            raise self.err(
                line, f"duplicate key {brief(value, 60)} (first on line {obj.key_lines[value]})"
            )


def _syntax_error(path: Path, text: str, ex: yaml.MarkedYAMLError) -> tuple[Where, str]:
    """file:line of the problem and one line saying what is wrong (and where the construct that
    was left open started, when that is elsewhere)."""
    mark = ex.problem_mark or ex.context_mark
    line = mark.line + 1 if mark else None
    what = ex.problem or ex.context or "invalid YAML"
    tab = False
    if mark is not None and "cannot start any token" in what:
        idx = getattr(mark, "index", None)
        ch = text[idx] if isinstance(idx, int) and 0 <= idx < len(text) else ""
        if ch:
            what = f"found character {ch!r} that cannot start any token"
            tab = ch == "\t"
    if ex.context and ex.problem:
        ctx = ex.context
        if ex.context_mark is not None and ex.context_mark.line + 1 != line:
            ctx += f" (line {ex.context_mark.line + 1})"
        what = f"{ctx}: {what}"
    if tab or "'\\t'" in what or "\t" in what:
        what += " (tabs are not allowed in YAML indentation: use spaces)"
    return Where(path, line), f"YAML syntax error: {clip(what, 300)}"


# --- JSON ------------------------------------------------------------------------------------


def load_json(path: Path, what: str) -> Any:
    """The JSON document in ``path`` (``what`` names it in messages: 'measured resources');
    ConfigError with file:line for unreadable, oversized, deeply nested or invalid JSON."""
    text = read_text(path, f"{what} file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as ex:
        raise ConfigError(
            Where(path, ex.lineno), f"not valid JSON ({what}): {ex.msg} (column {ex.colno})"
        ) from None
    except RecursionError:
        raise ConfigError(Where(path), f"JSON nesting is too deep ({what})") from None
    except ValueError as ex:  # e.g. an integer with too many digits
        raise ConfigError(Where(path), f"not valid JSON ({what}): {clip(str(ex), 120)}") from None
