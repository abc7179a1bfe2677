#!/usr/bin/env bash
# GPU machine (~8 min): the 192-column wavelet_tma tiles (wgmma m64n192k16).
#  1. GTests of every *x192x* instance of the tests sets, three variants, random sweep included
#     ($OUT/gt/: summary.txt, test_<variant>.log, gtest_<variant>.json);
#  2. the backward_weight default set beside bench/dev/candidates/n192_backward_weight.yaml, fp16
#     2D, GPU-verified, over the RetinaNet set and coverage's 2D rows, k_batch auto (run 0) and
#     fixed splits (run 1) ($OUT/sweep/: sweep_*.csv, sweep.txt best per shape).
#   bash bench/dev/n192_call.sh        (carry .gtest)
set -uo pipefail
set -f  # the kernel globs below travel as words
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/n192-out}
mkdir -p "$OUT/gt" "$OUT/sweep" /tmp/n192
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
shapes=/tmp/n192/shapes.csv
{ cat "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv"
  awk -F, 'NR > 1 && $2 == 2' "$ROOT/templates/project/shapes/coverage.csv"; } > $shapes
# 1. GTests (build in the background while the sweep builds; run before the timings)
( OUT=$OUT/gt WORK=/tmp/n192/gt BUILD_SETS=tests JOBS=8 GEN_ARGS="--kernels *x192x*" \
    bash "$ROOT/bench/device.sh" build > "$OUT/gt/build_run.txt" 2>&1 ) &
gt=$!
# 2. the sweep's own build (not perf_sweep.sh, which profiles right after its build: the timings
#    here wait until the GTests have run)
python3 -m ckgen.cli generate --arch sm_90a --variant backward_weight \
  --config "$ROOT/configs/backward_weight/default.yaml" --config "$ROOT/bench/dev/candidates/n192_backward_weight.yaml" \
  --pipeline wavelet_tma --datatype fp16 --ndim 2 -o /tmp/n192/sw -q || exit 1
python3 -m ckgen.cli emit-cmake -o /tmp/n192/sw --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S /tmp/n192/sw -B /tmp/n192/sw/build -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/sweep/build.log" 2>&1 || exit 1
t0=$SECONDS; ninja -C /tmp/n192/sw/build -j 8 >> "$OUT/sweep/build.log" 2>&1 || { grep -m20 -A5 error "$OUT/sweep/build.log"; }
echo "sweep build $((SECONDS - t0)) s"
wait $gt; cat "$OUT/gt/build_run.txt"
OUT=$OUT/gt WORK=/tmp/n192/gt TEST_TIMEOUT=200 bash "$ROOT/bench/device.sh" test > /dev/null 2>&1
cat "$OUT/gt/summary.txt"
bin=/tmp/n192/sw/build/bin/ckgen_profiler_backward_weight
small=/tmp/n192/small.csv  # the C = 64 3x3 rows for the split sweep
{ head -1 $shapes; grep -E "^(grouped_3x3_g4_c64_100|r50_l1_3x3_64_64)," $shapes; } > $small
i=0
for run in "$shapes --k-batch 0" "$small --k-batch 3,4,6,8,11,12,16"; do
  t0=$SECONDS
  # shellcheck disable=SC2086
  timeout 170 $bin --shapes $run --datatype fp16 --verify gpu --warmup 3 --repeat 7 \
    --csv "$OUT/sweep/sweep_$i.csv" > "$OUT/sweep/sweep_$i.log" 2>&1
  echo "profile (${run#* }) rc=$? in $((SECONDS - t0)) s; FAIL lines: $(grep -c FAIL "$OUT/sweep/sweep_$i.log")"
  i=$((i + 1))
done
python3 - "$OUT/sweep" <<'PY' | tee "$OUT/sweep/sweep.txt"
import csv, sys, glob, collections
rows = [r for f in sorted(glob.glob(sys.argv[1] + "/sweep_*.csv")) for r in csv.DictReader(open(f))]
ok = [r for r in rows if r["verified"] == "pass" and float(r["ms"] or 0) > 0]
for key in sorted({r["shape"] for r in ok}):
    rs = sorted((r for r in ok if r["shape"] == key), key=lambda r: float(r["ms"]))
    old = [r for r in rs if "x192x" not in r["instance"]]
    new = [r for r in rs if "x192x" in r["instance"]]
    f = lambda r: f"{float(r['ms'])*1e3:7.2f} us kb {r.get('k_batch', '?'):>3} {r['instance'][24:]}" if r else "-"
    print(f"{key:30s} old {f(old[0] if old else None)}")
    print(f"{'':30s} new {f(new[0] if new else None)}")
print("failed rows:", sum(1 for r in rows if r["verified"] not in ("pass", "none")))
PY
# what comes back: at most 8 files (device README): two archives and the two summaries
cp "$OUT/gt/summary.txt" "$OUT/gt_summary.txt"; cp "$OUT/sweep/sweep.txt" "$OUT/sweep.txt"
tar czf "$OUT/gt.tgz" -C "$OUT" gt && tar czf "$OUT/sweep.tgz" -C "$OUT" sweep && rm -rf "$OUT/gt" "$OUT/sweep"
