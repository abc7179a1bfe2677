#!/usr/bin/env bash
# One GPU-machine call for a change to the im2col copy (tma_staging.hpp) that the C=3 stem runs
# through: forward and backward_weight, every fp16 2D wavelet_tma instance built with this tree's
# templates (new) and with the headers in ./ab_prev_include (old; carry it), the stem
# (r50_conv1_7x7s2) profiled old, new, old, new (the new side's first run verified on the GPU),
# Nsight Compute times of the copy kernel alone on each side, the copy's SASS, cuDNN on the same
# shape, and the forward and backward_weight GTests of the tests set (bench/device.sh build test,
# in the background). Writes $OUT/ab.txt, $OUT/ab.tgz, $OUT/cudnn.csv, $OUT/gt/{summary.txt,logs.tar.gz}.
set -u
ROOT=$(pwd)
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
W=/tmp/stem_ab; rm -rf $W; mkdir -p $W/logs $OUT/gt
OUT=$OUT/gt WORK=/tmp/stem_gt BUILD_SETS=tests GEN_ARGS="--variant forward --variant backward_weight" JOBS=8 \
  bash bench/device.sh build test > $W/logs/gtests.log 2>&1 &
gt=$!
S=$W/stem.csv
head -1 templates/project/shapes/retinanet_r50fpn_n2.csv > $S
grep '^r50_conv1_7x7s2,' templates/project/shapes/retinanet_r50fpn_n2.csv >> $S
for side in new old; do
  python3 -m ckgen.cli generate --arch sm_90a --variant forward --variant backward_weight --datatype fp16 --ndim 2 \
    --pipeline wavelet_tma -o $W/$side -q
  python3 -m ckgen.cli emit-cmake -o $W/$side --platform nvidia --gpu-targets 90a > /dev/null
  if [ $side = old ]; then cp -r ab_prev_include/ckgen/. $W/$side/include/ckgen/; fi
  cmake -S $W/$side -B $W/$side/build -G Ninja -DCKGEN_BUILD_TESTS=OFF > $W/logs/cmake_$side.log 2>&1
  ninja -C $W/$side/build -j 8 > $W/logs/build_$side.log 2>&1 || tail -20 $W/logs/build_$side.log
done
for v in forward backward_weight; do for i in 1 2; do for side in old new; do
  verify=none; [ $side$i = new1 ] && verify=gpu
  timeout 120 $W/$side/build/bin/ckgen_profiler_$v --shapes $S --datatype fp16 --verify $verify --warmup 3 --repeat 10 \
    --csv $W/ab_${v}_${side}_$i.csv > $W/logs/ab_${v}_${side}_$i.log 2>&1
  echo "$v $side $i rc=$? verify=$verify FAIL lines: $(grep -c FAIL $W/logs/ab_${v}_${side}_$i.log)"
done; done; done | tee $OUT/ab.txt
for v in forward backward_weight; do for side in old new; do
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv -k regex:im2col \
    $W/$side/build/bin/ckgen_profiler_$v --shapes $S --datatype fp16 --kernels "*_t128x128x64_*wltma4*" --verify none \
    --warmup 0 --repeat 1 --iters 1 --timing loop > $W/ncu_${v}_$side.csv 2> $W/logs/ncu_${v}_$side.log
  echo "ncu im2col $v $side: $(grep gpu__time_duration $W/ncu_${v}_$side.csv | head -3 | awk -F'","' '{print $NF}' | tr -d '"' | tr '\n' ' ') ns"
done; done | tee -a $OUT/ab.txt
obj=$(find $W/new/build -name "*fwd_fp16_2d_t128x128x64*wltma4*.o" | head -1)
cuobjdump -sass -fun '_ZN5ckgen13im2col_kernelItEEvPKT_PS1_NS_10Im2colArgsE' "$obj" > $W/im2col_new.sass 2>&1
python3 bench/peer_cudnn.py $OUT/cudnn.csv $S > $W/logs/cudnn.log 2>&1
grep r50_conv1 $W/logs/cudnn.log | tee -a $OUT/ab.txt
python3 - "$W" <<'PY' | tee -a "$OUT/ab.txt"
import csv, glob, sys, collections
t = collections.defaultdict(dict)
for f in glob.glob(sys.argv[1] + "/ab_*_*_*.csv"):
    side, run = f.rsplit("_", 2)[-2], f.rsplit("_", 1)[-1][:-4]
    for r in csv.DictReader(open(f)):
        if float(r["ms"] or 0) > 0:
            t[(r["variant"], r["instance"])][(side, run)] = float(r["ms"])
for v in sorted({k[0] for k in t}):
    ks = [k for k in t if k[0] == v and len(t[k]) == 4]
    best = {s: min(min(t[k][(s, "1")], t[k][(s, "2")]) for k in ks) for s in ("old", "new")}
    print(f"{v}: best old {best['old']*1e3:.1f} us, best new {best['new']*1e3:.1f} us over {len(ks)} instances")
    for k in sorted(ks, key=lambda k: t[k][("new", "1")])[:4]:
        print("   ", k[1], " ".join(f"{s}{r} {t[k][(s, r)]*1e3:.1f}" for s in ("old", "new") for r in "12"))
PY
wait $gt
cat $OUT/gt/summary.txt
cd $W && tar czf $OUT/ab.tgz ab_*.csv ncu_*.csv im2col_new.sass logs
