#!/usr/bin/env bash
# A/B on the GPU machine: the backward_weight wavelet_tma instances (fp16 2D) built twice, with
# this tree's template library (new) and with the headers in ./ab_prev_include (old: copy a
# previous commit's templates/include there), profiled old, new, old, new on the RetinaNet set
# without verification: $OUT/ab.tgz holds ab_<old|new>_<run>.csv.
set -u
ROOT=$(pwd)
export PYTHONPATH=$ROOT
W=/tmp/ab2; mkdir -p $W $OUT
for v in new old; do
  python3 -m ckgen.cli generate --arch sm_90a --variant backward_weight --datatype fp16 --ndim 2 --pipeline wavelet_tma -o $W/$v -q
  python3 -m ckgen.cli emit-cmake -o $W/$v --platform nvidia --gpu-targets 90a > /dev/null
  if [ $v = old ]; then cp -r ab_prev_include/ckgen/. $W/$v/include/ckgen/; fi
  cmake -S $W/$v -B $W/$v/build -G Ninja -DCKGEN_BUILD_TESTS=OFF > $OUT/cmake_$v.log 2>&1
done
ninja -C $W/new/build -j 8 > $OUT/build_new.log 2>&1 &
ninja -C $W/old/build -j 8 > $OUT/build_old.log 2>&1; wait
for i in 1 2; do for v in old new; do
  $W/$v/build/bin/ckgen_profiler_backward_weight --shapes templates/project/shapes/retinanet_r50fpn_n2.csv --datatype fp16 --verify none --warmup 3 --repeat 10 --csv $OUT/ab_${v}_$i.csv > $OUT/ab_${v}_$i.log 2>&1
  echo "$v $i rc=$?"
done; done
cd $OUT && tar czf ab.tgz ab_*.csv && rm -f ab_*.csv ab_*.log
