#!/usr/bin/env bash
# One call on the GPU machine: generate + build the test and default projects for sm_90a, run
# the GoogleTests (incl. the random sweep), the profiler over the RetinaNet and coverage sets,
# and cuDNN's reference timing on the same shapes. Logs and CSVs go to $OUT.
#
#   bash bench/device.sh                 # build test bench peer, every variant (> 10 min now)
#   PHASES="build test" bash bench/device.sh
#   bash bench/device.sh streamk         # phases as arguments, same as PHASES="streamk"
#
# The default set no longer fits one 10-minute call: benchmark one variant per call (H200,
# 7f8a696: forward 366 s, backward_data 283 s, backward_weight 231 s with BUILD_SETS=default),
#   GEN_ARGS="--variant forward" BUILD_SETS=default bash bench/device.sh build bench peer
# and merge the three output folders (bench/merge_runs.py: the benchmark CSV, ckgen report's
# inputs, the targets' summary). On a machine of three or more GPUs bench/run_all.sh does all of it
# in one call (one GPU a variant) and merges there.
#
# Phase streamk (not in the default list: estimated 2-3 min more, not yet measured): StreamK vs split-K for
# backward_weight on seed 002's eight shapes (bench/shapes/streamk_seed002.csv), fp16, tiles
# 64x64x32 and 128x128x32 multistage: split-K (one- and two-stage) over k_batch 1,2,4,8,16,32
# and the StreamK instances (linear / tree, persistent or not) at the automatic grid, verified
# on the GPU. Builds its own small project ($WORK/gen_streamk, no tests); writes
# $OUT/streamk.csv (profiler rows) and $OUT/streamk_table.md (bench/streamk_table.py).
#
# Needs: nvcc, cmake, ninja, python3 with click/jinja2/pyyaml/rich (and torch for the peer);
# GoogleTest from Debian's libgtest-dev .deb carried in .gtest/ (no apt on that machine).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/ckgen-work}
PHASES=${PHASES:-"build test bench peer"}
if [ $# -gt 0 ]; then PHASES="$*"; fi
ARCH=${ARCH:-sm_90a}
TARGETS=${TARGETS:-90a}
JOBS=${JOBS:-$(nproc)}
DTYPES=${DTYPES:-"fp16 bf16"}
SHAPE_SETS=${SHAPE_SETS:-"retinanet_r50fpn_n2 coverage"}  # names under templates/project/shapes/, or CSV paths from the repo root
shapes_csv() { case $1 in *.csv) echo "$ROOT/$1" ;; *) echo "$ROOT/templates/project/shapes/$1.csv" ;; esac; }
BUILD_SETS=${BUILD_SETS:-"tests default"}  # the bench phase needs default, the test phase tests
# GEN_ARGS (optional): extra `ckgen generate` arguments for the build phase's projects
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
ckgen() { python3 -m ckgen.cli "$@"; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }

# the GPU this call runs on (bench/multi_gpu.sh gives each job one through CUDA_VISIBLE_DEVICES)
SMI_GPU=(); [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && SMI_GPU=(-i "${CUDA_VISIBLE_DEVICES%%,*}")
nvidia-smi "${SMI_GPU[@]}" --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
GPU=$(nvidia-smi "${SMI_GPU[@]}" --query-gpu=name --format=csv,noheader | head -1)

GT=$WORK/gtest
if [ ! -d "$GT/usr" ]; then
  mkdir -p "$GT" && for f in "$ROOT"/.gtest/*.deb; do dpkg -x "$f" "$GT"; done
fi

build() {  # build <set> <dir> [more ckgen generate args]; logs named after <dir> (gen_<name>)
  local set=$1 dir=$2 name=${2##*/gen_}
  shift 2
  ckgen generate --arch "$ARCH" --set "$set" "$@" -o "$dir" -q || return 1
  ckgen emit-cmake -o "$dir" --platform nvidia --gpu-targets "$TARGETS" > /dev/null || return 1
  rm -rf "$dir/build/bin"  # a warm machine's earlier call may have left other variants' binaries
  cmake -S "$dir" -B "$dir/build" -G Ninja -DGTest_ROOT="$GT/usr" -DCKGEN_BUILD_TESTS="${BUILD_TESTS:-ON}" \
    -DCMAKE_PREFIX_PATH="$GT/usr" > "$OUT/cmake_$name.log" 2>&1 || { tail -30 "$OUT/cmake_$name.log"; return 1; }
  ninja -C "$dir/build" -j "$JOBS" > "$OUT/build_$name.log" 2>&1 || { grep -m20 -B2 -A8 "error" "$OUT/build_$name.log"; return 1; }
}

if has build; then
  log "build projects: $BUILD_SETS"
  t0=$SECONDS
  pids=()
  # shellcheck disable=SC2086  # GEN_ARGS: extra `ckgen generate` arguments, e.g. "--variant backward_weight"
  for set in $BUILD_SETS; do build "$set" "$WORK/gen_$set" ${GEN_ARGS:-} & pids+=($!); done
  rcs=""
  for p in "${pids[@]}"; do wait "$p"; rcs="$rcs $?"; done
  log "build done in $((SECONDS - t0)) s (rc:$rcs)"
fi

if has test; then
  for v in forward backward_data backward_weight; do
    bin=$WORK/gen_tests/build/bin/test_grouped_conv_$v
    [ -x "$bin" ] || { log "missing $bin"; continue; }
    t0=$SECONDS
    CKGEN_SWEEP_SEED=${CKGEN_SWEEP_SEED:-$RANDOM} timeout ${TEST_TIMEOUT:-240} "$bin" --gtest_brief=1 \
      --gtest_output=json:"$OUT/gtest_$v.json" > "$OUT/test_$v.log" 2>&1
    rc=$?
    log "test $v rc=$rc in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/test_$v.log" | tr '\n' ' ')"
    grep -E "^\[  FAILED|seed" "$OUT/test_$v.log" | head -20 | tee -a "$OUT/summary.txt"
  done
fi

if has bench; then
  for v in forward backward_data backward_weight; do
    bin=$WORK/gen_default/build/bin/ckgen_profiler_$v
    [ -x "$bin" ] || { log "missing $bin"; continue; }
    for sset in $SHAPE_SETS; do
      set=$(basename "$sset" .csv)
      for dt in $DTYPES; do
        t0=$SECONDS
        timeout ${BENCH_TIMEOUT:-200} "$bin" --shapes "$(shapes_csv "$sset")" \
          --datatype "$dt" --verify ${VERIFY:-gpu} --warmup 3 --repeat 10 \
          --csv "$OUT/prof_${set}_${v}_${dt}.csv" > "$OUT/prof_${set}_${v}_${dt}.log" 2>&1
        log "profile $set $v $dt rc=$? in $((SECONDS - t0)) s"
      done
    done
  done
fi

if has streamk; then
  log "streamk: build the 64x64x32 / 128x128x32 ms3 fp16 2D backward_weight instances"
  t0=$SECONDS
  SK_DIR=$WORK/gen_streamk
  SK_TILES="t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8 t128x128x32_w2x2x1_wt16x8x16_ms3_v8x8x8"
  SK_GLOBS=()
  for t in $SK_TILES; do SK_GLOBS+=(--kernels "grouped_conv_bwd_weight_fp16_2d_${t}*"); done
  BUILD_TESTS=OFF build default "$SK_DIR" --variant backward_weight "${SK_GLOBS[@]}"
  rc=$?
  SK_BIN=$SK_DIR/build/bin/ckgen_profiler_backward_weight
  log "streamk: build rc=$rc in $((SECONDS - t0)) s, $("$SK_BIN" --list 2>/dev/null | grep -c _bwd_weight_) instances"
  t0=$SECONDS
  timeout ${STREAMK_TIMEOUT:-400} "$SK_BIN" --shapes "$ROOT/bench/shapes/streamk_seed002.csv" \
    --datatype fp16 --k-batch 1,2,4,8,16,32 --verify ${VERIFY:-gpu} --warmup 3 --repeat 10 \
    --csv "$OUT/streamk.csv" > "$OUT/streamk.log" 2>&1
  rc=$?
  log "streamk: profile rc=$rc in $((SECONDS - t0)) s, $(grep -c _bwd_weight_ "$OUT/streamk.csv" 2>/dev/null) rows"
  grep -m10 -iE "fail|error" "$OUT/streamk.log" | tee -a "$OUT/summary.txt"
  [ -s "$OUT/streamk.csv" ] && python3 "$ROOT/bench/streamk_table.py" "$OUT/streamk.csv" \
    --out "$OUT/streamk_table.md" | tee -a "$OUT/summary.txt"
fi

# Phase splitsweep (not in the default list): the split instances (k_batch auto) of forward and
# backward_data over SPLIT_SHAPES of the RetinaNet set at fixed k_batch 1..8 and the automatic
# choice (0), fp16, verified on the GPU: $OUT/split_<variant>.csv.
if has splitsweep; then
  for v in forward backward_data; do
    bin=$WORK/gen_default/build/bin/ckgen_profiler_$v
    [ -x "$bin" ] || { log "missing $bin"; continue; }
    t0=$SECONDS
    timeout ${SPLIT_TIMEOUT:-200} "$bin" --shapes "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" \
      --shape "${SPLIT_SHAPES:-head_*,r50_l3_*,r50_l4_*,fpn_*}" --kernels "*_fp16_*_wltma*_kb0" \
      --datatype fp16 --k-batch 0,1,2,3,4,6,8 --verify ${VERIFY:-gpu} --warmup 3 --repeat 10 \
      --csv "$OUT/split_$v.csv" > "$OUT/split_$v.log" 2>&1
    log "splitsweep $v rc=$? in $((SECONDS - t0)) s, $(grep -c _kb0 "$OUT/split_$v.csv" 2>/dev/null) rows"
    grep -m10 -iE "fail|error" "$OUT/split_$v.log" | tee -a "$OUT/summary.txt"
  done
fi

# Phase ncu (not in the default list): per-kernel GPU times (Nsight Compute, clocks left alone)
# of one profiler call per variant in NCU_VARIANTS: the default-set profiler on the NCU_SHAPES
# rows of the RetinaNet set, instances NCU_KERNELS, one timed run (no warm-up, no
# verification): $OUT/ncu_<variant>.csv, one row per kernel launch.
for v in ${NCU_VARIANTS:-forward}; do
  has ncu || break
  bin=$WORK/gen_default/build/bin/ckgen_profiler_$v
  if [ -x "$bin" ] && command -v ncu > /dev/null; then
    t0=$SECONDS
    timeout ${NCU_TIMEOUT:-120} ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      "$bin" --shapes "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" --shape "${NCU_SHAPES:-r50_conv1*}" \
      --kernels "${NCU_KERNELS:-*_fp16_*wltma*}" --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop \
      > "$OUT/ncu_$v.csv" 2> "$OUT/ncu_$v.log"
    log "ncu $v rc=$? in $((SECONDS - t0)) s, $(grep -c gpu__time_duration "$OUT/ncu_$v.csv") kernel rows"
  else
    log "ncu: no $bin or no ncu"
  fi
done

if has peer; then
  t0=$SECONDS
  timeout ${PEER_TIMEOUT:-240} python3 "$ROOT/bench/peer_cudnn.py" "$OUT/cudnn.csv" \
    $(for sset in $SHAPE_SETS; do shapes_csv "$sset"; done) > "$OUT/cudnn.log" 2>&1
  log "peer rc=$? in $((SECONDS - t0)) s"
fi

if has bench && [ -f "$OUT/cudnn.csv" ]; then
  python3 "$ROOT/bench/compare.py" --gpu "$GPU" --cudnn "$OUT/cudnn.csv" --out "$OUT/compare.csv" \
    "$OUT"/prof_*.csv | tee -a "$OUT/summary.txt"
fi
log "done"
# At most 8 files come back from the machine: keep the summary and the CSVs, pack the logs.
mkdir -p "$WORK/logs"
for f in "$OUT"/*.log "$OUT"/*.json "$OUT"/gpu.txt "$OUT"/prof_*.csv "$OUT"/ncu_*.csv; do [ -e "$f" ] && mv "$f" "$WORK/logs/"; done
tar czf "$OUT/logs.tar.gz" -C "$WORK/logs" . && ls -la "$OUT"
