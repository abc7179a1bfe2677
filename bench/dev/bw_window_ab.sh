#!/usr/bin/env bash
# GPU machine, one call: the backward_weight windows (8- and 20-row, 4 stages, fp16) and the row
# form built once per VARIANTS entry "name=CUDA flags" (e.g. "a= b=-DSOME_SWITCH=1"),
# each profiled GPU-verified on bench/dev/shapes_bw_window.csv: -> $OUT/ab_<name>.csv, ab.txt
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
cd "$ROOT" || exit 1
W=/tmp/bwab
small_generate "$W/g" --config bench/dev/bw_window_sweep.yaml --datatype fp16 \
  --kernels '*_t160x64x64_*wltma4*_win_*' --kernels '*_t64x64x64_*wltma4*_win_*' --kernels '*wltma4*_s1*' || exit 1
names=""
for v in ${VARIANTS:-base=}; do
  n=${v%%=*} f=${v#*=}
  names="$names $n"
  small_build "$W/g" "$W/b_$n" "-DCMAKE_CUDA_FLAGS=$f" || { echo "build $n failed"; continue; }
  timeout 100 "$W/b_$n/bin/ckgen_profiler_backward_weight" --shapes bench/dev/shapes_bw_window.csv --datatype fp16 \
    --verify gpu --warmup 3 --repeat 10 --csv "$OUT/ab_$n.csv" > "$OUT/ab_$n.log" 2>&1
  echo "$n rc=$? FAIL lines: $(grep -c FAIL "$OUT/ab_$n.log")"
done
python3 - "$OUT" "$names" <<'PY' | tee "$OUT/ab.txt"
import csv, sys
for v in sys.argv[2].split():
    try: rows = list(csv.DictReader(open(f"{sys.argv[1]}/ab_{v}.csv")))
    except OSError: continue
    for r in rows:
        print(f"{v:6s} {r['shape']:26s} {float(r['ms'] or 0) * 1e3:8.2f} {r['verified']:5s} {r['instance'][30:]}")
PY
