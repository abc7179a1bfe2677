#!/usr/bin/env bash
# GPU machine (~6 min): where a split wavelet_tma backward_weight launch spends its time on the
# rows short of a target (1x1 at 20,000 pixels, the K = 36 100x100 head, ResNeXt-style g4), and
# what cuDNN runs for them.
#  1. cuDNN's kernels per call (bench/dev/cudnn_kernels.py, torch.profiler) -> $OUT/cudnn_kernels.txt
#  2. the same four default instances built three ways (bench/dev/probe_bw_split.patch, applied to
#     this copy of the tree and reverted at the end): as they are, without the split's fp32
#     reductions (NO_RED) and without the conversion launch (NO_FINISH), at k_batch auto and
#     4 / 8 / 16 / 32, not verified (the probes are wrong on purpose) -> $OUT/flags/
#  3. Nsight Compute counters (DRAM and L2 bytes, tensor pipe) of our best instance and of cuDNN's
#     kernels on fpn_lat_1x1_512_256 -> $OUT/ncu_*.txt
#   bash bench/dev/bw_split_probe.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/bwprobe-out}
W=/tmp/bwprobe; mkdir -p "$OUT" $W
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
S=$ROOT/templates/project/shapes
{ head -1 $S/coverage.csv
  grep -hE "^(fpn_lat_1x1_512_256|r50_l2_1x1_128_512|head_box_3x3_256_36_100|grouped_3x3_g4_c64_100)," \
    $S/retinanet_r50fpn_n2.csv $S/coverage.csv; } > $W/shapes.csv
{ head -1 $S/coverage.csv; grep -hE "^(dw_3x3_g256_56|grouped_3x3_g4_c64_100)," $S/coverage.csv; } > $W/fwd.csv
# 1. cuDNN's kernels
{ python3 "$ROOT/bench/dev/cudnn_kernels.py" $W/shapes.csv \
    fpn_lat_1x1_512_256,r50_l2_1x1_128_512,head_box_3x3_256_36_100,grouped_3x3_g4_c64_100 backward_weight
  python3 "$ROOT/bench/dev/cudnn_kernels.py" $W/fwd.csv dw_3x3_g256_56,grouped_3x3_g4_c64_100 forward
} > "$OUT/cudnn_kernels.txt" 2>&1
echo "cudnn kernels rc=$?"
# 2. the probe builds
(cd "$ROOT" && patch -p1 -s --no-backup-if-mismatch < bench/dev/probe_bw_split.patch) || exit 1
trap '(cd "$ROOT" && patch -p1 -R -s --no-backup-if-mismatch < bench/dev/probe_bw_split.patch)' EXIT
K="*bwd_weight_fp16_2d_t128x64x64_w8x1x1_*wltma6_lm1x8_cshuffle_v8x8x8"
K="$K,*bwd_weight_fp16_2d_t128x128x64_w4x1x1_*wltma4_lm1x8_cshuffle_v8x8x8"
K="$K,*bwd_weight_fp16_2d_t256x128x64_w8x1x1_*wltma4_lm1x8_cshuffle_v8x8x8"
K="$K,*bwd_weight_fp16_2d_t64x256x64_w4x1x1_*wltma4_lm1x4_cshuffle_v8x8x8"
OUT=$OUT/flags WORK=$W/flags FLAG_SETS="base: nored:-DCKGEN_PROBE_NO_RED nofin:-DCKGEN_PROBE_NO_FINISH" \
  VARIANTS=backward_weight KERNELS=$K SHAPES=$W/shapes.csv VERIFY=none PER_INSTANCE=1 PROF_TIMEOUT=120 \
  PROF_ARGS="--k-batch 0,4,8,16,32 --split-reduce workspace" bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/flags_run.txt" 2>&1
tail -5 "$OUT/flags_run.txt"
# 3. Nsight Compute counters
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_op_red.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__cluster_dim_x,launch__block_size
bin=$W/flags/build_base/bin/ckgen_profiler_backward_weight
for k in "*t128x64x64_w8x1x1_*wltma6*" "*t128x128x64_w4x1x1_*wltma4*"; do
  timeout 120 ncu --clock-control none --metrics $M "$bin" --shapes $W/shapes.csv --shape fpn_lat_1x1_512_256 \
    --kernels "$k" --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop \
    >> "$OUT/ncu_ours.txt" 2>&1
  echo "ncu ours $k rc=$?"
done
{ head -1 $S/coverage.csv; grep -h "^fpn_lat_1x1_512_256," $S/retinanet_r50fpn_n2.csv; } > $W/one.csv
NCU_ONE=1 timeout 150 ncu --clock-control none --profile-from-start off --metrics $M \
  python3 "$ROOT/bench/dev/cudnn_kernels.py" $W/one.csv fpn_lat_1x1_512_256 backward_weight > "$OUT/ncu_cudnn.txt" 2>&1
echo "ncu cudnn rc=$?"
tar czf "$OUT/flags.tgz" -C "$OUT" flags && rm -rf "$OUT/flags"
cat "$OUT/cudnn_kernels.txt"
