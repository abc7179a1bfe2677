#!/usr/bin/env bash
# GPU machine, one call (~5 min on an H200): the direct kernels' small-group path.
#   1. bench/device.sh build + test on the tests set restricted to the direct instances (all
#      three variants; the *_support suites filtered out: they fail by design when only direct
#      instances are built): GTests incl. the random sweep's small-group draws;
#   2. bench/dev/perf_sweep.sh over the coverage shapes, fp16 2D direct instances: the default
#      ones beside bench/dev/candidates/sg_<variant>.yaml (best per shape in sweep.txt);
#   3. Nsight Compute sections (speed of light, occupancy, warp states) of the forward ResNeXt
#      rows on the default small-group tiles: $OUT/ncu_sg_<tile>.txt.
#   bash bench/dev/small_groups_call.sh     (carry .gtest)
#   CAND_PREFIX=sg4_ TESTS=0 NCU=0 bash bench/dev/small_groups_call.sh   # other candidates, sweep only
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
. "$ROOT/bench/dev/ncu_direct.sh"
if [ "${TESTS:-1}" = 1 ]; then
  GTEST_FILTER='-*_support.*' GEN_ARGS="--kernels *direct*" BUILD_SETS=tests PHASES="build test" \
    OUT=$OUT/dev bash "$ROOT/bench/device.sh"
  cp "$OUT/dev/summary.txt" "$OUT/tests_summary.txt"
  tar czf "$OUT/tests_logs.tar.gz" -C "$OUT/dev" . && rm -rf "$OUT/dev"
fi
OUT=$OUT/sweep WORK=/tmp/sweep-work CAND_PREFIX=${CAND_PREFIX:-sg_} SHAPES=$ROOT/templates/project/shapes/coverage.csv \
  GEN_EXTRA="--pipeline direct" bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_run.txt" 2>&1
cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt" 2>/dev/null
tar czf "$OUT/sweep_csv.tar.gz" -C "$OUT/sweep" . && rm -rf "$OUT/sweep"
bin=/tmp/sweep-work/gen/build/bin/ckgen_profiler_forward
for t in t64x64x4_w4x1x1 t32x64x8_w4x1x1; do
  [ "${NCU:-1}" = 1 ] || break
  ncu_direct "$bin" 'resnext*' "*fp16_2d_${t}_wt1x1x1_direct*" "$OUT/ncu_sg_$t.txt"
done
cat "$OUT"/tests_summary.txt "$OUT/sweep.txt"
grep -hE "Duration|Throughput|Achieved Occupancy|Registers|Stall|Warp Cycles|Theoretical Occ|Block Limit" "$OUT"/ncu_sg_*.txt | head -60
