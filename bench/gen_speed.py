#!/usr/bin/env python3
"""Generator speed: (a) expanding the full profiler space for sm_90a, (b) generating 2,000
instances (the profiler set truncated to 2,000) into a fresh directory, (c) a no-op
regeneration of the same 2,000 (expand + render + compare, nothing written).

Targets on a 2-core machine: (a)+(b) < 10 s, (c) < 2 s. Each phase is timed in-process
(best of --repeat), then the same work end to end through the CLI in a fresh interpreter
(import and start-up included) with `generate --variant forward --set profiler`
(2,277 instances on sm_90a).

    python bench/gen_speed.py [--arch sm_90a] [--count 2000] [--jobs 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ckgen.emit.output import apply, plan
from ckgen.emit.render import render_project
from ckgen.model.arch import get_arch
from ckgen.model.vocab import Variant
from ckgen.space.expand import Filters, default_config_paths, expand, load_configs


def _expand(arch: str):
    return expand(
        load_configs(default_config_paths(list(Variant), "profiler")), get_arch(arch), Filters()
    )


def _generate(arch: str, count: int, out: Path, jobs: int) -> tuple[int, int, int]:
    exp = _expand(arch)
    insts = exp.instances[:count]
    files = render_project(insts, exp.arch, jobs=jobs)
    pl = plan(out, files, extra_owned=("CMakeLists.txt",))
    apply(pl)
    return len(insts), len(pl.write), pl.unchanged


CPU: dict[str, float] = {}


def _best(fn, repeat: int, label: str = ""):
    """Best wall time of `repeat` runs; the CPU time of that run goes to CPU[label] (CPU time
    is what to compare when other work shares the machine)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if dt < best:
            best, CPU[label] = dt, dc
    return best, result


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cli", action="store_true", help="skip the end-to-end CLI timings")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ckgen-speed-"))
    try:
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        ta, exp = _best(lambda: _expand(args.arch), args.repeat, "a")
        print(
            f"(a) expand profiler space for {args.arch}: {ta:.3f} s (cpu {CPU['a']:.3f} s) "
            f"({exp.candidates} candidates, {len(exp.instances)} valid, {len(exp.rejected)} rejected)"
        )
        assert len(exp.instances) >= args.count, f"only {len(exp.instances)} instances"

        fresh = []

        def gen_fresh():
            d = tmp / f"fresh{len(fresh)}"
            fresh.append(d)
            return _generate(args.arch, args.count, d, args.jobs)

        tb, (n, written, _) = _best(gen_fresh, args.repeat, "b")
        print(
            f"(b) generate {n} instances into a fresh dir (--jobs {args.jobs}): {tb:.3f} s (cpu {CPU['b']:.3f} s"
            f"{', main process only' if args.jobs > 1 else ''}) ({written} files written)"
        )

        tc, (n, written, unchanged) = _best(
            lambda: _generate(args.arch, args.count, fresh[0], args.jobs), args.repeat, "c"
        )
        assert written == 0, f"no-op regeneration wrote {written} files"
        print(
            f"(c) no-op regeneration of {n} instances: {tc:.3f} s (cpu {CPU['c']:.3f} s) (0 written, {unchanged} unchanged)"
        )
        print(
            f"(a)+(b) = {ta + tb:.3f} s (target < 10 s); (c) = {tc:.3f} s (target < 2 s)"
            f"  [cpu: (a)+(b) = {CPU['a'] + CPU['b']:.3f} s, (c) = {CPU['c']:.3f} s]"
        )
        ok = ta + tb < 10 and tc < 2

        if not args.no_cli:
            out = tmp / "cli"
            cmd = [
                sys.executable,
                "-m",
                "ckgen.cli",
                "generate",
                "--arch",
                args.arch,
                "--set",
                "profiler",
                "--variant",
                "forward",
                "-o",
                str(out),
                "--jobs",
                str(args.jobs),
            ]
            for label in ("fresh", "no-op"):
                c0, t0 = _children_cpu(), time.perf_counter()
                p = subprocess.run(cmd, capture_output=True, text=True, check=True)
                dt, dc = time.perf_counter() - t0, _children_cpu() - c0
                print(
                    f"CLI {label:5s} `ckgen generate --arch {args.arch} --set profiler --variant forward "
                    f"--jobs {args.jobs}`: {dt:.3f} s (cpu {dc:.3f} s) -- {p.stdout.strip()}"
                )
            t0 = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ckgen.cli",
                    "list-instances",
                    "--arch",
                    args.arch,
                    "--set",
                    "profiler",
                    "--format",
                    "names",
                ],
                capture_output=True,
                check=True,
            )
            print(
                f"CLI `ckgen list-instances --arch {args.arch} --set profiler --format names`: "
                f"{time.perf_counter() - t0:.3f} s"
            )
        print(
            f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average after: {os.getloadavg()[0]:.1f}"
        )
        print("PASS" if ok else "FAIL: over target")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
