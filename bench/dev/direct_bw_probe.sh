#!/usr/bin/env bash
# GPU machine, one call (~2 min): where the direct matrix path for backward_weight spends its
# time. Builds the default set's direct backward_weight instances (no tests), then for the
# ResNeXt c8 row (t32x64x8) and the depthwise 56x56 row (t64x64x1, two-stage):
#   $OUT/ncu_<row>.txt   Nsight Compute: speed of light, occupancy, scheduler and warp states,
#                        instruction statistics, source counters (hot SASS, stall reasons);
#   $OUT/sass.txt        cuobjdump -sass of the matrix-path kernels.
#   bash bench/dev/direct_bw_probe.sh        (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/ckgen-work}
mkdir -p "$OUT"
BUILD_TESTS=OFF GEN_ARGS="--variant backward_weight --kernels *wt16x8x16_direct*" BUILD_SETS=default \
  OUT=$OUT bash "$ROOT/bench/device.sh" build
bin=$WORK/gen_default/build/bin/ckgen_profiler_backward_weight
probe() {  # probe <name> <shape glob> <kernel glob>
  timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section SourceCounters --section LaunchStats \
    --kernel-name regex:depthwise "$bin" --shapes "$ROOT/templates/project/shapes/coverage.csv" \
    --shape "$2" --kernels "$3" --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 \
    --timing loop > "$OUT/ncu_$1.txt" 2>&1
}
probe c8 'resnext*c8*' '*fp16_2d_t32x64x8_w8x1x1_wt16x8x16_direct_v8x8x8_2st'
probe dw 'dw_3x3_g256*' '*fp16_2d_t64x64x1_w8x1x1_wt16x8x16_direct_v8x8x8_2st'
cuobjdump -sass "$bin" 2>&1 | awk '/Function :/{f = ($0 ~ /depthwise/ && ($0 ~ /t32x64x8_w8x1x1_wt16x8x16_direct_v8x8x8_2st/ || $0 ~ /t64x64x1_w8x1x1_wt16x8x16_direct_v8x8x8_2st/))} f' > "$OUT/sass.txt"
ls -la "$OUT"
grep -hE "Duration|Issued Ipc|Executed Instructions  |Stall|Warp Cycles Per Issued|Achieved Occ" "$OUT"/ncu_*.txt | head -40
