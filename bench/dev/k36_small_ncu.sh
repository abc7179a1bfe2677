#!/usr/bin/env bash
# GPU machine (~2 min): what the K=36 7x7 box head's backward_weight launches cost, kernel by
# kernel (Nsight Compute's gpu__time_duration, warm L2, the first 40 launches: three warm-ups and
# a run), on the default set's best copy-engine tile (dy padded by its own kernel, then the GEMM)
# and on a single-launch multistage tile, beside the profiler's graph timing of both.
#   bash bench/dev/k36_small_ncu.sh   -> $OUT/k36_small_profile.txt, $OUT/k36_small_ncu.txt
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
W=${WORK:-/tmp/k36s}
mkdir -p "$W"
tiles="t64x64x64_w4x1x1_wt64x64x16_wltma4_lm1x4_cshuffle_v8x8x8 t64x64x32_w2x2x1_wt16x8x16_ms3_v4x8x8"
globs=()
for t in $tiles; do globs+=(--kernels "grouped_conv_bwd_weight_fp16_2d_$t"); done
small_generate "$W/gen" --variant backward_weight --datatype fp16 --ndim 2 "${globs[@]}" || exit 1
small_build "$W/gen" "$W/build" || exit 1
bin=$W/build/bin/ckgen_profiler_backward_weight
printf 'name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right\nhead_box_3x3_256_36_7,2,1,2,256,36,7x7,3x3,1x1,1x1,1x1,1x1\n' > "$W/k36.csv"
"$bin" --shapes "$W/k36.csv" --datatype fp16 --verify gpu --warmup 5 --repeat 11 > "$OUT/k36_small_profile.txt" 2>&1
for t in $tiles; do
  timeout 120 ncu --clock-control none --cache-control none --launch-count 40 \
    --metrics gpu__time_duration.sum "$bin" --shapes "$W/k36.csv" --kernels "*_$t" --datatype fp16 \
    --verify none --warmup 3 --repeat 1 --iters 1 --timing loop > "$W/ncu_$t.txt" 2>&1
  echo "== $t"; grep -E "^\s+[a-zA-Z_].*\(|gpu__time_duration" "$W/ncu_$t.txt" | sed -E 's/\(int,.*//' | cut -c1-150
done > "$OUT/k36_small_ncu.txt"
tail -5 "$OUT/k36_small_profile.txt"; cat "$OUT/k36_small_ncu.txt"
