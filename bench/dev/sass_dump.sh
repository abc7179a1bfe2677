#!/usr/bin/env bash
# GPU machine (cuobjdump), one call (~1 min): the SASS of the kernels matching KERNELS (a glob of
# the default sets, fp16 2D) with ptxas's resource lines -> $OUT/sass_<kernel>.txt, one per kernel.
#   KERNELS='*fp16_2d_t32x64x8_w4x1x1_wt16x8x16_direct*' VARIANTS=forward bash bench/dev/sass_dump.sh
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
W=${WORK:-/tmp/sass}
args=()
for v in ${VARIANTS:-forward backward_data}; do args+=(--variant "$v"); done
small_generate "$W" "${args[@]}" --kernels "${KERNELS:?a kernel glob}" --datatype fp16 --ndim 2 || exit 1
for f in "$W"/instances/*/*.cpp; do
  k=$(basename "$f" .cpp)
  nvcc -x cu -I "$W/include" -I "$(dirname "$f")" -O3 --generate-code=arch=compute_90a,code=sm_90a -std=c++17 \
    -Xptxas=-v -cubin -o "$W/$k.cubin" "$f" > "$W/$k.log" 2>&1 || { cat "$W/$k.log"; continue; }
  { grep -E "registers|spill" "$W/$k.log"; cuobjdump -sass "$W/$k.cubin"; } > "$OUT/sass_$k.txt"
  echo "$k: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$OUT/sass_$k.txt") SASS lines"
done
