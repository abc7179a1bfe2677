#!/usr/bin/env bash
# GPU machine (~3 min): the backward_weight 1x1 RetinaNet rows below 0.8 of cuDNN (r50_l2 128->512,
# r50_l3 / fpn_lat 512->256, r50_l4 1024->512): every default wavelet_tma backward_weight instance
# (fp16 2D) beside bench/dev/candidates/tma_backward_weight.yaml, k_batch auto, a list of k_batch
# values and both split reductions; best per shape and run in $OUT/sweep.txt, the ten fastest
# (instance, k_batch, split reduction) per shape in $OUT/bw1x1_rows.txt.
#   bash bench/dev/bw1x1_call.sh     (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
W=/tmp/bw1x1; mkdir -p $W
grep -E "^(name|r50_l2_1x1_128_512|r50_l3_1x1_512_256|r50_l4_1x1_1024_512)," \
  "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" > $W/shapes.csv
OUT=$OUT/sweep WORK=$W/work CAND_PREFIX=tma_ VARIANTS=backward_weight SHAPES=$W/shapes.csv \
  GEN_EXTRA="--pipeline wavelet_tma" \
  PROF_RUNS="--k-batch 0; --k-batch 4,6,8,12,16,24,32; --split-reduce cluster --k-batch 2,4,8; --split-reduce workspace --k-batch 8,12,16,24" \
  bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_run.txt" 2>&1
cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt" 2>/dev/null
python3 - "$OUT/sweep" <<'PY' > "$OUT/bw1x1_rows.txt"
import csv, glob, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/sweep_*.csv")):
    run = f.rsplit("_", 1)[-1][:-4]
    rows += [dict(r, run=run) for r in csv.DictReader(open(f)) if r["verified"] == "pass"]
for shape in sorted({r["shape"] for r in rows}):
    rs = sorted((r for r in rows if r["shape"] == shape), key=lambda r: float(r["ms"]))
    for r in rs[:10]:
        print(f"{shape:22s} {float(r['ms'])*1e3:7.2f} us run {r['run']} kb={r['k_batch']:3s} {r['instance'][-58:]}")
PY
tar czf "$OUT/sweep_csv.tar.gz" -C "$OUT/sweep" . && rm -rf "$OUT/sweep"
cat "$OUT/sweep_run.txt" "$OUT/bw1x1_rows.txt"
