#!/usr/bin/env bash
# GPU machine, one call (~3 min): where the depthwise 56x56 backward_weight FMA window kernel
# (t64x64x1 w4 v4, two-stage: the slice kernel + the chained finish) spends its time, fp16 and bf16.
# Builds those default-set instances only (no tests), then per datatype:
#   $OUT/ncu_<dt>.txt   Nsight Compute: speed of light, occupancy, scheduler and warp states,
#                       instruction statistics, source counters (hot SASS, stall reasons), memory;
#   $OUT/sass.txt       cuobjdump -sass of both slice kernels.
# ncu flushes the caches before each profiled kernel here (its default), so the durations are
# cold-L2 figures (14 us against ~9 warm for the slice kernel); bench/dev/dw_bw_ncu.sh keeps them warm.
#   bash bench/dev/dw_bw_stalls.sh        (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/ckgen-work}
mkdir -p "$OUT"
TILE=${TILE:-2d_t64x64x1_w4x1x1_wt1x1x1_direct_v4x4x4_2st}
BUILD_TESTS=OFF GEN_ARGS="--variant backward_weight --kernels *_${TILE}" BUILD_SETS=default \
  OUT=$OUT bash "$ROOT/bench/device.sh" build
bin=$WORK/gen_default/build/bin/ckgen_profiler_backward_weight
for dt in fp16 bf16; do
  "$bin" --shapes "$ROOT/templates/project/shapes/coverage.csv" --shape 'dw_3x3_g256*' --datatype $dt \
    --verify gpu --warmup 3 --repeat 10 2>&1 | tail -4 > "$OUT/time_$dt.txt"
  timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section SourceCounters --section LaunchStats \
    --section MemoryWorkloadAnalysis --kernel-name regex:'depthwise|splitk' "$bin" \
    --shapes "$ROOT/templates/project/shapes/coverage.csv" --shape 'dw_3x3_g256*' --datatype $dt \
    --verify none --warmup 1 --repeat 1 --iters 1 --timing loop > "$OUT/ncu_$dt.txt" 2>&1
done
cuobjdump -sass "$bin" 2>&1 | awk '/Function :/{f = ($0 ~ /depthwise/)} f' > "$OUT/sass.txt"
cat "$OUT"/time_*.txt
grep -hE "^  [a-z].*\(|Duration|Issued Ipc|Executed Instructions  |Stall|Warp Cycles Per Issued|Achieved Occ|Registers" "$OUT"/ncu_*.txt | head -60
