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
python3 bench/dev/best_ab.py --trial '*_w4x1x1_wt64x64x16_*_lm1x8_*' "$W"/prof_*.csv | tee "$OUT/pp_small_ab.txt"
tar czf "$OUT/pp_small_csv.tgz" -C "$W" $(cd "$W" && ls prof_*.csv)
