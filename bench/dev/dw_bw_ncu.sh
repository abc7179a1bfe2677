#!/usr/bin/env bash
# GPU machine (~1 min): after bench/dev/dw_bw_call.sh's sweep build (or TESTS=0 of it), Nsight
# Compute of the depthwise backward_weight window path without cache flushes: both kernels of
# the two-stage call (the slice kernel and the finish), speed of light, occupancy, warp states,
# memory.   TESTS=0 bash bench/dev/dw_bw_call.sh && bash bench/dev/dw_bw_ncu.sh
#   KERNEL (glob after the datatype, default 2d_t64x64x1_w4x1x1_wt1x1x1_direct_v4x4x4_2st), KB (0)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
bin=/tmp/sweep-work/gen/build/bin/ckgen_profiler_backward_weight
probe() {  # probe <name> <shape glob> <kernel glob>
  timeout 120 ncu --clock-control none --cache-control none --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats \
    --kernel-name regex:'depthwise|splitk' "$bin" --shapes "$ROOT/templates/project/shapes/coverage.csv" \
    --shape "$2" --kernels "$3" --datatype fp16 --verify none --warmup 2 --repeat 1 --iters 1 \
    --k-batch "${KB:-0}" --timing loop > "$OUT/ncu_$1.txt" 2>&1
}
probe dw56 'dw_3x3_g256*' "*fp16_${KERNEL:-2d_t64x64x1_w4x1x1_wt1x1x1_direct_v4x4x4_2st}"
probe dw28s2 'dw_3x3s2*' '*fp16_2d_t32x64x1_w4x1x1_wt1x1x1_direct_v8x8x8_2st'
for f in "$OUT"/ncu_dw56.txt "$OUT"/ncu_dw28s2.txt; do
  awk '/^  void/{print substr($0, 1, 150)} /Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|L2 Hit Rate/' "$f"
done
