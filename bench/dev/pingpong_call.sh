#!/usr/bin/env bash
# Ping-pong wavelet_tma instances on the GPU machine (~7 min): the tests set's wavelet_tma
# instances (every variant) built and their GoogleTests run (random sweep included); then the
# default set's forward / backward_data wavelet_tma instances profiled twice (fp16 and bf16,
# RetinaNet set plus the coverage rows, verified on the GPU) and, per shape, the best time with
# and without the ping-pong instances (waves 4 x 1 x 1, math waves 8): $OUT/pingpong_ab.txt.
set -u
OUT=${OUT:-/tmp/ckgen-out}
W=${W:-/tmp/pp}; mkdir -p "$W" "$OUT"
cat templates/project/shapes/retinanet_r50fpn_n2.csv > "$W/shapes.csv"
tail -n +2 templates/project/shapes/coverage.csv >> "$W/shapes.csv"
GEN_ARGS="--pipeline wavelet_tma" BUILD_SETS=tests TEST_TIMEOUT=200 WORK=$W/t OUT=$OUT/t \
  bash bench/device.sh build test > "$OUT/tests_run.txt" 2>&1
GEN_ARGS="--variant forward --variant backward_data --pipeline wavelet_tma" BUILD_SETS=default WORK=$W/d \
  OUT=$OUT/d bash bench/device.sh build > "$OUT/build_run.txt" 2>&1
for rep in 1 2; do
  for v in forward backward_data; do
    for dt in fp16 bf16; do
      timeout 150 "$W/d/gen_default/build/bin/ckgen_profiler_$v" --shapes "$W/shapes.csv" --datatype $dt \
        --verify gpu --warmup 3 --repeat 10 --csv "$W/prof_${v}_${dt}_$rep.csv" > "$W/prof_${v}_${dt}_$rep.log" 2>&1
      echo "profile $v $dt rep $rep rc=$? $(grep -ciE 'fail|mismatch' "$W/prof_${v}_${dt}_$rep.log") fail lines"
    done
  done
done > "$OUT/profile_run.txt"
python3 - "$W" <<'PY' | tee "$OUT/pingpong_ab.txt"
import csv, collections, glob, math, sys
t = collections.defaultdict(lambda: collections.defaultdict(lambda: 1e9))
name = {}
for f in glob.glob(sys.argv[1] + "/prof_*.csv"):
    for r in csv.DictReader(open(f)):
        ms = float(r.get("ms") or 0)
        if ms <= 0 or r.get("verified") not in ("pass", "skip"): continue
        k = (r["variant"], r["datatype"], r["shape"])
        side = "pp" if "_w4x1x1_" in r["instance"] and "_lm1x8_" in r["instance"] else "rest"
        if ms * 1e3 < t[k][side]:
            t[k][side] = ms * 1e3
            name[k + (side,)] = r["instance"]
for v in ("forward", "backward_data"):
    for dt in ("fp16", "bf16"):
        ratios = []
        for k in sorted(k for k in t if k[0] == v and k[1] == dt):
            rest, pp = t[k]["rest"], t[k]["pp"]
            if rest >= 1e9: continue
            best = min(rest, pp)
            ratios.append(best / rest)
            mark = " <- pp" if pp < rest else ""
            print(f"{v:14s} {dt} {k[2]:30s} rest {rest:8.2f} pp {pp:8.2f} us  best/rest {best / rest:.3f}{mark}"
                  + (f"  {name.get(k + ('pp',), '')}" if pp < rest else ""))
        if ratios:
            print(f"{v} {dt}: best-with-pp / best-without geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.4f} ({len(ratios)} rows)")
PY
tar czf "$OUT/pp_csv.tgz" -C "$W" $(cd "$W" && ls prof_*.csv prof_*.log)
