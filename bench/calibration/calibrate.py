"""Register estimate calibration: rules.register_estimate against the compilers' reports.

    python bench/calibration/calibrate.py                 # markdown tables (bench/NOTES.md)
    python bench/calibration/calibrate.py --csv out.csv   # one row per instance

Inputs (committed beside this file):
  bench/resources/<gfx>.json          ckgen check-isa --resources-out (AMD, clang-19 device only)
  bench/calibration/ptxas_sm_90a_defaults.txt   nvcc 13.0 -Xptxas -v over the sm_90a defaults
                                                (bench/calibration/nvcc_ptxas.sh on the GPU machine)
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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ckgen.arch import get_arch  # noqa: E402
from ckgen.naming import parse_name  # noqa: E402
from ckgen.rules import register_estimate  # noqa: E402


def amd_rows(arch: str) -> list[dict]:
    p = ROOT / "bench" / "resources" / f"{arch}.json"
    if not p.is_file():
        return []
    doc = json.loads(p.read_text())
    a = get_arch(arch)
    rows = []
    for name, r in sorted(doc["instances"].items()):
        if not r.get("compiled"):
            continue
        rows.append({"arch": arch, "name": name, "measured": r["vgpr"], "agpr": r.get("agpr", 0),
                     "spill": r["scratch_bytes"] > 0, "estimate": register_estimate(parse_name(name), a.warp_size),
                     "limit": a.registers_per_thread})
    return rows


def nvidia_rows(arch: str = "sm_90a") -> list[dict]:
    p = ROOT / "bench" / "calibration" / f"ptxas_{arch}_defaults.txt"
    if not p.is_file():
        return []
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
            rows.append({"arch": arch, "name": name, "measured": int(m.group(1)), "agpr": 0, "spill": stack > 0,
                         "estimate": register_estimate(parse_name(name), a.warp_size), "limit": a.registers_per_thread})
            in_main = False
    return rows


def summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if not r["spill"]]
    ratios = [r["measured"] / r["estimate"] for r in ok]
    diffs = [r["measured"] - r["estimate"] for r in ok]
    missed = [r for r in rows if r["spill"] and r["estimate"] <= r["limit"]]
    return {
        "n": len(rows), "fit": len(ok), "spill": len(rows) - len(ok), "missed": len(missed),
        "med_ratio": statistics.median(ratios) if ratios else float("nan"),
        "min_ratio": min(ratios) if ratios else float("nan"), "max_ratio": max(ratios) if ratios else float("nan"),
        "med_diff": statistics.median(diffs) if diffs else float("nan"),
        "under": sum(1 for d in diffs if d > 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    rows = []
    for arch in ("gfx942", "gfx1100", "gfx1201"):
        rows += amd_rows(arch)
    rows += nvidia_rows()
    if args.csv:
        with args.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    print("| arch | instances | no spill | spill | spill not predicted | median measured/estimate | min..max | median measured-estimate | estimate below measured |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for arch in dict.fromkeys(r["arch"] for r in rows):
        s = summary([r for r in rows if r["arch"] == arch])
        print(f"| {arch} | {s['n']} | {s['fit']} | {s['spill']} | {s['missed']} | {s['med_ratio']:.2f} | "
              f"{s['min_ratio']:.2f}..{s['max_ratio']:.2f} | {s['med_diff']:+.0f} | {s['under']} |")


if __name__ == "__main__":
    main()
