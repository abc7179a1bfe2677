#!/usr/bin/env bash
# Groups of 16 and 32 channels on the direct matrix paths, on the GPU machine in one call: the
# GoogleTests (and the seeded sweep) of the tests set's direct instances of every variant; then the
# fp16 / bf16 2D default sets with the candidates of bench/wide_groups/<variant>.yaml over the
# layers of `bench/wide_groups.py shapes` (ResNeXt's 16- and 32-channel groups and random layers of
# that family), the candidates verified on the GPU, everything timed, and cuDNN's times of the same
# layers (bench/peer_corpus.py, while the build runs). $OUT: summary.txt, test_<variant>.log,
# verify_<variant>.csv, prof_<variant>.csv, cudnn.csv, rows_<variant>.csv.
#
#   bash bench/device_wide_groups.sh
#   VARIANTS=forward CHANNELS=8,16,32 bash bench/device_wide_groups.sh   # 8-channel corpus groups too
#   VARIANTS=backward_data CHANNELS=8,16,32 RANDOM_ARGS="--random-channels 8,16,32 --random-strides 2,3" \
#     CANDIDATE='_wt16x8x16_direct_' VERIFY='*_wt16x8x16_direct_*' bash bench/device_wide_groups.sh
#                                          # strided backward_data: every matrix-path instance a candidate
#
# Needs nvcc, cmake, ninja, python3 with click/jinja2/pyyaml and torch; GoogleTest from Debian's
# libgtest-dev .deb carried in .gtest/.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-wide-out}
WORK=${WORK:-/tmp/ckgen-wide-work}
JOBS=${JOBS:-$(nproc)}
BUDGET=${BUDGET:-560}
DTYPES=${DTYPES:-fp16,bf16}
VARIANTS=${VARIANTS:-forward backward_data backward_weight}
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, build_project, run_gtests
start_run
# shellcheck disable=SC2086  # RANDOM_ARGS: options of `wide_groups.py shapes`
(cd bench && python3 wide_groups.py shapes --channels "${CHANNELS:-16,32}" ${RANDOM_ARGS:-} \
  --out "$WORK/shapes.csv") |
  tee -a "$OUT/summary.txt"
timeout 150 python3 bench/peer_corpus.py "$WORK/shapes.csv" --out "$OUT/cudnn.csv" \
  --datatype "$DTYPES" --variants "$(echo $VARIANTS | tr ' ' ,)" > "$WORK/peer.log" 2>&1 &
peer=$!
vargs=() cargs=()
for v in $VARIANTS; do
  vargs+=(--variant "$v")
  cargs+=(--config "configs/$v/default.yaml" --config "bench/wide_groups/$v.yaml")
done
t0=$SECONDS
build_project "$WORK/gt" ON --set tests "${vargs[@]}" --kernels '*_direct_*' &
p1=$!
build_project "$WORK/pf" OFF "${cargs[@]}" --datatype ${DTYPES//,/ --datatype } --ndim 2 &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
log "build rc $r1 $r2 in $((SECONDS - t0)) s"
[ "$r1$r2" = 00 ] || { grep -h -m 10 -B2 -A6 error "$OUT"/build_*.log | tee -a "$OUT/summary.txt"; exit 1; }
wait $peer
log "cuDNN rc $? ($(($(wc -l < "$OUT/cudnn.csv") - 1)) rows)"
for v in $VARIANTS; do run_gtests "$v" 1616 100 "test_$v.log"; done
n=$(echo $VARIANTS | wc -w)
for v in $VARIANTS; do
  P=$WORK/pf/build/bin/ckgen_profiler_$v
  t0=$SECONDS
  timeout 30 "$P" --shapes "$WORK/shapes.csv" --datatype "$DTYPES" \
    --kernels "${VERIFY:-*x64x16_w*_direct_*,*x64x32_w*_direct_*,*_t16x64x*_direct_*}" \
    --verify gpu --warmup 1 --repeat 1 --csv "$OUT/verify_$v.csv" > /dev/null 2>&1
  log "$v verify (30 s at most) in $((SECONDS - t0)) s: $(tail -n +2 "$OUT/verify_$v.csv" | cut -d, -f8 | sort | uniq -c | tr '\n' ' ')"
  t0=$SECONDS
  run_limited $((($(left) - 30) / n)) "$P" --shapes "$WORK/shapes.csv" --datatype "$DTYPES" --verify none \
    --warmup 2 --repeat 5 --csv "$OUT/prof_$v.csv" > /dev/null 2>&1
  log "$v profile rc $? in $((SECONDS - t0)) s"
  n=$((n - 1))
  (cd bench && python3 wide_groups.py report "$OUT/prof_$v.csv" "$OUT/cudnn.csv" --variant "$v" \
    ${CANDIDATE:+--candidate "$CANDIDATE"} --out "$OUT/rows_$v.csv") | tee -a "$OUT/summary.txt"
done
rm -f "$OUT"/cmake_*.log "$OUT"/build_*.log
ls -la "$OUT"
