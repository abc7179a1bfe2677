set -u
mkdir -p $OUT/dev $OUT/sweep
(GEN_ARGS="--variant backward_weight" BUILD_SETS=tests OUT=$OUT/dev bash bench/device.sh build > $OUT/dev/build_stdout.txt 2>&1) &
bp=$!
OUT=$OUT/sweep VARIANTS=backward_weight CAND_PREFIX=tma_ GEN_EXTRA="--pipeline wavelet_tma" PROF_RUNS="--k-batch 0 --split-reduce workspace; --k-batch 0; --split-reduce cluster --k-batch 2,4,8" timeout 330 bash bench/dev/perf_sweep.sh > $OUT/sweep/stdout.txt 2>&1
tail -5 $OUT/sweep/stdout.txt | cut -c1-150
wait $bp
tail -3 $OUT/dev/summary.txt
GEN_ARGS="--variant backward_weight" TEST_TIMEOUT=200 OUT=$OUT/dev timeout 220 bash bench/device.sh test 2>&1 | tail -15
