#!/usr/bin/env bash
# Dispatcher and workflow on the GPU machine, in one call (< 10 minutes on one H100/H200):
#   build  ckgen generate (fp16 2D instances of the default set) + ckgen build (profilers and
#          lib/libckgen_dispatch.so; no GoogleTest there)
#   jit    ckgen.Registry.build of a 4-kernel set: first build vs cached rebuild (seconds)
#   tune   ckgen profile over every RetinaNet shape (every instance, backward_weight k_batch
#          sweep, all GPUs), then `ckgen tune --from-csv --part even` (the tuning DB is made from
#          the even rows of the shapes file only)
#   check  heuristic quality on the ODD (held-out) shapes: the selected kernel's measured time
#          over the best instance's, with the tuning DB (neighbour ranking over the nearest tuned
#          shapes) and with the cost model alone; also the cost model over all shapes
#   torch  tests/test_torch_op.py against PyTorch conv/autograd, on the built library
#
#   bash bench/device_dispatch.sh                      # everything
#   PHASES="build tune check" bash bench/device_dispatch.sh
#
# $OUT receives at most 8 files: summary.txt, results.csv, tuning_db.json, quality_db_odd.json,
# quality_cost_odd.json, torch_test.log, logs.tar.gz (every log, report.md).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-dispatch-out}
WORK=${WORK:-/tmp/ckgen-dispatch-work}
PHASES=${PHASES:-"build jit tune check torch"}
ARCH=${ARCH:-sm_90a}
TARGETS=${TARGETS:-90a}
JOBS=${JOBS:-$(nproc)}
KERNELS=${KERNELS:-"*_fp16_2d_*"}
SHAPES=${SHAPES:-$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv}
KBATCH=${KBATCH:-0,1,2,4,8,16,32}
PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-300}
BUDGET=${BUDGET:-560}  # seconds for the whole script (the device call allows 600): phases shrink or skip
left() { echo $((BUDGET - SECONDS)); }
LOGS=$WORK/logs
mkdir -p "$OUT" "$WORK" "$LOGS"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 NO_COLOR=1 COLUMNS=200
ckgen() { python3 -m ckgen.cli "$@"; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }
finish() {
  cp -f "$WORK/gen/profile/"*.log "$LOGS/" 2>/dev/null
  tar -czf "$OUT/logs.tar.gz" -C "$WORK" logs 2>/dev/null
  log "done (phases: $PHASES)"
}
trap finish EXIT

: > "$OUT/summary.txt"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | tee -a "$OUT/summary.txt"
log "ckgen $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) arch=$ARCH kernels=$KERNELS jobs=$JOBS"
GEN=$WORK/gen

if has build; then
  t0=$SECONDS
  timeout 120 python3 -m ckgen.cli generate --arch "$ARCH" --kernels "$KERNELS" -o "$GEN" -q > "$LOGS/generate.log" 2>&1 \
    && timeout 60 python3 -m ckgen.cli emit-cmake -o "$GEN" --platform nvidia --gpu-targets "$TARGETS" >> "$LOGS/generate.log" 2>&1 \
    && timeout $(( $(left) > 400 ? 300 : $(left) - 100 )) python3 -m ckgen.cli build -o "$GEN" -j "$JOBS" --no-tests > "$LOGS/build.log" 2>&1
  rc=$?
  log "build rc=$rc in $((SECONDS - t0)) s: $(tail -1 "$LOGS/build.log")"
  [ $rc -eq 0 ] || { grep -m 20 -iE "error|FAILED" "$LOGS/build.log" | tee -a "$OUT/summary.txt"; exit 1; }
  ls -la "$GEN/build/lib/" >> "$OUT/summary.txt"
fi

if has jit && [ "$(left)" -lt 330 ]; then
  log "jit skipped: $(left) s left"
elif has jit; then
  t0=$SECONDS
  timeout 240 python3 - "$WORK/jit-cache" "$JOBS" > "$LOGS/jit.log" 2>&1 <<'EOF'
import sys, time, shutil
from ckgen import Registry
cache, jobs = sys.argv[1], int(sys.argv[2])
shutil.rmtree(cache, ignore_errors=True)
ks = ["grouped_conv_fwd_fp16_2d_t64x64x32_*", "grouped_conv_bwd_weight_fp16_2d_t64x64x32_*_v8x8x8"]
t = time.perf_counter(); r = Registry.build("default", kernels=ks, max_workers=jobs, cache_dir=cache); a = time.perf_counter() - t
t = time.perf_counter(); r2 = Registry.build("default", kernels=ks, max_workers=jobs, cache_dir=cache); b = time.perf_counter() - t
print(f"jit: {len(r)} kernels, first build {a:.1f} s (max_workers={jobs}), cached {b:.3f} s (cached={r2.cached})")
EOF
  log "jit rc=$? in $((SECONDS - t0)) s: $(tail -1 "$LOGS/jit.log")"
fi

if has tune; then
  t0=$SECONDS
  pt=$(( $(left) - 150 )); [ $pt -gt "$PROFILE_TIMEOUT" ] && pt=$PROFILE_TIMEOUT; [ $pt -lt 30 ] && pt=30
  log "profile budget $pt s"
  timeout $((pt + 30)) python3 -m ckgen.cli profile -o "$GEN" --shapes "$SHAPES" --datatype fp16 \
    --k-batch "$KBATCH" --warmup 2 --repeat 5 --timeout "$pt" --csv "$OUT/results.csv" > "$LOGS/profile.log" 2>&1
  log "profile rc=$? in $((SECONDS - t0)) s: $(($(wc -l < "$OUT/results.csv" 2>/dev/null || echo 1) - 1)) rows"
  grep -E "exit [1-9]" "$LOGS/profile.log" | head -5 | tee -a "$OUT/summary.txt"
  timeout 60 python3 -m ckgen.cli tune -o "$GEN" --shapes "$SHAPES" --from-csv "$OUT/results.csv" --part even \
    --db "$OUT/tuning_db.json" > "$LOGS/tune.log" 2>&1
  log "tune rc=$?: $(tail -1 "$LOGS/tune.log")"
fi

if has check; then
  for spec in "db odd" "cost odd" "cost all"; do
    set -- $spec
    args=(); [ "$1" = db ] && args=(--db "$OUT/tuning_db.json")
    j="$OUT/quality_$1_$2.json"; [ "$2" = all ] && j="$LOGS/quality_$1_$2.json"
    timeout 120 python3 -m ckgen.cli check-heuristic -o "$GEN" --results "$OUT/results.csv" --shapes "$SHAPES" \
      --part "$2" "${args[@]}" --json "$j" > "$LOGS/check_$1_$2.log" 2>&1
    rc=$?
    log "heuristic ($1, $2 shapes) rc=$rc: $(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['summary']; print(', '.join(f'{k}={v:.3f}' if isinstance(v,float) else f'{k}={v}' for k,v in s.items()))" "$j" 2>&1)"
  done
  timeout 60 python3 -m ckgen.cli report --results "$OUT/results.csv" -o "$LOGS/report" > "$LOGS/report.log" 2>&1
  log "report rc=$?"
fi

if has torch && [ "$(left)" -lt 40 ]; then
  log "torch tests skipped: $(left) s left"
elif has torch; then
  t0=$SECONDS
  if python3 -c "import pytest" 2> /dev/null; then
    runner=(python3 -m pytest -q -rs -p no:cacheprovider "$ROOT/tests/test_torch_op.py")
  else  # no pytest on the GPU machine: the test module runs its checks itself
    runner=(python3 "$ROOT/tests/test_torch_op.py")
  fi
  CKGEN_TORCH_LIB=$GEN/build timeout $(( $(left) - 5 )) "${runner[@]}" > "$OUT/torch_test.log" 2>&1
  log "torch custom-op tests rc=$? in $((SECONDS - t0)) s: $(tail -1 "$OUT/torch_test.log")"
fi
