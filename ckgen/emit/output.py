"""Writing a rendered file set to disk: only what changed, aside first, then renamed.

A run compares every file with what is on disk and writes only the differing ones, so an
identical second run touches nothing (mtimes stay, ninja rebuilds nothing). New contents are
first written into a staging folder inside the output directory, then each is renamed into
place; files that the previous manifest listed and the new one does not are removed. Files
ckgen did not write (CMakeLists.txt from emit-cmake, a build folder) are never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ckgen.emit.render import MANIFEST
from ckgen.errors import CkgenError


@dataclass
class Plan:
    out: Path
    write: dict[str, bytes] = field(default_factory=dict)  # new or changed
    unchanged: int = 0
    remove: list[str] = field(default_factory=list)

    @property
    def changes(self) -> int:
        return len(self.write) + len(self.remove)


def _previous_files(out: Path) -> list[str]:
    try:
        data = json.loads((out / MANIFEST).read_text())
        files = data.get("files", [])
        return [f for f in files if isinstance(f, str) and _safe_rel(f)]
    except (OSError, ValueError, AttributeError):
        return []


def _safe_rel(rel: str) -> bool:
    p = Path(rel)
    return not p.is_absolute() and ".." not in p.parts and rel == p.as_posix()


def plan(out: Path, files: dict[str, bytes], extra_owned: tuple[str, ...] = ()) -> Plan:
    pl = Plan(out=out)
    for rel, data in sorted(files.items()):
        if not _safe_rel(rel):
            raise CkgenError(f"refusing to write outside the output directory: {rel!r}")
        target = out / rel
        try:
            same = (
                target.is_file()
                and target.stat().st_size == len(data)
                and target.read_bytes() == data
            )
        except OSError:
            same = False
        if same:
            pl.unchanged += 1
        else:
            pl.write[rel] = data
    keep = set(files) | set(extra_owned)
    pl.remove = sorted(f for f in _previous_files(out) if f not in keep and (out / f).exists())
    return pl


def check_writable(out: Path) -> None:
    """CkgenError unless ``out`` exists as a writable directory or can be created."""
    probe = out
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise CkgenError(f"output path {out}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise CkgenError(f"output directory {out} is not writable ({probe})")


def check_targets(pl: Plan) -> None:
    """CkgenError when a file of the plan cannot take its place (a directory where a file goes,
    a file where a directory goes), so a run fails before its first write, not half-way."""
    for rel in pl.write:
        target = pl.out / rel
        if target.is_dir():
            raise CkgenError(f"cannot write {target}: a directory is in the way")
        for parent in list(Path(rel).parents)[:-1]:
            d = pl.out / parent
            if d.exists() and not d.is_dir():
                raise CkgenError(f"cannot write {target}: {d} is not a directory")


def apply(pl: Plan) -> None:
    """Write the plan: staged beside the targets, then renamed into place; manifest last."""
    if not pl.changes:
        return
    check_writable(pl.out)
    check_targets(pl)
    try:
        pl.out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".ckgen-staging-", dir=pl.out))
    except OSError as ex:
        raise CkgenError(f"cannot write into {pl.out}: {ex}") from None
    try:
        ordered = sorted(pl.write, key=lambda r: (r == MANIFEST, r))
        for n, rel in enumerate(ordered):
            tmp = stage / f"{n:06d}"
            tmp.write_bytes(pl.write[rel])
        for n, rel in enumerate(ordered):
            target = pl.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / f"{n:06d}", target)
        for rel in pl.remove:
            (pl.out / rel).unlink(missing_ok=True)
            _prune_empty(pl.out, (pl.out / rel).parent)
    except OSError as ex:
        raise CkgenError(f"cannot write into {pl.out}: {ex}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _prune_empty(root: Path, d: Path) -> None:
    root = root.resolve()
    d = d.resolve()
    while d != root and root in d.parents:
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent
