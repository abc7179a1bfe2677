#!/usr/bin/env bash
# Output datatype conversion (fusion `*_to_<datatype>`) on the GPU machine, in one call: the
# GoogleTests (and the seeded sweep) of the forward tests set's fused instances (the conversions
# and every other fused store path they share code with); then bench/convert_pairs.yaml's
# conversion twins beside their plain twins and the fp16 2D default set over the batch-32 layers
# of resnet50 and vgg16_bn (bench/fused_pairs.py shapes), verified on part of them and timed side
# by side, the per-layer pairs (bench/fused_pairs.py report) and PyTorch's separate cast of the
# same outputs (bench/bn_stats.py --op). $OUT: summary.txt, test.log, verify.csv, prof.csv,
# pairs_fp32.csv, pairs_bf16.csv, cast_fp32.csv, cast_bf16.csv.
#
#   bash bench/device_convert.sh
#
# Needs nvcc, cmake, ninja, python3 with click/jinja2/pyyaml and torch; GoogleTest from Debian's
# libgtest-dev .deb carried in .gtest/.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-convert-out}
WORK=${WORK:-/tmp/ckgen-convert-work}
JOBS=${JOBS:-$(nproc)}
MODELS=${MODELS:-resnet50,vgg16_bn}
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, build_tests_and_pairs, run_gtests
start_run
FUSED_GLOBS=(--kernels '*_bias*' --kernels '*_ss_*' --kernels '*_res' --kernels '*_res_*' --kernels '*_stats*'
  --kernels '*_o[bf][fp]*' --kernels '*_relu*' --kernels '*_silu*' --kernels '*_lrelu*' --kernels '*gelutanh*')
build_tests_and_pairs forward "${FUSED_GLOBS[@]}" -- --config configs/forward/default.yaml \
  --config bench/convert_pairs.yaml --datatype fp16 --ndim 2
run_gtests forward 5151 150
python3 bench/fused_pairs.py shapes --models "$MODELS" --ndim 2 --batch 32 --out "$WORK/shapes.csv" > /dev/null
P=$WORK/pf/build/bin/ckgen_profiler_forward
t0=$SECONDS
timeout 45 "$P" --shapes "$WORK/shapes.csv" --datatype fp16 --fusion to_fp32,to_bf16 --verify gpu \
  --warmup 1 --repeat 1 --csv "$OUT/verify.csv" > /dev/null 2>&1
log "verify (45 s at most) in $((SECONDS - t0)) s: $(tail -n +2 "$OUT/verify.csv" | cut -d, -f8 | sort | uniq -c | tr '\n' ' ')"
t0=$SECONDS
timeout 120 "$P" --shapes "$WORK/shapes.csv" --datatype fp16 --fusion none,to_fp32,to_bf16 --verify none \
  --warmup 2 --repeat 7 --csv "$OUT/prof.csv" > /dev/null 2>&1
log "profile in $((SECONDS - t0)) s"
for d in fp32 bf16; do
  other=$([ $d = fp32 ] && echo bf16 || echo fp32)
  python3 bench/fused_pairs.py report "$OUT/prof.csv" --suffix "_o$d" --ignore "_o$other" --out "$OUT/pairs_$d.csv" |
    tee -a "$OUT/summary.txt"
  timeout 40 python3 bench/bn_stats.py time "$WORK/shapes.csv" --op "$d" --out "$OUT/cast_$d.csv" &&
    python3 bench/bn_stats.py report "$OUT/pairs_$d.csv" "$OUT/cast_$d.csv" | tee -a "$OUT/summary.txt"
done
rm -f "$OUT"/cmake_*.log "$OUT"/build_*.log
ls -la "$OUT"
