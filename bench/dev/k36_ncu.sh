#!/usr/bin/env bash
# GPU machine, one call (~3 min): where the K = 36 box head's time goes (100x100, fp16 2D).
#   1. Nsight Compute durations of every launch (pad copy, clear, GEMM, finish) of the best
#      default instance per variant: $OUT/k36_ncu_<variant>.txt, summary in $OUT/k36_summary.txt;
#   2. backward_weight's split sweep on the row: workspace k_batch 0..32 and cluster 2..8
#      ($OUT/k36_splits.csv).
#   bash bench/dev/k36_ncu.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/k36-work}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
declare -A KERN=(
  [forward]="*fwd_fp16_2d_t64x64x64_w4x1x1_wt64x64x16_wltma4_lm1x4_v8x8x8"
  [backward_data]="*bwd_data_fp16_2d_t128x128x64_w8x1x1_wt64x128x16_wltma4_lm1x8_cshuffle_v8x8x8_kb0"
  [backward_weight]="*bwd_weight_fp16_2d_t64x256x64_w4x1x1_wt64x256x16_wltma4_lm1x4_cshuffle_v8x8x8"
)
args=()
for v in forward backward_data backward_weight; do args+=(--variant "$v" --kernels "${KERN[$v]}"); done
python3 -m ckgen.cli generate --arch sm_90a "${args[@]}" --datatype fp16 --ndim 2 -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$WORK/gen" -B "$WORK/gen/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/k36_build.log" 2>&1 || exit 1
ninja -C "$WORK/gen/build" -j "$(nproc)" >> "$OUT/k36_build.log" 2>&1 || { grep -m20 -A5 error "$OUT/k36_build.log"; exit 1; }
shapes=$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv
shape=head_box_3x3_256_36_100
for v in forward backward_data backward_weight; do
  bin=$WORK/gen/build/bin/ckgen_profiler_$v
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes.sum \
    "$bin" --shapes "$shapes" --shape $shape --kernels "${KERN[$v]}" --datatype fp16 --verify none \
    --warmup 1 --repeat 1 --iters 1 --timing loop > "$OUT/k36_ncu_$v.txt" 2>&1
  echo "== $v rc=$?" >> "$OUT/k36_summary.txt"
  grep -E "^  [a-zA-Z_].*\(|gpu__time_duration|launch__grid_size|sm__throughput|lts__t_bytes|dram__bytes" "$OUT/k36_ncu_$v.txt" \
    | tail -40 >> "$OUT/k36_summary.txt"
  "$bin" --shapes "$shapes" --shape $shape --kernels "${KERN[$v]}" --datatype fp16 --verify gpu \
    --warmup 3 --repeat 10 > "$OUT/k36_prof_$v.txt" 2>&1
done
bin=$WORK/gen/build/bin/ckgen_profiler_backward_weight
for run in "--k-batch 0,2,4,6,8,10,12,14,16,20,24,32" "--split-reduce cluster --k-batch 2,4,8"; do
  # shellcheck disable=SC2086
  "$bin" --shapes "$shapes" --shape $shape --datatype fp16 --verify gpu --warmup 3 --repeat 10 $run \
    --csv "$OUT/k36_splits_$(echo $run | tr -dc 'a-z0-9' | head -c 12).csv" >> "$OUT/k36_splits.log" 2>&1
done
python3 - "$OUT" <<'PY' | tee -a "$OUT/k36_summary.txt"
import csv, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/k36_splits_*.csv")):
    for r in csv.DictReader(open(f)):
        print(f"{f.rsplit('/', 1)[-1]:28s} kb={r['k_batch']:>3s} {float(r['ms'])*1e3:7.2f} us {r['verified']}")
PY
cat "$OUT/k36_summary.txt"
