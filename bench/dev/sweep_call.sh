#!/usr/bin/env bash
# GPU machine, one call: build the instances of one sweep config and profile them on a shapes
# file at the given split counts, run 1 verified on the GPU, run 2 timing only:
#   CONFIG=bench/dev/bw_rows_sweep.yaml SHAPES=bench/dev/shapes_rows_sweep.csv VARIANT=backward_weight \
#     KB=0,6,11,16,22 bash bench/dev/sweep_call.sh   -> $OUT/sweep_{1,2}.csv, $OUT/sweep.txt
set -uo pipefail
ROOT=$(pwd); export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
W=${W:-/tmp/sweep}; mkdir -p "$W" "$OUT"
DT=${DT:-fp16}; KB=${KB:-0}
t0=$SECONDS
python3 -m ckgen.cli generate --arch sm_90a --config "$CONFIG" -o "$W/g" -q &&
  python3 -m ckgen.cli emit-cmake -o "$W/g" --platform nvidia --gpu-targets 90a > /dev/null &&
  cmake -S "$W/g" -B "$W/g/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/cmake.log" 2>&1 &&
  ninja -C "$W/g/build" -j 16 > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $((SECONDS - t0)) s"
for rep in 1 2; do
  timeout 200 "$W/g/build/bin/ckgen_profiler_$VARIANT" --shapes "$SHAPES" --datatype "$DT" --k-batch "$KB" \
    --verify $([ $rep = 1 ] && echo gpu || echo none) --warmup 3 --repeat 10 --csv "$OUT/sweep_$rep.csv" > "$OUT/sweep_$rep.log" 2>&1
  echo "profile $rep rc=$? FAIL lines: $(grep -c FAIL "$OUT/sweep_$rep.log")"
done
python3 - "$OUT" <<'PY' | tee "$OUT/sweep.txt"
import csv, re, sys
t = {}
for rep in (1, 2):
    for r in csv.DictReader(open(f"{sys.argv[1]}/sweep_{rep}.csv")):
        if r["verified"] in ("fail", "error") or not float(r["ms"] or 0): continue
        k = (r["shape"], re.sub(r"^grouped_conv_\w+?_(fp16|bf16)_\dd_", "", r["instance"]) + f" kb{r['k_batch']}")
        t[k] = min(t.get(k, 1e30), float(r["ms"]) * 1e3)
for s in sorted({k[0] for k in t}):
    rows = sorted((v, i) for (sh, i), v in t.items() if sh == s)
    print(f"== {s}")
    for v, i in rows[:14]: print(f"  {v:8.2f}  {i}")
PY
