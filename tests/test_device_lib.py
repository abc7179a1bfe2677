"""bench/device_lib.sh's ckgen_id: the line a device run logs to name the sources it ran."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _id(root: Path) -> str:
    out = subprocess.run(
        ["bash", str(root / "bench" / "device_lib.sh"), "--id"],
        capture_output=True, text=True, check=True, cwd=root,
    )  # fmt: skip
    return out.stdout.strip()


def test_ckgen_id_names_head_and_sources() -> None:
    line = _id(ROOT)
    assert re.fullmatch(r"HEAD (\w+|no git), sources [0-9a-f]{12}", line), line
    assert _id(ROOT) == line  # deterministic


def test_ckgen_id_follows_the_sources_not_the_head(tmp_path: Path) -> None:
    """A copy without .git (as a device copy may carry a stale one) still names its sources,
    and one changed byte in them changes the hash."""
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum is not on PATH")
    for part in ("bench/device_lib.sh", "arch_specs.json", "configs/forward/default.yaml"):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, tmp_path / part)
    (tmp_path / "ckgen").mkdir()
    (tmp_path / "templates").mkdir()
    (tmp_path / "ckgen" / "x.py").write_text("a = 1\n")
    first = _id(tmp_path)
    assert first.startswith("HEAD no git, sources ")
    (tmp_path / "ckgen" / "x.py").write_text("a = 2\n")
    assert _id(tmp_path) != first
