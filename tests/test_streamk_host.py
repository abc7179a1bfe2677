"""StreamK (backward_weight) checks that need no GPU.

- The plan / schedule checks of tests/cpp/suite/streamk_checks.hpp, compiled with
  the host C++ compiler (tests/cpp/streamk_host_check.cpp): hand-computed grids, workspace sizes
  and flag layout, the schedule simulation over a range of shapes, and injected faults.
- The same checks fail when the real schedule code is broken: schedule/streamk_plan.hpp is copied,
  mutated (one wrong line at a time) and the checks are rebuilt against the copy.
- is_supported / workspace_bytes of generated StreamK instances (nvcc, PTX only: no GPU and no
  ptxas needed), with the refusal reasons a user sees.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import (
    REPO,
    build_and_run_host_check,
    cli,
    have,
    mutated_include,
    needs_host_cxx,
)

INCLUDE = REPO / "templates" / "include"
HOST_CHECK = REPO / "tests" / "cpp" / "streamk_host_check.cpp"
IS_SUPPORTED = REPO / "tests" / "cpp" / "streamk_is_supported.cu"
needs_cxx = needs_host_cxx
CHECKS = ("hand_computed", "schedules_linear", "schedules_tree", "faults_caught")


def _build_and_run(include: Path, out: Path) -> subprocess.CompletedProcess:
    return build_and_run_host_check(HOST_CHECK, include, out)


@needs_cxx
def test_streamk_host_checks_pass(tmp_path: Path) -> None:
    p = _build_and_run(INCLUDE, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines == [f"{c}: ok" for c in CHECKS], p.stdout


# One wrong line each in the real schedule code; every one must make the checks fail.
MUTATIONS = {
    "linear writer skips the lowest contributor": (
        "for (int c = last - 1; c >= first; --c) ops.add(c);",
        "for (int c = last - 1; c > first; --c) ops.add(c);",
    ),
    "tree skips the last level": (
        "if (rank + d < n) ops.add(b - d);",
        "if (rank + d < n - 1) ops.add(b - d);",
    ),
    "StreamK ranges ignore the remainder": (
        "CKGEN_HOST_DEVICE int begin(int b) const { return b * q + (b < r ? b : r); }",
        "CKGEN_HOST_DEVICE int begin(int b) const { return b * q; }",
    ),
    "block_of forgets the long blocks": (
        "return i < big ? i / (q + 1) : r + (i - big) / q;",
        "return i < big ? i / (q + 1) : (i - big) / q;",
    ),
    "persistent data-parallel tiles without the wave stride": (
        "t = Persistent ? s.sk_tiles + b + k * s.blocks : s.sk_tiles + (b - s.sk_blocks);",
        "t = Persistent ? s.sk_tiles + b + k : s.sk_tiles + (b - s.sk_blocks);",
    ),
    "StreamK section of T % B tiles only": (
        "s.sk_tiles = tiles % blocks + blocks;",
        "s.sk_tiles = tiles % blocks;",
    ),
}


@needs_cxx
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_streamk_host_checks_catch_a_broken_schedule(tmp_path: Path, name: str) -> None:
    inc = mutated_include(tmp_path, "schedule/streamk_plan.hpp", *MUTATIONS[name])
    p = _build_and_run(inc, tmp_path)
    assert p.returncode == 1 and "FAIL" in p.stdout, f"{name}: the checks still pass\n{p.stdout}"


# ------------------------------------------------------------------ is_supported (nvcc, no GPU)
SK_YAML = """variant: backward_weight
defaults: {ndim: 2, datatype: fp16, tile: [64, 64, 32], waves: [2, 2, 1], pipeline: multistage,
           stages: 3, vector: [8, 8, 8], k_batch: auto}
spaces:
  - {reduction: streamk_linear, persistent: false}
  - {reduction: streamk_tree, persistent: true}
"""
LIN = "grouped_conv_bwd_weight_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8_sklin"
TREE = "grouped_conv_bwd_weight_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8_sktree_persist"


@pytest.fixture(scope="module")
def is_supported_report(tmp_path_factory) -> dict[str, str]:
    if not have("nvcc"):
        pytest.skip("needs nvcc on PATH")
    d = tmp_path_factory.mktemp("sk_is_supported")
    (d / "sk.yaml").write_text(SK_YAML)
    gen = d / "gen"
    cli("generate", "--arch", "sm_90a", "--config", str(d / "sk.yaml"), "-o", str(gen), "-q")
    hdrs = gen / "instances" / "backward_weight"
    names = sorted(p.stem for p in hdrs.glob("*.hpp"))
    assert names == [LIN, TREE]
    exe = d / "streamk_is_supported"
    cmd = [
        "nvcc",
        "-std=c++17",
        "-O1",
        "--generate-code=arch=compute_90a,code=compute_90a",
        f"-I{gen / 'include'}",
        f"-I{hdrs}",
    ]
    for n in names:
        cmd += ["-include", f"{n}.hpp"]
    cmd += [
        "-DCKGEN_INSTANCES=" + " ".join(f"CKGEN_INSTANCE({n})" for n in names),
        "-x",
        "cu",
        str(IS_SUPPORTED),
        "-o",
        str(exe),
    ]
    cc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert cc.returncode == 0, cc.stdout[-4000:] + cc.stderr[-4000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    out = {}
    for line in run.stdout.splitlines():
        key, _, value = line.partition(": ")
        out[key] = value
    return out


@pytest.mark.parametrize("inst", [LIN, TREE])
def test_streamk_is_supported_refuses_with_a_reason(is_supported_report, inst: str) -> None:
    r = is_supported_report
    assert r[f"{inst} valid_b7"] == "accepted"
    expected = {
        "k_batch3": "StreamK sizes its own split: RunOptions::k_batch must be 0 (got 3)",
        "blocks_negative": "RunOptions::streamk_blocks must be >= 0",
        "c12_vector8": "vector width 8 needs C (12) to be a multiple of 8",
        "k4_vector8": "vector width 8 needs K (4) to be a multiple of 8",
        "ndim1": "ndim mismatch: instance is 2D, problem is 1D",
        "tiles_x_iters_2p32": "StreamK: tiles x k iterations (4096 x 1048576) exceeds 2^31-1",
    }
    for case, reason in expected.items():
        assert reason in r[f"{inst} {case}"], (case, r[f"{inst} {case}"])


@pytest.mark.parametrize("inst", [LIN, TREE])
def test_streamk_workspace_bytes_by_hand(is_supported_report, inst: str) -> None:
    # 18 tiles of 4 k iterations (64x64x32). B 1, 3, 18: whole data-parallel waves, no workspace.
    # B 7: 18 % 7 + 7 = 11 StreamK tiles = 44 iterations over 7 blocks -> 7 slots.
    # B 100: all 18 tiles StreamK, 72 iterations -> 72 blocks of one iteration -> 72 slots.
    slot = 64 * 64 * 4 + 4  # fp32 partial tile + its flag
    want = {1: 0, 3: 0, 18: 0, 7: 7 * slot, 100: 72 * slot}
    for b, bytes_ in want.items():
        assert int(is_supported_report[f"{inst} workspace B{b}"]) == bytes_, b
