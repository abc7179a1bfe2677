"""The model-zoo corpus (bench/shapes/models.csv) as the profiler's shapes CSV: one row per unique
problem, and a map from each unique problem back to the corpus rows (models) that run it.

    python bench/corpus_shapes.py --out-dir /tmp/corpus          # corpus.csv + corpus_map.csv
    python bench/corpus_shapes.py --out-dir /tmp/corpus --ndim 2 --models resnet50,vgg16_bn
    python bench/corpus_shapes.py --out-dir /tmp/corpus --check build/   # + unsupported.csv

corpus.csv has exactly the columns name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,
pad_right and no comment lines, so the profiler (host/shapes.hpp), ckgen's load_shapes and
bench/peer_cudnn.py's plain csv.DictReader all read it. A problem met by several corpus rows
(a layer shared by several models, e.g. ResNet-50's and ResNeXt's 1x1 downsamples) is one row,
named after the first corpus row that has it. Rows are ordered round-robin over the models
(first row of each model, then the second, ...), so a time-boxed profiler run that stops early
still covers every model.

corpus_map.csv: shape,row,model,count (one line per corpus row; `shape` names its row of
corpus.csv, `count` is how often the model runs the layer).

With --check (a built project, its build dir or lib/libckgen_dispatch.so): unsupported.csv,
the corpus rows that no default instance of a variant / datatype supports (the reason of the
dispatcher's refusal), and a count per variant / datatype on stdout. Rows with asymmetric
padding (pad_left != pad_right) are also listed as unusable by the cuDNN reference (PyTorch's
conv takes one pad per side).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ckgen.model.problem import SHAPE_COLUMNS

HERE = Path(__file__).resolve().parent

CORPUS = HERE / "shapes" / "models.csv"
MAP_COLUMNS = ("shape", "row", "model", "count")
VARIANTS = ("forward", "backward_data", "backward_weight")


@dataclass(frozen=True)
class CorpusRow:
    name: str
    model: str
    count: int
    cells: tuple[str, ...]  # SHAPE_COLUMNS[1:] as written

    @property
    def ndim(self) -> int:
        return int(self.cells[0])

    @property
    def symmetric_pad(self) -> bool:
        return self.cells[-2] == self.cells[-1]


def read_corpus(path: Path = CORPUS) -> list[CorpusRow]:
    """The corpus rows (comment lines skipped), in file order."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if line.strip() and not line.startswith("#")))
    missing = [c for c in (*SHAPE_COLUMNS, "model") if rows and c not in rows[0]]
    if missing:
        raise SystemExit(f"{path}: missing column(s) {', '.join(missing)}")
    return [
        CorpusRow(
            r["name"],
            r["model"],
            int(r.get("count") or 1),
            tuple(r[c].strip() for c in SHAPE_COLUMNS[1:]),
        )
        for r in rows
    ]


def dedupe(rows: list[CorpusRow]) -> tuple[list[CorpusRow], list[tuple[str, CorpusRow]]]:
    """(unique problems, named after their first corpus row, in round-robin model order;
    (shape name, corpus row) for every corpus row)."""
    first: dict[tuple[str, ...], CorpusRow] = {}
    mapping: list[tuple[str, CorpusRow]] = []
    for r in rows:
        u = first.setdefault(r.cells, r)
        mapping.append((u.name, r))
    by_model: dict[str, list[CorpusRow]] = defaultdict(list)
    for u in first.values():
        by_model[u.model].append(u)
    ordered: list[CorpusRow] = []
    queues = list(by_model.values())
    i = 0
    while any(queues):
        for q in queues:
            if i < len(q):
                ordered.append(q[i])
        i += 1
        queues = [q for q in queues if i < len(q)]
    return ordered, mapping


def write_shapes(path: Path, rows: list[CorpusRow]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(SHAPE_COLUMNS)
        w.writerows([r.name, *r.cells] for r in rows)


def write_map(path: Path, mapping: list[tuple[str, CorpusRow]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(MAP_COLUMNS)
        w.writerows([s, r.name, r.model, r.count] for s, r in mapping)


def read_map(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_support(
    lib: Path, shapes: Path, mapping: list[tuple[str, CorpusRow]], datatypes: list[str], out: Path
) -> dict[tuple[str, str], int]:
    """unsupported.csv (variant,datatype,shape,row,model,reason) through the built library's
    dispatcher; returns the number of corpus rows without an instance per (variant, datatype)."""
    from ckgen.model.problem import load_shapes
    from ckgen.runtime.library import KernelLibrary, NoKernel

    reg = KernelLibrary.load(lib)
    problems = {p.name: p for p in load_shapes(shapes)}
    held = {(k.variant, k.datatype) for k in reg.kernels}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("variant", "datatype", "shape", "row", "model", "reason"))
        for v in VARIANTS:
            for dt in datatypes:
                if (v, dt) not in held:
                    continue
                refused: dict[str, str] = {}
                for name, p in problems.items():
                    try:
                        reg.select(p, v, dt, cost_model_only=True)
                    except NoKernel as ex:
                        refused[name] = ex.reason
                for s, r in mapping:
                    if s in refused:
                        counts[(v, dt)] += 1
                        w.writerow((v, dt, s, r.name, r.model, refused[s]))
        for s, r in mapping:
            if not r.symmetric_pad:
                w.writerow(("cudnn", "*", s, r.name, r.model, "asymmetric padding"))
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--ndim", default="", help="comma-separated ndims to keep (default all)")
    ap.add_argument("--models", default="", help="comma-separated models to keep (default all)")
    ap.add_argument("--check", type=Path, help="built project / build dir / libckgen_dispatch.so")
    ap.add_argument("--datatype", default="fp16,bf16", help="datatypes for --check")
    a = ap.parse_args(argv)
    rows = read_corpus(a.corpus)
    if a.ndim:
        keep = {int(x) for x in a.ndim.split(",")}
        rows = [r for r in rows if r.ndim in keep]
    if a.models:
        want = set(a.models.split(","))
        unknown = want - {r.model for r in rows}
        if unknown:
            ap.error(f"no corpus rows for model(s) {', '.join(sorted(unknown))}")
        rows = [r for r in rows if r.model in want]
    unique, mapping = dedupe(rows)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    shapes = a.out_dir / "corpus.csv"
    write_shapes(shapes, unique)
    write_map(a.out_dir / "corpus_map.csv", mapping)
    models = sorted({r.model for r in rows})
    asym = [r for r in rows if not r.symmetric_pad]
    nd: dict[int, int] = defaultdict(int)
    for u in unique:
        nd[u.ndim] += 1
    print(
        f"{len(rows)} corpus rows of {len(models)} models -> {len(unique)} unique problems "
        f"({', '.join(f'{n}D {c}' for n, c in sorted(nd.items()))}) -> {shapes}"
    )
    print(f"{len(asym)} row(s) with asymmetric padding (no cuDNN reference through PyTorch)")
    if a.check:
        counts = check_support(
            a.check,
            shapes,
            mapping,
            a.datatype.split(","),
            a.out_dir / "unsupported.csv",
        )
        for v in VARIANTS:
            for dt in a.datatype.split(","):
                print(
                    f"no default instance: {v} {dt}: {counts.get((v, dt), 0)} of {len(rows)} rows"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
