"""wavelet_tma backward_data as forward launches (templates/include/ckgen/schedule/
tma_phases.hpp), checked
without a GPU: tests/cpp/tma_phase_check.cpp runs every phase as the TMA kernel's forward
convolution, reading w's taps through the phase's tap map and writing through its output map
into NaN-poisoned dx, and compares with a direct backward_data on 357 problems (strides 1-4, pads,
dilation, groups;
47 of them 3D, the depth flipped like the other dimensions and split into phases by depth strides
1-3 that divide the depth).
The same checks must fail when the plan is broken: schedule/tma_phases.hpp is copied, mutated one
line
at a time and the checks rebuilt against the copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, build_and_run_host_check, mutated_include, needs_host_cxx

INCLUDE = REPO / "templates" / "include"
CHECK = REPO / "tests" / "cpp" / "tma_phase_check.cpp"
pytestmark = needs_host_cxx


def test_phase_plan_matches_direct_backward_data(tmp_path: Path) -> None:
    p = build_and_run_host_check(CHECK, INCLUDE, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "phases: ok 357 problems", p.stdout


MUTATIONS = {
    "sub-filter rows not flipped": ("ph.tap_dh = -sh * X;", "ph.tap_dh = sh * X;"),
    "residue ignores the padding": (
        "r[i] = int((b[i] + p.pad_l[i]) % s);",
        "r[i] = int(b[i] % s);",
    ),
    "left pad off by one": (
        "ph.q.pad_l[i] = (taps - 1) * d - shift;",
        "ph.q.pad_l[i] = (taps - 1) * d - shift + 1;",
    ),
    "phases without taps left unwritten": ("        pl.zero_first = true;\n", ""),
    "output rows not strided": ("ph.out_sh = sh * p.in[2];", "ph.out_sh = p.in[2];"),
    "depth not flipped": ("ph.tap_dd = -sd * YX;", "ph.tap_dd = sd * YX;"),
    "depth phases not interleaved": (
        "ph.out_sn = sd * p.in[1] * p.in[2];",
        "ph.out_sn = p.in[1] * p.in[2];",
    ),
    "sub-filter columns ignore the stride": ("ph.tap_dw = -sw;", "ph.tap_dw = -1;"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_phase_checks_catch_a_broken_plan(tmp_path: Path, name: str) -> None:
    inc = mutated_include(tmp_path, "schedule/tma_phases.hpp", *MUTATIONS[name])
    p = build_and_run_host_check(CHECK, inc, tmp_path)
    assert p.returncode == 1 and "FAIL" in p.stdout, f"{name}: the checks still pass\n{p.stdout}"
