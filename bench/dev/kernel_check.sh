#!/usr/bin/env bash
# Builds (if needed) and runs the kernel-library checker: bench/dev/kernel_check.cu.
#   bash bench/dev/kernel_check.sh [forward|backward_data|backward_weight|perf|wavelet|wavelet_perf]
# CKGEN_ARCH (default 90a) picks the target; CKGEN_REBUILD=1 forces a rebuild.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/build"
arch="${CKGEN_ARCH:-90a}"
bin="$out/kernel_check_sm$arch"
mkdir -p "$out"
if [[ ! -x "$bin" || "${CKGEN_REBUILD:-0}" == 1 ]]; then
  flags=(-x cu -std=c++17 -O3 -gencode "arch=compute_$arch,code=sm_$arch" -I"$root/templates/include")
  pids=()
  for part in 0 1 2 3 4 5; do
    nvcc "${flags[@]}" -DCK_PART=$part -c "$here/kernel_check.cu" -o "$out/kernel_check_$part.o" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  nvcc -gencode "arch=compute_$arch,code=sm_$arch" "$out"/kernel_check_{0,1,2,3,4,5}.o -o "$bin"
fi
"$bin" "$@"
