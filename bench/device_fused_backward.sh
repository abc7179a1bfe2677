#!/usr/bin/env bash
# The backward fusions on the GPU machine, in one call: the GoogleTests (and the seeded sweep) of
# the tests set's instances of TEST_KERNELS (space-separated globs), then
# configs/<VARIANT>/fused.yaml's fp16 2D twins (TILES, named ..._<tile><TAIL><SUFFIX>) against
# their plain default tiles over the corpus layers
# (bench/fused_pairs.py shapes: batch 32, 2D, no depthwise), side by side in one profiler run, and
# the per-layer report (bench/fused_pairs.py report). $OUT: summary.txt, test.log, prof.csv,
# pairs.csv, build logs.
#
#   bash bench/device_fused_backward.sh                # backward_weight's bias_grad twins
#   VERIFY=gpu bash bench/device_fused_backward.sh   # also check every timed run (slower)
#   VARIANT=backward_data SUFFIX=_drelu TAIL=_v8x8x8 TEST_KERNELS='*_d*relu*' \
#     TILES="t64x64x32_w2x2x1_wt16x8x16_ms3 ..." bash bench/device_fused_backward.sh
# EXTRA: more --kernels globs of plain instances to time beside them (the best unfused kernel);
# SHAPE_ARGS: options of `fused_pairs.py shapes` (e.g. --models resnet50). MASK_TIME=1 (gradient
# masks): also time PyTorch's mask of dy per layer and compare with the unfused path, summed and
# as a step runs them (bench/mask_chain.py: chain.csv). FUSION (e.g.
# drelu): a second profiler pass over that fusion's instances and faces, appended to prof.csv;
# with PICKS=1 also select()'s picks of the built library for the plain and the fused request
# (cost model, and the shipped tuning database), scored in the report.
#
# Needs nvcc, cmake, ninja, python3 with click/jinja2/pyyaml; GoogleTest from Debian's
# libgtest-dev .deb carried in .gtest/.
set -uo pipefail
# shellcheck disable=SC2086  # EXTRA, SHAPE_ARGS: word lists
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-fused-bwd-out}
WORK=${WORK:-/tmp/ckgen-fused-bwd-work}
JOBS=${JOBS:-$(nproc)}
VERIFY=${VERIFY:-none}
VARIANT=${VARIANT:-backward_weight}
SUFFIX=${SUFFIX:-_bgrad}
TAIL=${TAIL:-_cshuffle_v8x8x8}
ABBR=$(case $VARIANT in forward) echo fwd ;; backward_data) echo bwd_data ;; *) echo bwd_weight ;; esac)
TILES=${TILES:-"t64x64x64_w4x1x1_wt64x64x16_wltma4_lm1x4 t64x64x64_w4x1x1_wt64x64x16_wltma8_lm1x4
  t64x128x64_w4x1x1_wt64x128x16_wltma8_lm1x4 t128x128x64_w8x1x1_wt64x128x16_wltma4_lm1x8
  t128x192x64_w8x1x1_wt64x192x16_wltma4_lm1x8 t128x256x64_w8x1x1_wt64x256x16_wltma4_lm1x8"}
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, kernel_args, build_tests_and_pairs, run_gtests
start_run

GLOBS=()
for t in $TILES; do
  GLOBS+=(--kernels "grouped_conv_${ABBR}_fp16_2d_${t}${TAIL}"
    --kernels "grouped_conv_${ABBR}_fp16_2d_${t}${TAIL}${SUFFIX}")
done
kernel_args TESTS "${TEST_KERNELS:-*bgrad*}"
build_tests_and_pairs "$VARIANT" "${TESTS[@]}" -- \
  --config "configs/$VARIANT/default.yaml" --config "configs/$VARIANT/fused.yaml" "${GLOBS[@]}" \
  ${EXTRA:-}
run_gtests "$VARIANT" "${CKGEN_SWEEP_SEED:-$RANDOM}" "${TEST_TIMEOUT:-200}"

python3 bench/fused_pairs.py shapes ${SHAPE_ARGS:-} --out "$WORK/shapes.csv" | tee -a "$OUT/summary.txt"
t0=$SECONDS
timeout "${BENCH_TIMEOUT:-240}" "$WORK/pf/build/bin/ckgen_profiler_$VARIANT" \
  --shapes "$WORK/shapes.csv" --datatype fp16 --verify "$VERIFY" --warmup 3 --repeat 10 \
  --csv "$OUT/prof.csv" > "$OUT/prof.log" 2>&1
log "profile rc $? in $((SECONDS - t0)) s"
gzip -f "$OUT/prof.log"
if [ -n "${FUSION:-}" ]; then  # also the registry's faces of that fusion (kernel/mask_copy.hpp)
  t0=$SECONDS
  timeout "${BENCH_TIMEOUT:-240}" "$WORK/pf/build/bin/ckgen_profiler_$VARIANT" \
    --shapes "$WORK/shapes.csv" --datatype fp16 --fusion "$FUSION" --verify "$VERIFY" --warmup 3 --repeat 10 \
    --csv "$WORK/prof_fusion.csv" > /dev/null 2>&1
  log "profile --fusion $FUSION rc $? in $((SECONDS - t0)) s"
  tail -n +2 "$WORK/prof_fusion.csv" >> "$OUT/prof.csv"
fi
UNFUSED=()
if [ "${MASK_TIME:-0}" = 1 ]; then  # the unfused path's mask (PyTorch) per layer
  python3 bench/fused_pairs.py mask-time "$WORK/shapes.csv" --out "$OUT/mask.csv" | tee -a "$OUT/summary.txt"
  UNFUSED=(--unfused "$OUT/mask.csv" --shapes "$WORK/shapes.csv")
fi
if [ -n "${FUSION:-}" ] && [ "${PICKS:-0}" = 1 ]; then  # select()'s picks of the built library
  python3 bench/fused_pairs.py picks "$WORK/pf/build" "$WORK/shapes.csv" --fusion "$FUSION" \
    --variant "$VARIANT" --out "$OUT/picks.csv" 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
  [ -s "$OUT/picks.csv" ] && UNFUSED+=(--picks "$OUT/picks.csv")
fi
python3 bench/fused_pairs.py report "$OUT/prof.csv" --suffix "$SUFFIX" --out "$OUT/pairs.csv" "${UNFUSED[@]}" |
  tee -a "$OUT/summary.txt"
if [ "${MASK_TIME:-0}" = 1 ] && [ -s "$OUT/pairs.csv" ]; then  # the same pairs as a step runs them
  python3 bench/mask_chain.py "$WORK/pf/build" "$WORK/shapes.csv" "$OUT/pairs.csv" --out "$OUT/chain.csv" \
    > "$WORK/chain.log" 2>&1
  log "mask_chain rc $?"
  tail -4 "$WORK/chain.log" | tee -a "$OUT/summary.txt"
fi
