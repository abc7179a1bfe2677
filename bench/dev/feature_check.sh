#!/usr/bin/env bash
# Builds (if needed) and runs bench/dev/feature_check.cu (merged groups, split-K forward /
# backward_data, cshuffle epilogue: correctness, then fp16 timings vs the cuDNN baseline).
#   bash bench/dev/feature_check.sh [check|perf] [baseline.csv]
# CKGEN_ARCH (default 90a) picks the target; CKGEN_REBUILD=1 forces a rebuild.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/build"
arch="${CKGEN_ARCH:-90a}"
bin="$out/feature_check_sm$arch"
mkdir -p "$out"
if [[ ! -x "$bin" || "${CKGEN_REBUILD:-0}" == 1 ]]; then
  flags=(-x cu -std=c++17 -O3 -gencode "arch=compute_$arch,code=sm_$arch" -I"$root/templates/include" ${CKGEN_NVCC_EXTRA:-})
  pids=()
  for part in 0 1 2 3 4 9; do
    nvcc "${flags[@]}" -DCK_PART=$part -c "$here/feature_check.cu" -o "$out/feature_check_$part.o" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  nvcc -gencode "arch=compute_$arch,code=sm_$arch" "$out"/feature_check_{0,1,2,3,4,9}.o -o "$bin"
fi
"$bin" "${1:-}" "${2:-/work/shared/baselines/cudnn_H200_2026-11-22.csv}"
