#!/usr/bin/env bash
# GPU machine (~5 min): (1) depthwise forward row-pair tiles (bench/dev/candidates/dwp_forward.yaml:
# 16 pixels a thread and more 8-pixel layouts) beside the default direct instances on
# bench/dev/shapes_dw.csv, fp16 and bf16, verified (perf_sweep.sh); (2) the backward_weight split
# counts of the two copy-engine tiles that win the grouped g4 and K = 36 100x100 rows, k_batch
# auto / 3-16, fp16 and bf16, verified (flag_sweep.sh, one build).
#   bash bench/dev/dwp_call.sh     # $OUT/sweep.txt, $OUT/splits.txt, two archives
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
OUT=$OUT/sweep WORK=/tmp/dwp-work CAND_PREFIX=dwp_ VARIANTS=forward DTYPE=fp16,bf16 \
  SHAPES=$ROOT/bench/dev/shapes_dw.csv GEN_EXTRA="--pipeline direct" \
  bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_run.txt" 2>&1
cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt"
VARIANTS=backward_weight DTYPE=fp16,bf16 PER_INSTANCE=1 OUT=$OUT/splits WORK=/tmp/dwp-splits \
  KERNELS="*_2d_t64x192x64_w4x1x1_wt64x192x16_wltma6_lm1x4_cshuffle_v8x8x8,*_2d_t64x256x64_w4x1x1_wt64x256x16_wltma4_lm1x4_cshuffle_v8x8x8" \
  SHAPES=$ROOT/bench/dev/shapes_bw_split.csv PROF_ARGS="--k-batch 0,3,4,5,6,7,8,10,13,16" \
  bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/splits_run.txt" 2>&1
python3 - "$OUT/splits" <<'PY' > "$OUT/splits.txt"
import csv, glob, sys
rows = [r for f in glob.glob(sys.argv[1] + "/flags_*_backward_weight.csv") for r in csv.DictReader(open(f))]
for r in sorted(rows, key=lambda r: (r["shape"], r["datatype"], r["instance"], float(r["ms"] or 9))):
    print(f"{r['shape']:26s} {r['datatype']} {r['instance'][-52:]:52s} kb {r['k_batch']:>3s} {float(r['ms'] or 0)*1e3:7.2f} us {r['verified']}")
PY
tar czf "$OUT/sweep_csv.tgz" -C "$OUT" sweep && tar czf "$OUT/splits_csv.tgz" -C "$OUT" splits && rm -rf "$OUT/sweep" "$OUT/splits"
cat "$OUT/sweep_run.txt" "$OUT/sweep.txt" "$OUT/splits_run.txt" "$OUT/splits.txt"
