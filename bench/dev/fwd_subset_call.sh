#!/usr/bin/env bash
# A short benchmark call (GPU machine) for forward on the RetinaNet set: the default set's
# wavelet_tma instances plus the other instances that won a forward row in the last full run
# (K=36 heads), fp16 and bf16, GPU-verified, and cuDNN on the same shapes in the same run.
# Writes $OUT/compare.csv, $OUT/cudnn.csv, $OUT/prof_*.csv, $OUT/summary.txt (5 files).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/fwd-subset}
WORK=${WORK:-/tmp/fwd-subset-work}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
S=$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }
python3 -m ckgen.cli generate --arch sm_90a --variant forward --kernels "*_2d_*wltma*" \
  --kernels "*_2d_t32x32x64_w2x2x1_wt16x8x16_ms3_v8x8x4_kb0_2st" -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
t0=$SECONDS
cmake -S "$WORK/gen" -B "$WORK/gen/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$WORK/cmake.log" 2>&1 &&
  ninja -C "$WORK/gen/build" -j "$(nproc)" ckgen_profiler_forward > "$WORK/build.log" 2>&1 || { tail -20 "$WORK/build.log"; exit 1; }
log "build $((SECONDS - t0)) s, $("$WORK/gen/build/bin/ckgen_profiler_forward" --list | grep -c _fwd_) instances"
for dt in fp16 bf16; do
  t0=$SECONDS
  timeout 120 "$WORK/gen/build/bin/ckgen_profiler_forward" --shapes "$S" --datatype $dt --verify gpu --warmup 3 --repeat 10 \
    --csv "$OUT/prof_forward_$dt.csv" > "$WORK/prof_$dt.log" 2>&1
  log "profile forward $dt rc=$? in $((SECONDS - t0)) s, FAIL lines $(grep -c FAIL "$WORK/prof_$dt.log")"
done
t0=$SECONDS
timeout 120 python3 "$ROOT/bench/peer_cudnn.py" "$OUT/cudnn.csv" "$S" > "$WORK/cudnn.log" 2>&1
log "peer rc=$? in $((SECONDS - t0)) s"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 "$ROOT/bench/compare.py" --gpu "$GPU" --cudnn "$OUT/cudnn.csv" --out "$OUT/compare.csv" "$OUT"/prof_*.csv \
  | grep -E "geomean|below" | tee -a "$OUT/summary.txt"
