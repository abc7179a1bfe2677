#!/usr/bin/env bash
# One device call for the forward 1x1 layers: the wavelet_tma sweep with the 1x1 candidates
# (bench/dev/candidates/small1x1_forward.yaml) over bench/dev/shapes_1x1.csv, then Nsight Compute
# on r50_l3_1x1_512_256 for two of our instances and for cuDNN's kernel (PyTorch, channels-last,
# cudnn.benchmark) so the two sides' memory / occupancy / stall sections can be read side by side.
#   OUT=... bash bench/dev/fwd1x1_probe.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/fwd1x1-out}
WORK=${WORK:-/tmp/sweep-work}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
OUT=$OUT/sweep WORK=$WORK VARIANTS=forward CAND_PREFIX=small1x1_ SHAPES=$ROOT/bench/dev/shapes_1x1.csv \
  GEN_EXTRA="--pipeline wavelet_tma" PROF_RUNS="--k-batch 1;--k-batch 0" timeout 330 bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_stdout.txt" 2>&1
head -3 "$OUT/sweep_stdout.txt"
bin=$WORK/gen/build/bin/ckgen_profiler_forward
sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
for kern in "*_t128x128x64_*_wltma4_*cshuffle_v8x8x8" "*_t64x128x64_*_wltma4_*cshuffle_v8x8x8"; do
  tag=$(echo "$kern" | tr -dc 'a-z0-9x')
  # shellcheck disable=SC2086
  timeout 100 ncu --clock-control none -k regex:tma_conv_kernel -c 1 $sections \
    "$bin" --shapes "$ROOT/bench/dev/shapes_1x1.csv" --shape r50_l3_1x1_512_256 --kernels "$kern" \
    --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop --k-batch 1 > "$OUT/ncu_ours_$tag.txt" 2>&1
  echo "ncu ours $kern rc=$?"
done
cat > "$OUT/cudnn_1x1.py" <<'PY'
import torch
torch.backends.cudnn.benchmark = True
x = torch.randn(2, 512, 100, 100, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
w = torch.randn(256, 512, 1, 1, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
for _ in range(20):
    y = torch.nn.functional.conv2d(x, w)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
y = torch.nn.functional.conv2d(x, w)
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
PY
# shellcheck disable=SC2086
timeout 150 ncu --clock-control none --nvtx --nvtx-include "probe/" $sections python3 "$OUT/cudnn_1x1.py" > "$OUT/ncu_cudnn.txt" 2>&1
echo "ncu cudnn rc=$?"
grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|L2 Cache Throughput|Registers Per|Grid Size|Block Size|Cluster|Achieved Occupancy|Dynamic Shared" "$OUT"/ncu_*.txt | head -80
cd "$OUT" && tar czf sweep.tgz sweep && rm -rf sweep
