#!/usr/bin/env bash
# GPU machine (~5 min): the depthwise row-pair path (depthwise.hpp DirectPath::RowPair). The direct
# instances of the tests set (forward / backward_weight GTests, random sweep included; the
# filtered build fails only the sets' support checks), then every 2D direct instance of the
# default sets built with and without the pairs (-DCKGEN_PROBE_NO_ROW_PAIR) and profiled side by
# side on bench/dev/shapes_dw.csv, fp16 and bf16, verified (bench/dev/flag_sweep.sh, per instance).
#   bash bench/dev/row_pair_call.sh      # $OUT/ab_run.txt, $OUT/tests_summary.txt, two archives
# The switch existed in direct_fma_row_pair (direct_plan.hpp: `#if defined(CKGEN_PROBE_NO_ROW_PAIR)
# return false;`) at e0306bc only, where this ran (H100, results/2026-11-27_H100_row_pair/); put it
# back to run the A/B again.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
GEN_ARGS="--pipeline direct --variant forward --variant backward_weight" BUILD_SETS=tests \
  TEST_TIMEOUT=${TEST_TIMEOUT:-150} OUT=$OUT/tests WORK=/tmp/rp-tests bash "$ROOT/bench/device.sh" build test \
  > "$OUT/tests_run.txt" 2>&1
cp "$OUT/tests/summary.txt" "$OUT/tests_summary.txt"
FLAG_SETS="pair: nopair:-DCKGEN_PROBE_NO_ROW_PAIR" VARIANTS="forward backward_weight" KERNELS="*_2d_*direct*" \
  SHAPES=$ROOT/bench/dev/shapes_dw.csv DTYPE=fp16,bf16 PER_INSTANCE=1 OUT=$OUT/ab WORK=/tmp/rp-ab \
  bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/ab_run.txt" 2>&1
tar czf "$OUT/tests.tgz" -C "$OUT" tests && tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/tests" "$OUT/ab"
cat "$OUT/tests_summary.txt" "$OUT/ab_run.txt"
