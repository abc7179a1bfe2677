"""The wheel carries its data: built, installed into a fresh venv, and run from another
directory, ckgen finds templates/, configs/ and arch_specs.json inside the installed package."""

from __future__ import annotations

import importlib.util
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, cli, tree

pytestmark = pytest.mark.slow


def _run(*cmd: str, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    # No PYTHONPATH: the venv must see ckgen from the wheel only.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    p = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    # Without network the build backend must be importable here (pip install -e '.[test]' brings
    # it).
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-isolation"]
    _run(sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(dist), str(REPO))
    wheels = list(dist.glob("ckgen-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_contains_the_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in (
        "ckgen/cli/app.py",
        "ckgen/_share/arch_specs.json",
        "ckgen/_share/CMakeLists.txt.in",
        "ckgen/_share/templates/project/instance.hpp.j2",
        "ckgen/_share/templates/include/ckgen/core/vocab.hpp",
        "ckgen/_share/testing/testing.hpp",
        "ckgen/_share/configs/forward/tests.yaml",
        "ckgen/_share/configs/backward_weight/profiler.yaml",
        "ckgen/_share/configs/tuning/sm_90a_H100.json",
    ):
        assert f in names, f
    src_templates = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "templates").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert {f"ckgen/_share/{t}" for t in src_templates} <= names
    assert not any(n.startswith("tests/") for n in names)


def test_installed_wheel_generates_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # Dependencies (click, jinja2, pyyaml, rich) come from this interpreter's site-packages, so
    # the test needs no network; ckgen itself comes only from the wheel.
    _run(sys.executable, "-m", "venv", "--system-site-packages", str(venv))
    py = venv / "bin" / "python"
    # When this interpreter is itself a virtualenv (scripts/test.sh's .venv), the new venv's
    # --system-site-packages sees only the base interpreter: point it at ours too (.pth file).
    new_site = _run(
        str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    ).stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(new_site) / "_ckgen_test_parent_site.pth").write_text("\n".join(ours) + "\n")
    _run(str(py), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(
        str(py),
        "-c",
        "import ckgen, ckgen.resources as r; print(ckgen.__file__); print(r.share_dir())",
        cwd=elsewhere,
    ).stdout.split()
    assert where[0].startswith(str(venv)), where
    assert where[1].startswith(str(venv)) and where[1].endswith("ckgen/_share"), where
    ckgen = venv / "bin" / "ckgen"
    p = _run(str(ckgen), "generate", "--arch", "sm_90a", "--set", "tests", "-o", "X", cwd=elsewhere)
    out = elsewhere / "X"
    assert "written" in p.stdout
    for f in (
        "manifest.json",
        "instances.cmake",
        "registry/registry.cpp",
        "include/ckgen/core/vocab.hpp",
        "include/ckgen/kernel/conv_kernel.hpp",
        "profiler/profiler_forward.cpp",
        "tests/test_grouped_conv_backward_weight.cpp",
        "testing/testing.hpp",
        "testing/streamk_checks.hpp",
    ):
        assert (out / f).is_file(), f
    assert list((out / "instances" / "forward").glob("*.hpp"))
    _run(
        str(ckgen),
        "emit-cmake",
        "-o",
        "X",
        "--platform",
        "nvidia",
        "--gpu-targets",
        "90a",
        cwd=elsewhere,
    )
    assert (out / "CMakeLists.txt").is_file()
    _run(
        str(ckgen),
        "list-instances",
        "--arch",
        "gfx1100",
        "--set",
        "profiler",
        "--format",
        "names",
        cwd=elsewhere,
    )
    # the installed package generates exactly what the source tree does
    ref = tmp_path / "ref"
    cli("generate", "--arch", "sm_90a", "--set", "tests", "-o", str(ref), "-q")
    cli("emit-cmake", "-o", str(ref), "--platform", "nvidia", "--gpu-targets", "90a")
    assert tree(out) == tree(ref)
