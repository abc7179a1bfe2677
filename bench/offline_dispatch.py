"""An offline dispatch library: the real dispatcher (cost model, neighbour ranking, C API) over
the instances that profiler CSVs name, each "supported" exactly where it was timed. Built by the
host C++ compiler in seconds, no GPU and no kernel compiled, so that a change of the cost model
can be scored against measured times before any device time is spent:

    python3 bench/offline_dispatch.py --out /tmp/off prof_forward.csv.gz prof_backward_data.csv.gz ...
    python3 bench/heuristic_eval.py --lib /tmp/off --shapes corpus.csv --map corpus_map.csv \\
        --out-dir /tmp/he --methods cost prof_forward.csv.gz ...

The library exports the C API only (hidden visibility, as the generated one): its registry()
never binds to another dispatch library loaded in the same process.

Writes OUT/offline_keys.inc (one KernelKey per instance, spelled from its name; a `_cpad` name
is its instance's channel-padding face), OUT/offline_measured.tsv (instance, problem signature)
and OUT/lib/libckgen_dispatch.so (bench/offline_registry.cpp + dispatch/ckgen_dispatch.cpp).
Every pick is a measured instance, so scores read a little better than a real library's (which
may pick an instance nobody timed); compare cost models with one another, not with those.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from ckgen.model import cxx
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import DATATYPE_BYTES, GRAD_MASKS
from ckgen.tuning.profile import read_rows

ROOT = Path(__file__).resolve().parent.parent
FACE = "_cpad"
FAILED = ("fail", "error")


def _tri(text: str, fill: int) -> list[int]:
    v = [int(x) for x in text.split("x")]
    return [fill] * (3 - len(v)) + v


def signature(r: dict[str, str]) -> str:
    """The problem of a profiler row as bench/offline_registry.cpp spells a ConvProblem."""
    parts = [r["ndim"], r["G"], r["N"], r["C"], r["K"]]
    for col, fill in (("input", 1), ("filter", 1), ("stride", 1), ("dilation", 1)):
        parts.append(",".join(map(str, _tri(r[col], fill))))
    for col in ("pad_left", "pad_right"):
        parts.append(",".join(map(str, _tri(r[col], 0))))
    return "|".join(parts)


def key_line(name: str, faces: frozenset[str] = frozenset()) -> str:
    """CKGEN_OFFLINE_KEY(name, k.<field> = <value>, ...) of an instance or face name: an
    assignment per field of KernelKey (cxx.kernel_key_fields) but name, arch and ping_pong."""
    inner = name[: -len(FACE)] if name.endswith(FACE) else name
    i = parse_instance_name(inner)
    vals: dict[str, str] = {}
    for f in ("tile", "waves", "warp_tile"):
        for col, v in zip(cxx.key_columns(f), getattr(i, f), strict=True):
            vals[col] = str(v)
    args = [f'"{name}"']
    for _, field, _ in cxx.kernel_key_fields():
        if field in ("name", "arch", "ping_pong"):
            continue
        if field == "channel_pad":
            value = str(16 // DATATYPE_BYTES[i.datatype] if name.endswith(FACE) else 0)
        elif field == "mask_copy":
            value = "true" if name in faces else "false"
        elif field in vals:
            value = vals[field]
        elif field == "out_datatype":
            value = i.output_datatype.cpp_ref
        else:
            v = getattr(i, field)
            value = (
                v.cpp_ref
                if hasattr(v, "cpp_ref")
                else ("true" if v is True else "false" if v is False else str(v))
            )
        args.append(f"k.{field} = {value}")
    return f"CKGEN_OFFLINE_KEY({', '.join(args)})"


def mask_copy_faces(names: list[str], fused_configs: list[Path]) -> frozenset[str]:
    """The names among `names` that are mask-copy faces (kernel/mask_copy.hpp): a gradient mask's
    name that none of the fused instance lists (configs/<variant>/fused.yaml) holds."""
    if not fused_configs:
        return frozenset()
    cmd = [
        sys.executable,
        "-m",
        "ckgen.cli",
        "list-instances",
        "--arch",
        "sm_90a",
        "--format",
        "names",
    ]
    for c in fused_configs:
        cmd += ["--config", str(c)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"offline_dispatch: list-instances failed:\n{r.stderr[-2000:]}")
    twins = set(r.stdout.split())
    return frozenset(
        n
        for n in names
        if not n.endswith(FACE)
        and n not in twins
        and parse_instance_name(n).activation in GRAD_MASKS
    )


def build(out: Path, profiles: list[Path], fused_configs: list[Path] | None = None) -> Path:
    measured: set[tuple[str, str]] = set()
    for p in profiles:
        for r in read_rows(p):
            if r.get("shape") == "shape" or not r.get("ms") or r.get("verified") in FAILED:
                continue
            measured.add((r["instance"], signature(r)))
    names = sorted({n for n, _ in measured})
    out.mkdir(parents=True, exist_ok=True)
    faces = mask_copy_faces(names, fused_configs or [])
    (out / "offline_keys.inc").write_text("\n".join(key_line(n, faces) for n in names) + "\n")
    with open(out / "offline_measured.tsv", "w") as f:
        for n, s in sorted(measured):
            f.write(f"{n}\t{s}\n")
    from ckgen.emit.render import _dispatch_files
    from ckgen.model.arch import get_arch

    gen = out / "include" / "ckgen" / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    files = _dispatch_files(get_arch("sm_90a"))
    (gen / "arch_params.hpp").write_bytes(files["include/ckgen/generated/arch_params.hpp"])
    disp = ROOT / "templates" / "project" / "dispatch"
    so = out / "lib" / "libckgen_dispatch.so"
    so.parent.mkdir(exist_ok=True)
    cxx_bin = next((c for c in ("g++", "c++", "clang++") if shutil.which(c)), None)
    if cxx_bin is None:
        sys.exit("offline_dispatch: no host C++ compiler (g++, c++ or clang++)")
    cmd = [
        cxx_bin, "-std=c++17", "-O1", "-shared", "-fPIC", "-fvisibility=hidden",
        "-fvisibility-inlines-hidden", "-DCKGEN_PLATFORM_HOST", "-DCKGEN_DISPATCH_BUILD",
        f'-DCKGEN_OFFLINE_DIR="{out.resolve()}"', f"-I{ROOT / 'templates' / 'include'}", f"-I{out / 'include'}",
        f"-I{disp}", f"-I{out}", str(ROOT / "bench" / "offline_registry.cpp"), str(disp / "ckgen_dispatch.cpp"),
        str(disp / "ckgen_dispatch_args.cpp"), "-o", str(so),
    ]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"offline_dispatch: the compile failed:\n{r.stderr[-4000:]}")
    print(f"{so}: {len(names)} instances, {len(measured)} measured (instance, problem) pairs")
    return so


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("profiles", type=Path, nargs="+", help="profiler CSVs (.csv / .csv.gz)")
    ap.add_argument(
        "--out", type=Path, required=True, help="folder for the keys, the table and lib/"
    )
    ap.add_argument(
        "--fused-config",
        type=Path,
        action="append",
        default=[],
        help="a fused instance list (repeat): a gradient mask's name it does not hold is a "
        "mask-copy face (profiles of `--fusion drelu` time both)",
    )
    a = ap.parse_args(argv)
    build(a.out, a.profiles, a.fused_config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
