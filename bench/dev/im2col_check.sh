#!/usr/bin/env bash
# GPU machine, one call: every fp16 2D default forward and backward_weight instance profiled, GPU-
# verified, on single-group problems whose C is not a multiple of 8 (the copy-engine kernels' explicit
# im2col path, detail::tma_gemm_view): -> $OUT/im2col_{forward,backward_weight}_1.csv and .txt
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
for v in forward backward_weight; do
  CONFIG=configs/$v/default.yaml GEN_ARGS="--datatype fp16 --ndim 2" SHAPES=bench/dev/shapes_im2col_check.csv \
    VARIANT=$v NAME=im2col_$v TOP=8 W=/tmp/im2col_$v bash bench/dev/sweep_call.sh 2>&1 | grep -v "^  " | head -12
done
