#!/usr/bin/env bash
# compute-sanitizer over one direct backward_data problem for the fp32 / fp16 direct instances
# of the default set (GPU machine). Output: $OUT/sanitize.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/san-out}; WORK=${WORK:-/tmp/san-work}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT
GEN=$WORK/gen
python3 -m ckgen.cli generate --arch sm_90a --set default --variant backward_data --kernels '*_2d_*direct*' -o "$GEN" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$GEN" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$GEN" -B "$GEN/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
ninja -C "$GEN/build" ckgen_profiler_backward_data > "$OUT/build.log" 2>&1 || { grep -m5 -A5 error "$OUT/build.log"; exit 1; }
BIN=$GEN/build/bin/ckgen_profiler_backward_data
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PROB="--ndim 2 --G 512 --N 8 --C 1 --K 1 --input 28x28 --filter 3x3 --stride 2x2 --dilation 1x1 --pad-left 1x1 --pad-right 1x1"
for dt in fp32 fp16; do
  for k in $("$BIN" --list | grep -o "grouped_conv_bwd_data_${dt}_2d_[a-z0-9_]*direct[a-z0-9_]*"); do
    echo "== $k" >> "$OUT/sanitize.txt"
    "$BIN" $PROB --datatype $dt --kernels "$k" --verify cpu --warmup 0 --repeat 1 >> "$OUT/sanitize.txt" 2>&1
    echo "plain rc=$?" >> "$OUT/sanitize.txt"
    [ -n "$SAN" ] && timeout 60 "$SAN" --print-limit 5 "$BIN" $PROB --datatype $dt --kernels "$k" --verify none \
      --warmup 0 --repeat 1 2>&1 | grep -vE "^\s*$" | head -40 >> "$OUT/sanitize.txt"
  done
done
echo "sanitizer: ${SAN:-none}" >> "$OUT/sanitize.txt"
