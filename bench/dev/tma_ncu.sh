#!/usr/bin/env bash
# GPU machine, one call: Nsight Compute of the wavelet_tma forward kernel on the K=36 box head
# (100x100) and the 4-group 3x3 (coverage), default tile vs swap_ab, fp16 2D.
#   bash bench/dev/tma_ncu.sh   -> $OUT/ncu_<shape>_<n>.txt, $OUT/ncu_summary.txt
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/ncu-work}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
KERNELS=${KERNELS:-"*fwd_fp16_2d_t128x64x64_w8x1x1_wt64x64x16_wltma4_lm1x8_v8x8x8 *fwd_fp16_2d_t128x64x64_w8x1x1_wt64x64x16_wltma8_lm1x8_cshuffle_v8x8x8 *fwd_fp16_2d_t256x64x64_w8x1x1_wt64x128x16_wltma4_lm1x8_swapab_v8x8x8"}
args=(); for k in $KERNELS; do args+=(--kernels "$k"); done
python3 -m ckgen.cli generate --arch sm_90a --variant forward --datatype fp16 --ndim 2 "${args[@]}" -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$WORK/gen" -B "$WORK/gen/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/ncu_build.log" 2>&1 || exit 1
ninja -C "$WORK/gen/build" -j "$(nproc)" >> "$OUT/ncu_build.log" 2>&1 || { grep -m20 -A5 error "$OUT/ncu_build.log"; exit 1; }
bin=$WORK/gen/build/bin/ckgen_profiler_forward
n=0
for spec in "retinanet_r50fpn_n2:head_box_3x3_256_36_100" "coverage:grouped_3x3_g4_c64_100"; do
  set_=${spec%%:*}; shape=${spec#*:}
  for k in $KERNELS; do
    n=$((n + 1))
    timeout 120 ncu --clock-control none -k regex:tma_conv_kernel --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
      "$bin" --shapes "$ROOT/templates/project/shapes/$set_.csv" --shape "$shape" --kernels "$k" \
      --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/ncu_${shape}_$n.txt" 2>&1
    echo "== $shape $k rc=$?" >> "$OUT/ncu_summary.txt"
    grep -E "Duration|SM Busy|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Stall|Grid Size|Registers Per|Dynamic Shared|Achieved Occupancy|Shared Memory" \
      "$OUT/ncu_${shape}_$n.txt" | head -40 >> "$OUT/ncu_summary.txt"
  done
done
cat "$OUT/ncu_summary.txt"
