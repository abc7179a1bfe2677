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
python3 bench/dev/best_ab.py --trial '*_w4x1x1_*_lm1x8_*' --verified pass,skip --all-rows "$W"/prof_*.csv |
  tee "$OUT/pingpong_ab.txt"
tar czf "$OUT/pp_csv.tgz" -C "$W" $(cd "$W" && ls prof_*.csv prof_*.log)
