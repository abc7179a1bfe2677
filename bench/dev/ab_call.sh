#!/usr/bin/env bash
# A/B on the GPU machine: the wavelet_tma instances (fp16 2D) of VARIANTS (default
# backward_weight) built twice, with this tree's template library (new) and with the headers in
# ./ab_prev_include (old: copy a previous commit's templates/include there; carry it), profiled
# old, new, old, new on the RetinaNet set without verification: $OUT/ab.tgz holds
# ab_<variant>_<old|new>_<run>.csv, $OUT/ab.txt the geomean ratios.
#   PIPELINE (default wavelet_tma; empty: every pipeline), KERNELS (a name glob), SHAPES (a shapes
#   CSV, default the RetinaNet set), W (the work folder) select other instances and problems
#   (bench/dev/finish_ab.sh).
set -u
ROOT=$(pwd)
export PYTHONPATH=$ROOT
VARIANTS=${VARIANTS:-backward_weight}
PIPELINE=${PIPELINE-wavelet_tma}
SHAPES=${SHAPES:-templates/project/shapes/retinanet_r50fpn_n2.csv}
W=${W:-/tmp/ab2}; mkdir -p $W $OUT
vargs=(); for v in $VARIANTS; do vargs+=(--variant "$v"); done
[ -n "$PIPELINE" ] && vargs+=(--pipeline "$PIPELINE")
[ -n "${KERNELS:-}" ] && vargs+=(--kernels "$KERNELS")
for side in new old; do
  python3 -m ckgen.cli generate --arch sm_90a "${vargs[@]}" --datatype fp16 --ndim 2 -o $W/$side -q
  python3 -m ckgen.cli emit-cmake -o $W/$side --platform nvidia --gpu-targets 90a > /dev/null
  if [ $side = old ]; then cp -r ab_prev_include/ckgen/. $W/$side/include/ckgen/; fi
  cmake -S $W/$side -B $W/$side/build -G Ninja -DCKGEN_BUILD_TESTS=OFF > $OUT/cmake_$side.log 2>&1
done
ninja -C $W/new/build -j 8 > $OUT/build_new.log 2>&1 &
ninja -C $W/old/build -j 8 > $OUT/build_old.log 2>&1; wait
for v in $VARIANTS; do for i in 1 2; do for side in old new; do
  $W/$side/build/bin/ckgen_profiler_$v --shapes "$SHAPES" --datatype fp16 \
    --verify none --warmup 3 --repeat 10 --csv $OUT/ab_${v}_${side}_$i.csv > $OUT/ab_${v}_${side}_$i.log 2>&1
  echo "$v $side $i rc=$?"
done; done; done
python3 - "$OUT" <<'PY' | tee "$OUT/ab.txt"
import csv, glob, math, sys, collections
t = collections.defaultdict(dict)
for f in glob.glob(sys.argv[1] + "/ab_*_*_*.csv"):
    side, run = f.rsplit("_", 2)[-2], f.rsplit("_", 1)[-1][:-4]
    for r in csv.DictReader(open(f)):
        if float(r["ms"] or 0) > 0:
            t[(r["variant"], r["shape"], r["instance"])][(side, run)] = float(r["ms"])
def gm(xs): return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
for v in sorted({k[0] for k in t}):
    ks = [k for k in t if k[0] == v and len(t[k]) == 4]
    print(f"{v}: new/old {gm([t[k][('new','1')] * t[k][('new','2')] / (t[k][('old','1')] * t[k][('old','2')]) for k in ks]) ** 0.5:.4f}, "
          f"old run2/run1 {gm([t[k][('old','2')] / t[k][('old','1')] for k in ks]):.4f} ({len(ks)} rows)")
    best = collections.defaultdict(dict)
    for k in ks:
        for side in ("old", "new"):
            ms = min(t[k][(side, "1")], t[k][(side, "2")])
            best[k[1]][side] = min(best[k[1]].get(side, 1e9), ms)
    for s in sorted(best):
        if "1x1" in s: print(f"  {s:30s} old {best[s]['old']*1e3:7.2f} new {best[s]['new']*1e3:7.2f} us")
PY
cd $OUT && tar czf ab.tgz ab_*.csv && rm -f ab_*.csv ab_*.log
