"""Host-only: the dispatcher's cost model (ckgen::estimate_cost, each instance at its automatic
split) against a benchmark's profile CSV, with and without the instances a name glob picks out:
does adding them make the cost model's choice worse? Writes a C++ driver that includes the
generated project's dispatcher.hpp, compiles it with nvcc (host code only) and runs it.

    python3 bench/dev/pick_check.py --gen GEN_DIR --profile prof_..._backward_weight_fp16.csv \
        --shapes templates/project/shapes/retinanet_r50fpn_n2.csv --without '*x192x*'

GEN_DIR: `ckgen generate --arch sm_90a` output (its include/ holds generated/arch_params.hpp).
Every profiled (shape, instance) row at k_batch 0 (automatic split) is a candidate; the rows
measured are the instances that support the shape.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import math
import os
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from ckgen.space import forms as rules
from ckgen.model.naming import parse_instance_name as parse_name
from ckgen.model.problem import load_shapes


def key_init(name: str) -> str:
    i = parse_name(name)
    f = [
        f'k.name = "{name}";',
        f"k.variant = {i.variant.cpp_ref};", f"k.datatype = {i.datatype.cpp_ref};", f"k.ndim = {i.ndim};",
        "k.tile_m = {}; k.tile_n = {}; k.tile_k = {};".format(*i.tile),
        "k.wave_m = {}; k.wave_n = {}; k.wave_k = {};".format(*i.waves),
        "k.warp_m = {}; k.warp_n = {}; k.warp_k = {};".format(*i.warp_tile),
        f"k.pipeline = {i.pipeline.cpp_ref};", f"k.stages = {i.stages};",
        f"k.scheduler = {i.scheduler.cpp_ref};", f"k.load_waves = {i.load_waves};",
        f"k.math_waves = {i.math_waves};", f"k.epilogue = {i.epilogue.cpp_ref};",
        f"k.swap_ab = {str(i.swap_ab).lower()};", f"k.ping_pong = {str(rules.is_pingpong(i)).lower()};",
        f"k.vec_a = {i.vec_a}; k.vec_b = {i.vec_b}; k.vec_c = {i.vec_c};",
        f"k.specialization = {i.specialization.cpp_ref};", f"k.groups_to_merge = {i.groups_to_merge};",
        f"k.k_batch = {i.k_batch};", f"k.reduction = {i.reduction.cpp_ref};",
        f"k.persistent = {str(i.persistent).lower()};", f"k.stage = {i.stage.cpp_ref};",
    ]
    return " ".join(f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gen", type=Path, required=True)
    ap.add_argument("--profile", type=Path, required=True)
    ap.add_argument("--shapes", type=Path, required=True)
    ap.add_argument("--without", default="*x192x*", help="name glob of the instances under test")
    ap.add_argument("--show", default="", help="shape name glob: print every candidate's estimate and time")
    a = ap.parse_args()
    probs = {p.name: p for p in load_shapes(a.shapes)}
    rows = [r for r in csv.DictReader(open(a.profile)) if r["verified"] in ("pass", "none")
            and r["k_batch"] == "0" and float(r["ms"] or 0) > 0 and r["shape"] in probs]
    names = sorted({r["instance"] for r in rows})
    shapes = sorted({r["shape"] for r in rows})
    src = ['#include <cstdio>', '#include "ckgen/dispatcher.hpp"', "int main() {",
           "  ckgen::Registry empty; ckgen::Dispatcher d(empty); ckgen::KernelKey k{}; ckgen::ConvProblem p;"]
    for s in shapes:
        p = probs[s]
        src.append(f"  p = ckgen::ConvProblem{{}}; p.ndim = {p.ndim}; p.G = {p.G}; p.N = {p.N}; p.C = {p.C}; p.K = {p.K};")
        for d in range(3):
            src.append(f"  p.in[{d}] = {p.input[d]}; p.filter[{d}] = {p.filter[d]}; p.stride[{d}] = {p.stride[d]}; "
                       f"p.dilation[{d}] = {p.dilation[d]}; p.pad_l[{d}] = {p.pad_l[d]}; p.pad_r[{d}] = {p.pad_r[d]};")
        src.append("  p.compute_output();")
        for n in sorted({r["instance"] for r in rows if r["shape"] == s}):
            src.append(f"  k = ckgen::KernelKey{{}}; {key_init(n)}")
            src.append(f'  std::printf("%s %s %.4f\\n", "{s}", "{n}", '
                       "ckgen::estimate_cost(k, p, d.effective_k_batch(k, p, 0)).us);")
    src.append("  return 0;\n}")
    with tempfile.TemporaryDirectory() as t:
        cpp, exe = Path(t) / "pick.cu", Path(t) / "pick"
        cpp.write_text("\n".join(src) + "\n")
        subprocess.run(["nvcc", "-std=c++17", "-O1", "-x", "cu", f"-I{a.gen / 'include'}", *os.environ.get("PICK_CFLAGS", "").split(),
                        str(cpp), "-o", str(exe)],
                       check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    est = {(s, n): float(e) for s, n, e in (line.split() for line in out.splitlines())}
    ms = {(r["shape"], r["instance"]): float(r["ms"]) for r in rows}
    logs: dict[str, list[float]] = defaultdict(list)
    print(f"{'shape':30s} {'best':>8s} {'pick all':>9s} {'pick w/o':>9s}  picked (all)")
    for s in shapes:
        cand = [n for n in names if (s, n) in ms]
        best = min(ms[s, n] for n in cand)
        pick_all = min(cand, key=lambda n: est[s, n])
        rest = [n for n in cand if not fnmatch.fnmatch(n, a.without)]
        pick_wo = min(rest, key=lambda n: est[s, n])
        logs["all"].append(math.log(ms[s, pick_all] / best))
        logs["without"].append(math.log(ms[s, pick_wo] / best))
        print(f"{s:30s} {best*1e3:8.2f} {ms[s, pick_all]*1e3:9.2f} {ms[s, pick_wo]*1e3:9.2f}  {pick_all[24:]}")
        if a.show and fnmatch.fnmatch(s, a.show):
            for n in sorted(cand, key=lambda n: est[s, n]):
                print(f"    estimated {est[s, n]:9.2f} us  measured {ms[s, n]*1e3:9.2f} us  {n[24:]}")
    for k, v in logs.items():
        print(f"{k:8s}: cost-model pick over the best measured, geomean {math.exp(sum(v) / len(v)):.3f}, "
              f"worst {math.exp(max(v)):.2f} ({len(v)} shapes)")


if __name__ == "__main__":
    main()
