#!/usr/bin/env bash
# GPU machine, one call: the stride1 instances (wavelet_tma, staged input rows) of forward and
# backward_data only: their GTests (random sweep included; the *_support suites expect the whole
# set and are filtered out), the RetinaNet and coverage shapes profiled (verified on the GPU),
# cuDNN timed in the same run.   bash bench/dev/s1_call.sh   (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
VARIANTS=${VARIANTS:-"forward backward_data"}
KERNELS=${KERNELS:-"*_s1*"}
GEN_VARIANTS=$(for v in $VARIANTS; do printf -- '--variant %s ' "$v"; done)
GTEST_FILTER=${GTEST_FILTER:-'-*_support.*'} GEN_ARGS="$GEN_VARIANTS--kernels $KERNELS" \
  BUILD_SETS=${BUILD_SETS:-"tests default"} OUT=$OUT bash "$ROOT/bench/device.sh" ${PHASES:-build test bench peer}
