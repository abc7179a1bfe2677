#!/usr/bin/env bash
# One GPU call for backward_weight's row form (specialization stride1): the GoogleTests of the
# row-form test instances (tests set, with the random sweep), then every 2D wavelet_tma
# backward_weight instance of the default set (and the 1D row-form ones) profiled with GPU
# verification on bench/dev/shapes_rows.csv (fp16, bf16) and the RetinaNet set (fp16).
# Writes $OUT/test_rows.log, $OUT/prof_*.csv|log, $OUT/rows.txt (best row form vs best other).
set -uo pipefail
ROOT=$(pwd); export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
W=${W:-/tmp/rows}; OUT=${OUT:-/tmp/rows-out}; mkdir -p "$W" "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
GT=$W/gtest; [ -d "$GT/usr" ] || { mkdir -p "$GT"; for f in .gtest/*.deb; do dpkg -x "$f" "$GT"; done; }
gen() {  # gen <dir> <generate args...>
  local d=$1; shift
  python3 -m ckgen.cli generate --arch sm_90a "$@" -o "$d" -q &&
    python3 -m ckgen.cli emit-cmake -o "$d" --platform nvidia --gpu-targets 90a > /dev/null &&
    cmake -S "$d" -B "$d/build" -G Ninja -DGTest_ROOT="$GT/usr" -DCMAKE_PREFIX_PATH="$GT/usr" \
      -DCKGEN_BUILD_TESTS=ON > "$OUT/cmake_$(basename "$d").log" 2>&1
}
t0=$SECONDS
gen "$W/t" --set tests --variant backward_weight --kernels '*_s1*' || exit 1
gen "$W/p" --variant backward_weight --kernels '*bwd_weight_*_2d_*wltma*' --kernels '*bwd_weight_*_1d_*_s1*' || exit 1
ninja -C "$W/t/build" -j 8 > "$OUT/build_t.log" 2>&1 & 
ninja -C "$W/p/build" -j 12 ckgen_profiler_backward_weight > "$OUT/build_p.log" 2>&1
rc_p=$?; wait $!; rc_t=$?
echo "build rc tests=$rc_t profiler=$rc_p in $((SECONDS - t0)) s" | tee "$OUT/summary.txt"
grep -m5 -A5 "error" "$OUT/build_t.log" "$OUT/build_p.log" | head -40
t0=$SECONDS
CKGEN_SWEEP_SEED=${CKGEN_SWEEP_SEED:-$RANDOM} timeout 200 "$W/t/build/bin/test_grouped_conv_backward_weight" \
  --gtest_brief=1 > "$OUT/test_rows.log" 2>&1
echo "gtest rc=$? in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED)|SKIPPED' "$OUT/test_rows.log" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -E "FAILED|seed|Failure" "$OUT/test_rows.log" | head -20 | tee -a "$OUT/summary.txt"
P=$W/p/build/bin/ckgen_profiler_backward_weight
for spec in "bench/dev/shapes_rows.csv:fp16" "bench/dev/shapes_rows.csv:bf16" "templates/project/shapes/retinanet_r50fpn_n2.csv:fp16"; do
  csv=${spec%%:*} dt=${spec##*:} name=$(basename "$csv" .csv)_$dt; t0=$SECONDS
  timeout 170 "$P" --shapes "$csv" --datatype "$dt" --verify gpu --warmup 3 --repeat 10 --csv "$OUT/prof_$name.csv" > "$OUT/prof_$name.log" 2>&1
  echo "profile $name rc=$? in $((SECONDS - t0)) s; FAIL lines: $(grep -c FAIL "$OUT/prof_$name.log")" | tee -a "$OUT/summary.txt"
done
python3 - "$OUT" <<'PY' | tee "$OUT/rows.txt"
import csv, glob, sys, os
for f in sorted(glob.glob(f"{sys.argv[1]}/prof_*.csv")):
    best = {}
    bad = 0
    for r in csv.DictReader(open(f)):
        if r["verified"] not in ("pass", "none"):
            bad += r["verified"] not in ("", "skip", "unsupported")
            continue
        if not float(r["ms"] or 0): continue
        k = (r["shape"], "rows" if r["instance"].endswith("_s1") or "_s1_" in r["instance"] else "other")
        us = float(r["ms"]) * 1e3
        if us < best.get(k, (1e30,))[0]: best[k] = (us, r["instance"].replace("grouped_conv_bwd_weight_", ""))
    print(f"== {os.path.basename(f)} (non-pass rows: {bad})")
    for s in sorted({k[0] for k in best}):
        o, w = best.get((s, "other"), (float("nan"), "")), best.get((s, "rows"), (float("nan"), ""))
        print(f"{s:32s} other {o[0]:8.2f}  rows {w[0]:8.2f}  ratio {o[0] / w[0]:5.2f}  {w[1]}")
PY
