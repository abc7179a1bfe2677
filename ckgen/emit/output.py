"""Writing a rendered file set to disk: only what changed, aside first, then renamed.

A run compares every file with what is on disk and writes only the differing ones, so an
identical second run touches nothing (mtimes stay, ninja rebuilds nothing). New contents are
first written into a staging folder inside the output directory, then each is renamed into
place. A file that the previous manifest listed and the new one does not is removed only when
the manifest is ckgen's, the path stays inside the output directory without passing a symlink,
and the file is a regular one whose sha256 is the one recorded when ckgen wrote it; every
other stale entry is left and reported (Plan.notes). Files ckgen did not write (CMakeLists.txt
from emit-cmake, a build folder) are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ckgen.emit.render import MANIFEST, MANIFEST_FORMAT
from ckgen.errors import CkgenError


@dataclass
class Plan:
    out: Path
    write: dict[str, bytes] = field(default_factory=dict)  # new or changed
    unchanged: int = 0
    remove: list[str] = field(default_factory=list)
    # Stale entries of the previous manifest that are not removed (not ckgen's to delete).
    left: list[str] = field(default_factory=list)
    # Why a previous manifest's entries are not trusted at all (another tool's, an old format).
    manifest_note: str | None = None

    @property
    def changes(self) -> int:
        return len(self.write) + len(self.remove)

    def notes(self) -> list[str]:
        """Lines for the user about what was left in place, none when nothing was."""
        lines = [self.manifest_note] if self.manifest_note else []
        if self.left:
            lines.append(
                f"left {len(self.left)} file{'s' if len(self.left) != 1 else ''} ckgen did not "
                f"write or that changed since: {shorten(self.left)}"
            )
        return lines


SHOWN = 5


def shorten(items: list[str], shown: int = SHOWN) -> str:
    """'a, b, c … N more': a list of paths that stays one readable line."""
    head = ", ".join(items[:shown])
    return head + (f" … {len(items) - shown} more" if len(items) > shown else "")


_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def _previous_manifest(out: Path) -> tuple[dict[str, str], list[str], str | None]:
    """The files the previous manifest in ``out`` says ckgen wrote, with their sha256; the
    entries that are never deletable (no hash, an unsafe path); a note when the manifest as a
    whole is not trusted (another tool's, a ckgen manifest without hashes)."""
    man = out / MANIFEST
    try:
        raw = man.read_bytes()
    except OSError:
        return {}, [], None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        return {}, [], f"{man} is not a ckgen manifest: nothing it lists is removed"
    files = data.get("files")
    listed = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    if data.get("tool") != "ckgen" or data.get("format") != MANIFEST_FORMAT:
        if "manifest_version" in data and "arch" in data and isinstance(files, list):
            return (
                {},
                listed,
                f"{man} was written by an older ckgen without content hashes: the files it "
                "lists are not removed",
            )
        return {}, [], f"{man} is not a ckgen manifest: nothing it lists is removed"
    hashes = data.get("sha256")
    if not isinstance(hashes, dict):
        return {}, listed, f"{man} has no content hashes: the files it lists are not removed"
    owned: dict[str, str] = {}
    bad: list[str] = []
    for f in listed:
        h = hashes.get(f)
        if isinstance(h, str) and _SHA256_RE.fullmatch(h) and _safe_rel(f):
            owned[f] = h
        elif f != MANIFEST:
            bad.append(f)
    return owned, bad, None


def _safe_rel(rel: str) -> bool:
    p = Path(rel)
    return (
        bool(rel)
        and not p.is_absolute()
        and ".." not in p.parts
        and "\\" not in rel
        and "\0" not in rel
        and rel == p.as_posix()
    )


def _removable(out: Path, rel: str, sha256: str | None) -> bool | None:
    """True when ``out/rel`` is a regular file reached without any symlink, inside ``out``, with
    the recorded content; None when it is gone; False otherwise (it is left alone). Only the
    components below ``out`` are looked at, each without following a symlink."""
    root = out.resolve()
    p = out
    parts = Path(rel).parts
    for n, part in enumerate(parts):
        p = p / part
        try:
            st = p.lstat()
        except FileNotFoundError:
            return None
        except OSError:
            return False
        if stat.S_ISLNK(st.st_mode):
            return False
        if n < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            return False
        if n == len(parts) - 1 and not stat.S_ISREG(st.st_mode):
            return False
    if sha256 is None or root not in p.resolve().parents:
        return False
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def plan(
    out: Path, files: dict[str, bytes], extra_owned: tuple[str, ...] = (), prune: bool = True
) -> Plan:
    """What to write to make ``out`` hold ``files``; with ``prune``, also which files of the
    previous manifest to remove (and which to leave)."""
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
    if not prune:
        return pl
    keep = set(files) | set(extra_owned)
    owned, untrusted, pl.manifest_note = _previous_manifest(out)
    for rel in sorted(set(untrusted) - keep):
        # A path that leaves the output directory is named, never looked at.
        if not _safe_rel(rel) or _removable(out, rel, None) is not None:
            pl.left.append(rel)
    for rel, sha in sorted(owned.items()):
        if rel in keep:
            continue
        ok = _removable(out, rel, sha)
        if ok:
            pl.remove.append(rel)
        elif ok is False:
            pl.left.append(rel)
    pl.left.sort()
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
