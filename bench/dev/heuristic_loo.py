"""Leave-one-out quality of the dispatcher's tuning-DB selection within one part of a shapes file,
with the real select() of a built library (host only; run under LD_PRELOAD=host_gpu_shim.so so
is_supported and the cost model see an H100/H200).

For every shape S of the part: a tuning DB from the part's other shapes (ckgen.tune.build_db,
what `ckgen tune --from-csv` writes), then select() on S per variant, judged against the times of
S in RESULTS. This is how the neighbour-ranking constants were chosen without looking at the
other part.

  gcc -shared -fPIC -Wl,--version-script=bench/dev/host_gpu_shim.map bench/dev/host_gpu_shim.c -o /tmp/shim.so
  LD_PRELOAD=/tmp/shim.so python bench/dev/heuristic_loo.py BUILD_DIR RESULTS.csv SHAPES.csv [even|odd]
"""
from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

from ckgen.tuning.profile import read_rows
from ckgen.runtime.library import KernelLibrary as Registry
from ckgen.model.problem import load_shapes
from ckgen.tuning.tune import Quality, build_db, split_shapes, summarize


def main() -> None:
    build, results, shapes_csv = sys.argv[1:4]
    part = sys.argv[4] if len(sys.argv) > 4 else "even"
    reg = Registry.load(build)
    problems = load_shapes(Path(shapes_csv))
    by_name = {p.name: p for p in problems}
    rows = [r for r in read_rows(Path(results)) if r.get("ms") and r.get("verified") not in ("fail", "FAIL")]
    timed: dict[tuple[str, str, str], dict[tuple[str, int], float]] = {}
    for r in rows:
        t = timed.setdefault((r["variant"], r["datatype"], r["shape"]), {})
        k = (r["instance"], int(r.get("k_batch") or 0))
        t[k] = min(t.get(k, math.inf), float(r["ms"]))
    reg.set_k_batch_candidates(sorted({kb for (v, _d, _s), t in timed.items() if v == "backward_weight" for _n, kb in t}))
    names = split_shapes(problems, part)
    out: list[Quality] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db.json"
        for s in names:
            db.write_text(json.dumps(build_db(rows, problems, shapes=[x for x in names if x != s])))
            reg.load_tuning_db(db)
            for (v, d, s2), t in sorted(timed.items()):
                if s2 != s:
                    continue
                (bname, _), bms = min(t.items(), key=lambda kv: kv[1])
                sel = reg.select(by_name[s], v, d)
                out.append(Quality(v, d, s, sel.name, sel.k_batch, sel.source, t.get((sel.name, sel.k_batch)), bname, bms))
    for q in out:
        print(f"{q.variant:16} {q.shape:30} {q.ratio if q.ratio is None else round(q.ratio, 3)!s:6} {q.source:18} {q.selected} kb{q.k_batch}")
    print(json.dumps(summarize(out)))
    for v in sorted({q.variant for q in out}):
        qs = [q for q in out if q.variant == v and q.ratio is not None]
        print(f"{v}: {sum(q.ratio <= 1.10 for q in qs)}/{len(qs)} within 10%")


if __name__ == "__main__":
    main()
