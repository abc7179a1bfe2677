#!/usr/bin/env bash
# GPU machine, one call (~5 min on an H200): the depthwise backward_weight window path.
#   1. bench/device.sh build + test on the tests set's backward_weight direct instances (the
#      *_support suites filtered out: they fail by design when only direct instances are built);
#   2. bench/dev/perf_sweep.sh over the coverage shapes, fp16 2D direct backward_weight: the
#      default instances beside bench/dev/candidates/dww_backward_weight.yaml, k_batch auto and a
#      sweep of slice counts (best per shape in sweep.txt).
#   bash bench/dev/dw_bw_call.sh     (carry .gtest)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
if [ "${TESTS:-1}" = 1 ]; then
  GTEST_FILTER='-*_support.*' GEN_ARGS="--variant backward_weight --kernels *direct*" BUILD_SETS=tests \
    PHASES="build test" OUT=$OUT/dev bash "$ROOT/bench/device.sh"
  cp "$OUT/dev/summary.txt" "$OUT/tests_summary.txt"
  tar czf "$OUT/tests_logs.tar.gz" -C "$OUT/dev" . && rm -rf "$OUT/dev"
fi
OUT=$OUT/sweep WORK=/tmp/sweep-work CAND_PREFIX=${CAND_PREFIX:-dww_} VARIANTS=backward_weight \
  SHAPES=$ROOT/templates/project/shapes/coverage.csv GEN_EXTRA="--pipeline direct" \
  PROF_RUNS="${PROF_RUNS:---k-batch 0; --k-batch 16,32,48,64,96,128,192}" \
  bash "$ROOT/bench/dev/perf_sweep.sh" > "$OUT/sweep_run.txt" 2>&1
cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt" 2>/dev/null
python3 - "$OUT/sweep" <<'PY' > "$OUT/dw_rows.txt"
import csv, glob, sys
rows = [r for f in sorted(glob.glob(sys.argv[1] + "/sweep_*.csv")) for r in csv.DictReader(open(f))]
for shape in ("dw_3x3_g256_56", "dw_3x3s2_g512_28"):
    rs = sorted((r for r in rows if r["shape"] == shape and r["verified"] == "pass"), key=lambda r: float(r["ms"]))
    for r in rs[:14]:
        print(f"{shape:18s} {float(r['ms'])*1e3:7.2f} us kb={r.get('k_batch', ''):4s} {r['instance'][-52:]}")
PY
tar czf "$OUT/sweep_csv.tar.gz" -C "$OUT/sweep" . && rm -rf "$OUT/sweep"
cat "$OUT"/tests_summary.txt "$OUT/sweep_run.txt" "$OUT/dw_rows.txt"
