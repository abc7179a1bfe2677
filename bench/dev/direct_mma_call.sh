#!/usr/bin/env bash
# GPU machine, one call (~4 min on an H200): the direct kernel's matrix path (warp tile 16x8x16)
# beside the FMA direct instances.
#   1. bench/device.sh build test bench peer on the direct instances of $VARIANTS only (tests
#      and default sets): their GTests (random sweep included; the *_support suites fail by
#      design when only direct instances are built and are filtered out), the coverage shapes
#      profiled, cuDNN timed in the same run;
#   2. backward_weight in $VARIANTS: the matrix-path instances over the coverage shapes at
#      k_batch $KB_SWEEP (fp16, verified): $OUT/kb_sweep.csv;
#   3. Nsight Compute of the ResNeXt c8 row on each of $NCU_TILES ($NCU_VARIANT's profiler):
#      $OUT/ncu_<tile>.txt (NCU=0 skips it).
#   bash bench/dev/direct_mma_call.sh                                   (carry .gtest)
#   VARIANTS=backward_weight NCU_VARIANT=backward_weight NCU_TILES=t32x64x8_w8x1x1 bash bench/dev/direct_mma_call.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
VARIANTS=${VARIANTS:-"forward backward_data"}
mkdir -p "$OUT"
. "$ROOT/bench/dev/ncu_direct.sh"
GEN_VARIANTS=$(for v in $VARIANTS; do printf -- '--variant %s ' "$v"; done)
GTEST_FILTER='-*_support.*' GEN_ARGS="$GEN_VARIANTS--kernels *direct*" \
  BUILD_SETS="tests default" SHAPE_SETS=coverage OUT=$OUT bash "$ROOT/bench/device.sh" build test bench peer
bin_dir=${WORK:-/tmp/ckgen-work}/gen_default/build/bin
if [[ " $VARIANTS " == *" backward_weight "* ]]; then
  timeout 200 "$bin_dir/ckgen_profiler_backward_weight" --shapes "$ROOT/templates/project/shapes/coverage.csv" \
    --kernels '*wt16x8x16_direct*' --datatype fp16 --k-batch "${KB_SWEEP:-0,16,32,64,128,256}" --verify gpu \
    --warmup 3 --repeat 10 --csv "$OUT/kb_sweep.csv" > "$OUT/kb_sweep.log" 2>&1
  echo "kb sweep rc=$?"
fi
NCU_VARIANT=${NCU_VARIANT:-forward}
for t in ${NCU_TILES:-t32x64x8_w2x1x1}; do
  [ "${NCU:-1}" = 1 ] || break
  ncu_direct "$bin_dir/ckgen_profiler_$NCU_VARIANT" 'resnext*c8*' "*fp16_2d_${t}_wt16x8x16_direct*" "$OUT/ncu_$t.txt"
done
grep -hE "Duration|Throughput|Achieved Occupancy|Registers|Stall|Warp Cycles|Theoretical Occ|Block Limit" "$OUT"/ncu_*.txt | head -40
