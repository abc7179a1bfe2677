#!/usr/bin/env bash
# GPU machine (~1.5 min): the depthwise backward_weight slice counts (k_batch) of the default direct
# FMA instances on bench/dev/shapes_dw.csv, fp16 and bf16, verified (flag_sweep.sh, one build):
# automatic (66 slices for the 64x64 tile at 132 SMs) against 16-512.
#   bash bench/dev/dw_bw_slices_call.sh     # $OUT/slices.txt, $OUT/slices_csv.tgz
# KERNELS / KB / GEN_EXTRA override the instance globs, the slice counts and the extra `ckgen
# generate` arguments, e.g. candidates beside the default set:
#   GEN_EXTRA="--config configs/backward_weight/default.yaml --config bench/dev/candidates/dwv2_backward_weight.yaml"
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
VARIANTS=backward_weight DTYPE=fp16,bf16 PER_INSTANCE=1 OUT=$OUT/slices WORK=/tmp/dwbw-slices \
  KERNELS="${KERNELS:-*_2d_*x1_w*_wt1x1x1_direct_*}" SHAPES=$ROOT/bench/dev/shapes_dw.csv \
  PROF_ARGS="--k-batch ${KB:-0,16,33,66,99,132,198,264,512}" GEN_EXTRA="${GEN_EXTRA:-}" \
  bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/slices_run.txt" 2>&1
python3 - "$OUT/slices" <<'PY' > "$OUT/slices.txt"
import csv, glob, sys
rows = [r for f in glob.glob(sys.argv[1] + "/flags_*_backward_weight.csv") for r in csv.DictReader(open(f))]
rows = [r for r in rows if r["shape"].startswith("dw_")]
best = {}
for r in rows:
    k = (r["shape"], r["datatype"], r["instance"])
    if r["verified"] == "pass": best.setdefault(k, []).append((float(r["ms"]) * 1e3, r["k_batch"]))
for k in sorted(best):
    v = sorted(best[k])
    print(f"{k[0]:18s} {k[1]} {k[2].split('_2d_')[1]:44s} " + " ".join(f"kb{kb}:{ms:.2f}" for ms, kb in v[:6]))
print("failed rows:", sum(1 for r in rows if r["verified"] != "pass"))
PY
tar czf "$OUT/slices_csv.tgz" -C "$OUT" slices && rm -rf "$OUT/slices"
cat "$OUT/slices_run.txt" "$OUT/slices.txt"
