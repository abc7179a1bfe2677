#!/usr/bin/env bash
# GPU machine, one call (~3 min): Nsight Compute of the rows still short of a target, every launch
# of one run (pad copy, clear, GEMM, finish), default instances, 2D.
#   bash bench/dev/targets_ncu.sh   -> $OUT/tn_<n>.txt, $OUT/tn_summary.txt
# ROWS: "variant:dtype:kernel glob:shape set:shape" entries.
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
WORK=${WORK:-/tmp/tn-work}
mkdir -p "$WORK"
ROWS=${ROWS:-"backward_weight:fp16:*bwd_weight_fp16_2d_t64x256x64_w4x1x1_wt64x256x16_wltma4_lm1x8_cshuffle_v8x8x8:retinanet_r50fpn_n2:head_box_3x3_256_36_100
backward_weight:bf16:*bwd_weight_bf16_2d_t64x256x64_w4x1x1_wt64x256x16_wltma4_lm1x4_cshuffle_v8x8x8:retinanet_r50fpn_n2:head_box_3x3_256_36_100
forward:fp16:*fwd_fp16_2d_t128x64x64_w8x1x1_wt64x64x16_wltma8_lm1x8_cshuffle_v8x8x8:coverage:grouped_3x3_g4_c64_100
backward_weight:fp16:*bwd_weight_fp16_2d_t64x192x64_w4x1x1_wt64x192x16_wltma6_lm1x4_cshuffle_v8x8x8:coverage:grouped_3x3_g4_c64_100
backward_weight:bf16:*bwd_weight_bf16_2d_t64x64x1_w4x1x1_wt1x1x1_direct_v4x4x4_2st:coverage:dw_3x3_g256_56
backward_weight:fp16:*bwd_weight_fp16_2d_t64x64x1_w4x1x1_wt1x1x1_direct_v4x4x4_2st:coverage:dw_3x3_g256_56"}
rows_build "$WORK" || exit 1
cp "$WORK/gen/build.log" "$OUT/tn_build.log"
n=0
while IFS=: read -r v dt k set_ shape; do
  n=$((n + 1))
  bin=$WORK/gen/build/bin/ckgen_profiler_$v
  shapes=$ROOT/templates/project/shapes/$set_.csv
  "$bin" --shapes "$shapes" --shape "$shape" --kernels "$k" --datatype "$dt" --verify gpu --warmup 5 --repeat 20 \
    > "$OUT/tn_prof_$n.txt" 2>&1
  timeout 150 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    "$bin" --shapes "$shapes" --shape "$shape" --kernels "$k" --datatype "$dt" --verify none \
    --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/tn_$n.txt" 2>&1
  { echo "== $n $v $dt $shape $k rc=$?"; tail -4 "$OUT/tn_prof_$n.txt"
    grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|Issue Slots Busy|Mem Pipes Busy|Stall|Warp Cycles Per Issued|Grid Size|Registers Per" \
      "$OUT/tn_$n.txt" | grep -v "host::" ; } >> "$OUT/tn_summary.txt"
done <<< "$ROWS"
cat "$OUT/tn_summary.txt"
