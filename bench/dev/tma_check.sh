#!/usr/bin/env bash
# Builds and runs the TMA forward checker (bench/dev/tma_check.cu) on an sm_90a GPU; with $OUT
# set, also writes the log and the kernels' SASS there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${OUT:-$here/build}"
mkdir -p "$out"
nvcc -x cu -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I"$root/templates/include" \
  -Xptxas -v "$here/tma_check.cu" -o "$out/tma_check" 2> "$out/tma_check_ptxas.txt"
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$out/tma_check" > "$out/tma_check.sass" || true
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$out/gpu.txt" || true
"$out/tma_check" 2>&1 | tee "$out/tma_check.log"
rm -f "$out/tma_check"
