#!/usr/bin/env bash
# One device call for the forward / backward_data pairs (kPair): the TMA instances built with and
# without pairs (-DCKGEN_TMA_NO_PAIR) and profiled side by side on the RetinaNet set, then the
# GTests of both variants built from the tests set (random sweep included).
set -u
# The pairs are not in the template library (measured even and dropped): this needs the tree
# with bench/dev/pair_multicast_tma.patch applied (its first lines say how); without it both
# builds would be the same kernel.
grep -q "kPair" "$(dirname "$0")/../../templates/include/ckgen/pipeline_tma.hpp" ||
  { echo "pair_call.sh: no pairs in this tree: apply bench/dev/pair_multicast_tma.patch first" >&2; exit 2; }
mkdir -p "$OUT/dev" "$OUT/ab"
OUT=$OUT/ab VARIANTS="forward backward_data" FLAG_SETS="nopair:-DCKGEN_TMA_NO_PAIR pair:" \
  timeout 330 bash bench/dev/flag_sweep.sh > "$OUT/ab/stdout.txt" 2>&1
grep -E "^build|^profile|geomean" "$OUT/ab/stdout.txt"
cp "$OUT/ab/flags.txt" "$OUT/flags.txt"
GEN_ARGS="--variant forward --variant backward_data" BUILD_SETS=tests OUT=$OUT/dev \
  timeout 200 bash bench/device.sh build > "$OUT/dev/build_stdout.txt" 2>&1
tail -2 "$OUT/dev/build_stdout.txt"
TEST_TIMEOUT=200 OUT=$OUT/dev timeout 200 bash bench/device.sh test 2>&1 | grep -E "test |FAILED" | head -20
cd "$OUT" && tar czf ab.tgz ab && tar czf dev.tgz dev && rm -rf ab dev
