#!/usr/bin/env bash
# GPU machine, one call (~5 min): the direct FMA backward_weight two-stage instances with the
# signalled finish (splitk_finish.hpp launch_splitk_finish_signalled: the finish waits on per-tile
# counters, not on the slice kernel's completion) against the chained finish
# (-DCKGEN_SIGNALLED_FINISH=0), fp16 / bf16, k_batch auto, on bench/dev/shapes_dw.csv, verified;
# then the tests set's direct backward_weight instances' GoogleTests (random sweep included).
# Measured slower (bench/NOTES.md, "Depthwise backward_weight: a signalled finish"); the change is
# bench/dev/signalled_finish.patch (git apply it before this call).
#   bash bench/dev/signalled_call.sh     (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
FLAG_SETS="sig: chained:-DCKGEN_SIGNALLED_FINISH=0 sig2:" VARIANTS=backward_weight DTYPE=fp16,bf16 PER_INSTANCE=1 \
  OUT=$OUT/ab WORK=/tmp/sig-work KERNELS="*_2d_t*_wt1x1x1_direct_*_2st" SHAPES=$ROOT/bench/dev/shapes_dw.csv \
  PROF_ARGS="--k-batch 0" bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/ab.txt" 2>&1
tar czf "$OUT/ab_csv.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
GTEST_FILTER='-*_support.*' GEN_ARGS="--variant backward_weight --kernels *_wt1x1x1_direct_*" BUILD_SETS=tests \
  PHASES="build test" OUT=$OUT/dev bash "$ROOT/bench/device.sh" > /dev/null 2>&1
cp "$OUT/dev/summary.txt" "$OUT/tests_summary.txt"
tar czf "$OUT/tests_logs.tgz" -C "$OUT/dev" . && rm -rf "$OUT/dev"
cat "$OUT/ab.txt" "$OUT/tests_summary.txt"
