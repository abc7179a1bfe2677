#!/usr/bin/env bash
# GPU machine, one call: the forward windows (bench/dev/window_sweep.yaml) against the shipped rings
# on 64-channel stride-1 rows (bench/dev/shapes_window.csv), fp16 and bf16, run 1 GPU-verified, and
# cuDNN on the same rows: -> $OUT/window_{fp16,bf16}.txt, window_*_{1,2}.csv, cudnn_window.csv.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
for dt in fp16 bf16; do
  DT=$dt CONFIG=bench/dev/window_sweep.yaml GEN_ARGS="--ndim 2" SHAPES=bench/dev/shapes_window.csv \
    VARIANT=forward NAME=window_$dt TOP=6 W=/tmp/window bash bench/dev/sweep_call.sh 2>&1 | grep -v "^  " | head -12
done
timeout 200 python3 bench/peer_cudnn.py "${OUT:-/tmp/ckgen-out}/cudnn_window.csv" bench/dev/shapes_window.csv \
  > /tmp/cudnn_window.log 2>&1
grep forward "${OUT:-/tmp/ckgen-out}/cudnn_window.csv" | cut -d, -f1-4
