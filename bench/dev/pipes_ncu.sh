#!/usr/bin/env bash
# GPU machine, one call: where the g4 rows' copy-engine kernels spend their cycles. Nsight
# Compute on the main kernel of one run per ROWS entry (clocks left alone): warp-stall reasons
# per issued instruction, pipe utilizations (wgmma, shared memory, ALU / FMA), shared-memory bank
# reads / writes; the metric names are taken from `ncu --query-metrics` of this GPU.
#   bash bench/dev/pipes_ncu.sh   -> $OUT/pipes_<n>.csv, $OUT/pipes.txt
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
WORK=${WORK:-/tmp/pipes-work}
mkdir -p "$WORK"
ROWS=${ROWS:-"forward:fp16:*fwd_fp16_2d_t128x64x64_w8x1x1_wt64x64x16_wltma8_lm1x8_cshuffle_v8x8x8:coverage:grouped_3x3_g4_c64_100
backward_weight:fp16:*bwd_weight_fp16_2d_t64x192x64_w4x1x1_wt64x192x16_wltma4_lm1x4_cshuffle_v8x8x8_s1:coverage:grouped_3x3_g4_c64_100"}
rows_build "$WORK" || exit 1
cp "$WORK/gen/build.log" "$OUT/pipes_build.log"
ncu --query-metrics > "$WORK/metrics.txt" 2>&1
METRICS=$(python3 - "$WORK/metrics.txt" <<'PY'
import re, sys
names = {w for line in open(sys.argv[1]) for w in line.split()[:1]}
want = []
for n in sorted(names):
    if re.fullmatch(r"smsp__average_warps_issue_stalled_\w+_per_issue_active", n):
        want.append(n + ".ratio")
    elif re.fullmatch(r"sm__pipe_(tensor_op_gmma|tensor_op_hmma|shared|alu|fma|fmaheavy|uniform)_cycles_active", n):
        want.append(n + ".avg.pct_of_peak_sustained_active")
    elif re.fullmatch(r"l1tex__data_bank_(reads|writes)", n):
        want.append(n + ".avg.pct_of_peak_sustained_elapsed")
    elif n in ("smsp__inst_executed_pipe_tensor_op_gmma", "l1tex__data_pipe_lsu_wavefronts_mem_shared", "smsp__inst_executed"):
        want.append(n + ".sum")
want.append("gpu__time_duration.sum")
print(",".join(want))
PY
)
echo "metrics: $METRICS" > "$OUT/pipes.txt"
n=0
while IFS=: read -r v dt k set_ shape; do
  n=$((n + 1))
  bin=$WORK/gen/build/bin/ckgen_profiler_$v
  shapes=$ROOT/templates/project/shapes/$set_.csv
  "$bin" --shapes "$shapes" --shape "$shape" --kernels "$k" --datatype "$dt" --verify gpu --warmup 5 --repeat 20 \
    > "$WORK/prof_$n.txt" 2>&1
  timeout 200 ncu --clock-control none --kernel-name regex:tma_conv --metrics "$METRICS" --csv \
    "$bin" --shapes "$shapes" --shape "$shape" --kernels "$k" --datatype "$dt" --verify none \
    --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/pipes_$n.csv" 2> "$WORK/ncu_$n.log"
  { echo "== $n $v $dt $shape $k rc=$?"; tail -3 "$WORK/prof_$n.txt"
    python3 - "$OUT/pipes_$n.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if rows:
    h = rows[0]; mi, ui, vi = h.index("Metric Name"), h.index("Metric Unit"), h.index("Metric Value")
    for r in rows[1:]:
        print(f"  {r[mi]:75s} {r[vi]:>12s} {r[ui]}")
PY
  } >> "$OUT/pipes.txt"
done <<< "$ROWS"
cat "$OUT/pipes.txt"
