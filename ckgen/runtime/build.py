"""Building a generated project: CMake configure + Ninja, with [n/m] progress parsed from
Ninja's status lines. Used by `ckgen build` and by ckgen.Registry.build (JIT)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ckgen.errors import CkgenError

NINJA_STATUS_RE = re.compile(r"^\[(\d+)/(\d+)\]\s*(.*)$")
# Ninja's default status is "[%f/%t] "; forced so parsing never depends on the user's NINJA_STATUS.
NINJA_STATUS = "[%f/%t] "


@dataclass
class BuildResult:
    build_dir: Path
    seconds: float
    steps: int
    log: list[str] = field(default_factory=list)


def which_or_fail(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise CkgenError(f"{tool} not found on PATH (needed to build the generated project)")
    return path


def parse_status(line: str) -> tuple[int, int, str] | None:
    """(done, total, description) of a Ninja status line, else None."""
    m = NINJA_STATUS_RE.match(line.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def configure(
    project: Path,
    build_dir: Path,
    *,
    gpu_targets: str | None = None,
    launcher: str = "",
    kernels: Sequence[str] = (),
    profilers: bool = True,
    tests: bool = True,
    extra: Sequence[str] = (),
    timeout: float = 600,
) -> None:
    """cmake -S project -B build_dir -G Ninja with ckgen's cache variables."""
    which_or_fail("cmake")
    which_or_fail("ninja")
    if not (project / "CMakeLists.txt").is_file():
        raise CkgenError(
            f"{project / 'CMakeLists.txt'} not found: run `ckgen emit-cmake -o {project}` first"
        )
    cmd = [
        "cmake",
        "-S",
        str(project),
        "-B",
        str(build_dir),
        "-G",
        "Ninja",
        f"-DCKGEN_BUILD_PROFILERS={'ON' if profilers else 'OFF'}",
        f"-DCKGEN_BUILD_TESTS={'ON' if tests else 'OFF'}",
        f"-DCKGEN_COMPILER_LAUNCHER={launcher}",
        f"-DCKGEN_KERNELS={','.join(kernels) if kernels else '*'}",
    ]
    if gpu_targets:
        cmd.append(f"-DCKGEN_GPU_TARGETS={gpu_targets}")
    cmd += list(extra)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CkgenError(f"cmake configure timed out after {timeout:.0f} s") from None
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-30:])
        raise CkgenError(f"cmake configure of {project} failed (exit {p.returncode}):\n{tail}")


def ninja(
    build_dir: Path,
    *,
    jobs: int = 0,
    targets: Sequence[str] = (),
    progress: Callable[[int, int, str], None] | None = None,
    timeout: float | None = None,
) -> BuildResult:
    """Runs ninja, calling progress(done, total, what) per status line. CkgenError on failure
    carrying the compiler's error lines."""
    which_or_fail("ninja")
    cmd = ["ninja", "-C", str(build_dir)]
    if jobs > 0:
        cmd += ["-j", str(jobs)]
    cmd += list(targets)
    env = dict(os.environ, NINJA_STATUS=NINJA_STATUS)
    t0 = time.perf_counter()
    log: list[str] = []
    steps = 0
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            log.append(line)
            st = parse_status(line)
            if st:
                steps = st[0]
                if progress:
                    progress(*st)
            if timeout is not None and time.perf_counter() - t0 > timeout:
                proc.kill()
                raise CkgenError(f"ninja timed out after {timeout:.0f} s in {build_dir}")
        rc = proc.wait()
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise
    if rc != 0:
        errs = [ln for ln in log if "error" in ln.lower() or ln.startswith("FAILED")]
        shown = "\n".join((errs or log)[-40:])
        raise CkgenError(f"build failed in {build_dir} (ninja exit {rc}):\n{shown}")
    return BuildResult(build_dir=build_dir, seconds=time.perf_counter() - t0, steps=steps, log=log)


def compiler_identity(platform: str = "nvidia") -> str:
    """Version text of the device compiler (part of the JIT cache key)."""
    tool = "nvcc" if platform == "nvidia" else os.environ.get("CXX", "hipcc")
    path = shutil.which(tool)
    if not path:
        return f"{tool}: not found"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return f"{path}\n{out.strip()}"
