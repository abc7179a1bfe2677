"""Shared helpers: run the CLI in-process (fast) or as a subprocess (real cwd, real exit code)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ckgen.cli import main

REPO = Path(__file__).resolve().parent.parent
ALL_ARCHS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201", "sm_80", "sm_90a")


def cli(*args: str, ok: bool = True) -> "object":
    """Run ckgen in-process; asserts exit code 0 unless ok=False. Returns the click Result
    (stdout in .stdout, stderr in .stderr)."""
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert res.exit_code == 0, f"ckgen {' '.join(args)} -> {res.exit_code}\n{res.output}\n{res.stderr}"
    return res


def cli_proc(*args: str, cwd: Path | None = None, ok: bool = True, env: dict | None = None,
             timeout: int = 300) -> subprocess.CompletedProcess:
    """Run `python -m ckgen.cli` in a subprocess (own cwd, own hash seed)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-m", "ckgen.cli", *args], cwd=cwd, env=e, text=True,
                       capture_output=True, timeout=timeout)
    if ok:
        assert p.returncode == 0, f"ckgen {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def tree(root: Path) -> dict[str, bytes]:
    """Every regular file under root, relative posix path -> bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def tree_digest(root: Path) -> dict[str, str]:
    return {k: hashlib.sha256(v).hexdigest() for k, v in tree(root).items()}


def stat_tree(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (mtime_ns, inode) for every file and directory."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.stat()
        out[p.relative_to(root).as_posix()] = (st.st_mtime_ns, st.st_ino)
    return out


def have(*tools: str) -> bool:
    return all(shutil.which(t) for t in tools)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
