#!/usr/bin/env bash
# Compile every instance TU of a generated NVIDIA project with `nvcc -Xptxas -v` (device code
# only matters; objects are discarded) and keep ptxas' report per instance, for the register
# estimate calibration (bench/calibration/calibrate.py).
#   bench/calibration/nvcc_ptxas.sh GEN_DIR OUT_DIR [JOBS] [GENCODE]
set -u
gen=$(cd "$1" && pwd); out=$2; jobs=${3:-$(nproc)}; gencode=${4:-arch=compute_90a,code=sm_90a}
mkdir -p "$out"
export gen out gencode
find "$gen/instances" -name '*.cpp' | sort | xargs -P "$jobs" -I{} bash -c '
  f={}; v=$(basename "$(dirname "$f")"); n=$(basename "$f" .cpp)
  nvcc -x cu -std=c++17 -O3 -gencode "$gencode" -Xptxas -v -I"$gen/include" -I"$gen/instances/$v" \
       -c "$f" -o /dev/null > "$out/$n.txt" 2>&1
  echo "rc=$?" >> "$out/$n.txt"'
grep -l "rc=0" "$out"/*.txt | wc -l
grep -L "rc=0" "$out"/*.txt | head
