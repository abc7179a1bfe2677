#!/usr/bin/env bash
# Device call: builds and runs bench/dev/window_fwd.cu (the window forward probe), then times
# cuDNN on the g4 row in the same call. Writes $OUT/window.txt and $OUT/cudnn_g4.csv.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
OUT=${OUT:-/tmp/window_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/window.txt"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I"$root/templates/include" ${WIN_FLAGS:-} \
  "$here/window_fwd.cu" -o /tmp/window_fwd 2>&1 | tee -a "$OUT/window.txt"
timeout 120 /tmp/window_fwd 2>&1 | tee -a "$OUT/window.txt"
if [[ "${PEER:-1}" == 1 ]]; then
  grep -E "^name|grouped_3x3_g4" "$root/templates/project/shapes/coverage.csv" > /tmp/g4.csv
  timeout 120 python3 "$root/bench/peer_cudnn.py" "$OUT/cudnn_g4.csv" /tmp/g4.csv > "$OUT/cudnn.log" 2>&1
  cat "$OUT/cudnn_g4.csv" | tee -a "$OUT/window.txt"
fi
