#!/usr/bin/env bash
# Forward ring sweep for grouped g4 (bench/dev/g4_fwd_sweep.yaml) on bench/dev/shapes_g4_fwd.csv, fp16,
# verified on the GPU: $OUT/g4_1.csv, g4_2.csv (every instance per shape) and $OUT/g4.txt.
set -uo pipefail
ROOT=$(pwd); export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
W=${W:-/tmp/g4fwd}; mkdir -p "$W" "$OUT"
t0=$SECONDS
python3 -m ckgen.cli generate --arch sm_90a --config bench/dev/g4_fwd_sweep.yaml -o "$W/g" -q &&
  python3 -m ckgen.cli emit-cmake -o "$W/g" --platform nvidia --gpu-targets 90a > /dev/null &&
  cmake -S "$W/g" -B "$W/g/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/cmake.log" 2>&1 &&
  ninja -C "$W/g/build" -j 16 > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $((SECONDS - t0)) s"
for rep in 1 2; do
  timeout 200 "$W/g/build/bin/ckgen_profiler_forward" --shapes bench/dev/shapes_g4_fwd.csv --datatype fp16 \
    --verify $([ $rep = 1 ] && echo gpu || echo none) --warmup 3 --repeat 10 --csv "$OUT/g4_$rep.csv" > "$OUT/g4_$rep.log" 2>&1
  echo "profile $rep rc=$? FAIL lines: $(grep -c FAIL "$OUT/g4_$rep.log")"
done
python3 - "$OUT" <<'PY' | tee "$OUT/g4.txt"
import csv, sys
t = {}
for rep in (1, 2):
    for r in csv.DictReader(open(f"{sys.argv[1]}/g4_{rep}.csv")):
        if r["verified"] in ("fail", "error") or not float(r["ms"] or 0): continue
        k = (r["shape"], r["instance"].replace("grouped_conv_fwd_fp16_2d_", ""))
        t[k] = min(t.get(k, 1e30), float(r["ms"]) * 1e3)
for s in sorted({k[0] for k in t}):
    rows = sorted((v, i) for (sh, i), v in t.items() if sh == s)
    print(f"== {s}")
    for v, i in rows[:12]: print(f"  {v:8.2f}  {i}")
PY
