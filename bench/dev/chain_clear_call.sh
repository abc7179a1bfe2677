#!/usr/bin/env bash
# GPU machine, one call (~6 min): the split sums' clear off the launch chain (bench/NOTES.md,
# "The split sums' clear off the chain"). A/B of the default wavelet_tma instances (fp16 2D,
# three variants) built with this tree's template library (new) and ./ab_prev_include (old:
# the previous commit's templates/include; carry it), old, new, old, new over the coverage and
# RetinaNet shapes (bench/dev/ab_call.sh); then the new side GPU-verified on every shape at the
# automatic split and at k_batch 4.
#   $OUT/ab.txt, $OUT/cc_best.txt (per shape the best time of each side), $OUT/verify.txt
set -u
OUT=${OUT:-/tmp/ckgen-out}; export OUT
W=/tmp/cc-ab; mkdir -p $W $OUT
head -1 templates/project/shapes/coverage.csv > $W/shapes.csv
tail -n +2 templates/project/shapes/coverage.csv >> $W/shapes.csv
tail -n +2 templates/project/shapes/retinanet_r50fpn_n2.csv >> $W/shapes.csv
VARIANTS="forward backward_data backward_weight" SHAPES=$W/shapes.csv W=$W bash bench/dev/ab_call.sh
grep -h -A3 -m3 error $OUT/build_*.log
mkdir -p $W/csv && tar xzf $OUT/ab.tgz -C $W/csv
python3 - "$W/csv" <<'PY' | tee "$OUT/cc_best.txt"
import csv, collections, glob, math, sys
t = collections.defaultdict(lambda: collections.defaultdict(lambda: 1e9))
for f in glob.glob(sys.argv[1] + "/ab_*.csv"):
    side = f.rsplit("_", 2)[-2]
    for r in csv.DictReader(open(f)):
        if float(r["ms"] or 0) > 0:
            k = (r["variant"], r["shape"])
            t[k][side] = min(t[k][side], float(r["ms"]) * 1e3)
for v in ("forward", "backward_data", "backward_weight"):
    rs = [(s, d["old"], d["new"]) for (vv, s), d in sorted(t.items()) if vv == v and "old" in d and "new" in d]
    if not rs: continue
    g = math.exp(sum(math.log(n / o) for _, o, n in rs) / len(rs))
    print(f"{v}: best new / best old geomean {g:.4f} over {len(rs)} shapes")
    for s, o, n in rs: print(f"  {s:34s} old {o:7.2f} new {n:7.2f} us  {n / o:.3f}")
PY
for v in forward backward_data backward_weight; do
  $W/new/build/bin/ckgen_profiler_$v --shapes $W/shapes.csv --datatype fp16 --verify gpu --k-batch 0,4 \
    --warmup 0 --repeat 1 > $W/verify_$v.log 2>&1
  echo "$v rc=$? PASS $(grep -c ' PASS' $W/verify_$v.log) FAIL $(grep -c ' FAIL' $W/verify_$v.log)" | tee -a $OUT/verify.txt
  grep -m5 ' FAIL' $W/verify_$v.log >> $OUT/verify.txt
done
