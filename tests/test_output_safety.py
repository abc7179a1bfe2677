"""The output directory is safe: a manifest never causes the deletion of anything ckgen did not
write. Stale entries are removed only as regular files inside -o, reached without a symlink,
whose sha256 is the recorded one; everything else is left and reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ckgen.emit.output import apply, plan
from ckgen.emit.render import MANIFEST, MANIFEST_FORMAT

from conftest import cli

SEL = ("--arch", "sm_90a", "--set", "tests", "--variant", "forward")


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _manifest(files: dict[str, bytes], **extra: object) -> bytes:
    doc: dict[str, object] = {
        "format": MANIFEST_FORMAT,
        "manifest_version": 2,
        "tool": "ckgen",
        "arch": "sm_90a",
        "files": sorted(files) + [MANIFEST],
        "sha256": {k: _sha(v) for k, v in files.items()},
    }
    doc.update(extra)
    return json.dumps(doc).encode()


def _write(out: Path, files: dict[str, bytes]) -> None:
    pl = plan(out, {**files, MANIFEST: _manifest(files)})
    apply(pl)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """-o with a previous run's files, and a directory outside it with a user's files."""
    out = tmp_path / "out"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_bytes(b"precious\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "a.hpp").write_bytes(b"// a\n")
    _write(out, {"keep.hpp": b"// keep\n", "old/stale.hpp": b"// stale\n"})
    return out, outside


def _forge(out: Path, entries: dict[str, bytes]) -> None:
    """Adds entries with correct hashes to the manifest in ``out``."""
    doc = json.loads((out / MANIFEST).read_text())
    for rel, data in entries.items():
        doc["files"].append(rel)
        doc["sha256"][rel] = _sha(data)
    (out / MANIFEST).write_text(json.dumps(doc))


def _next_run(out: Path) -> tuple[list[str], list[str], str | None]:
    files = {"keep.hpp": b"// keep\n"}
    pl = plan(out, {**files, MANIFEST: _manifest(files)})
    apply(pl)
    return pl.remove, pl.left, pl.manifest_note


def test_a_stale_file_ckgen_wrote_is_removed(layout: tuple[Path, Path]) -> None:
    out, _ = layout
    removed, left, note = _next_run(out)
    assert removed == ["old/stale.hpp"] and left == [] and note is None
    assert not (out / "old").exists()
    assert (out / "keep.hpp").read_bytes() == b"// keep\n"


def test_dotdot_and_absolute_entries_are_left(layout: tuple[Path, Path]) -> None:
    out, outside = layout
    _forge(
        out,
        {
            "../outside/precious.txt": b"precious\n",
            str(outside / "precious.txt"): b"precious\n",
            "old/../../outside/sub/a.hpp": b"// a\n",
        },
    )
    removed, left, _ = _next_run(out)
    assert removed == ["old/stale.hpp"]
    assert len(left) == 3
    assert (outside / "precious.txt").read_bytes() == b"precious\n"
    assert (outside / "sub" / "a.hpp").read_bytes() == b"// a\n"


def test_a_path_through_a_symlinked_directory_is_left(layout: tuple[Path, Path]) -> None:
    out, outside = layout
    (out / "include").symlink_to(outside / "sub", target_is_directory=True)
    (out / "link.txt").symlink_to(outside / "precious.txt")
    _forge(out, {"include/a.hpp": b"// a\n", "link.txt": b"precious\n"})
    removed, left, _ = _next_run(out)
    assert removed == ["old/stale.hpp"]
    assert left == ["include/a.hpp", "link.txt"]
    assert (outside / "sub" / "a.hpp").read_bytes() == b"// a\n"
    assert (outside / "precious.txt").read_bytes() == b"precious\n"
    assert (out / "include").is_symlink() and (out / "link.txt").is_symlink()


def test_a_symlinked_output_parent_does_not_matter_inside(tmp_path: Path) -> None:
    """-o itself may be reached through a symlink; only the components below it count."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    out = tmp_path / "alias" / "out"
    _write(out, {"keep.hpp": b"// keep\n", "old/stale.hpp": b"// stale\n"})
    removed, _, _ = _next_run(out)
    assert removed == ["old/stale.hpp"]


def test_a_changed_file_is_left(layout: tuple[Path, Path]) -> None:
    out, _ = layout
    (out / "old" / "stale.hpp").write_bytes(b"// edited by hand\n")
    removed, left, _ = _next_run(out)
    assert removed == [] and left == ["old/stale.hpp"]
    assert (out / "old" / "stale.hpp").read_bytes() == b"// edited by hand\n"


def test_a_directory_where_a_file_was_is_left(layout: tuple[Path, Path]) -> None:
    out, _ = layout
    (out / "old" / "stale.hpp").unlink()
    (out / "old" / "stale.hpp").mkdir()
    (out / "old" / "stale.hpp" / "mine").write_bytes(b"mine\n")
    removed, left, _ = _next_run(out)
    assert removed == [] and left == ["old/stale.hpp"]
    assert (out / "old" / "stale.hpp" / "mine").read_bytes() == b"mine\n"


def test_an_entry_without_a_hash_is_left(layout: tuple[Path, Path]) -> None:
    out, _ = layout
    (out / "user.txt").write_bytes(b"mine\n")
    doc = json.loads((out / MANIFEST).read_text())
    doc["files"].append("user.txt")
    (out / MANIFEST).write_text(json.dumps(doc))
    removed, left, _ = _next_run(out)
    assert removed == ["old/stale.hpp"] and left == ["user.txt"]
    assert (out / "user.txt").exists()


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"name": "other-tool", "files": ["user.txt", "old/stale.hpp"]}, "not a ckgen manifest"),
        (
            {
                "tool": "webpack",
                "files": ["user.txt"],
                "sha256": {"user.txt": _sha(b"mine\n")},
            },
            "not a ckgen manifest",
        ),
        (
            {"manifest_version": 1, "arch": "sm_90a", "files": ["user.txt", "old/stale.hpp"]},
            "older ckgen without content hashes",
        ),
        (["user.txt"], "not a ckgen manifest"),
        ("{not json", "not a ckgen manifest"),
    ],
)
def test_a_manifest_ckgen_cannot_trust_removes_nothing(
    layout: tuple[Path, Path], doc: object, says: str
) -> None:
    out, _ = layout
    (out / "user.txt").write_bytes(b"mine\n")
    (out / MANIFEST).write_text(doc if isinstance(doc, str) else json.dumps(doc))
    removed, _, note = _next_run(out)
    assert removed == []
    assert note is not None and says in note
    assert (out / "user.txt").read_bytes() == b"mine\n"
    assert (out / "old" / "stale.hpp").read_bytes() == b"// stale\n"


# --- through `ckgen generate` ------------------------------------------------------------------


def test_generate_removes_its_stale_files_and_reports_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "precious.txt").write_bytes(b"precious\n")
    (outside / "sub" / "a.hpp").write_bytes(b"// a\n")
    cli("generate", *SEL, "-o", str(out), "-q")
    man = json.loads((out / MANIFEST).read_text())
    assert man["format"] == MANIFEST_FORMAT and man["tool"] == "ckgen"
    for rel in man["files"]:
        if rel != MANIFEST:
            assert man["sha256"][rel] == _sha((out / rel).read_bytes()), rel
    headers = sorted(f for f in man["files"] if f.startswith("instances/forward/"))
    stale_ours, edited = headers[0], headers[1]
    (out / edited).write_bytes(b"// edited\n")
    (out / "linked").symlink_to(outside / "sub", target_is_directory=True)
    _forge(
        out,
        {
            "../outside/precious.txt": b"precious\n",
            str(outside / "precious.txt"): b"precious\n",
            "linked/a.hpp": b"// a\n",
        },
    )
    keep = Path(stale_ours).stem, Path(edited).stem
    kernels = [f"--kernels={Path(h).stem}" for h in headers if Path(h).stem not in keep]
    res = cli("generate", *SEL, *kernels, "-o", str(out))
    assert not (out / stale_ours).exists()
    assert (out / edited).read_bytes() == b"// edited\n"
    assert (outside / "precious.txt").read_bytes() == b"precious\n"
    assert (outside / "sub" / "a.hpp").read_bytes() == b"// a\n"
    assert "note: left 4 files ckgen did not write or that changed since: " in res.stderr
    for rel in ("../outside/precious.txt", "linked/a.hpp", edited):
        assert rel in res.stderr


def test_generate_with_another_tools_manifest_notes_it(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    out.mkdir()
    (out / "user.txt").write_bytes(b"mine\n")
    (out / MANIFEST).write_text(json.dumps({"name": "other", "files": ["user.txt"]}))
    res = cli("generate", *SEL, "-o", str(out))
    assert f"note: {out / MANIFEST} is not a ckgen manifest: nothing it lists is removed" in (
        res.stderr
    )
    assert (out / "user.txt").read_bytes() == b"mine\n"
    dry = cli("generate", *SEL, "--dry-run", "-o", str(out))
    assert "note:" not in dry.stderr  # the manifest is ckgen's now


def test_the_left_list_is_truncated(layout: tuple[Path, Path]) -> None:
    out, _ = layout
    _forge(out, {f"../x{n}": b"x" for n in range(12)})
    pl = plan(out, {"keep.hpp": b"// keep\n"})
    (line,) = pl.notes()
    assert line.startswith("left 12 files ckgen did not write or that changed since: ")
    assert line.endswith(" … 7 more")
