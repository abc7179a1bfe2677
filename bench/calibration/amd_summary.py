"""Markdown summary of bench/resources/<arch>.json (ckgen check-isa --resources-out) per arch and
datatype, and the matrix instructions by mnemonic where the file records them: the tables in
docs/amd.md.   python bench/calibration/amd_summary.py"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")


def rng(v: list[int]) -> str:
    return f"{min(v)}" if min(v) == max(v) else f"{min(v)}..{max(v)}"


def load(arch: str) -> dict[str, dict] | None:
    p = ROOT / "bench" / "resources" / f"{arch}.json"
    return json.loads(p.read_text())["instances"] if p.is_file() else None


def mnemonic_table() -> None:
    """Matrix instructions by mnemonic: total count and the warp tiles of the instances holding them."""
    print("| arch | mnemonic | instructions | instances | warp tiles |")
    print("| --- | --- | ---: | ---: | --- |")
    for arch in ARCHS:
        inst = load(arch)
        if not inst:
            continue
        per: dict[str, list[tuple[str, int]]] = {}
        for n, r in inst.items():
            for m, c in r.get("matrix_mnemonics", {}).items():
                per.setdefault(m, []).append((n, c))
        for m, hits in sorted(per.items()):
            tiles = sorted({re.search(r"_wt(\d+x\d+x\d+)_", n).group(1) for n, _ in hits})
            print(
                f"| {arch} | `{m}` | {sum(c for _, c in hits)} | {len(hits)} | {', '.join(tiles)} |"
            )


def main() -> None:
    print(
        "| arch | dtype | instances | compiled | matrix insts (per kernel) | VGPR | AGPR | SGPR | LDS bytes "
        "| scratch > 0 | occupancy | check failures |"
    )
    print("| --- | --- | ---: | ---: | --- | --- | --- | --- | --- | ---: | --- | ---: |")
    for arch in ARCHS:
        inst = load(arch)
        if not inst:
            continue
        for dt in ("fp16", "bf16", "fp32"):
            rs = [r for n, r in inst.items() if re.search(rf"_{dt}_", n)]
            if not rs:
                continue
            c = [r for r in rs if r["compiled"]]
            mm = [r["matrix_insts"] for r in c]
            print(
                f"| {arch} | {dt} | {len(rs)} | {len(c)} | {sum(mm)} ({rng(mm)}) | {rng([r['vgpr'] for r in c])} "
                f"| {rng([r['agpr'] for r in c])} | {rng([r['sgpr'] for r in c])} | {rng([r['lds_bytes'] for r in c])} "
                f"| {sum(1 for r in c if r['scratch_bytes'] > 0)} | {rng([r['occupancy'] for r in c])} "
                f"| {sum(1 for r in rs if not r['ok'])} |"
            )
    print()
    mnemonic_table()


if __name__ == "__main__":
    main()
