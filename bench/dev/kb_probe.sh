#!/usr/bin/env bash
# GPU machine: forward wavelet_tma instances that take k_batch (auto), fp16 2D, over the K=36 box
# head at 100x100 and the 4-group 3x3 at k_batch $KB (verified): does a split reduction balance
# the 157 tiles of the K=36 head over 132 SMs?   bash bench/dev/kb_probe.sh -> $OUT/kb_probe.csv
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=${WORK:-/tmp/kb-work}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
# CONFIG (optional): a candidates file added to the default configs
extra=(); [ -n "${CONFIG:-}" ] && extra=(--config "$ROOT/configs/forward/default.yaml" --config "$ROOT/$CONFIG")
python3 -m ckgen.cli generate --arch sm_90a --variant forward "${extra[@]}" --datatype fp16 --ndim 2 --pipeline wavelet_tma \
  --kernels '*_kb0' -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$WORK/gen" -B "$WORK/gen/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/kb_build.log" 2>&1 || exit 1
ninja -C "$WORK/gen/build" -j "$(nproc)" >> "$OUT/kb_build.log" 2>&1 || { grep -m20 -A5 error "$OUT/kb_build.log"; exit 1; }
grep -E "^(name|head_box_3x3_256_36_100|grouped_3x3_g4_c64_100)," "$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv" \
  "$ROOT/templates/project/shapes/coverage.csv" -h | awk '!seen[$0]++' > "$WORK/shapes.csv"
timeout 300 "$WORK/gen/build/bin/ckgen_profiler_forward" --shapes "$WORK/shapes.csv" --datatype fp16 --verify gpu \
  --warmup 3 --repeat 10 --k-batch "${KB:-0,1,2,3,4,6,8}" --csv "$OUT/kb_probe.csv" > "$OUT/kb_probe.log" 2>&1
echo "rc=$?"
python3 - "$OUT/kb_probe.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["verified"] == "pass"]
for shape in sorted({r["shape"] for r in rows}):
    rs = sorted((r for r in rows if r["shape"] == shape), key=lambda r: float(r["ms"]))
    for r in rs[:8]:
        print(f"{shape:26s} {float(r['ms'])*1e3:7.2f} us kb={r['k_batch']:3s} {r['instance'][-62:]}")
print("failed:", sum(1 for r in csv.DictReader(open(sys.argv[1])) if r["verified"] not in ("pass", "none")))
PY
