"""The everyday commands without arguments: the target (--arch, $CKGEN_ARCH, the GPU found by
nvidia-smi / rocminfo / amd-smi, else sm_90a), the output directory ckgen-out/, emit-cmake
reading the manifest, and `ckgen --help` listing every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ckgen.cli import defaults, main
from ckgen.cli.defaults import (
    DEFAULT_ARCH,
    FoundGpu,
    choose_arch,
    detect_gpu,
    nvidia_arch,
    run_tool,
)
from ckgen.errors import CkgenError
from ckgen.model.arch import load_arch_specs

KNOWN = list(load_arch_specs())

ROCMINFO = """\
*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
*******
Agent 2
*******
  Name:                    gfx942
  Uuid:                    GPU-1234
  Marketing Name:          AMD Instinct MI300X
  Vendor Name:             AMD
      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-
"""

AMD_SMI = """\
GPU: 0
    ASIC:
        MARKET_NAME: AMD Instinct MI210
        VENDOR_ID: 0x1002
        TARGET_GRAPHICS_VERSION: gfx90a
"""


def fake_runner(outputs: dict[str, str | None], calls: list[tuple[str, float]] | None = None):
    def run(argv: list[str], timeout: float) -> str | None:
        if calls is not None:
            calls.append((argv[0], timeout))
        return outputs.get(argv[0])

    return run


# --- mapping and detection -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cap", "arch"),
    [
        ("9.0", "sm_90a"),
        ("8.0", "sm_80"),
        ("8.6", "sm_80"),  # sm_80 code runs on 8.6; no sm_86 target
        ("8.9", "sm_80"),
        ("10.0", None),
        ("12.0", None),
        ("7.5", None),
        ("garbage", None),
        ("", None),
    ],
)
def test_nvidia_compute_capability_maps_to_a_known_target(cap: str, arch: str | None) -> None:
    assert nvidia_arch(cap, KNOWN) == arch


def test_nvidia_prefers_the_arch_specific_variant() -> None:
    assert nvidia_arch("9.0", ["sm_90", "sm_90a"]) == "sm_90a"
    assert nvidia_arch("9.0", ["sm_90"]) == "sm_90"
    # an arch-specific target never stands in for a newer minor version
    assert nvidia_arch("9.1", ["sm_90a"]) is None


def test_detect_nvidia_smi() -> None:
    run = fake_runner({"nvidia-smi": "NVIDIA H200, 9.0\nNVIDIA H200, 9.0\n"})
    assert detect_gpu(KNOWN, run) == FoundGpu("NVIDIA H200", "sm_90a", "compute capability 9.0")


def test_detect_unknown_nvidia_gpu_has_no_target() -> None:
    run = fake_runner({"nvidia-smi": "NVIDIA GeForce RTX 5090, 12.0\n"})
    got = detect_gpu(KNOWN, run)
    assert got is not None and got.arch is None and got.name == "NVIDIA GeForce RTX 5090"


def test_detect_rocminfo_takes_the_gpu_agent() -> None:
    run = fake_runner({"nvidia-smi": None, "rocminfo": ROCMINFO})
    assert detect_gpu(KNOWN, run) == FoundGpu("AMD Instinct MI300X", "gfx942", "gfx942")


def test_detect_amd_smi_when_rocminfo_finds_nothing() -> None:
    run = fake_runner(
        {"rocminfo": "ROCk module is NOT loaded, possibly no GPU devices\n", "amd-smi": AMD_SMI}
    )
    assert detect_gpu(KNOWN, run) == FoundGpu("AMD Instinct MI210", "gfx90a", "gfx90a")


def test_detect_nothing_and_the_budget_is_shared() -> None:
    calls: list[tuple[str, float]] = []
    assert detect_gpu(KNOWN, fake_runner({}, calls), budget_s=2.0) is None
    assert [c[0] for c in calls] == ["nvidia-smi", "rocminfo", "amd-smi"]
    assert all(0 < t <= 2.0 for _, t in calls)


def test_detect_stops_when_the_budget_is_spent() -> None:
    calls: list[tuple[str, float]] = []

    def slow(argv: list[str], timeout: float) -> str | None:
        calls.append((argv[0], timeout))
        time.sleep(0.15)
        return None

    assert detect_gpu(KNOWN, slow, budget_s=0.1) is None
    assert [c[0] for c in calls] == ["nvidia-smi"]


def test_run_tool_missing_program_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults.shutil, "which", lambda name: None)
    assert run_tool(["nvidia-smi"], 3.0) is None


def test_run_tool_never_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\nsleep 30\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    t0 = time.monotonic()
    assert run_tool(["nvidia-smi"], 0.3) is None
    assert time.monotonic() - t0 < 5


def test_run_tool_failing_program_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\necho 'NVIDIA H200, 9.0'\nexit 9\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run_tool(["nvidia-smi"], 3.0) is None


def test_run_tool_mocked_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults.shutil, "which", lambda name: "/usr/bin/" + name)

    def boom(*a: object, **k: object) -> object:
        raise subprocess.TimeoutExpired(cmd="nvidia-smi", timeout=3)

    monkeypatch.setattr(defaults.subprocess, "run", boom)
    assert run_tool(["nvidia-smi"], 3.0) is None


# --- the order of the sources ------------------------------------------------------------------


def _never(names: list[str]) -> FoundGpu | None:
    raise AssertionError("detection must not run")


def test_choose_option_first() -> None:
    c = choose_arch("gfx942", KNOWN, env={"CKGEN_ARCH": "sm_80"}, detect=_never)
    assert (c.arch, c.source) == ("gfx942", "option")


def test_choose_env_second() -> None:
    c = choose_arch(None, KNOWN, env={"CKGEN_ARCH": "gfx90a"}, detect=_never)
    assert c.note == "ckgen: arch gfx90a (from CKGEN_ARCH)"


def test_choose_env_unknown_is_an_error() -> None:
    with pytest.raises(CkgenError, match=r"CKGEN_ARCH='gfx943'.*did you mean 'gfx942'"):
        choose_arch(None, KNOWN, env={"CKGEN_ARCH": "gfx943"}, detect=_never)


def test_choose_detected_third() -> None:
    c = choose_arch(
        None,
        KNOWN,
        env={"CKGEN_ARCH": ""},
        detect=lambda n: FoundGpu("NVIDIA H200", "sm_90a", "compute capability 9.0"),
    )
    assert c.note == "ckgen: arch sm_90a (detected: NVIDIA H200)"


def test_choose_default_last() -> None:
    c = choose_arch(None, KNOWN, env={}, detect=lambda n: None)
    assert c.arch == DEFAULT_ARCH == "sm_90a"
    assert c.note == "ckgen: arch sm_90a (default; set --arch or CKGEN_ARCH)"


def test_choose_default_names_a_gpu_ckgen_has_no_target_for() -> None:
    c = choose_arch(
        None,
        KNOWN,
        env={},
        detect=lambda n: FoundGpu("NVIDIA GeForce RTX 5090", None, "compute capability 12.0"),
    )
    assert c.arch == "sm_90a" and c.source == "default"
    assert "RTX 5090 found here (compute capability 12.0) is not a ckgen target" in c.note


# --- through the CLI ---------------------------------------------------------------------------


def _fake_nvidia_smi(monkeypatch: pytest.MonkeyPatch, line: str) -> None:
    monkeypatch.delenv("CKGEN_ARCH", raising=False)
    monkeypatch.setattr(
        defaults.shutil, "which", lambda n: "/usr/bin/nvidia-smi" if n == "nvidia-smi" else None
    )

    def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess:
        assert argv[0] == "/usr/bin/nvidia-smi" and kw.get("timeout")
        return subprocess.CompletedProcess(argv, 0, stdout=line, stderr="")

    monkeypatch.setattr(defaults.subprocess, "run", run)


def test_cli_detected_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_nvidia_smi(monkeypatch, "NVIDIA H200, 9.0\n")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["list-instances", "--set", "tests", "--format", "names"])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines()[0] == "ckgen: arch sm_90a (detected: NVIDIA H200)"
    assert "ckgen:" not in res.stdout and res.stdout.split()[0].startswith("grouped_conv_")


def test_cli_env_and_quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CKGEN_ARCH", "gfx942")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["generate", "--set", "tests", "--variant", "forward"])
    assert res.exit_code == 0, res.output
    assert "ckgen: arch gfx942 (from CKGEN_ARCH)" in res.stderr
    assert "instances for gfx942" in res.stdout
    man = json.loads((tmp_path / "ckgen-out" / "manifest.json").read_text())
    assert (man["arch"], man["platform"], man["gpu_targets"]) == ("gfx942", "amd", "gfx942")
    res = CliRunner().invoke(main, ["generate", "--set", "tests", "--variant", "forward", "-q"])
    assert res.exit_code == 0 and res.stdout == "" and res.stderr == ""


def test_cli_option_prints_no_note(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CKGEN_ARCH", "gfx942")
    res = CliRunner().invoke(
        main, ["list-instances", "--arch", "sm_80", "--set", "tests", "--format", "names"]
    )
    assert res.exit_code == 0 and res.stderr == ""


def test_help_lists_every_command_with_one_line() -> None:
    res = CliRunner().invoke(main, ["--help"])
    assert res.exit_code == 0
    block = res.stdout.split("Commands:\n", 1)[1]
    rows = [line.split(None, 1) for line in block.splitlines() if line.strip()]
    assert {r[0] for r in rows} == set(main.commands) and len(rows) == len(main.commands) == 11
    for name, text in rows:
        assert text.strip() and not text.endswith("..."), (name, text)
    assert "ckgen-out" in res.stdout and "CKGEN_ARCH" in res.stdout


@pytest.mark.parametrize("cmd", ["generate", "emit-cmake", "build", "check-isa"])
def test_output_default_is_documented(cmd: str) -> None:
    res = CliRunner().invoke(main, [cmd, "--help"])
    assert "[default: ckgen-out]" in " ".join(res.stdout.split())


# --- the used-by lines, exactly as written, in an empty directory ------------------------------


@pytest.fixture
def bare(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An empty working directory; no CKGEN_ARCH and no GPU tools on PATH."""
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CKGEN_ARCH"}
    env["PATH"] = str(empty_bin)
    return cwd, env


def _ckgen(cwd: Path, env: dict[str, str], line: str) -> subprocess.CompletedProcess:
    argv = line.split()
    assert argv[0] == "ckgen"
    return subprocess.run(
        [sys.executable, "-m", "ckgen.cli", *argv[1:]],
        cwd=cwd,
        env=env,
        text=True,
        capture_output=True,
        timeout=120,
    )


def test_used_by_lines_in_an_empty_directory(bare: tuple[Path, dict[str, str]]) -> None:
    cwd, env = bare
    note = "ckgen: arch sm_90a (default; set --arch or CKGEN_ARCH)"

    p = _ckgen(cwd, env, "ckgen generate --variant backward_data")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [note]
    assert "instances for sm_90a" in p.stdout and "-> ckgen-out:" in p.stdout
    man = json.loads((cwd / "ckgen-out" / "manifest.json").read_text())
    assert man["variants"] == ["backward_data"]
    assert (man["arch"], man["platform"], man["gpu_targets"]) == ("sm_90a", "nvidia", "90a")
    assert man["tool"] == "ckgen" and len(man["sha256"]) == len(man["files"]) - 1

    p = _ckgen(cwd, env, "ckgen list-instances")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [note]
    assert "instances for sm_90a" in p.stdout
    for v in ("forward", "backward_data", "backward_weight"):
        assert f" {v} " in p.stdout

    p = _ckgen(cwd, env, "ckgen emit-cmake")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert p.stdout.strip() == (
        "ckgen-out/CMakeLists.txt: written (platform nvidia, targets 90a, "
        "from ckgen-out/manifest.json)"
    )
    cmake = (cwd / "ckgen-out" / "CMakeLists.txt").read_text()
    assert "90a" in cmake
    assert sorted(x.name for x in cwd.iterdir()) == ["ckgen-out"]


def test_emit_cmake_without_a_project_says_what_to_run(bare: tuple[Path, dict[str, str]]) -> None:
    cwd, env = bare
    p = _ckgen(cwd, env, "ckgen emit-cmake")
    assert p.returncode == 2
    assert "ckgen-out/manifest.json not found: run `ckgen generate` first" in p.stderr
    assert not (cwd / "ckgen-out").exists()
