#!/usr/bin/env bash
# Whole-model steps, ckgen against cuDNN (bench/models.py), in one call on the GPU machine (ends
# within BUDGET seconds, 540 by default, of the device call's 600):
#   1. build   the ckgen kernel library the selected models need: ckgen.Registry.build of the
#              default set restricted to CKGEN_KERNELS (default: every variant of DTYPES for the
#              ndims of MODELS, e.g. grouped_conv_*_fp16_2d_*), -j JOBS, cached in $WORK/jit (a
#              later call on the same warm machine finds it built; a build cut by BUILD_TIMEOUT
#              goes on where it stopped); FUSED=1 adds configs/forward/fused.yaml and
#              configs/backward_weight/fused.yaml (the ckgen_fused backend's kernels);
#   2. models  CKGEN_TORCH_LIB=<that library> bench/models.py over MODELS x PHASES x MODES x
#              DTYPES x BACKENDS with what is left of the budget (--budget-s: the rows that do not
#              fit are written with status=skipped); rows go to $OUT/models.csv as they are
#              measured, and to $WORK/models.csv, from which the next call resumes (it measures
#              only what is missing: repeat the call to cover more rows; FRESH=1 starts over);
#   3. report  the summary (ratio table per model and mode, gradient errors, the issue's targets)
#              and the bar chart, from the CSV, also when step 2 ran out of time.
#
#   bash bench/device_models.sh
#   MODELS=resnet50,resnext50_32x4d,wide_resnet50_2 MODES=graph DTYPES=fp16,bf16 bash bench/device_models.sh
#
# The whole corpus needs fp16 + bf16 kernels of 1D, 2D and 3D (1004 instances of the default set
# for sm_90a; at the ~0.5 s per instance seen on 16 cores, 214 in ~110 s, about 9 min of build):
# the default is fp16 only (502 instances, ~4.5 min), which leaves about 4 minutes of the first
# call for measuring (the eager training rows), and all of a repeated call. A first call that
# builds, then calls with the same settings until the summary has no skipped rows.
# $OUT (at most 8 files come back): summary.txt, models.csv, models.png, models.log, build.log.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-models-out}
WORK=${WORK:-/tmp/ckgen-models-work}
BUDGET=${BUDGET:-540}
ARCH=${ARCH:-sm_90a}
JOBS=${JOBS:-$(nproc)}
MODELS=${MODELS:-all}
DTYPES=${DTYPES:-fp16}
PHASES=${PHASES:-train,infer}
MODES=${MODES:-eager,graph,compile}
BACKENDS=${BACKENDS:-cudnn_bench,cudnn,ckgen,ckgen_tune}  # all: ckgen_fused too
COMPILE_MODELS=${COMPILE_MODELS:-resnet50}  # models with compile rows (all, none or a list): 1-2 min of compiling per row
BUILD_TIMEOUT=${BUILD_TIMEOUT:-330}
CKGEN_KERNELS=${CKGEN_KERNELS:-}  # space-separated kernel name globs (default: from MODELS and DTYPES)
MODELS_ARGS=${MODELS_ARGS:-}      # more bench/models.py arguments, e.g. "--infer-batches 1,32"
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, left, run_limited
start_run
log "ckgen $(ckgen_id), torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
[ "${FRESH:-0}" = 1 ] && rm -f "$WORK/models.csv"

# --- 1. build ----------------------------------------------------------------------------------
if [ -z "$CKGEN_KERNELS" ]; then
  CKGEN_KERNELS=$(python3 bench/models.py --kernel-globs --models "$MODELS" --dtypes "$DTYPES") || exit 1
fi
log "build: $CKGEN_KERNELS (arch $ARCH, -j $JOBS, at most $BUILD_TIMEOUT s)"
t0=$SECONDS
cat > "$WORK/build_lib.py" << 'EOF'
import os
import sys
import time

from ckgen import Registry

arch, jobs, globs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
t = time.perf_counter()
configs = "default"
if os.environ.get("FUSED") == "1":  # the training fusions' kernels too
    configs = [f"configs/{v}/default.yaml" for v in ("forward", "backward_data", "backward_weight")]
    configs += ["configs/forward/fused.yaml", "configs/backward_weight/fused.yaml"]
reg = Registry.build(configs, arch=arch, kernels=globs, max_workers=jobs, shard_size=4)
print(f"{len(reg)} kernels in {time.perf_counter() - t:.0f} s (cached={reg.cached})")
print(f"LIB {reg.lib_path}")
EOF
# shellcheck disable=SC2086  # the globs are separate arguments
run_limited "$BUILD_TIMEOUT" python3 "$WORK/build_lib.py" "$ARCH" "$JOBS" $CKGEN_KERNELS > "$OUT/build.log" 2>&1
rc=$?
LIB=$(sed -n 's/^LIB //p' "$OUT/build.log")
log "build rc=$rc in $((SECONDS - t0)) s: $(grep -m1 ' kernels in ' "$OUT/build.log")"
if [ -n "$LIB" ]; then
  export CKGEN_TORCH_LIB=$LIB
else
  grep -m 10 -iE "error|FAILED" "$OUT/build.log" | tee -a "$OUT/summary.txt"
  log "no ckgen library: the ckgen rows say so; the cuDNN rows are measured"
fi

# --- 2. models ---------------------------------------------------------------------------------
budget=$(($(left) - 45))  # room for the report and for a row that runs past its estimate
if [ "$budget" -gt 30 ]; then
  log "models: $MODELS / $PHASES / $MODES / $DTYPES / $BACKENDS (budget $budget s)"
  t0=$SECONDS
  # shellcheck disable=SC2086  # MODELS_ARGS: separate arguments
  run_limited $(($(left) - 20)) python3 bench/models.py --models "$MODELS" --dtypes "$DTYPES" \
    --phases "$PHASES" --modes "$MODES" --backends "$BACKENDS" --compile-models "$COMPILE_MODELS" \
    --budget-s "$budget" --csv "$OUT/models.csv" --resume "$WORK/models.csv" $MODELS_ARGS \
    > "$OUT/models.log" 2>&1
  rc=$?
  log "models rc=$rc in $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || tail -n 8 "$OUT/models.log" | tee -a "$OUT/summary.txt"
else
  log "models skipped: $(left) s left"
fi

# --- 3. report ---------------------------------------------------------------------------------
[ -s "$OUT/models.csv" ] || cp -f "$WORK/models.csv" "$OUT/models.csv" 2> /dev/null
python3 bench/models.py --report-only --csv "$OUT/models.csv" --summary --plot "$OUT/models.png" \
  2>&1 | tee -a "$OUT/summary.txt"
log "done: $(($(wc -l < "$OUT/models.csv") - 1)) rows ($(grep -c ',skipped,' "$OUT/models.csv") skipped)"
ls -la "$OUT"
