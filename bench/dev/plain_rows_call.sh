#!/usr/bin/env bash
# One device call: the TMA sweep of forward and backward_weight (default + deep-ring candidates,
# automatic split) and the GTests of all three variants built from the tests set.
set -u
mkdir -p "$OUT/dev" "$OUT/sweep"
(TEST_TIMEOUT=200 BUILD_SETS=tests OUT=$OUT/dev bash bench/device.sh build > "$OUT/dev/build_stdout.txt" 2>&1) &
bp=$!
OUT=$OUT/sweep VARIANTS="forward backward_weight" CAND_PREFIX=deep_ GEN_EXTRA="--pipeline wavelet_tma" \
  PROF_RUNS="--k-batch 0" timeout 300 bash bench/dev/perf_sweep.sh > "$OUT/sweep/stdout.txt" 2>&1
head -4 "$OUT/sweep/stdout.txt"
wait $bp
TEST_TIMEOUT=200 OUT=$OUT/dev timeout 300 bash bench/device.sh test 2>&1 | grep -E "test |FAILED" | head -20
cd "$OUT" && tar czf sweep.tgz sweep && rm -rf sweep
