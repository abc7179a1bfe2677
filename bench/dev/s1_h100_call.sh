#!/usr/bin/env bash
# GPU machine, one call: the forward stride1 instances' GTests (tests set, random sweep included),
# then the 128 x 64 rings with and without stride1 (default set + candidates/s1_forward.yaml) on the
# grouped g4 and K = 36 100x100 rows (bench/NOTES.md, "K=36 100x100 forward on the H100").
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
VARIANTS=forward PHASES="build test" BUILD_SETS=tests OUT=$OUT bash "$ROOT/bench/dev/s1_call.sh"
grep -h "PASSED\|FAILED" "$OUT"/test_*.log | tail -5
VARIANTS=forward CAND_PREFIX=s1_ GEN_EXTRA="--kernels *t128x64x64*" DTYPE=fp16 \
  SHAPES=$ROOT/bench/dev/shapes_k36_g4.csv OUT=$OUT bash "$ROOT/bench/dev/perf_sweep.sh"
