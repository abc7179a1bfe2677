#!/usr/bin/env bash
# Kernel durations (Nsight Compute, clocks left alone) of wavelet_tma backward_weight instances
# with the cluster and the workspace reduction at several splits: builds the TMA sweep project
# (bench/dev/perf_sweep.sh's) and writes $OUT/ncu_<instance glob>_<mode>.csv.
#   NCU_SHAPE=fpn_lat_1x1_2048_256 NCU_KERNELS="*t128x128x64*" bash bench/dev/cluster_ncu.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ncu-out}
WORK=${WORK:-/tmp/sweep-work}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT
if [ ! -x "$WORK/gen/build/bin/ckgen_profiler_backward_weight" ]; then
  OUT=$OUT/build VARIANTS=backward_weight CAND_PREFIX=tma_ GEN_EXTRA="--pipeline wavelet_tma" \
    PROF_RUNS="--kernels none" bash "$ROOT/bench/dev/perf_sweep.sh" > /dev/null 2>&1
fi
bin=$WORK/gen/build/bin/ckgen_profiler_backward_weight
for spec in ${NCU_SPECS:-"fpn_lat_1x1_2048_256:*_t128x128x64_*" "r50_l3_1x1_256_1024:*_t64x128x64_*" "head_cls_3x3_256_2376_50:*_t128x256x64_*"}; do
  shape=${spec%%:*} kern=${spec#*:}
  for mode in cluster workspace; do
    timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__cluster_dim_x,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active --csv \
      "$bin" --shapes "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" --shape "$shape" \
      --kernels "$kern" --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop \
      --split-reduce $mode --k-batch 2,4,8 > "$OUT/ncu_${shape}_$mode.csv" 2> "$OUT/ncu_${shape}_$mode.log"
    echo "$shape $mode rc=$?"
  done
done
