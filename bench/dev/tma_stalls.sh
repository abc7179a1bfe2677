#!/usr/bin/env bash
# GPU machine (after bench/dev/tma_ncu.sh built its project in $WORK): per-instruction warp-stall
# samples (SASS) of the wavelet_tma forward kernel on the K=36 box head, 100x100.
#   bash bench/dev/tma_stalls.sh  -> $OUT/stalls_<n>.csv, $OUT/stalls_top.txt
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/ncu-work}
bin=$WORK/gen/build/bin/ckgen_profiler_forward
[ -x "$bin" ] || OUT=$OUT bash "$ROOT/bench/dev/tma_ncu.sh" > /dev/null 2>&1
n=0
for k in ${KERNELS:-"*fwd_fp16_2d_t128x64x64_w8x1x1_wt64x64x16_wltma4_lm1x8_v8x8x8"}; do
  n=$((n + 1))
  timeout 200 ncu --clock-control none -k regex:tma_conv_kernel --section WarpStateStats --section SourceCounters \
    --page source --print-source sass --csv \
    "$bin" --shapes "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" --shape "${SHAPE:-head_box_3x3_256_36_100}" \
    --kernels "$k" --datatype fp16 --verify none --warmup 0 --repeat 1 --iters 1 --timing loop > "$OUT/stalls_$n.csv" 2> "$OUT/stalls_$n.err"
  echo "== $k rc=$?" >> "$OUT/stalls_top.txt"
  python3 - "$OUT/stalls_$n.csv" >> "$OUT/stalls_top.txt" <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"Address"') or l.startswith('"#"')), None)
if start is None:
    print("no table:", lines[:5]); sys.exit()
rows = list(csv.DictReader(lines[start:]))
cols = rows[0].keys()
samp = next((c for c in cols if "Sampling" in c and "All" in c), None) or next(c for c in cols if "Sampl" in c)
print("columns:", [c for c in cols][:12])
def num(v):
    try: return float(str(v).replace(",", ""))
    except ValueError: return 0.0
tot = sum(num(r[samp]) for r in rows) or 1
for r in sorted(rows, key=lambda r: -num(r[samp]))[:25]:
    print(f"{100*num(r[samp])/tot:5.1f}%  {r.get('Address','')}  {r.get('Source','')[:90]}")
PY
done
cat "$OUT/stalls_top.txt"
