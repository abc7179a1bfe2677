"""Register estimate calibration: rules.register_estimate against the compilers' reports.

    python bench/calibration/calibrate.py                 # markdown tables
    python bench/calibration/calibrate.py --csv out.csv   # one row per instance

Inputs (committed):
  bench/resources/<gfx>.json                     ckgen check-isa --resources-out over today's
                                                 defaults (AMD, clang-19 device only; clang-22 for gfx950)
  bench/calibration/resources_<gfx>_basic_*.json the same over the earlier, larger default set
                                                 (basic pipeline, every legal warp tile)
  bench/calibration/ptxas_sm_90a_defaults.txt    nvcc 13.0 -Xptxas -v over today's sm_90a
                                                 defaults (nvcc_ptxas.sh on the GPU machine)
  bench/calibration/ptxas_sm_90a_basic_*.txt     the same over the earlier default set
Measured registers: AMD .vgpr_count (arch VGPRs + AGPRs, what occupancy is computed from);
NVIDIA "Used N registers" of grouped_conv_kernel. Spilling instances are listed apart: their
count is capped at the limit, so they only say "the estimate should have been above the limit".
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
from pathlib import Path

from ckgen.model.arch import get_arch
from ckgen.model.naming import parse_instance_name as parse_name
from ckgen.model.vocab import DATATYPE_BYTES, Pipeline
from ckgen.space.estimate import register_estimate

ROOT = Path(__file__).resolve().parents[2]


def estimate_v0(name: str, warp_size: int) -> int:
    """The estimate before calibration (REGISTER_OVERHEAD 40, staging ignoring the vector width)."""
    i = parse_name(name)
    tm, tn, tk = i.tile
    wm, wn, wk = i.waves
    e = DATATYPE_BYTES[i.datatype]
    threads = wm * wn * wk * warp_size
    acc = (tm // wm) * (tn // wn) // warp_size
    frag = ((tm // wm) * i.warp_tile[2] + (tn // wn) * i.warp_tile[2]) * e // 4 // warp_size
    staging = (tm + tn) * tk * e // 4 // threads if i.pipeline is not Pipeline.WAVELET else 0
    return acc + frag + staging + 40


def amd_rows(p: Path, label: str) -> list[dict]:
    doc = json.loads(p.read_text())
    arch = doc["arch"]
    a = get_arch(arch)
    rows = []
    for name, r in sorted(doc["instances"].items()):
        if not r.get("compiled"):
            continue
        rows.append(
            {
                "arch": arch,
                "set": label,
                "name": name,
                "measured": r["vgpr"],
                "agpr": r.get("agpr", 0),
                "spill": r["scratch_bytes"] > 0,
                "estimate": register_estimate(parse_name(name), a),
                "estimate_v0": estimate_v0(name, a.warp_size),
                "limit": a.registers_per_thread,
            }
        )
    return rows


def nvidia_rows(p: Path, label: str, arch: str = "sm_90a") -> list[dict]:
    a = get_arch(arch)
    rows, name, in_main, stack = [], None, False, 0
    for line in p.read_text().splitlines():
        if line.startswith("### "):
            name, in_main = line[4:].strip(), False
        elif "Compiling entry function" in line:
            in_main = "grouped_conv_kernel" in line
        elif in_main and "bytes stack frame" in line:
            stack = int(re.search(r"(\d+) bytes spill stores", line).group(1))
        elif in_main and (m := re.search(r"Used (\d+) registers", line)):
            rows.append(
                {
                    "arch": arch,
                    "set": label,
                    "name": name,
                    "measured": int(m.group(1)),
                    "agpr": 0,
                    "spill": stack > 0,
                    "estimate": register_estimate(parse_name(name), a),
                    "estimate_v0": estimate_v0(name, a.warp_size),
                    "limit": a.registers_per_thread,
                }
            )
            in_main = False
    return rows


def summary(rows: list[dict], key: str) -> dict:
    ok = [r for r in rows if not r["spill"]]
    diffs = [r["measured"] - r[key] for r in ok]
    ratios = [r["measured"] / r[key] for r in ok]
    return {
        "n": len(rows),
        "fit": len(ok),
        "spill": len(rows) - len(ok),
        "caught": sum(1 for r in rows if r["spill"] and r[key] > r["limit"]),
        "false": sum(1 for r in ok if r[key] > r["limit"]),
        "med_ratio": statistics.median(ratios) if ratios else float("nan"),
        "med_diff": statistics.median(diffs) if diffs else float("nan"),
        "min_diff": min(diffs) if diffs else float("nan"),
        "max_diff": max(diffs) if diffs else float("nan"),
        "mae": statistics.mean(abs(d) for d in diffs) if diffs else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    rows = []
    cal = ROOT / "bench" / "calibration"
    for arch in ("gfx942", "gfx950", "gfx1100", "gfx1201"):
        for p in sorted(cal.glob(f"resources_{arch}_basic_*.json")):
            rows += amd_rows(p, "basic (earlier defaults)")
        p = ROOT / "bench" / "resources" / f"{arch}.json"
        if p.is_file():
            rows += amd_rows(p, "defaults")
    for p in sorted(cal.glob("ptxas_sm_90a_basic_*.txt")):
        rows += nvidia_rows(p, "basic (earlier defaults)")
    if (cal / "ptxas_sm_90a_defaults.txt").is_file():
        rows += nvidia_rows(cal / "ptxas_sm_90a_defaults.txt", "defaults")
    if args.csv:
        with args.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    print(
        "| arch | set | instances (spilling) | formula | median measured/estimate | median measured-estimate "
        "| min..max | mean abs error | spills rejected by the estimate | non-spilling rejected |"
    )
    print("| --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for arch, label in dict.fromkeys((r["arch"], r["set"]) for r in rows):
        sub = [r for r in rows if r["arch"] == arch and r["set"] == label]
        for key, formula in (("estimate_v0", "before"), ("estimate", "after")):
            s = summary(sub, key)
            print(
                f"| {arch} | {label} | {s['n']} ({s['spill']}) | {formula} | {s['med_ratio']:.2f} | {s['med_diff']:+.0f} | "
                f"{s['min_diff']:+.0f}..{s['max_diff']:+.0f} | {s['mae']:.0f} | {s['caught']} of {s['spill']} | {s['false']} |"
            )


if __name__ == "__main__":
    main()
