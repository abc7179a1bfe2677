#!/usr/bin/env bash
# The whole benchmark in one call on a machine of three or more GPUs (the device tool's
# nvidia-h200-x4): forward, backward_data and backward_weight side by side, one GPU each
# (bench/multi_gpu.sh running `bench/device.sh build bench peer` with GEN_ARGS="--variant V":
# the default set, the profiler over RetinaNet + coverage in fp16 / bf16, GPU-verified, and cuDNN
# on the same GPU), then merged on the machine (bench/merge_runs.py, `ckgen report`). With
# TESTS="<ckgen generate args>" and a fourth GPU, that tests-set build and its GoogleTests run
# beside them. Writes to $OUT:
#   <date>_<gpu>.csv   the benchmark (columns: docs/design.md), each row's ratio from its own job
#   targets.txt        the issue's targets per variant and datatype (merge_runs.py)
#   report.tgz         ckgen report: report.md, speedup.png, speedup_<variant>.png, roofline.png
#   fwd.tgz bd.tgz bw.tgz [tests.tgz] summary.txt   each job's folder, the jobs' summaries
#   bash bench/run_all.sh                                  (carry .gtest when TESTS is set)
#   TESTS="--variant forward --kernels *_win*" bash bench/run_all.sh
# On one GPU: bench/device.sh once per variant, then bench/merge_runs.py here.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$ngpu" -lt 3 ]; then
  echo "run_all: needs 3 GPUs, found $ngpu (on one GPU: bench/device.sh once per variant, then bench/merge_runs.py)" >&2
  exit 2
fi
jobs=("fwd|default|build bench peer|--variant forward" "bd|default|build bench peer|--variant backward_data"
      "bw|default|build bench peer|--variant backward_weight")
if [ -n "${TESTS:-}" ]; then
  [ "$ngpu" -ge 4 ] || { echo "run_all: TESTS needs a fourth GPU" >&2; exit 2; }
  jobs+=("tests|tests|build test|$TESTS")
fi
OUT=$OUT bash "$ROOT/bench/multi_gpu.sh" "${jobs[@]}" > /dev/null
tmp=$(mktemp -d)
for j in fwd bd bw; do tar xzf "$OUT/$j.tgz" -C "$tmp"; done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print $NF}')
csv=$OUT/$(date +%F)_$gpu.csv
export PYTHONPATH=$ROOT
python3 "$ROOT/bench/merge_runs.py" --out "$csv" --report-inputs "$tmp/rep" "$tmp/fwd" "$tmp/bd" "$tmp/bw" \
  > "$OUT/targets.txt" 2>&1 || { cat "$OUT/targets.txt"; exit 1; }
python3 -m ckgen.cli report --results "$tmp/rep/profiles.csv" --cudnn "$tmp/rep/cudnn.csv" -o "$tmp/report" > /dev/null
tar czf "$OUT/report.tgz" -C "$tmp" report
grep -E "geomean|done|rc=" "$OUT/summary.txt" | cut -c1-160 | head -40
cat "$OUT/targets.txt"
rm -rf "$tmp"
