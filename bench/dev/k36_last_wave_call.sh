#!/usr/bin/env bash
# GPU machine, one call: the 192 x 64 forward tiles (default set + candidates/k36d_forward.yaml)
# on the K = 36 100x100 box head and grouped g4 at every split count that changes the last wave
# (bench/NOTES.md, "K=36 100x100 forward on the H100: the last wave").
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VARIANTS=forward CAND_PREFIX=k36d_ GEN_EXTRA="--kernels *t192x64x64*" DTYPE=${DTYPE:-fp16} \
  SHAPES=$ROOT/bench/dev/shapes_k36_g4.csv PROF_ARGS="--k-batch 0,1,2,3,4,5,6,9,12" \
  bash "$ROOT/bench/dev/perf_sweep.sh"
