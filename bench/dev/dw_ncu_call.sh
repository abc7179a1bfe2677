#!/usr/bin/env bash
# GPU machine (~3 min): Nsight Compute on the depthwise forward window kernel, warm L2 as the
# benchmark's graph loop has it (--cache-control none, the third launch profiled), for the
# 56x56 row on 2-8 output rows per block; plus the SASS instruction mix of the 128x64 tile.
#   bash bench/dev/dw_ncu_call.sh   -> $OUT/ncu_<tile>.txt, $OUT/sass_mix.txt
#   PATCH=1: with bench/dev/dw_window.patch applied (as results/2026-11-26_H200_dw_window/ncu/ was)
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
W=${WORK:-/tmp/dwn}
mkdir -p "$W"
tiles="t128x64x1_w4x1x1 t112x64x1_w4x1x1 t224x64x1_w8x1x1 t448x64x1_w16x1x1"
globs=()
for t in $tiles; do globs+=(--kernels "*fwd_fp16_2d_${t}_wt1x1x1_direct_v8x8x8"); done
small_generate "$W/gen" --variant forward --config "$ROOT/configs/forward/default.yaml" \
  --config "$ROOT/bench/dev/candidates/dwwin_forward.yaml" --datatype fp16 --ndim 2 "${globs[@]}" || exit 1
if [ "${PATCH:-0}" = 1 ]; then
  (cd "$W/gen" && patch -s -p3 include/ckgen/depthwise.hpp < "$ROOT/bench/dev/dw_window.patch") || exit 1
fi
small_build "$W/gen" "$W/build" || exit 1
bin=$W/build/bin/ckgen_profiler_forward
metrics=lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__t_sector_hit_rate.pct,l1tex__t_bytes.sum,dram__bytes.sum,sm__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,lts__t_sector_hit_rate.pct
for t in $tiles; do
  timeout 120 ncu --clock-control none --cache-control none --kernel-name regex:depthwise_conv_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    --metrics "$metrics" "$bin" --shapes "$ROOT/bench/dev/shapes_dw.csv" --shape dw_3x3_g256_56 \
    --kernels "*fwd_fp16_2d_${t}_*" --datatype fp16 --verify none --warmup 3 --repeat 1 --iters 1 --timing loop \
    > "$OUT/ncu_$t.txt" 2>&1
  echo "== $t"
  grep -E "Duration|Memory Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers Per|Issued Ipc|lts__t_bytes|sectors_srcunit|l1tex__t_bytes|dram__bytes|inst_executed|issue_active|Stall|Warp Cycles Per Issued" "$OUT/ncu_$t.txt" | head -30
done
obj=$(find "$W/build" -name "*t128x64x1_w4x1x1*.o" | head -1)
cuobjdump -sass "$obj" | awk '/Function : .*DirectPathE1E/{on=1} /Function : /&&!/DirectPathE1E/{on=0} on' > "$W/win.sass"
grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T]+\s+)?[A-Z0-9_]+' "$W/win.sass" | awk '{print $NF}' | sort | uniq -c |
  sort -rn > "$OUT/sass_mix.txt"
head -25 "$OUT/sass_mix.txt"
