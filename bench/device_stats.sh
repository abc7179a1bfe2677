#!/usr/bin/env bash
# Forward stats (the output's channel statistics, fusion `*_stats`) on the GPU machine, in one
# call: the GoogleTests (and the seeded sweep) of the tests set's stats instances; then
# bench/stats_pairs.yaml's stats twins beside their plain twins and the fp16 2D default set over
# the batch-32 layers of resnet50 and vgg16_bn (bench/fused_pairs.py shapes), verified on part of
# them and timed side by side (plain + stats, then bias_relu + bias_relu_stats), the per-layer
# pairs (bench/fused_pairs.py report), and PyTorch's separate statistics pass on the same outputs
# (bench/bn_stats.py). $OUT: summary.txt, test.log, prof.csv, pairs.csv, pairs_bias_relu.csv,
# bn.csv, verify.csv.
#
#   bash bench/device_stats.sh
#
# Needs nvcc, cmake, ninja, python3 with click/jinja2/pyyaml and torch; GoogleTest from Debian's
# libgtest-dev .deb carried in .gtest/.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-stats-out}
WORK=${WORK:-/tmp/ckgen-stats-work}
JOBS=${JOBS:-$(nproc)}
MODELS=${MODELS:-resnet50,vgg16_bn}
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, build_tests_and_pairs, run_gtests
start_run
build_tests_and_pairs forward --kernels '*stats*' -- --config configs/forward/default.yaml \
  --config bench/stats_pairs.yaml --datatype fp16 --ndim 2
run_gtests forward 4242 150
python3 bench/fused_pairs.py shapes --models "$MODELS" --ndim 2 --batch 32 --out "$WORK/shapes.csv" > /dev/null
P=$WORK/pf/build/bin/ckgen_profiler_forward
t0=$SECONDS
timeout 70 "$P" --shapes "$WORK/shapes.csv" --datatype fp16 --fusion stats,bias_relu_stats --verify gpu \
  --warmup 1 --repeat 1 --csv "$OUT/verify.csv" > /dev/null 2>&1
log "verify (70 s at most) in $((SECONDS - t0)) s: $(tail -n +2 "$OUT/verify.csv" | cut -d, -f8 | sort | uniq -c | tr '\n' ' ')"
t0=$SECONDS
timeout 150 "$P" --shapes "$WORK/shapes.csv" --datatype fp16 --fusion none,stats --verify none --warmup 3 \
  --repeat 10 --csv "$OUT/prof.csv" > /dev/null 2>&1
timeout 60 "$P" --shapes "$WORK/shapes.csv" --datatype fp16 --fusion bias_relu,bias_relu_stats --verify none \
  --warmup 3 --repeat 10 --csv "$OUT/prof_bias_relu.csv" > /dev/null 2>&1
log "profile in $((SECONDS - t0)) s"
python3 bench/fused_pairs.py report "$OUT/prof.csv" --suffix _stats --out "$OUT/pairs.csv" | tee -a "$OUT/summary.txt"
python3 bench/fused_pairs.py report "$OUT/prof_bias_relu.csv" --suffix _stats --out "$OUT/pairs_bias_relu.csv" |
  tee -a "$OUT/summary.txt"
timeout 60 python3 bench/bn_stats.py time "$WORK/shapes.csv" --out "$OUT/bn.csv" &&
  python3 bench/bn_stats.py report "$OUT/pairs.csv" "$OUT/bn.csv" | tee -a "$OUT/summary.txt"
rm -f "$OUT"/cmake_*.log "$OUT"/build_*.log "$OUT/prof_bias_relu.csv"
ls -la "$OUT"
