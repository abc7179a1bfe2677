#!/usr/bin/env bash
# Groups of 16 and 32 channels on the backward_weight matrix path, on the GPU machine in one call:
# the GoogleTests (and the seeded sweep) of the tests set's direct backward_weight instances; then
# the fp16 / bf16 2D default set with bench/wide_groups.yaml's candidates over the layers of
# `bench/wide_groups.py shapes` (ResNeXt's 16- and 32-channel groups and random layers of that
# family), verified on the GPU, timed, and cuDNN's times of the same layers (bench/peer_corpus.py,
# while the build runs). $OUT: summary.txt, test.log, verify.csv, prof.csv, cudnn.csv, rows.csv.
#
#   bash bench/device_wide_groups.sh
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
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, build_tests_and_pairs, run_gtests
start_run
(cd bench && python3 wide_groups.py shapes --out "$WORK/shapes.csv") | tee -a "$OUT/summary.txt"
timeout 150 python3 bench/peer_corpus.py "$WORK/shapes.csv" --out "$OUT/cudnn.csv" \
  --datatype "$DTYPES" --variants backward_weight > "$WORK/peer.log" 2>&1 &
peer=$!
build_tests_and_pairs backward_weight --kernels '*_direct_*' -- --config configs/backward_weight/default.yaml \
  --config bench/wide_groups.yaml --datatype ${DTYPES//,/ --datatype } --ndim 2
wait $peer
log "cuDNN rc $? ($(($(wc -l < "$OUT/cudnn.csv") - 1)) rows)"
run_gtests backward_weight 1616 150
P=$WORK/pf/build/bin/ckgen_profiler_backward_weight
t0=$SECONDS
timeout 60 "$P" --shapes "$WORK/shapes.csv" --datatype "$DTYPES" --kernels '*_direct_*' --verify gpu \
  --warmup 1 --repeat 1 --csv "$OUT/verify.csv" > /dev/null 2>&1
log "verify (60 s at most) in $((SECONDS - t0)) s: $(tail -n +2 "$OUT/verify.csv" | cut -d, -f8 | sort | uniq -c | tr '\n' ' ')"
t0=$SECONDS
run_limited $(($(left) - 20)) "$P" --shapes "$WORK/shapes.csv" --datatype "$DTYPES" --verify none \
  --warmup 2 --repeat 5 --csv "$OUT/prof.csv" > /dev/null 2>&1
log "profile rc $? in $((SECONDS - t0)) s"
(cd bench && python3 wide_groups.py report "$OUT/prof.csv" "$OUT/cudnn.csv" --out "$OUT/rows.csv") | tee -a "$OUT/summary.txt"
rm -f "$OUT"/cmake_*.log "$OUT"/build_*.log
ls -la "$OUT"
