"""Full build (slow): the generated `--set tests` project for sm_90a (one fp16 / fp32 instance per
code path; every instance, bf16 too, with CKGEN_EXHAUSTIVE=1) builds with CMake + Ninja + nvcc,
its GoogleTest binaries run (skipping visibly where there is no GPU), the profilers answer
--help / --list, and a no-op regeneration rebuilds nothing."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import Variant

from conftest import EXHAUSTIVE, cli, have, one_per_code_path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not have("cmake", "ninja", "nvcc"), reason="needs cmake, ninja and nvcc on PATH"
    ),
]

BUILD_TIMEOUT = int(os.environ.get("CKGEN_BUILD_TIMEOUT", "2400"))


# bf16 instances share every code path with fp16 (the element type differs), and of the fp16 and
# fp32 instances one per code path builds (one_per_code_path, its smallest tile); the full tests
# set (about 500 translation units, 30 min on 2 cores) builds with CKGEN_EXHAUSTIVE=1 and on the
# GPU machine (bench/device.sh), which runs its GoogleTests.
@functools.cache
def _select() -> tuple[str, ...]:
    if EXHAUSTIVE:
        return ()
    dts = ("--datatype", "fp16", "--datatype", "fp32")
    names = cli(
        "list-instances", "--arch", "sm_90a", "--set", "tests", *dts, "--format", "names"
    ).stdout.split()
    cover = one_per_code_path(names, largest=False)
    return dts + tuple(a for n in cover for a in ("--kernels", n))


def _gpu_present() -> bool:
    return Path("/dev/nvidia0").exists() and shutil.which("nvidia-smi") is not None


def _run(
    cmd: list[str], cwd: Path | None = None, timeout: int = 600, ok: bool = True
) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if ok:
        assert p.returncode == 0, (
            f"{' '.join(cmd)} -> {p.returncode}\n{p.stdout[-8000:]}\n{p.stderr[-8000:]}"
        )
    return p


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    src = tmp_path_factory.mktemp("full") / "gen"
    cli("generate", "--arch", "sm_90a", "--set", "tests", *_select(), "-o", str(src), "-q")
    cli("emit-cmake", "-o", str(src), "--platform", "nvidia", "--gpu-targets", "90a")
    build = src / "build"
    _run(
        [
            "cmake",
            "-S",
            str(src),
            "-B",
            str(build),
            "-G",
            "Ninja",
            "-DCKGEN_PLATFORM=nvidia",
            "-DCKGEN_GPU_TARGETS=90a",
        ]
    )
    jobs = str(max(1, os.cpu_count() or 1))
    _run(["ninja", "-C", str(build), "-j", jobs], timeout=BUILD_TIMEOUT)
    names = cli(
        "list-instances", "--arch", "sm_90a", "--set", "tests", *_select(), "--format", "names"
    ).stdout.split()
    return src, build, names


def test_everything_is_built(built) -> None:
    _, build, _ = built
    assert (build / "lib" / "libckgen_kernels.a").is_file()
    for v in Variant:
        assert os.access(build / "bin" / f"test_grouped_conv_{v.value}", os.X_OK)
        assert os.access(build / "bin" / f"ckgen_profiler_{v.value}", os.X_OK)


@pytest.mark.parametrize("variant", [v.value for v in Variant])
def test_gtest_binaries_run(built, variant: str) -> None:
    _, build, _ = built
    exe = build / "bin" / f"test_grouped_conv_{variant}"
    listed = _run([str(exe), "--gtest_list_tests"]).stdout
    assert listed.strip(), "no tests registered"
    p = _run([str(exe), "--gtest_brief=0"], timeout=1800, ok=False)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-8000:]
    m = re.search(r"\[  PASSED  \] (\d+) tests?", out)
    assert m, out[-4000:]
    if not _gpu_present():
        # without a GPU the GPU tests skip, visibly and with the reason
        assert re.search(r"\[  SKIPPED \] (\d+) tests?", out), out[-4000:]
        assert "no GPU" in out
    else:
        assert "[  FAILED  ]" not in out


@pytest.mark.parametrize("variant", [v.value for v in Variant])
def test_profiler_help_and_list(built, variant: str) -> None:
    _, build, names = built
    exe = build / "bin" / f"ckgen_profiler_{variant}"
    assert "usage" in _run([str(exe), "--help"]).stdout.lower()
    listed = _run([str(exe), "--list"]).stdout
    short = Variant(variant).short
    mine = [n for n in names if parse_instance_name(n).variant is Variant(variant)]
    assert mine and all(n in listed for n in mine)
    assert f"grouped_conv_{short}_" in listed
    # --fusion: the instances with exactly those fused operations (any: every fused one)
    fusions = {n: parse_instance_name(n).fusion for n in mine}
    for arg, want in (("none", {"none"}), ("any", set(fusions.values()) - {"none"})):
        out = _run([str(exe), "--list", "--fusion", arg]).stdout
        assert {n for n in mine if n in out.split()} == {n for n, f in fusions.items() if f in want}
    bad = _run([str(exe), "--list", "--fusion", "bias-relu"], ok=False)
    assert bad.returncode == 2 and "--fusion: 'bias-relu'" in bad.stdout + bad.stderr
    if not _gpu_present():
        p = _run([str(exe), "--C", "8", "--K", "8", "--input", "8x8", "--filter", "3x3"], ok=False)
        assert p.returncode == 3, p.stdout + p.stderr
        assert "no GPU" in p.stdout + p.stderr


def test_noop_regeneration_rebuilds_nothing(built) -> None:
    src, build, _ = built
    res = cli("generate", "--arch", "sm_90a", "--set", "tests", *_select(), "-o", str(src))
    assert "0 written, 0 removed" in res.stdout
    cli("emit-cmake", "-o", str(src), "--platform", "nvidia", "--gpu-targets", "90a")
    p = _run(["ninja", "-C", str(build), "-n", "-d", "explain"])
    assert "no work to do" in p.stdout, p.stdout[-4000:] + p.stderr[-4000:]
