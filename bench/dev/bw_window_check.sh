#!/usr/bin/env bash
# GPU machine, one call: the backward_weight windows (bench/dev/bw_window_sweep.yaml) against the
# shipped row form on the 64-channel 3x3 stride-1 rows (bench/dev/shapes_bw_window.csv), fp16
# and bf16, run 1 GPU-verified, cuDNN on the same rows; then the backward_weight GoogleTests of
# the tests set's window instances (tests.csv and the random sweep; TEST_KERNELS="" builds the whole
# backward_weight tests set):
#   -> $OUT/bwwin_{fp16,bf16}.txt, bwwin_*_{1,2}.csv, cudnn_bwwin.csv, test_backward_weight.log
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-/tmp/ckgen-out}
for dt in ${DTS:-fp16 bf16}; do
  DT=$dt CONFIG=bench/dev/bw_window_sweep.yaml GEN_ARGS="--ndim 2 --datatype $dt" SHAPES=bench/dev/shapes_bw_window.csv \
    VARIANT=backward_weight NAME=bwwin_$dt TOP=8 W=/tmp/bwwin_$dt bash bench/dev/sweep_call.sh 2>&1 | grep -v "^  " | head -12
done
timeout 150 python3 bench/peer_cudnn.py "$O/cudnn_bwwin.csv" bench/dev/shapes_bw_window.csv > /tmp/cudnn_bwwin.log 2>&1
grep backward_weight "$O/cudnn_bwwin.csv" | cut -d, -f1-4
if [ -n "${TESTS:-1}" ]; then
  TEST_TIMEOUT=240 BUILD_SETS=tests GEN_ARGS="--variant backward_weight ${TEST_KERNELS-"--kernels *_win_*"}" \
    PHASES="build test" bash bench/device.sh 2>&1 | tail -8
fi
