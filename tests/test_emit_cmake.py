"""emit-cmake: the rendered CMakeLists.txt configures with CMake + Ninja + nvcc (and hipcc for
AMD), honours the CKGEN_KERNELS filter, passes a compiler launcher through, and fails clearly
when a glob selects nothing."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, cli, have, tree

NVIDIA = pytest.mark.skipif(
    not have("cmake", "ninja", "nvcc"), reason="needs cmake, ninja and nvcc on PATH"
)


def _configure(
    src: Path, build: Path, *defs: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        ["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja", *defs],
        env=e,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _counts(log: str) -> tuple[int, int]:
    m = re.search(r"ckgen: building (\d+) of (\d+) instances", log)
    assert m, log
    return int(m.group(1)), int(m.group(2))


def _cache(build: Path) -> dict[str, str]:
    out = {}
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


@pytest.fixture(scope="module")
def nv_project(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nv") / "gen"
    cli("generate", "--arch", "sm_90a", "--set", "tests", "-o", str(out), "-q")
    before = tree(out)
    res = cli("emit-cmake", "-o", str(out), "--platform", "nvidia", "--gpu-targets", "90a")
    assert "written" in res.stdout
    after = tree(out)
    # emit-cmake adds CMakeLists.txt and touches nothing that generate wrote
    assert set(after) - set(before) == {"CMakeLists.txt"}
    assert {k: v for k, v in after.items() if k != "CMakeLists.txt"} == before
    return out


def test_emit_cmake_renders_and_is_idempotent(nv_project: Path) -> None:
    text = (nv_project / "CMakeLists.txt").read_text()
    for var in ("CKGEN_PLATFORM", "CKGEN_GPU_TARGETS", "CKGEN_KERNELS", "CKGEN_COMPILER_LAUNCHER"):
        assert f"set({var} " in text
    assert '"nvidia"' in text and '"90a"' in text
    st = (nv_project / "CMakeLists.txt").stat()
    assert (
        "unchanged"
        in cli(
            "emit-cmake", "-o", str(nv_project), "--platform", "nvidia", "--gpu-targets", "90a"
        ).stdout
    )
    st2 = (nv_project / "CMakeLists.txt").stat()
    assert (st.st_mtime_ns, st.st_ino) == (st2.st_mtime_ns, st2.st_ino)


def test_emit_cmake_without_generate_is_a_clear_error(tmp_path: Path) -> None:
    res = cli("emit-cmake", "-o", str(tmp_path / "nothing"), ok=False)
    assert res.exit_code == 2 and "run `ckgen generate" in res.stderr


@NVIDIA
def test_configures_for_nvidia_with_filter_launcher_and_empty_glob(nv_project: Path) -> None:
    build = nv_project / "build"
    total = len(
        cli(
            "list-instances", "--arch", "sm_90a", "--set", "tests", "--format", "names"
        ).stdout.split()
    )
    fwd = len(
        cli(
            "list-instances",
            "--arch",
            "sm_90a",
            "--set",
            "tests",
            "--format",
            "names",
            "--variant",
            "forward",
        ).stdout.split()
    )
    # 1. everything
    p = _configure(nv_project, build, "-DCKGEN_PLATFORM=nvidia", "-DCKGEN_GPU_TARGETS=90a")
    assert p.returncode == 0, p.stdout + p.stderr
    assert _counts(p.stdout) == (total, total)
    ninja = (build / "build.ninja").read_text()
    # CMAKE_CUDA_ARCHITECTURES comes from CKGEN_GPU_TARGETS (not CMake's default of 75)
    assert "arch=compute_90a" in ninja and "compute_75" not in ninja
    for v in ("forward", "backward_data", "backward_weight"):
        assert f"test_grouped_conv_{v}" in ninja and f"ckgen_profiler_{v}" in ninja
    assert "ckgen_kernels" in ninja
    # 2. a name filter selects a subset (and only the forward binaries)
    p = _configure(nv_project, build, "-DCKGEN_KERNELS=grouped_conv_fwd_*")
    assert p.returncode == 0, p.stdout + p.stderr
    assert _counts(p.stdout) == (fwd, total) and 0 < fwd < total
    ninja = (build / "build.ninja").read_text()
    assert "test_grouped_conv_forward" in ninja and "test_grouped_conv_backward_data" not in ninja
    reg = (build / "generated" / "ckgen_registry_list.inc").read_text()
    assert reg.count("CKGEN_INSTANCE(") == fwd and "grouped_conv_bwd" not in reg
    # 3. a compiler launcher is passed through to CMake's launcher variables
    p = _configure(nv_project, build, "-DCKGEN_COMPILER_LAUNCHER=ccache")
    assert p.returncode == 0, p.stdout + p.stderr
    cache = _cache(build)
    assert cache["CMAKE_CUDA_COMPILER_LAUNCHER"] == "ccache"
    assert cache["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
    assert "ccache" in (build / "CMakeFiles" / "rules.ninja").read_text()
    p = _configure(nv_project, build, "-DCKGEN_COMPILER_LAUNCHER=")
    assert p.returncode == 0
    assert "CMAKE_CUDA_COMPILER_LAUNCHER" not in _cache(build)
    # 4. a glob that selects nothing fails configure with a clear message
    p = _configure(nv_project, build, "-DCKGEN_KERNELS=grouped_conv_nothing_*")
    assert p.returncode != 0
    assert "CKGEN_KERNELS='grouped_conv_nothing_*' selects none of the" in p.stderr
    # ... and a malformed glob too
    p = _configure(nv_project, build, "-DCKGEN_KERNELS=grouped conv")
    assert p.returncode != 0 and "is not a name glob" in p.stderr
    # back to everything: it recovers
    p = _configure(nv_project, build, "-DCKGEN_KERNELS=*")
    assert p.returncode == 0 and _counts(p.stdout) == (total, total)


@pytest.mark.skipif(
    not have("cmake", "ninja", "hipcc"), reason="needs cmake, ninja and hipcc on PATH"
)
def test_configures_for_amd_with_hipcc(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    cli("generate", "--arch", "gfx90a", "--set", "tests", "-o", str(out), "-q")
    cli("emit-cmake", "-o", str(out))
    assert '"amd"' in (out / "CMakeLists.txt").read_text()
    p = _configure(
        out,
        out / "build",
        "-DCKGEN_PLATFORM=amd",
        "-DCMAKE_CXX_COMPILER=hipcc",
        "-DCKGEN_GPU_TARGETS=gfx90a",
        env={"HIP_PLATFORM": "amd"},
    )
    assert p.returncode == 0, p.stdout + p.stderr
    n, total = _counts(p.stdout)
    assert n == total > 0
    assert "--offload-arch=gfx90a" in (out / "build" / "build.ninja").read_text()


def test_platform_mismatch_is_refused(nv_project: Path) -> None:
    res = cli("emit-cmake", "-o", str(nv_project), "--platform", "amd", ok=False)
    assert res.exit_code == 2 and "generated for sm_90a" in res.stderr


@pytest.mark.skipif(
    not (have("cmake") and have("ninja") and have("nvcc")), reason="needs cmake, ninja and nvcc"
)
def test_build_without_emit_cmake_hands_ninja_the_given_targets(tmp_path: Path) -> None:
    """Writing CMakeLists.txt on the way must not replace the --target list (it once became the GPU
    target string, so ninja was asked for targets '9', '0', 'a')."""
    out = tmp_path / "gen"
    cli(
        "generate",
        "--arch",
        "sm_90a",
        "--variant",
        "forward",
        "--kernels",
        "*fwd_fp16_2d_t32x64x8_w8x1x1_wt16x8x16_direct_*",
        "-o",
        str(out),
        "-q",
    )
    r = cli(
        "build",
        "-o",
        str(out),
        "--no-tests",
        "--no-profilers",
        "--target",
        "no_such_target_ckgen",
        ok=False,
    )
    assert r.exit_code == 2 and "no_such_target_ckgen" in r.output and "'9'" not in r.output, (
        r.output
    )


def test_build_without_emit_cmake_keeps_the_generated_sources(tmp_path: Path) -> None:
    """`ckgen build` writes CMakeLists.txt when it is missing; that must not take the manifest's
    files for stale ones (they are the project)."""
    out = tmp_path / "gen"
    cli(
        "generate",
        "--arch",
        "sm_90a",
        "--set",
        "tests",
        "--variant",
        "forward",
        "--datatype",
        "fp16",
        "--ndim",
        "2",
        "-o",
        str(out),
        "-q",
    )
    before = tree(out)
    assert "manifest.json" in before and "CMakeLists.txt" not in before
    # stops right after writing CMakeLists.txt (the launcher is checked before CMake runs)
    r = cli("build", "-o", str(out), "--launcher", "no-such-launcher-ckgen", ok=False)
    assert r.exit_code == 2 and "no-such-launcher-ckgen" in r.output
    after = tree(out)
    assert "CMakeLists.txt" in after
    del after["CMakeLists.txt"]
    assert after == before


def test_filtered_project_is_marked_for_the_tests(tmp_path: Path) -> None:
    """A project of a selection (--kernels, --datatype ...) records it in instances.cmake; the
    CMakeLists turns it (or a CKGEN_KERNELS filter) into CKGEN_FILTERED_BUILD for the test
    binaries, whose whole-set coverage checks then skip with a reason."""
    whole, part = tmp_path / "whole", tmp_path / "part"
    glob = "grouped_conv_bwd_weight_fp16_2d_*_sklin*"
    cli(
        "generate",
        "--arch",
        "sm_90a",
        "--set",
        "tests",
        "--variant",
        "backward_weight",
        "-o",
        str(whole),
        "-q",
    )
    cli("generate", "--arch", "sm_90a", "--set", "tests", "--kernels", glob, "-o", str(part), "-q")
    assert "set(CKGEN_FILTERED OFF)" in (whole / "instances.cmake").read_text()
    assert "set(CKGEN_FILTERED ON)" in (part / "instances.cmake").read_text()
    cli("emit-cmake", "-o", str(part), "--platform", "nvidia", "--gpu-targets", "90a")
    cm = (part / "CMakeLists.txt").read_text()
    assert "CKGEN_FILTERED OR _ckgen_n LESS _ckgen_total" in cm
    assert "CKGEN_FILTERED_BUILD=1" in cm
    suite = (REPO / "tests" / "cpp" / "suite" / "testing_streamk.hpp").read_text()
    assert "#ifdef CKGEN_FILTERED_BUILD" in suite and "GTEST_SKIP()" in suite
