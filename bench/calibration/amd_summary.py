"""Markdown summary of bench/resources/<arch>.json (ckgen check-isa --resources-out) per arch and
datatype: the table in bench/AMD.md.   python bench/calibration/amd_summary.py"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rng(v: list[int]) -> str:
    return f"{min(v)}" if min(v) == max(v) else f"{min(v)}..{max(v)}"


def main() -> None:
    print("| arch | dtype | instances | compiled | matrix insts (per kernel) | VGPR | AGPR | SGPR | LDS bytes "
          "| scratch > 0 | occupancy | check failures |")
    print("| --- | --- | ---: | ---: | --- | --- | --- | --- | --- | ---: | --- | ---: |")
    for arch in ("gfx942", "gfx1100", "gfx1201"):
        p = ROOT / "bench" / "resources" / f"{arch}.json"
        if not p.is_file():
            continue
        inst = json.loads(p.read_text())["instances"]
        for dt in ("fp16", "bf16", "fp32"):
            rs = [r for n, r in inst.items() if re.search(rf"_{dt}_", n)]
            if not rs:
                continue
            c = [r for r in rs if r["compiled"]]
            mm = [r["matrix_insts"] for r in c]
            print(f"| {arch} | {dt} | {len(rs)} | {len(c)} | {sum(mm)} ({rng(mm)}) | {rng([r['vgpr'] for r in c])} "
                  f"| {rng([r['agpr'] for r in c])} | {rng([r['sgpr'] for r in c])} | {rng([r['lds_bytes'] for r in c])} "
                  f"| {sum(1 for r in c if r['scratch_bytes'] > 0)} | {rng([r['occupancy'] for r in c])} "
                  f"| {sum(1 for r in rs if not r['ok'])} |")


if __name__ == "__main__":
    main()
