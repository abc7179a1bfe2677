#!/usr/bin/env bash
# GPU machine (~6 min): the split reductions' line rotation (pipeline_tma.hpp, the workspace
# epilogue: split s starts each row at 128-byte line s % kLines) against the same kernels without
# it (-DCKGEN_PROBE_NO_ROTATE), every default wavelet_tma backward_weight instance, fp16 2D,
# GPU-verified, over the RetinaNet set and coverage's 2D rows at k_batch auto, 8, 16 and 32.
#   bash bench/dev/red_rotate_call.sh   -> $OUT/flags.txt, $OUT/flags.tgz (the CSVs and logs)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/rot-out}
W=/tmp/rot; mkdir -p "$OUT" $W
S=$ROOT/templates/project/shapes
{ cat $S/retinanet_r50fpn_n2.csv; awk -F, 'NR > 1 && $2 == 2' $S/coverage.csv; } > $W/shapes.csv
OUT=$OUT/flags WORK=$W/work FLAG_SETS="rot: norot:-DCKGEN_PROBE_NO_ROTATE" VARIANTS=backward_weight \
  KERNELS="*bwd_weight_fp16_2d_*wltma*" SHAPES=$W/shapes.csv VERIFY=gpu PROF_TIMEOUT=280 \
  PROF_ARGS="--k-batch 0,8,16,32" bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/flags_run.txt" 2>&1
cp "$OUT/flags/flags.txt" "$OUT/flags.txt"
tar czf "$OUT/flags.tgz" -C "$OUT" flags && rm -rf "$OUT/flags"
head -8 "$OUT/flags_run.txt"; tail -3 "$OUT/flags.txt"
