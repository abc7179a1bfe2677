#!/usr/bin/env bash
# Fused inference, ckgen convert(fuse=True) against cuDNN + separate ops and torch.compile
# (bench/fused_inference.py), in one call on the GPU machine (ends within BUDGET seconds, 530 by
# default, of the device call's 600):
#   1. build   the 2D forward kernels of DTYPES: the default set plus configs/forward/fused.yaml,
#              one Registry.build (-j JOBS, 4 instances per translation unit), cached in
#              $WORK/jit (a later call on the same warm machine finds it built); at most
#              BUILD_TIMEOUT seconds;
#   2. bench   CKGEN_TORCH_LIB=<that library> bench/fused_inference.py over MODELS x BATCHES x
#              DTYPES x MODES with what is left of the budget, in three sections (the CUDA-graph
#              rows of every model, then torch.compile, then max-autotune), each with its share;
#              rows that do not fit are written with status=skipped, every row as it is measured,
#              and kept in $WORK/fused.csv, from which the next call resumes (it measures only
#              what is missing: repeat the call to cover more rows; FRESH=1 starts over);
#   3. report  the summary (speedups, the issue's targets) and the plot, from the CSV, also when
#              step 2 ran out of time.
#
# select() ranks plain and fused problems alike (a fused one as its plain twins) by a tuning
# database when one is given, else by the cost model:
#   TUNING_DB=FILE                          that database (CKGEN_TUNING_DB)
#   TUNE_FROM="PROFILE.csv[.gz] SHAPES.csv" one built from those profile results of the default
#                                           set on this GPU (ckgen.tuning.tune.build_db, no timing)
#
#   bash bench/device_fused.sh
#   MODES=compile,compile_max MODELS=resnet50,mobilenet_v2 bash bench/device_fused.sh
#
# TEST_KERNELS="GLOB ..." (space-separated): beside steps 1-2, build the forward tests set's
# instances matching those globs (TEST_JOBS jobs, 4 by default) and run their GoogleTests and the
# seeded sweep (CKGEN_SWEEP_SEED, else random): the kernels a change touched, checked in the call
# that measures them (needs GoogleTest: carry .gtest/ with Debian's libgtest-dev .deb).
#
# $OUT: summary.txt, <date>_<gpu>_fused_inference.csv (copy it to bench/results/), its .png,
# fused_layers.csv (each fused layer alone against the plain conv, with both picks),
# fused.log, build.log; with TEST_KERNELS test.log (and build_gt.log, cmake_gt.log when that build
# failed).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-fused-out}
WORK=${WORK:-/tmp/ckgen-fused-work}
BUDGET=${BUDGET:-530}
ARCH=${ARCH:-sm_90a}
JOBS=${JOBS:-$(nproc)}
MODELS=${MODELS:-all}
DTYPES=${DTYPES:-fp16,bf16}
MODES=${MODES:-all}
BATCHES=${BATCHES:-32,1}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-240}
BENCH_ARGS=${BENCH_ARGS:---repeats 3 --target-ms 200}  # more bench/fused_inference.py arguments
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, left, run_limited, kernel_args, build_project,
# run_gtests
start_run
[ "${FRESH:-0}" = 1 ] && rm -f "$WORK/fused.csv"
log "ckgen $(ckgen_id), torch $(python3 -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__)' 2>&1 | tail -1)"

if [ -n "${TUNE_FROM:-}" ]; then
  cat > "$WORK/tuning_db.py" << 'EOF'
import csv
import gzip
import sys

from ckgen.model.problem import load_shapes
from ckgen.tuning.tune import build_db, write_db

arch, out, prof, shapes = sys.argv[1:5]
with gzip.open(prof, "rt") if prof.endswith(".gz") else open(prof, newline="") as f:
    rows = list(csv.DictReader(f))
db = build_db(rows, load_shapes(shapes), arch)
write_db(out, db)
print(f"{len(db['entries'])} entries from {prof} ({db['gpu']})")
EOF
  # shellcheck disable=SC2086  # TUNE_FROM: two paths
  python3 "$WORK/tuning_db.py" "$ARCH" "$WORK/tuning_db.json" $TUNE_FROM > "$OUT/tuning_db.log" 2>&1
  log "tuning database: $(tail -1 "$OUT/tuning_db.log")"
  [ -s "$WORK/tuning_db.json" ] && TUNING_DB=$WORK/tuning_db.json
fi
if [ -n "${TUNING_DB:-}" ]; then
  export CKGEN_TUNING_DB=$TUNING_DB
  log "CKGEN_TUNING_DB=$TUNING_DB"
fi

# --- 0. tests (TEST_KERNELS, in the background) -------------------------------------------------
GT_PID=""
if [ -n "${TEST_KERNELS:-}" ]; then
  kernel_args TESTS "$TEST_KERNELS"
  (
    t0=$SECONDS
    if JOBS=${TEST_JOBS:-4} build_project "$WORK/gt" ON --set tests --variant forward "${TESTS[@]}" \
      > "$WORK/gt_build.txt" 2>&1; then
      log "tests build in $((SECONDS - t0)) s ($TEST_KERNELS)"
      # a device call brings back at most 8 files: a build that succeeded keeps no log there
      rm -f "$OUT/cmake_gt.log" "$OUT/build_gt.log"
      run_gtests forward "${CKGEN_SWEEP_SEED:-$RANDOM}" "${TEST_TIMEOUT:-200}"
    else
      log "tests build failed: $(grep -m 3 -i error "$WORK/gt_build.txt" "$OUT"/build_gt.log 2> /dev/null)"
    fi
  ) &
  GT_PID=$!
fi

# --- 1. build ----------------------------------------------------------------------------------
GLOBS=$(python3 bench/fused_inference.py --kernel-globs --dtypes "$DTYPES") || exit 1
log "build: default + fused.yaml forward, $GLOBS (arch $ARCH, -j $JOBS, at most $BUILD_TIMEOUT s)"
t0=$SECONDS
cat > "$WORK/build_fused.py" << 'EOF'
import sys
import time

from ckgen import Registry

arch, jobs, globs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
configs = ["configs/forward/default.yaml", "configs/forward/fused.yaml"]
t = time.perf_counter()
reg = Registry.build(configs, arch=arch, kernels=globs, variants=["forward"], max_workers=jobs,
                     shard_size=4)
fused = sum(k.epilogue.fused for k in reg.find())
print(f"{len(reg)} kernels ({fused} fused) in {time.perf_counter() - t:.0f} s (cached={reg.cached})")
print(f"LIB {reg.lib_path}")
EOF
# shellcheck disable=SC2086  # the globs are separate arguments
run_limited "$BUILD_TIMEOUT" python3 "$WORK/build_fused.py" "$ARCH" "$JOBS" $GLOBS > "$OUT/build.log" 2>&1
rc=$?
LIB=$(sed -n 's/^LIB //p' "$OUT/build.log")
log "build rc=$rc in $((SECONDS - t0)) s: $(grep -m1 ' kernels ' "$OUT/build.log")"
if [ -n "$LIB" ]; then
  export CKGEN_TORCH_LIB=$LIB
else
  grep -m 10 -iE "error|FAILED" "$OUT/build.log" | tee -a "$OUT/summary.txt"
  log "no ckgen library: the ckgen rows say so; the others are measured"
fi

# --- 2. bench ----------------------------------------------------------------------------------
budget=$(($(left) - 40))  # room for the report and for a row that runs past its estimate
CSV=""
if [ "$budget" -gt 30 ]; then
  log "bench: $MODELS / batches $BATCHES / $DTYPES / $MODES (budget $budget s)"
  t0=$SECONDS
  # shellcheck disable=SC2086  # BENCH_ARGS: separate arguments
  run_limited $(($(left) - 20)) python3 bench/fused_inference.py --models "$MODELS" \
    --dtypes "$DTYPES" --modes "$MODES" --batches "$BATCHES" --budget-s "$budget" \
    --out-dir "$OUT" --resume "$WORK/fused.csv" --layers-csv "$OUT/fused_layers.csv" \
    $BENCH_ARGS > "$OUT/fused.log" 2>&1
  rc=$?
  log "bench rc=$rc in $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || tail -n 8 "$OUT/fused.log" | tee -a "$OUT/summary.txt"
else
  log "bench skipped: $(left) s left"
fi

[ -n "$GT_PID" ] && wait "$GT_PID"

# --- 3. report ---------------------------------------------------------------------------------
CSV=$(ls -t "$OUT"/*_fused_inference.csv 2> /dev/null | head -1)
if [ -n "$CSV" ]; then
  python3 bench/fused_inference.py --report-only --csv "$CSV" --summary --plot \
    --layers-csv "$OUT/fused_layers.csv" 2>&1 \
    | tee -a "$OUT/summary.txt"
  log "done: $(($(wc -l < "$CSV") - 1)) rows ($(grep -c ',skipped' "$CSV") skipped) in $CSV"
else
  log "no CSV written"
fi
ls -la "$OUT"
