#!/usr/bin/env bash
# GPU machine, one call (~2 min): the matrix path's ResNeXt c8 kernel under Nsight Compute:
# instruction counts, issue-stall reasons and the memory sections, with L2 warm as the
# benchmark's graph loop has it (--cache-control none, the fourth launch profiled; COLD=1: the
# first launch, caches flushed, as the 2026-11-24 reading was taken). $OUT/ncu_stalls_<tile>.txt.
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
W=${WORK:-/tmp/dmn}
mkdir -p "$W"
tiles=${NCU_TILES:-t32x64x8_w4x1x1_wt16x8x16 t64x64x8_w8x1x1_wt16x8x16}
globs=()
for t in $tiles; do globs+=(--kernels "*fwd_fp16_2d_${t}_direct_v8x8x8"); done
small_generate "$W/gen" --variant forward --datatype fp16 --ndim 2 "${globs[@]}" || exit 1
small_build "$W/gen" "$W/build" || exit 1
bin=$W/build/bin/ckgen_profiler_forward
if [ "${COLD:-0}" = 1 ]; then warm=(--warmup 0); cache=(); else warm=(--warmup 3); cache=(--cache-control none --launch-skip 3); fi
for t in $tiles; do
  timeout 150 ncu --clock-control none "${cache[@]}" --launch-count 1 --kernel-name regex:depthwise \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum,lts__t_bytes.sum \
    "$bin" --shapes "$ROOT/templates/project/shapes/coverage.csv" --shape 'resnext*c8*' \
    --kernels "*fp16_2d_${t}_direct*" --datatype fp16 --verify none "${warm[@]}" --repeat 1 --iters 1 \
    --timing loop > "$OUT/ncu_stalls_$t.txt" 2>&1
done
for f in "$OUT"/ncu_stalls_*.txt; do
  echo "== $f"
  grep -E "Duration|inst_executed.sum|lts__t_bytes|Issued Warp|No Eligible|Active Warps Per|Achieved Occupancy|L2 Hit|L1/TEX Hit|stalled_[a-z_]+_per_issue_active.ratio +[a-z]* +[0-9.]*[1-9]" "$f" | \
    awk '{ if ($0 ~ /stalled/) { if ($NF+0 >= 0.3) print } else print }' | head -40
done
