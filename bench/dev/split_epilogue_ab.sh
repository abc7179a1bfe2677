#!/usr/bin/env bash
# GPU machine (~6 min): a change to the split reductions (pipeline_tma.hpp, the workspace
# epilogue) against the same kernels built with a probe definition that restores the old form,
# every default wavelet_tma backward_weight instance, fp16 2D, GPU-verified, over the RetinaNet set
# and coverage's 2D rows at k_batch auto, 8, 16 and 32.
#   FLAG_SETS="new: old:-DCKGEN_PROBE_<SWITCH>" bash bench/dev/split_epilogue_ab.sh
#     -> $OUT/flags.txt, $OUT/flags.tgz (the CSVs and logs)
# The switch lives in the tree under test only for the A/B and goes before the change lands. The
# 2026-11-27 runs (bench/NOTES.md): NO_ROTATE (bench/dev/red_rotate.patch plus that switch),
# RED_V2 (the 16-byte reds against the 8-byte ones) and NO_SLAB_RED (57ca023: the slab form against
# the lane-pair form); the tree carries none of them now.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/splitab-out}
W=/tmp/splitab; mkdir -p "$OUT" $W
S=$ROOT/templates/project/shapes
{ cat $S/retinanet_r50fpn_n2.csv; awk -F, 'NR > 1 && $2 == 2' $S/coverage.csv; } > $W/shapes.csv
OUT=$OUT/flags WORK=$W/work FLAG_SETS=${FLAG_SETS:?set FLAG_SETS} VARIANTS=backward_weight \
  KERNELS="*bwd_weight_fp16_2d_*wltma*" SHAPES=$W/shapes.csv VERIFY=gpu PROF_TIMEOUT=280 \
  PROF_ARGS="--k-batch 0,8,16,32" bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/flags_run.txt" 2>&1
cp "$OUT/flags/flags.txt" "$OUT/flags.txt"
tar czf "$OUT/flags.tgz" -C "$OUT" flags && rm -rf "$OUT/flags"
head -8 "$OUT/flags_run.txt"; tail -3 "$OUT/flags.txt"
