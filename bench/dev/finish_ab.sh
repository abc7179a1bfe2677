#!/usr/bin/env bash
# A/B on the GPU machine (~4 min): the split-K finish. The default set's backward_weight
# two-stage instances (direct and multistage, fp16 2D) built with this tree's template library
# (new) and with ./ab_prev_include (old: this tree's headers with another splitk_finish.hpp;
# carry it), profiled old, new, old, new over the coverage and RetinaNet shapes without
# verification (bench/dev/ab_call.sh): $OUT/finish_ab.txt, per shape the best two-stage time of
# each side.
set -u
OUT=${OUT:-/tmp/ckgen-out}
W=/tmp/finish-ab; mkdir -p $W $OUT
export OUT
head -1 templates/project/shapes/coverage.csv > $W/shapes.csv
tail -n +2 templates/project/shapes/coverage.csv >> $W/shapes.csv
tail -n +2 templates/project/shapes/retinanet_r50fpn_n2.csv >> $W/shapes.csv
PIPELINE= KERNELS='*_2st' VARIANTS=backward_weight SHAPES=$W/shapes.csv W=$W bash bench/dev/ab_call.sh
grep -h -A3 -m3 error $OUT/build_*.log
mkdir -p $W/csv && tar xzf $OUT/ab.tgz -C $W/csv
python3 - "$W/csv" <<'PY' | tee "$OUT/finish_ab.txt"
import csv, collections, math, sys
t = collections.defaultdict(lambda: collections.defaultdict(list))
for side in ("old", "new"):
    for i in (1, 2):
        for r in csv.DictReader(open(f"{sys.argv[1]}/ab_backward_weight_{side}_{i}.csv")):
            if float(r["ms"] or 0) > 0:
                t[r["shape"]][(side, r["instance"])].append(float(r["ms"]) * 1e3)
ratios = []
for shape in sorted(t):
    best = {s: min((min(v), k[1]) for k, v in t[shape].items() if k[0] == s) for s in ("old", "new")
            if any(k[0] == s for k in t[shape])}
    if len(best) == 2:
        ratios.append(best["new"][0] / best["old"][0])
        print(f"{shape:34s} old {best['old'][0]:8.2f} new {best['new'][0]:8.2f} {best['new'][0] / best['old'][0]:6.3f} {best['new'][1][-44:]}")
print("geomean new/old", math.exp(sum(map(math.log, ratios)) / len(ratios)))
PY
