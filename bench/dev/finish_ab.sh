#!/usr/bin/env bash
# A/B on the GPU machine (~4 min): the split-K finish. The default set's backward_weight
# two-stage instances (direct and multistage, fp16 2D) built with this tree's template library
# (new) and with ./ab_prev_include (old: this tree's headers with another splitk_finish.hpp;
# carry it), profiled old, new, old, new over the coverage and RetinaNet shapes without
# verification: $OUT/finish_ab.txt, per shape the best two-stage time of each side.
set -u
ROOT=$(pwd)
export PYTHONPATH=$ROOT
OUT=${OUT:-/tmp/ckgen-out}
W=/tmp/finish-ab; mkdir -p $W $OUT
for side in new old; do
  python3 -m ckgen.cli generate --arch sm_90a --variant backward_weight --datatype fp16 --ndim 2 \
    --kernels '*_2st' -o $W/$side -q
  python3 -m ckgen.cli emit-cmake -o $W/$side --platform nvidia --gpu-targets 90a > /dev/null
  if [ $side = old ]; then cp -r ab_prev_include/ckgen/. $W/$side/include/ckgen/; fi
  cmake -S $W/$side -B $W/$side/build -G Ninja -DCKGEN_BUILD_TESTS=OFF > $OUT/cmake_$side.log 2>&1
done
ninja -C $W/new/build -j 8 > $OUT/build_new.log 2>&1 &
ninja -C $W/old/build -j 8 > $OUT/build_old.log 2>&1; wait
grep -h -A3 -m3 error $OUT/build_*.log
head -1 templates/project/shapes/coverage.csv > $W/shapes.csv
tail -n +2 templates/project/shapes/coverage.csv >> $W/shapes.csv
tail -n +2 templates/project/shapes/retinanet_r50fpn_n2.csv >> $W/shapes.csv
for i in 1 2; do for side in old new; do
  $W/$side/build/bin/ckgen_profiler_backward_weight --shapes $W/shapes.csv --datatype fp16 \
    --verify none --warmup 3 --repeat 10 --csv $OUT/fab_${side}_$i.csv > $OUT/fab_${side}_$i.log 2>&1
  echo "$side $i rc=$?"
done; done
python3 - "$OUT" <<'PY' | tee "$OUT/finish_ab.txt"
import csv, collections, math, sys
t = collections.defaultdict(lambda: collections.defaultdict(list))
for side in ("old", "new"):
    for i in (1, 2):
        for r in csv.DictReader(open(f"{sys.argv[1]}/fab_{side}_{i}.csv")):
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
