#!/usr/bin/env bash
# A/B on the GPU machine (~8 min): chained launches (chain.hpp) against the headers in
# ./ab_prev_include (a copy of the previous commit's templates/include/). backward_weight and
# backward_data wavelet_tma instances, fp16 2D, the RetinaNet rows plus the grouped / depthwise
# coverage rows, profiled old, new, old, new without verification (bench/dev/ab_call.sh):
# $OUT/chain_ab.txt, per shape the best time of each side. PIPELINE= / VARIANTS= / W= as for ab_call.sh.
set -u
OUT=${OUT:-/tmp/ckgen-out}
W=${W:-/tmp/chain-ab}; mkdir -p $W $OUT
export OUT
cp templates/project/shapes/retinanet_r50fpn_n2.csv $W/shapes.csv
grep -E "^(grouped|dw_)" templates/project/shapes/coverage.csv >> $W/shapes.csv
VARIANTS=${VARIANTS:-"backward_weight backward_data"} PIPELINE=${PIPELINE-wavelet_tma} SHAPES=$W/shapes.csv W=$W \
  bash bench/dev/ab_call.sh > $OUT/ab_run.txt 2>&1
grep -h -A3 -m3 error $OUT/build_*.log
mkdir -p $W/csv && tar xzf $OUT/ab.tgz -C $W/csv
python3 - "$W/csv" <<'PY' | tee "$OUT/chain_ab.txt"
import csv, collections, glob, math, sys
t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1] + "/ab_*.csv"):
    side = f.rsplit("_", 2)[-2]
    for r in csv.DictReader(open(f)):
        if float(r["ms"] or 0) > 0:
            t[(r["variant"], r["shape"])][side].append(float(r["ms"]) * 1e3)
for v in sorted({k[0] for k in t}):
    ratios = []
    for k in sorted(k for k in t if k[0] == v):
        o, n = sorted(t[k]["old"]), sorted(t[k]["new"])
        if not o or not n: continue
        ratios.append(n[0] / o[0])
        print(f"{v:16s} {k[1]:30s} old {o[0]:7.2f} new {n[0]:7.2f} us  new/old {n[0] / o[0]:.3f}")
    print(f"{v}: best-per-shape new/old geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.4f} ({len(ratios)} rows)")
PY
cat $OUT/ab_run.txt | tail -20
