#!/usr/bin/env bash
# Nsight Compute look at a few instances on one shape (GPU machine): where the warps stall.
#   KERNELS='glob,glob' SHAPE=head_3x3_256_256_100 VARIANTS="forward backward_data" bash bench/dev/ncu_probe.sh
# Writes $OUT/ncu_<variant>.txt (stall reasons, pipe use, occupancy, memory) and the build log.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ncu-out}
WORK=${WORK:-/tmp/ncu-work}
VARIANTS=${VARIANTS:-"forward backward_data backward_weight"}
SHAPE=${SHAPE:-head_3x3_256_256_100}
KERNELS=${KERNELS:-"*_fp16_2d_t128x128x32_w2x2x1_*_ms3_v8x8x8,*_fp16_2d_t64x64x32_w2x2x1_*_ms3_v8x8x8,*_fp16_2d_t128x128x64_*wavelet4*"}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
args=(); IFS=, read -ra globs <<< "$KERNELS"; for g in "${globs[@]}"; do args+=(--kernels "grouped_conv_*$g"); done
for v in $VARIANTS; do args+=(--variant "$v"); done
python3 -m ckgen.cli generate --arch sm_90a "${args[@]}" -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$WORK/gen" -B "$WORK/gen/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/build.log" 2>&1 || exit 1
t0=$SECONDS; ninja -C "$WORK/gen/build" -j "$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $((SECONDS - t0)) s"
for v in $VARIANTS; do
  bin=$WORK/gen/build/bin/ckgen_profiler_$v
  "$bin" --shapes "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" --shape "$SHAPE" --datatype fp16 \
    --verify gpu --warmup 3 --repeat 5 2>&1 | tee "$OUT/prof_$v.txt" | tail -8
  timeout 200 ncu --clock-control none -k regex:grouped_conv_kernel -c 8 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section InstructionStats \
    "$bin" --shapes "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" --shape "$SHAPE" \
    --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/ncu_$v.txt" 2>&1
  echo "ncu $v rc=$?"
done
