"""Builds through existing engines (slow): a tiny generated project (one forward instance: its
translation unit and the registry, nvcc for sm_90a, no tests / profilers / C API) builds

- through ccache (the project's CKGEN_COMPILER_LAUNCHER): a second build in a fresh build
  directory compiles nothing (every compile a ccache hit);
- through sccache the same way (its own server on a free port, its own cache directory);
- through distcc against a distccd this test starts on 127.0.0.1: nvcc's host compiler is
  distcc's masquerade link (CMAKE_CUDA_HOST_COMPILER), so the host half of every nvcc compile
  runs on the daemon (device code stays local: distcc cannot distribute nvcc itself). The
  build must succeed with fallback to local compiles disabled, and the daemon's log must show
  the jobs.

Each skips, with the reason, when its engine is not on PATH (scripts/test.sh installs them)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import cli, have

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not have("cmake", "ninja", "nvcc"), reason="needs cmake, ninja and nvcc on PATH"
    ),
]

KERNEL = "grouped_conv_fwd_fp16_2d_t32x64x8_w8x1x1_wt16x8x16_direct_*"
SMALL = (
    "-DCKGEN_PLATFORM=nvidia",
    "-DCKGEN_GPU_TARGETS=90a",
    "-DCKGEN_BUILD_TESTS=OFF",
    "-DCKGEN_BUILD_PROFILERS=OFF",
    "-DCKGEN_BUILD_DISPATCH=OFF",
)
# Engine settings of the caller (a shared cache, a build farm) must not leak into these tests.
_FOREIGN = re.compile(r"^(CCACHE_|SCCACHE_|DISTCC_)")


def _env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not _FOREIGN.match(k)}
    e.update(extra)
    return e


def _run(cmd: list[str], env: dict[str, str], timeout: int = 600) -> str:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (
        f"{' '.join(cmd)} -> {p.returncode}\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}"
    )
    return p.stdout + p.stderr


def _build(src: Path, build: Path, env: dict[str, str], *defs: str) -> int:
    """Configure and build; returns the number of compiles Ninja ran."""
    _run(["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja", *SMALL, *defs], env)
    out = _run(["ninja", "-C", str(build)], env)
    assert (build / "lib" / "libckgen_kernels.a").is_file()
    return len(re.findall(r"Building CUDA object", out))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("cache") / "gen"
    cli(
        "generate",
        "--arch",
        "sm_90a",
        "--variant",
        "forward",
        "--kernels",
        KERNEL,
        "-o",
        str(src),
        "-q",
    )
    cli("emit-cmake", "-o", str(src), "--platform", "nvidia", "--gpu-targets", "90a")
    units = list((src / "instances").rglob("*.cpp"))
    assert len(units) == 1, units
    return src


def test_ccache_second_build_in_fresh_directory_compiles_nothing(
    tiny: Path, tmp_path: Path
) -> None:
    if not have("ccache"):
        pytest.skip("ccache is not on PATH (apt-get install ccache)")
    conf = tmp_path / "ccache.conf"
    conf.write_text("")  # no user or system configuration (remote storage, sloppiness...)
    # CCACHE_BASEDIR: absolute paths below it (-I of the source and build directories) are
    # hashed relative to the build directory, so sibling build directories share entries.
    env = _env(
        CCACHE_DIR=str(tmp_path / "ccache"),
        CCACHE_CONFIGPATH=str(conf),
        CCACHE_BASEDIR=str(tiny.parent),
    )

    def stats() -> dict[str, int]:
        out = _run(["ccache", "--print-stats"], env)
        return {k: int(v) for k, v in (ln.split("\t") for ln in out.splitlines() if "\t" in ln)}

    _run(["ccache", "--zero-stats"], env)
    n1 = _build(tiny, tiny.parent / "build-ccache-1", env, "-DCKGEN_COMPILER_LAUNCHER=ccache")
    s1 = stats()
    assert n1 >= 2 and s1.get("cache_miss", 0) >= n1, s1
    _run(["ccache", "--zero-stats"], env)
    n2 = _build(tiny, tiny.parent / "build-ccache-2", env, "-DCKGEN_COMPILER_LAUNCHER=ccache")
    s2 = stats()
    hits = s2.get("direct_cache_hit", 0) + s2.get("preprocessed_cache_hit", 0)
    assert n2 == n1 and hits == n2 and s2.get("cache_miss", 0) == 0, s2


def test_sccache_second_build_in_fresh_directory_compiles_nothing(
    tiny: Path, tmp_path: Path
) -> None:
    if not have("sccache"):
        pytest.skip("sccache is not on PATH (Debian 12: apt-get install sccache)")
    env = _env(
        SCCACHE_DIR=str(tmp_path / "sccache"),
        SCCACHE_SERVER_PORT=str(_free_port()),
        SCCACHE_IDLE_TIMEOUT="120",  # the server exits by itself should this test die
        SCCACHE_CONF=str(tmp_path / "none.toml"),
    )

    def stats() -> tuple[int, int]:
        s = json.loads(_run(["sccache", "--show-stats", "--stats-format", "json"], env))["stats"]
        return sum(s["cache_hits"]["counts"].values()), sum(s["cache_misses"]["counts"].values())

    _run(["sccache", "--start-server"], env)
    try:
        n1 = _build(tiny, tiny.parent / "build-sccache-1", env, "-DCKGEN_COMPILER_LAUNCHER=sccache")
        hits, misses = stats()
        assert n1 >= 2 and (hits, misses) == (0, n1)
        _run(["sccache", "--zero-stats"], env)
        n2 = _build(tiny, tiny.parent / "build-sccache-2", env, "-DCKGEN_COMPILER_LAUNCHER=sccache")
        assert n2 == n1 and stats() == (n2, 0)
    finally:
        subprocess.run(["sccache", "--stop-server"], env=env, capture_output=True, timeout=60)


def test_distcc_runs_the_host_compiles_on_a_distccd(tiny: Path, tmp_path: Path) -> None:
    if not have("distcc", "distccd"):
        pytest.skip("distcc and distccd are not on PATH (apt-get install distcc)")
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ (nvcc's host compiler) is not on PATH")
    # distcc's masquerade: a link named g++ to distcc runs the next g++ on PATH, distributed.
    masq = tmp_path / "masq"
    masq.mkdir()
    (masq / "g++").symlink_to(shutil.which("distcc"))
    port = _free_port()
    log = tmp_path / "distccd.log"
    daemon = [
        "distccd", "--daemon", "--no-detach", "--log-stderr", "--log-level", "info",
        "--listen", "127.0.0.1", "--allow", "127.0.0.1", "--port", str(port), "--jobs", "2",
    ]  # fmt: skip
    if os.geteuid() == 0:
        daemon += ["--user", "nobody"]  # distccd will not compile as root
    with log.open("w") as f:
        proc = subprocess.Popen(daemon, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while "listening on" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        (tmp_path / "distcc").mkdir()
        env = _env(
            # an address, not "localhost": distcc runs "localhost" jobs itself, not on a daemon
            DISTCC_HOSTS=f"127.0.0.1:{port}/2",
            DISTCC_DIR=str(tmp_path / "distcc"),
            DISTCC_FALLBACK="0",  # a job the daemon does not take fails the build
            DISTCC_BACKOFF_PERIOD="0",
        )
        n = _build(
            tiny, tiny.parent / "build-distcc", env, f"-DCMAKE_CUDA_HOST_COMPILER={masq / 'g++'}"
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    text = log.read_text()
    jobs = re.findall(r"COMPILE_OK .* (\S+)\.cudafe1\.cpp$", text, re.M)
    mine = [j for j in jobs if "CMakeCUDACompiler" not in j]  # not CMake's compiler checks
    assert len(mine) == n, text[-4000:]
    assert any(j.endswith("_registry") for j in mine), mine
    assert any("_grouped_conv_fwd_fp16_2d_" in j for j in mine), mine
