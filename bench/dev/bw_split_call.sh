#!/usr/bin/env bash
# GPU machine (~4 min): wavelet_tma backward_weight splits over the RetinaNet set. Every default
# wavelet_tma backward_weight instance (fp16 2D), k_batch auto (run 0), workspace splits
# 1-32 (run 1) and cluster splits 2-8 (run 2); the CSVs in $OUT/split_csv.tar.gz feed
# bench/dev/split_rule_fit.py (which split rule picks the fastest measured split).
#   bash bench/dev/bw_split_call.sh     (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
OUT=$OUT/sweep WORK=/tmp/bwsplit VARIANTS=backward_weight GEN_EXTRA="--pipeline wavelet_tma" \
  PROF_RUNS="--k-batch 0; --split-reduce workspace --k-batch 1,2,3,4,6,8,12,16,24,32; --split-reduce cluster --k-batch 2,3,4,6,8" \
  bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_run.txt" 2>&1
cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt" 2>/dev/null
tar czf "$OUT/split_csv.tar.gz" -C "$OUT/sweep" . && rm -rf "$OUT/sweep"
cat "$OUT/sweep_run.txt"
