#!/usr/bin/env bash
# Nsight Compute on one forward wavelet_tma instance with and without pairs (GPU machine):
# launch / occupancy / throughput sections, r50_l3_1x1_512_256 by default.
#   KERNELS="*fp16_2d_t64x128x64_*wltma4_lm1x4_cshuffle_v8x8x8" OUT=... bash bench/dev/pair_ncu.sh
set -uo pipefail
# The pairs are not in the template library (measured even and dropped): this needs the tree
# with bench/dev/pair_multicast_tma.patch applied (its first lines say how); without it both
# builds would be the same kernel.
grep -q "kPair" "$(dirname "$0")/../../templates/include/ckgen/pipeline_tma.hpp" ||
  { echo "pair_ncu.sh: no pairs in this tree: apply bench/dev/pair_multicast_tma.patch first" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/pair-ncu}
WORK=${WORK:-/tmp/pair-ncu-work}
KERNELS=${KERNELS:-"*fp16_2d_t64x128x64_*wltma4_lm1x4_cshuffle_v8x8x8"}
SHAPE=${SHAPE:-r50_l3_1x1_512_256}
mkdir -p "$OUT"
OUT=$OUT/sweep WORK=$WORK VARIANTS=forward KERNELS=$KERNELS SHAPES=$ROOT/bench/dev/shapes_1x1.csv \
  PROF_ARGS="--shape $SHAPE" FLAG_SETS=${FLAG_SETS:-"nopair:-DCKGEN_TMA_NO_PAIR pair:"} bash "$ROOT/bench/dev/flag_sweep.sh" | tail -4
for set in ${NCU_SETS:-nopair pair}; do
  timeout 100 ncu --clock-control none -k regex:tma_conv_kernel -c 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    "$WORK/build_$set/bin/ckgen_profiler_forward" --shapes "$ROOT/bench/dev/shapes_1x1.csv" --shape "$SHAPE" \
    --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/ncu_$set.txt" 2>&1
  echo "ncu $set rc=$?"
done
grep -E "Duration|Grid Size|Cluster Size|Max Active Clusters|SM Active Cycles|Elapsed Cycles|Achieved Occupancy|Theoretical Occ|DRAM Throughput|L2 Cache Throughput|Registers Per|Warp Cycles Per Issued" "$OUT"/ncu_*.txt
