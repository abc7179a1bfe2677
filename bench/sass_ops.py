"""What a generated NVIDIA instance's main kernel executes, read from its SASS before any device
time is spent: each instance of a generated project compiled to a cubin (nvcc), disassembled
(cuobjdump -sass), its largest function's instructions counted by opcode, and the counts of
every instance set beside the first one's.

    python3 bench/sass_ops.py GEN_DIR NAME [NAME ...] [--arch sm_90a] [--top 40] [--csv OUT.csv]

GEN_DIR is a `ckgen generate` output holding the NAMEs (e.g. a plain instance and its fused
twins). The printed table lists the opcodes whose count differs between the instances (all of
them with --all), most different first, and each kernel's registers, spill and local bytes
(cuobjdump -res-usage). nvcc comes from PATH or /usr/local/cuda/bin; cuobjdump from PATH, the
CUDA toolkit, or the `nvidia-cuda-cuobjdump` package (pip install nvidia-cuda-cuobjdump).
These are static counts: an unrolled epilogue's instructions once, a loop body once.
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_OP = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_RES = re.compile(r"Function (\S+):\s*REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


@dataclass
class KernelOps:
    """The largest function of one cubin: its name, opcode counts and resources."""

    function: str
    ops: Counter[str]
    registers: int = 0
    stack: int = 0
    local: int = 0


def split_functions(sass: str) -> dict[str, list[str]]:
    """cuobjdump -sass text -> function name -> its opcodes (full, with modifiers), in order."""
    out: dict[str, list[str]] = {}
    for part in re.split(r"\n\s*Function : ", "\n" + sass)[1:]:
        name, _, body = part.partition("\n")
        out[name.strip()] = _OP.findall(body)
    return out


def resources(text: str) -> dict[str, tuple[int, int, int]]:
    """cuobjdump -res-usage text -> function name -> (registers, stack, local bytes)."""
    return {m[1]: (int(m[2]), int(m[3]), int(m[5])) for m in _RES.finditer(text)}


def largest(sass: str, res_text: str = "") -> KernelOps:
    """The function with the most instructions (an instance's main kernel; the others are its
    helper launches: clears, split finishes, copies)."""
    funcs = split_functions(sass)
    if not funcs:
        raise ValueError("no functions in the SASS text")
    name = max(funcs, key=lambda n: len(funcs[n]))
    reg, stack, local = resources(res_text).get(name, (0, 0, 0))
    return KernelOps(name, Counter(funcs[name]), reg, stack, local)


def find_tool(name: str) -> str | None:
    """A CUDA tool from PATH, the toolkit, or a pip package's nvidia/*/bin."""
    if hit := shutil.which(name):
        return hit
    if (toolkit := Path("/usr/local/cuda/bin") / name).is_file():
        return str(toolkit)
    purelib = Path(sysconfig.get_paths()["purelib"])
    hits = sorted(purelib.glob(f"nvidia/*/bin/{name}"))
    return str(hits[-1]) if hits else None


def instance_source(gen: Path, name: str) -> Path:
    hits = sorted(gen.glob(f"instances/*/{name}.cpp"))
    if not hits:
        raise FileNotFoundError(f"{name}: no instances/*/{name}.cpp under {gen}")
    return hits[0]


def compile_ops(gen: Path, name: str, arch: str, nvcc: str, cuobjdump: str, tmp: Path) -> KernelOps:
    src = instance_source(gen, name)
    cubin = tmp / f"{name}.cubin"
    include = [f"-I{gen / 'include'}", f"-I{gen}"]
    subprocess.run(
        [
            nvcc,
            "-x",
            "cu",
            "-std=c++17",
            f"-arch={arch}",
            "-cubin",
            "-o",
            str(cubin),
            *include,
            str(src),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    sass = subprocess.run(
        [cuobjdump, "-sass", str(cubin)], check=True, capture_output=True, text=True
    ).stdout
    res = subprocess.run(
        [cuobjdump, "-res-usage", str(cubin)], check=True, capture_output=True, text=True
    )
    return largest(sass, res.stdout)


def table(kernels: list[KernelOps], top: int, show_all: bool) -> list[tuple[str, list[int]]]:
    """(opcode, counts per kernel) rows, the largest spread first: the opcodes whose counts
    differ (every opcode with show_all), at most `top`."""
    keys = set().union(*(k.ops for k in kernels))
    rows = [(op, [k.ops[op] for k in kernels]) for op in keys]
    if not show_all:
        rows = [r for r in rows if len(set(r[1])) > 1]
    rows.sort(key=lambda r: (-(max(r[1]) - min(r[1])), r[0]))
    return rows[:top]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("gen", type=Path, help="a `ckgen generate` output directory")
    ap.add_argument("names", nargs="+", help="instance names in it")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--all", action="store_true", help="every opcode, not only those that differ")
    ap.add_argument("--csv", type=Path, help="also write the rows here")
    a = ap.parse_args(argv)
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    if not nvcc or not cuobjdump:
        missing = " and ".join(n for n, t in (("nvcc", nvcc), ("cuobjdump", cuobjdump)) if not t)
        print(
            f"sass_ops: {missing} not found (cuobjdump: pip install nvidia-cuda-cuobjdump)",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory() as d:
        try:
            kernels = [compile_ops(a.gen, n, a.arch, nvcc, cuobjdump, Path(d)) for n in a.names]
        except (FileNotFoundError, subprocess.CalledProcessError) as e:
            detail = getattr(e, "stderr", "") or ""
            print(f"sass_ops: {e}\n{detail[-2000:]}", file=sys.stderr)
            return 2
    for i, (n, k) in enumerate(zip(a.names, kernels, strict=True)):
        print(f"[{i}] {n}: {sum(k.ops.values())} instructions, {k.registers} registers, "
              f"stack {k.stack} B, local {k.local} B")  # fmt: skip
    rows = table(kernels, a.top, a.all)
    print("opcode".ljust(24) + "".join(f"[{i}]".rjust(8) for i in range(len(kernels))))
    for op, counts in rows:
        print(op.ljust(24) + "".join(f"{c:8d}" for c in counts))
    if a.csv:
        with a.csv.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["opcode", *a.names])
            for op, counts in rows:
                w.writerow([op, *counts])
    return 0


if __name__ == "__main__":
    sys.exit(main())
