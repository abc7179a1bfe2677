"""Merge benchmark runs made one variant per call (`bench/device.sh build bench peer` with
GEN_ARGS="--variant V": the whole default set no longer fits one 10-minute call) into one
benchmark CSV, the inputs of `ckgen report`, and the issue's target summary.

    python3 bench/merge_runs.py --out bench/results/DATE_GPU.csv --report-inputs /tmp/rep \\
        RUN_FWD RUN_BD RUN_BW
    ckgen report --results /tmp/rep/profiles.csv --cudnn /tmp/rep/cudnn.csv -o REPORT_DIR

Each RUN holds device.sh's compare.csv, cudnn.csv and logs.tar.gz (the profiler CSVs
prof_<set>_<variant>_<dt>.csv). A variant's rows and cuDNN times come from the same run; a
variant found in two runs is an error (exit 2), as is a run without those files.
--override RUN (repeatable): a later run over some shapes (e.g. GEN_ARGS="--ndim 3"
SHAPE_SETS=coverage); every (shape, variant, datatype) it measured replaces the base runs' row,
profiler rows and cuDNN time, so each row's ratio still comes from one run.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ckgen.tuning.report import geomean

RETINANET = (
    Path(__file__).resolve().parent.parent
    / "templates"
    / "project"
    / "shapes"
    / "retinanet_r50fpn_n2.csv"
)


@dataclass(frozen=True)
class Group:
    """A target group of issue 5, item 7: which shapes, and what is reported for them."""

    name: str
    prefixes: tuple[str, ...]


GROUPS = (
    Group("K=36 heads", ("head_box_3x3_256_36_",)),
    Group("grouped / depthwise", ("grouped_", "dw_", "resnext_")),
)
LARGEST_GEMM = "head_cls_3x3_256_2376_100"


class MergeError(Exception):
    pass


def _read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@dataclass
class Run:
    path: Path
    compare: list[dict[str, str]]
    cudnn: list[dict[str, str]]
    profiles: list[dict[str, str]]

    @property
    def variants(self) -> set[str]:
        return {r["variant"] for r in self.compare}


def load_run(path: Path) -> Run:
    for name in ("compare.csv", "cudnn.csv", "logs.tar.gz"):
        if not (path / name).is_file():
            raise MergeError(
                f"{path}: no {name} (a bench/device.sh output folder has compare.csv, cudnn.csv, logs.tar.gz)"
            )
    profiles: list[dict[str, str]] = []
    with tarfile.open(path / "logs.tar.gz") as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            if Path(m.name).name.startswith("prof_") and m.name.endswith(".csv") and m.isfile():
                f = tar.extractfile(m)
                if f is not None:
                    profiles += _read_csv(f.read().decode())
    run = Run(
        path,
        _read_csv((path / "compare.csv").read_text()),
        _read_csv((path / "cudnn.csv").read_text()),
        profiles,
    )
    missing = sorted(run.variants - {r.get("variant") for r in profiles})
    if missing:
        raise MergeError(
            f"{path}/logs.tar.gz: no profiler rows (prof_<set>_<variant>_<dt>.csv) for "
            f"{', '.join(missing)}, which compare.csv reports"
        )
    return run


def merge(
    runs: list[Run],
) -> tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]:
    """(benchmark rows, profiler rows, cuDNN rows), each variant from the one run that has it."""
    owner: dict[str, Path] = {}
    for run in runs:
        for v in run.variants:
            if v in owner:
                raise MergeError(f"variant {v} is in two runs: {owner[v]} and {run.path}")
            owner[v] = run.path
    rows, profiles, cudnn = [], [], []
    for run in runs:
        vs = run.variants
        rows += run.compare
        profiles += [r for r in run.profiles if r.get("variant") in vs]
        cudnn += [r for r in run.cudnn if r.get("variant") in vs]
    rows.sort(key=lambda r: (r["shape"], r["variant"], r["datatype"]))
    return rows, profiles, cudnn


def _key(r: dict[str, str]) -> tuple[str, str, str]:
    return r.get("shape", ""), r.get("variant", ""), r.get("datatype", "")


def override(
    merged: tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]], runs: list[Run]
) -> tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]:
    """merged with every (shape, variant, datatype) an override run measured taken from that run."""
    rows, profiles, cudnn = merged
    for run in runs:
        keys = {_key(r) for r in run.compare}
        if not keys:
            raise MergeError(f"{run.path}: the override run has no benchmark rows")
        rows = [r for r in rows if _key(r) not in keys] + run.compare
        profiles = [r for r in profiles if _key(r) not in keys] + [
            r for r in run.profiles if _key(r) in keys
        ]
        cudnn = [r for r in cudnn if _key(r) not in keys] + [
            r for r in run.cudnn if _key(r) in keys
        ]
    rows.sort(key=lambda r: (r["shape"], r["variant"], r["datatype"]))
    return rows, profiles, cudnn


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: list[str] = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def summary(rows: list[dict[str, str]], retinanet: set[str]) -> list[str]:
    """Per variant and datatype: the RetinaNet geomean and lowest row, the target groups' ratios,
    the largest GEMM-like shape's TFLOPS."""
    out = []
    keys = sorted({(r["variant"], r["datatype"]) for r in rows})
    for v, dt in keys:
        mine = [r for r in rows if (r["variant"], r["datatype"]) == (v, dt)]
        rn = [r for r in mine if r["shape"] in retinanet]
        line = f"{v} {dt}:"
        if rn:
            low = min(rn, key=lambda r: float(r["speedup"]))
            line += (
                f" RetinaNet geomean {geomean([float(r['speedup']) for r in rn]):.3f} over {len(rn)},"
                f" lowest {low['shape']} {float(low['speedup']):.3f};"
            )
        for g in GROUPS:
            sel = [r for r in mine if r["shape"].startswith(g.prefixes)]
            if sel:
                line += (
                    f" {g.name} "
                    + " ".join(f"{r['shape']} {float(r['speedup']):.2f}" for r in sel)
                    + ";"
                )
        big = [r for r in mine if r["shape"] == LARGEST_GEMM]
        if big:
            line += f" {LARGEST_GEMM} {float(big[0]['tflops']):.0f} TFLOPS"
        out.append(line)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--out", type=Path, required=True, help="merged benchmark CSV (columns: docs/design.md)"
    )
    ap.add_argument(
        "--report-inputs",
        type=Path,
        help="folder for profiles.csv and cudnn.csv (ckgen report's inputs)",
    )
    ap.add_argument(
        "--retinanet", type=Path, default=RETINANET, help="the RetinaNet shapes CSV (its names)"
    )
    ap.add_argument(
        "--override",
        type=Path,
        action="append",
        default=[],
        help="a later run over some shapes: its rows replace the base runs' (repeatable)",
    )
    ap.add_argument(
        "runs", type=Path, nargs="+", help="bench/device.sh output folders, one variant each"
    )
    a = ap.parse_args(argv)
    try:
        rows, profiles, cudnn = override(
            merge([load_run(p) for p in a.runs]), [load_run(p) for p in a.override]
        )
    except (MergeError, OSError, tarfile.TarError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _write(a.out, rows)
    if a.report_inputs is not None:
        _write(a.report_inputs / "profiles.csv", profiles)
        _write(a.report_inputs / "cudnn.csv", cudnn)
    names = {r["name"] for r in csv.DictReader(a.retinanet.open())}
    print(f"{a.out}: {len(rows)} rows")
    for line in summary(rows, names):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
