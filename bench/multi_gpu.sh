#!/usr/bin/env bash
# One call on a machine of several GPUs: bench/device.sh jobs side by side, one GPU each, the CPU
# cores split evenly between their builds. A job is "name|build sets|phases|ckgen generate args";
# its $OUT is packed as $OUT/<name>.tgz, its console as <name>.txt
# inside, and the jobs' summaries are concatenated into $OUT/summary.txt.
#   bash bench/multi_gpu.sh \
#     "win_tests|tests|build test|--variant forward --variant backward_weight --kernels *_win*" \
#     "fwd|default|build bench peer|--variant forward"
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
ngpu=$(nvidia-smi -L | wc -l)
[ "$#" -ge 1 ] || { echo "multi_gpu: no job (a job: \"name|build sets|phases|ckgen generate args\")" >&2; exit 2; }
[ "$#" -le "$ngpu" ] || { echo "multi_gpu: $# jobs for $ngpu GPUs" >&2; exit 2; }
jobs_cpu=$(( $(nproc) / $# ))
gpu=0
pids=()
names=()
for spec in "$@"; do
  IFS='|' read -r name sets phases gen <<< "$spec"
  mkdir -p "$OUT/$name"
  CUDA_VISIBLE_DEVICES=$gpu OUT=$OUT/$name WORK=/tmp/ckgen-work-$name JOBS=$jobs_cpu BUILD_SETS=$sets \
    GEN_ARGS=$gen PHASES=$phases bash "$ROOT/bench/device.sh" > "$OUT/$name/$name.txt" 2>&1 &
  pids+=($!)
  names+=("$name")
  gpu=$((gpu + 1))
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  echo "== ${names[$i]} (rc $?)" >> "$OUT/summary.txt"
  cat "$OUT/${names[$i]}/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
  tar czf "$OUT/${names[$i]}.tgz" -C "$OUT" "${names[$i]}" && rm -rf "${OUT:?}/${names[$i]}"
done
cat "$OUT/summary.txt"
