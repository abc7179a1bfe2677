#!/usr/bin/env bash
# GPU machine, one call (~4 min on an H200): the direct kernel's matrix path (8 channels per
# group, warp tile 16x8x16) beside the FMA direct instances.
#   1. bench/device.sh build test bench peer on the direct instances only (forward and
#      backward_data; tests and default sets): their GTests (random sweep included; the
#      *_support suites fail by design when only direct instances are built and are filtered
#      out), the coverage shapes profiled, cuDNN timed in the same run;
#   2. Nsight Compute (speed of light, occupancy, warp states) of the forward ResNeXt c8 row on
#      each matrix-path tile: $OUT/ncu_<tile>.txt (NCU=0 skips it).
#   bash bench/dev/direct_mma_call.sh     (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
GTEST_FILTER='-*_support.*' GEN_ARGS="--variant forward --variant backward_data --kernels *direct*" \
  BUILD_SETS="tests default" SHAPE_SETS=coverage OUT=$OUT bash "$ROOT/bench/device.sh" build test bench peer
bin=${WORK:-/tmp/ckgen-work}/gen_default/build/bin/ckgen_profiler_forward
for t in ${NCU_TILES:-t32x64x8_w2x1x1}; do
  [ "${NCU:-1}" = 1 ] || break
  timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis "$bin" --shapes "$ROOT/templates/project/shapes/coverage.csv" \
    --shape 'resnext*c8*' --kernels "*fp16_2d_${t}_wt16x8x16_direct*" --datatype fp16 --verify none \
    --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/ncu_$t.txt" 2>&1
done
grep -hE "Duration|Throughput|Achieved Occupancy|Registers|Stall|Warp Cycles|Theoretical Occ|Block Limit" "$OUT"/ncu_*.txt | head -40
