#!/usr/bin/env bash
# 64-column ping-pong rings (bench/dev/pp_small_<variant>.yaml) beside the forward and
# backward_data default sets (~6 min): both projects built, the profiler over the RetinaNet and
# coverage shapes in fp16 with GPU verification; per shape the best time with the trial rings
# against the best without: $OUT/pp_small_ab.txt (profiler CSVs in $OUT/pp_small_csv.tgz).
set -u
OUT=${OUT:-/tmp/ckgen-out}
W=${W:-/tmp/pps}; mkdir -p "$W" "$OUT"
for v in forward backward_data; do
  GEN_ARGS="--variant $v --config configs/$v/default.yaml --config bench/dev/pp_small_$v.yaml" BUILD_SETS=default \
    WORK=$W/$v OUT=$W/out_$v bash bench/device.sh build > "$W/build_$v.txt" 2>&1 &
done
wait
for v in forward backward_data; do
  for set in retinanet_r50fpn_n2 coverage; do
    timeout 150 "$W/$v/gen_default/build/bin/ckgen_profiler_$v" --shapes "templates/project/shapes/$set.csv" \
      --datatype fp16 --verify gpu --warmup 3 --repeat 10 --csv "$W/prof_${v}_$set.csv" > "$W/prof_${v}_$set.log" 2>&1
    echo "profile $v $set rc=$?"
  done
done > "$OUT/profile_run.txt"
python3 - "$W" <<'PY' | tee "$OUT/pp_small_ab.txt"
import csv, collections, glob, math, sys
t = collections.defaultdict(lambda: collections.defaultdict(lambda: 1e9)); name = {}
for f in glob.glob(sys.argv[1] + "/prof_*.csv"):
    for r in csv.DictReader(open(f)):
        ms = float(r.get("ms") or 0)
        if ms <= 0 or r.get("verified") != "pass": continue
        k = (r["variant"], r["shape"])
        trial = "_w4x1x1_wt64x64x16_" in r["instance"] and "_lm1x8_" in r["instance"]
        side = "trial" if trial else "rest"
        if ms * 1e3 < t[k][side]:
            t[k][side] = ms * 1e3; name[k + (side,)] = r["instance"]
for v in ("forward", "backward_data"):
    rs = []
    for k in sorted(k for k in t if k[0] == v):
        rest, tr = t[k]["rest"], t[k]["trial"]
        b = min(rest, tr); rs.append(b / rest)
        if tr < rest:
            print(f"{v:14s} {k[1]:30s} rest {rest:8.2f} trial {tr:8.2f} us  {b / rest:.3f}  {name[k + ('trial',)]}")
    if rs:
        print(f"{v}: best-with-trial / best-without geomean {math.exp(sum(map(math.log, rs)) / len(rs)):.4f} ({len(rs)} rows)")
PY
tar czf "$OUT/pp_small_csv.tgz" -C "$W" $(cd "$W" && ls prof_*.csv)
