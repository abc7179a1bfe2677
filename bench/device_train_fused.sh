#!/usr/bin/env bash
# Training with fused epilogues on the GPU machine, in one call (ends within BUDGET seconds, 540 by
# default, of the device call's 600):
#   1. build  the DTYPES 2D kernels of every variant's default set plus the fused ones
#             (configs/forward/fused.yaml, configs/backward_weight/fused.yaml, and the files in
#             EXTRA_CONFIGS): one Registry.build (-j JOBS, 4 instances per translation unit),
#             cached in $WORK/jit;
#   2. tests  TESTS, by default tests/test_torch_fused_train_gpu.py (forward and gradients of
#             ckgen::conv_fused against fp32 autograd, a CUDA graph and torch.compile of a
#             training step) and tests/test_torch_op.py, test_torch_native.py (the plain ops),
#             on that library;
#   3. layers bench/train_fused.py layers: per corpus layer (bench/fused_pairs.py shapes), dw + db
#             by the bias_grad kernel against the plain kernel plus a sum of dy, and cuDNN's;
#   4. nets   bench/train_fused.py nets: training steps of Conv + bias + ReLU networks, cuDNN /
#             ckgen / ckgen fused.
#
#   bash bench/device_train_fused.sh
#   STEPS=tests,nets DTYPES=fp16 bash bench/device_train_fused.sh
#   STEPS=tests EXTRA_CONFIGS="bench/stats_pairs.yaml bench/convert_pairs.yaml" \
#     TESTS="tests/test_torch_epilogue_outputs_gpu.py" bash bench/device_train_fused.sh
#
# $OUT: summary.txt (with the failed tests' assertion lines), build.log, tests.log, bench.log,
# <date>_<gpu>_train_fused_<dtype>_{layers,nets}.csv.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-train-out}
WORK=${WORK:-/tmp/ckgen-train-work}
BUDGET=${BUDGET:-540}
ARCH=${ARCH:-sm_90a}
JOBS=${JOBS:-$(nproc)}
DTYPES=${DTYPES:-fp16}
STEPS=${STEPS:-tests,layers,nets}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-300}
export EXTRA_CONFIGS=${EXTRA_CONFIGS:-}  # more instance-list YAML files for the library
TESTS=${TESTS:-tests/test_torch_fused_train_gpu.py tests/test_torch_op.py tests/test_torch_native.py}
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, left, run_limited
start_run
log "ckgen $(ckgen_id), steps $STEPS dtypes $DTYPES"
has() { [[ ",$STEPS," == *",$1,"* ]]; }

# --- 1. build ----------------------------------------------------------------------------------
GLOBS=()
for dt in ${DTYPES//,/ }; do GLOBS+=("grouped_conv_*_${dt}_2d_*"); done
t0=$SECONDS
cat > "$WORK/build_train.py" << 'PY'
import os
import sys
import time

from ckgen import Registry

arch, jobs, globs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
configs = [f"configs/{v}/{s}.yaml" for v, s in (
    ("forward", "default"), ("forward", "fused"), ("backward_data", "default"),
    ("backward_weight", "default"), ("backward_weight", "fused"))]
configs += os.environ.get("EXTRA_CONFIGS", "").split()
t = time.perf_counter()
reg = Registry.build(configs, arch=arch, kernels=globs, max_workers=jobs, shard_size=4)
fused = sum(k.epilogue.fused for k in reg.find())
print(f"{len(reg)} kernels ({fused} fused) in {time.perf_counter() - t:.0f} s (cached={reg.cached})")
print(f"LIB {reg.lib_path}")
PY
run_limited "$BUILD_TIMEOUT" python3 "$WORK/build_train.py" "$ARCH" "$JOBS" "${GLOBS[@]}" \
  > "$OUT/build.log" 2>&1
LIB=$(sed -n 's/^LIB //p' "$OUT/build.log")
log "build in $((SECONDS - t0)) s: $(grep -m1 ' kernels ' "$OUT/build.log")"
if [ -z "$LIB" ]; then
  grep -m 10 -iE "error|FAILED" "$OUT/build.log" | tee -a "$OUT/summary.txt"
  exit 1
fi
export CKGEN_TORCH_LIB=$LIB

# --- 2. tests ----------------------------------------------------------------------------------
if has tests; then
  reserve=10  # seconds kept for the steps after the tests
  if has layers || has nets; then reserve=90; fi
  # shellcheck disable=SC2086  # TESTS: separate paths
  run_limited $(($(left) - reserve)) python3 -m pytest -q -rs -p no:cacheprovider $TESTS \
    > "$OUT/tests.log" 2>&1
  log "tests rc=$?: $(tail -1 "$OUT/tests.log")"
  grep -E "^(FAILED|ERROR|E  +[A-Za-z]+Error)" "$OUT/tests.log" | cut -c1-220 | head -40 \
    | tee -a "$OUT/summary.txt"
fi

# --- 3. layers ---------------------------------------------------------------------------------
if has layers && [ "$(left)" -gt 90 ]; then
  python3 bench/fused_pairs.py shapes --out "$WORK/shapes.csv" > /dev/null
  for dt in ${DTYPES//,/ }; do
    run_limited $(($(left) - 60)) python3 bench/train_fused.py layers "$WORK/shapes.csv" \
      --dtype "$dt" --out-dir "$OUT" >> "$OUT/bench.log" 2>&1
    log "layers $dt rc=$?: $(tail -1 "$OUT/bench.log")"
  done
fi

# --- 4. nets -----------------------------------------------------------------------------------
if has nets && [ "$(left)" -gt 40 ]; then
  for dt in ${DTYPES//,/ }; do
    run_limited $(($(left) - 10)) python3 bench/train_fused.py nets --dtype "$dt" \
      --out-dir "$OUT" >> "$OUT/bench.log" 2>&1
    log "nets $dt rc=$?"
    grep -E "b[0-9]+ $dt: cudnn" "$OUT/bench.log" | tee -a "$OUT/summary.txt"
  done
fi
log "done in $SECONDS s"
