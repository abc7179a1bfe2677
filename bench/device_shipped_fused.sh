#!/usr/bin/env bash
# The shipped fused forward set's statistics and conversion kernels (configs/forward/fused.yaml:
# stats, bias_stats, to_<datatype>) on the GPU machine, in one call, with the GoogleTests of one
# variant's direct instances beside it (VARIANT, default backward_data: the tests set's direct
# kernels, their seeded sweep):
#   1. build   a ckgen library of the fused set's stats / conversion kernels, a plain forward tile
#              and the fp16 2D backward defaults (Registry.build, GLOBS), the tests set's direct
#              GoogleTests of VARIANT and the forward profiler of those fused kernels;
#   2. verify  the profiler's GPU check of every stats / conversion instance over the batch-32
#              layers of resnet50 (bench/fused_pairs.py shapes);
#   3. torch   tests/test_torch_epilogue_outputs_gpu.py on that library (stats in fp16 and bf16,
#              to_fp32 forward and gradients, CUDA graphs and torch.compile).
# $OUT: summary.txt, test.log, verify.csv, torch.log.
#
#   bash bench/device_shipped_fused.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-shipped-out}
WORK=${WORK:-/tmp/ckgen-shipped-work}
JOBS=${JOBS:-$(nproc)}
BUDGET=${BUDGET:-540}
VARIANT=${VARIANT:-backward_data}
# shellcheck source=bench/device_lib.sh
source "$ROOT/bench/device_lib.sh"  # start_run, log, build_project, run_gtests, run_limited
start_run
GLOBS="grouped_conv_fwd_*_2d_*stats* grouped_conv_fwd_*_2d_*_o[bf][fp]* grouped_conv_fwd_fp16_2d_t64x64x64_w4x1x1_*
  grouped_conv_bwd_data_fp16_2d_* grouped_conv_bwd_weight_fp16_2d_*"
cat > "$WORK/build_lib.py" << 'PY'
import sys
from ckgen import Registry
configs = [f"configs/{v}/default.yaml" for v in ("forward", "backward_data", "backward_weight")]
configs.append("configs/forward/fused.yaml")
reg = Registry.build(configs, arch="sm_90a", kernels=sys.argv[2:], max_workers=int(sys.argv[1]), shard_size=2)
print(f"{len(reg)} kernels")
print(f"LIB {reg.lib_path}")
PY
t0=$SECONDS
# shellcheck disable=SC2086  # the globs are separate arguments
python3 "$WORK/build_lib.py" "$JOBS" $GLOBS > "$OUT/build_lib.log" 2>&1 &
p1=$!
build_project "$WORK/gt" ON --set tests --variant "$VARIANT" --kernels '*_direct_*' &
p2=$!
build_project "$WORK/pf" OFF --config configs/forward/fused.yaml --variant forward --datatype fp16 \
  --datatype bf16 --kernels '*stats*' --kernels '*_o[bf][fp]*' &
p3=$!
wait $p1; r1=$?
wait $p2; r2=$?
wait $p3; r3=$?
log "build rc $r1 $r2 $r3 in $((SECONDS - t0)) s: $(grep -m1 ' kernels' "$OUT/build_lib.log")"
[ "$r1$r2$r3" = 000 ] || { tail -20 "$OUT/build_lib.log"; grep -h -m 10 -B2 -A6 error "$OUT"/build_*.log; exit 1; }
run_gtests "$VARIANT" 3131 150
python3 bench/fused_pairs.py shapes --models resnet50 --ndim 2 --batch 32 --out "$WORK/shapes.csv" > /dev/null
t0=$SECONDS
timeout 90 "$WORK/pf/build/bin/ckgen_profiler_forward" --shapes "$WORK/shapes.csv" --fusion any --verify gpu \
  --warmup 1 --repeat 1 --csv "$OUT/verify.csv" > /dev/null 2>&1
log "verify (90 s at most) in $((SECONDS - t0)) s: $(tail -n +2 "$OUT/verify.csv" | cut -d, -f8 | sort | uniq -c | tr '\n' ' ')"
CKGEN_TORCH_LIB=$(sed -n 's/^LIB //p' "$OUT/build_lib.log") run_limited 150 \
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_torch_epilogue_outputs_gpu.py > "$OUT/torch.log" 2>&1
log "torch tests rc $?: $(tail -n 1 "$OUT/torch.log")"
grep -E "^SKIPPED|FAILED" "$OUT/torch.log" | head -10 | tee -a "$OUT/summary.txt"
rm -f "$OUT"/cmake_*.log "$OUT"/build_*.log
ls -la "$OUT"
