#!/usr/bin/env bash
# GPU machine (~3 min): depthwise forward / backward_data direct FMA tiles: bench/dev/perf_sweep.sh
# over the coverage shapes, fp16 2D direct, the default instances beside
# bench/dev/candidates/dwf_<variant>.yaml (best per shape in $OUT/sweep.txt, the depthwise rows
# in $OUT/dw_rows.txt).   bash bench/dev/dw_fwd_call.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
OUT=$OUT/sweep WORK=/tmp/sweepf-work CAND_PREFIX=dwf_ VARIANTS="forward backward_data" \
  SHAPES=$ROOT/templates/project/shapes/coverage.csv GEN_EXTRA="--pipeline direct" \
  bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_run.txt" 2>&1
cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt" 2>/dev/null
python3 - "$OUT/sweep" <<'PY' > "$OUT/dw_rows.txt"
import csv, glob, sys
rows = [r for f in sorted(glob.glob(sys.argv[1] + "/sweep_*.csv")) for r in csv.DictReader(open(f))]
for v in ("forward", "backward_data"):
    for shape in ("dw_3x3_g256_56", "dw_3x3s2_g512_28"):
        rs = sorted((r for r in rows if r["shape"] == shape and r["variant"] == v and r["verified"] == "pass"),
                    key=lambda r: float(r["ms"]))
        for r in rs[:8]:
            print(f"{v:14s} {shape:18s} {float(r['ms'])*1e3:7.2f} us {r['instance'][-48:]}")
PY
tar czf "$OUT/sweep_csv.tar.gz" -C "$OUT/sweep" . && rm -rf "$OUT/sweep"
cat "$OUT/sweep_run.txt" "$OUT/dw_rows.txt"
