"""wavelet_tma backward_data as forward launches (templates/include/ckgen/tma_phases.hpp), checked
without a GPU: tests/cpp/tma_phase_check.cpp scatters the filter through flip_dst, runs every
phase as the TMA kernel's forward convolution through its output map into NaN-poisoned dx, and
compares with a direct backward_data on 310 problems (strides 1-4, pads, dilation, groups).
The same checks must fail when the plan is broken: tma_phases.hpp is copied, mutated one line
at a time and the checks rebuilt against the copy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

INCLUDE = REPO / "templates" / "include"
CHECK = REPO / "tests" / "cpp" / "tma_phase_check.cpp"
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler (g++, c++ or clang++)")


def _build_and_run(include: Path, out: Path) -> subprocess.CompletedProcess:
    exe = out / "tma_phase_check"
    cc = subprocess.run([CXX, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{include}",
                         str(CHECK), "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert cc.returncode == 0, cc.stdout + cc.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)


def test_phase_plan_matches_direct_backward_data(tmp_path: Path) -> None:
    p = _build_and_run(INCLUDE, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "phases: ok 310 problems", p.stdout


MUTATIONS = {
    "sub-filter not flipped": (
        "const int t = (jh - 1 - fy / s_h) * jw + (jw - 1 - fx / s_w);",
        "const int t = (fy / s_h) * jw + (jw - 1 - fx / s_w);"),
    "residue ignores the padding": (
        "r[i] = int((b[i] + p.pad_l[i]) % s);",
        "r[i] = int(b[i] % s);"),
    "left pad off by one": (
        "ph.q.pad_l[i] = (taps - 1) * d - shift;",
        "ph.q.pad_l[i] = (taps - 1) * d - shift + 1;"),
    "phases without taps left unwritten": (
        "        pl.zero_first = true;\n",
        ""),
    "output rows not strided": (
        "ph.out_sh = sh * p.in[2];",
        "ph.out_sh = p.in[2];"),
    "stride-1 path unflipped": (
        "return {(int64_t(g) * C * taps + (taps - 1 - (fy * X + fx))) * K, taps};",
        "return {(int64_t(g) * C * taps + (fy * X + fx)) * K, taps};"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_phase_checks_catch_a_broken_plan(tmp_path: Path, name: str) -> None:
    old, new = MUTATIONS[name]
    inc = tmp_path / "include"
    shutil.copytree(INCLUDE, inc)
    hdr = inc / "ckgen" / "tma_phases.hpp"
    text = hdr.read_text()
    assert text.count(old) == 1, f"mutation target not found once in tma_phases.hpp: {old}"
    hdr.write_text(text.replace(old, new))
    p = _build_and_run(inc, tmp_path)
    assert p.returncode == 1 and "FAIL" in p.stdout, f"{name}: the checks still pass\n{p.stdout}"
