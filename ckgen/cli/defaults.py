"""Defaults of the everyday commands: the target when --arch is not given and the output
directory when -o is not given.

The target is, in order: --arch, $CKGEN_ARCH, the GPU of this machine (nvidia-smi's compute
capability, or the gfx name that rocminfo / amd-smi report), else DEFAULT_ARCH. Detection
asks each tool once with a shared time limit and treats a missing, failing or slow tool as
"no GPU found"; it never raises.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ckgen.errors import CkgenError, did_you_mean

DEFAULT_ARCH = "sm_90a"
DEFAULT_OUTPUT = Path("ckgen-out")
ARCH_ENV = "CKGEN_ARCH"
DETECT_TIMEOUT_S = 3.0

# (argv, time limit) -> stdout, or None when the tool is missing, fails or runs too long.
Runner = Callable[[list[str], float], str | None]


@dataclass(frozen=True)
class ArchChoice:
    arch: str
    source: str  # "option", "env", "detected" or "default"
    why: str  # the words in parentheses of the note

    @property
    def note(self) -> str:
        return f"ckgen: arch {self.arch} ({self.why})"


@dataclass(frozen=True)
class FoundGpu:
    name: str  # e.g. "NVIDIA H200", "AMD Instinct MI300X"
    arch: str | None  # the ckgen target it maps to; None when ckgen has none for it
    detail: str  # e.g. "compute capability 9.0", "gfx942"


def run_tool(argv: list[str], timeout: float) -> str | None:
    """stdout of ``argv``, or None when the program is missing, fails or exceeds ``timeout``."""
    exe = shutil.which(argv[0])
    if exe is None or timeout <= 0:
        return None
    try:
        p = subprocess.run(
            [exe, *argv[1:]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return p.stdout if p.returncode == 0 else None


def nvidia_arch(compute_cap: str, known: Iterable[str]) -> str | None:
    """The ckgen target for a CUDA compute capability ("9.0" -> sm_90a, "8.0" -> sm_80).

    An exact match is preferred in its arch-specific form (sm_XYa) when ckgen knows one. A
    capability with no exact target takes the highest known target of the same major version
    and a lower minor one without the arch-specific suffix, whose code runs there (8.6 ->
    sm_80); otherwise None."""
    m = re.fullmatch(r"\s*(\d{1,2})\.(\d)\s*", compute_cap)
    if not m:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    names = set(known)
    for cand in (f"sm_{major}{minor}a", f"sm_{major}{minor}"):
        if cand in names:
            return cand
    best: tuple[int, str] | None = None
    for n in names:
        k = re.fullmatch(r"sm_(\d{1,2})(\d)", n)
        if k and int(k.group(1)) == major and int(k.group(2)) < minor:
            if best is None or int(k.group(2)) > best[0]:
                best = (int(k.group(2)), n)
    return best[1] if best else None


def _detect_nvidia(run: Runner, timeout: float, known: Iterable[str]) -> FoundGpu | None:
    out = run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"], timeout)
    for line in (out or "").splitlines():
        name, sep, cap = line.rpartition(",")
        if not sep or not re.fullmatch(r"\s*\d{1,2}\.\d\s*", cap):
            continue
        return FoundGpu(
            name=name.strip() or "NVIDIA GPU",
            arch=nvidia_arch(cap, known),
            detail=f"compute capability {cap.strip()}",
        )
    return None


_GFX_RE = re.compile(r"\b(gfx[0-9a-f]{3,4})\b")


def _amd_gpu(gfx: str, name: str, known: Iterable[str]) -> FoundGpu:
    return FoundGpu(name=name or "AMD GPU", arch=gfx if gfx in set(known) else None, detail=gfx)


def _detect_rocminfo(run: Runner, timeout: float, known: Iterable[str]) -> FoundGpu | None:
    out = run(["rocminfo"], timeout)
    if not out:
        return None
    # Agents are blocks of "Name: gfx942" then "Marketing Name: AMD Instinct MI300X".
    lines = out.splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"\s*Name:\s*(gfx[0-9a-f]{3,4})\s*$", line)
        if not m:
            continue
        name = ""
        for nxt in lines[n + 1 : n + 4]:
            mk = re.match(r"\s*Marketing Name:\s*(.+?)\s*$", nxt)
            if mk:
                name = mk.group(1)
                break
        return _amd_gpu(m.group(1), name, known)
    return None


def _detect_amd_smi(run: Runner, timeout: float, known: Iterable[str]) -> FoundGpu | None:
    out = run(["amd-smi", "static", "--asic"], timeout)
    m = _GFX_RE.search(out or "")
    if not m:
        return None
    mk = re.search(r"MARKET_NAME:\s*(.+?)\s*$", out or "", re.MULTILINE)
    return _amd_gpu(m.group(1), mk.group(1) if mk else "", known)


def detect_gpu(
    known: Iterable[str], run: Runner = run_tool, budget_s: float = DETECT_TIMEOUT_S
) -> FoundGpu | None:
    """The first GPU that nvidia-smi, rocminfo or amd-smi reports, all within ``budget_s``."""
    names = list(known)
    deadline = time.monotonic() + budget_s
    for probe in (_detect_nvidia, _detect_rocminfo, _detect_amd_smi):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        found = probe(run, left, names)
        if found is not None:
            return found
    return None


def choose_arch(
    option: str | None,
    known: Iterable[str],
    env: Mapping[str, str] | None = None,
    detect: Callable[[list[str]], FoundGpu | None] | None = None,
) -> ArchChoice:
    """The target of a command: --arch, else $CKGEN_ARCH, else this machine's GPU, else
    DEFAULT_ARCH; with the reason in words for the note on stderr."""
    names = list(known)
    if option is not None and not option.strip():
        # An empty --arch (e.g. an unset shell variable) is not "no --arch": never a silent default.
        raise CkgenError(
            f"--arch {option!r}: empty; known: {', '.join(names)} (leave --arch out for the "
            f"default: ${ARCH_ENV}, this machine's GPU, else {DEFAULT_ARCH})"
        )
    if option:
        return ArchChoice(option, "option", "from --arch")
    env = os.environ if env is None else env
    val = env.get(ARCH_ENV, "").strip()
    if val:
        if val not in names:
            raise CkgenError(
                f"{ARCH_ENV}={val!r} is not a known arch{did_you_mean(val, names)}; "
                f"known: {', '.join(names)}"
            )
        return ArchChoice(val, "env", f"from {ARCH_ENV}")
    found = (detect or detect_gpu)(names)
    if found is not None and found.arch is not None:
        return ArchChoice(found.arch, "detected", f"detected: {found.name}")
    if found is not None:
        return ArchChoice(
            DEFAULT_ARCH,
            "default",
            f"default; the {found.name} found here ({found.detail}) is not a ckgen target; "
            f"set --arch or {ARCH_ENV}",
        )
    return ArchChoice(DEFAULT_ARCH, "default", f"default; set --arch or {ARCH_ENV}")
