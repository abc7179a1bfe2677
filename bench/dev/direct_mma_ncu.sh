#!/usr/bin/env bash
# GPU machine, one call (~2 min): builds the default forward direct instances and reads the
# matrix path's ResNeXt c8 kernel under Nsight Compute: instruction counts, issue-stall reasons
# and the memory sections. $OUT/ncu_stalls_<tile>.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
GEN_ARGS="--variant forward --kernels *direct*" BUILD_SETS=default BUILD_TESTS=OFF OUT=$OUT \
  bash "$ROOT/bench/device.sh" build > /dev/null 2>&1
bin=${WORK:-/tmp/ckgen-work}/gen_default/build/bin/ckgen_profiler_forward
for t in ${NCU_TILES:-t32x64x8_w2x1x1_wt16x8x16 t112x64x8_w4x1x1_wt1x1x1}; do
  timeout 150 ncu --clock-control none --kernel-name regex:depthwise --section SpeedOfLight \
    --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum \
    "$bin" --shapes "$ROOT/templates/project/shapes/coverage.csv" --shape 'resnext*c8*' \
    --kernels "*fp16_2d_${t}_direct*" --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 \
    --timing loop > "$OUT/ncu_stalls_$t.txt" 2>&1
done
for f in "$OUT"/ncu_stalls_*.txt; do
  echo "== $f"
  grep -E "Duration|inst_executed.sum|Issued Warp|No Eligible|Active Warps Per|stalled_[a-z_]+_per_issue_active.ratio +[a-z]* +[0-9.]*[1-9]" "$f" | \
    awk '{ if ($0 ~ /stalled/) { if ($NF+0 >= 0.3) print } else print }' | head -40
done
