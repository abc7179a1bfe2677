#!/usr/bin/env bash
# Direct depthwise kernels (templates/include/ckgen/depthwise.hpp) on the GPU machine, one call:
#   1. generate ONE sm_90a project from the tests + default sets of all three variants, keeping
#      only the instances matching $GLOB (default '*direct*'), and build it (nvcc, ninja);
#   2. run the generated GoogleTests of those instances (tests.csv / coverage.csv problems they
#      support, the random sweep with fresh random inputs and poisoned outputs against the GPU /
#      CPU reference, the negative tests); the *_support suites are filtered out: they fail by
#      design for every non-depthwise problem when only direct instances are built;
#   3. profile every dw_ shape of retinanet_r50fpn_n2.csv and coverage.csv for forward,
#      backward_data and backward_weight (fp16, bf16), GPU-verified; backward_weight also over
#      several slice counts (--k-batch);
#   4. time cuDNN on the same shapes (bench/peer_cudnn.py, CUDA-graph replay) and merge
#      (bench/compare.py): speedup = cudnn_ms / ms per shape x variant x datatype.
# Output ($OUT): summary.txt (every step's rc and timing, test counts, the speedup table),
# compare.csv, cudnn.csv, prof_<variant>_<dtype>.csv, logs.tar.gz (build / test / profiler logs,
# ptxas -v register and spill lines in ptxas.txt).
#
#   bash bench/dev/depthwise_check.sh                    # run from the repository root
#   GLOB='*direct*v8x8x8*' bash bench/dev/depthwise_check.sh
#
# Needs: nvcc, cmake, ninja, python3 with click/jinja2/pyyaml/rich, torch for the peer; the
# GoogleTest .deb in .gtest/ (an ignored path: pass carry [".gtest"]). Budget: < 300 s on an
# H200 with 16 cores: ~150 translation units (all ndims of the direct tests + default
# instances, ~9 s each on one core, measured on the 2-core build machine) + 6 host binaries
# ~120 s; tests, profiler and peer ~120 s. Step timeouts (BUILD_TIMEOUT 150, TEST_TIMEOUT 45
# per variant, BENCH_TIMEOUT 30 per variant x datatype, PEER_TIMEOUT 60) bound a slow step.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/dw-out}
WORK=${WORK:-/tmp/dw-work}
GLOB=${GLOB:-'*direct*'}
JOBS=${JOBS:-$(nproc)}
DTYPES=${DTYPES:-"fp16 bf16"}
VARIANTS=${VARIANTS:-"forward backward_data backward_weight"}
KB=${KB:-0,32,64,128,256,512}  # backward_weight slice counts profiled
EXTRA_SHAPES=${EXTRA_SHAPES:-}  # more shape rows (a CSV with the same header), e.g. bench/shapes/depthwise_sweep.csv
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
ckgen() { python3 -m ckgen.cli "$@"; }
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }
T0=$SECONDS

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
GT=$WORK/gtest
if [ ! -d "$GT/usr" ]; then
  mkdir -p "$GT" && for f in "$ROOT"/.gtest/*.deb; do dpkg -x "$f" "$GT"; done
fi

# The dw_ rows of both shapes files (the profiler filters with --shape; the peer takes a file).
SHAPES=$WORK/dw_shapes.csv
head -1 "$ROOT/templates/project/shapes/coverage.csv" > "$SHAPES"
for s in retinanet_r50fpn_n2 coverage; do grep -h '^dw_' "$ROOT/templates/project/shapes/$s.csv"; done >> "$SHAPES"
[ -n "$EXTRA_SHAPES" ] && tail -n +2 "$EXTRA_SHAPES" >> "$SHAPES"
log "dw shapes: $(tail -n +2 "$SHAPES" | cut -d, -f1 | tr '\n' ' ')"

# 1. build
GEN=$WORK/gen
args=()
for v in $VARIANTS; do
  args+=(--variant "$v" --config "$ROOT/configs/$v/tests.yaml" --config "$ROOT/configs/$v/default.yaml")
done
ckgen generate --arch sm_90a "${args[@]}" --kernels "$GLOB" -o "$GEN" -q || { log "generate failed"; exit 1; }
log "instances: $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['instances']))" "$GEN/manifest.json")"
ckgen emit-cmake -o "$GEN" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$GEN" -B "$GEN/build" -G Ninja -DGTest_ROOT="$GT/usr" -DCMAKE_PREFIX_PATH="$GT/usr" \
  -DCKGEN_EXTRA_FLAGS=-Xptxas=-v > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
t0=$SECONDS
timeout ${BUILD_TIMEOUT:-150} ninja -C "$GEN/build" -j "$JOBS" > "$OUT/build.log" 2>&1
rc=$?
log "build rc=$rc in $((SECONDS - t0)) s"
[ $rc -eq 0 ] || grep -m20 -B2 -A8 "error" "$OUT/build.log" | tee -a "$OUT/summary.txt"
grep -E "Compiling entry|registers|spill" "$OUT/build.log" | grep -B1 -A1 "depthwise_conv_kernel" > "$OUT/ptxas.txt" || true
log "ptxas: $(grep -c 'Used' "$OUT/ptxas.txt") kernel reports, max registers $(grep -o 'Used [0-9]* registers' "$OUT/ptxas.txt" | awk '{print $2}' | sort -n | tail -1), non-zero spills: $(grep -E 'spill' "$OUT/ptxas.txt" | grep -vc ' 0 bytes spill stores, 0 bytes spill loads')"

# 2. tests
for v in $VARIANTS; do
  bin=$GEN/build/bin/test_grouped_conv_$v
  [ -x "$bin" ] || { log "missing $bin"; continue; }
  t0=$SECONDS
  CKGEN_SWEEP_COUNT=${CKGEN_SWEEP_COUNT:-600} CKGEN_SWEEP_SEED=${CKGEN_SWEEP_SEED:-$RANDOM} \
    timeout ${TEST_TIMEOUT:-45} "$bin" --gtest_brief=1 --gtest_filter='-*_support.*' \
    --gtest_output=json:"$OUT/gtest_$v.json" > "$OUT/test_$v.log" 2>&1
  rc=$?
  log "test $v rc=$rc in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)|tests ran' "$OUT/test_$v.log" | tr '\n' ' ')"
  log "  direct test cases run: $(grep -c 'direct' <(python3 -c "import json,sys; [print(t['name']) for s in json.load(open(sys.argv[1]))['testsuites'] for t in s['testsuite']]" "$OUT/gtest_$v.json" 2>/dev/null))"
  grep -E "^\[  FAILED|SWEEP_SEED|seed" "$OUT/test_$v.log" | head -20 | tee -a "$OUT/summary.txt"
done

# 3. profiler (event-timed CUDA-graph replay of back-to-back launches, GPU-verified)
for v in $VARIANTS; do
  bin=$GEN/build/bin/ckgen_profiler_$v
  [ -x "$bin" ] || { log "missing $bin"; continue; }
  kb=(); [ "$v" = backward_weight ] && kb=(--k-batch "$KB")
  for dt in $DTYPES; do
    t0=$SECONDS
    timeout ${BENCH_TIMEOUT:-30} "$bin" --shapes "$SHAPES" --datatype "$dt" --verify gpu --warmup 5 \
      --repeat 15 "${kb[@]}" --csv "$OUT/prof_${v}_${dt}.csv" > "$OUT/prof_${v}_${dt}.log" 2>&1
    log "profile $v $dt rc=$? in $((SECONDS - t0)) s; FAIL lines: $(grep -c FAIL "$OUT/prof_${v}_${dt}.log")"
    grep -iE "^best|best:" "$OUT/prof_${v}_${dt}.log" | head -4 | tee -a "$OUT/summary.txt"
  done
done

# 4. peer
t0=$SECONDS
timeout ${PEER_TIMEOUT:-60} python3 "$ROOT/bench/peer_cudnn.py" "$OUT/cudnn.csv" "$SHAPES" > "$OUT/cudnn.log" 2>&1
log "peer rc=$? in $((SECONDS - t0)) s"
if [ -f "$OUT/cudnn.csv" ]; then
  python3 "$ROOT/bench/compare.py" --gpu "$GPU" --cudnn "$OUT/cudnn.csv" --out "$OUT/compare.csv" \
    "$OUT"/prof_*.csv | tee -a "$OUT/summary.txt"
fi
log "done in $((SECONDS - T0)) s (target: speedup >= 1.5 on every row)"
mkdir -p "$WORK/logs"
for f in "$OUT"/*.log "$OUT"/*.json "$OUT"/gpu.txt "$OUT"/ptxas.txt; do [ -e "$f" ] && mv "$f" "$WORK/logs/"; done
tar czf "$OUT/logs.tar.gz" -C "$WORK/logs" . && ls -la "$OUT"
