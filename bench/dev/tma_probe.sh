#!/usr/bin/env bash
# Where a forward wavelet_tma launch spends its time (GPU machine): the same instances built
# with parts of the kernel switched off by bench/dev/probe_tma.patch (applied to this copy of the
# tree, reverted at the end; the product never carries it) and timed on the 1x1 / 3x3 rows:
#   full | NO_LOAD (no copies: the load thread only arrives) | NO_MMA | NO_STORE (no epilogue)
#   | NO_MMA+NO_STORE (the copies alone).  Results are not verified (they are wrong on purpose).
#   OUT=... bash bench/dev/tma_probe.sh   -> $OUT/probe_<mode>.csv, $OUT/probe.txt
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/probe-out}
WORK=${WORK:-/tmp/probe-work}
KERNELS=${KERNELS:-"*fp16_2d_t64x128x64_*wltma4_lm1x4_cshuffle_v8x8x8,*fp16_2d_t128x128x64_*wltma4_*cshuffle_v8x8x8_kb0,*fp16_2d_t64x64x64_*wltma4_lm1x4_cshuffle_v8x8x8"}
SHAPE=${SHAPE:-"r50_l3_1x1_512_256,r50_l2_1x1_128_512,r50_l4_1x1_1024_512,r50_l1_1x1_64_256,head_3x3_256_256_50"}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
(cd "$ROOT" && patch -p1 -s < bench/dev/probe_tma.patch) || exit 1
trap '(cd "$ROOT" && patch -p1 -R -s < bench/dev/probe_tma.patch)' EXIT
args=(); IFS=, read -ra globs <<< "$KERNELS"; for g in "${globs[@]}"; do args+=(--kernels "$g"); done
python3 -m ckgen.cli generate --arch sm_90a --variant forward "${args[@]}" -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
for mode in ${MODES:-full NO_LOAD NO_MMA NO_STORE NO_MMA+NO_STORE}; do
  flags=""; [ "$mode" != full ] && flags=$(echo "$mode" | tr '+' '\n' | sed 's/^/-DCKGEN_PROBE_/' | tr '\n' ';')
  b=$WORK/build_$mode
  cmake -S "$WORK/gen" -B "$b" -G Ninja -DCKGEN_BUILD_TESTS=OFF "-DCKGEN_EXTRA_FLAGS=$flags" > "$OUT/build_$mode.log" 2>&1 &&
    ninja -C "$b" -j "$(nproc)" ckgen_profiler_forward >> "$OUT/build_$mode.log" 2>&1 || { tail -20 "$OUT/build_$mode.log"; exit 1; }
  timeout 100 "$b/bin/ckgen_profiler_forward" --shapes "$ROOT/bench/dev/shapes_1x1.csv" --shape "$SHAPE" --datatype fp16 \
    --verify none --warmup 3 --repeat 7 --k-batch 1 --csv "$OUT/probe_$mode.csv" > "$OUT/probe_$mode.log" 2>&1
  echo "$mode rc=$?"
done
python3 - "$OUT" "${MODES:-full NO_LOAD NO_MMA NO_STORE NO_MMA+NO_STORE}" <<'PY' | tee "$OUT/probe.txt"
import csv, sys, glob, os
modes = sys.argv[2].split()
t = {}
for m in modes:
    f = f"{sys.argv[1]}/probe_{m}.csv"
    if os.path.exists(f):
        for r in csv.DictReader(open(f)):
            t[(r["shape"], r["instance"].split("_2d_")[1], m)] = float(r["ms"]) * 1e3
keys = sorted({k[:2] for k in t})
print(f"{'shape':24s} {'instance':58s} " + " ".join(f"{m:>15s}" for m in modes))
for s, i in keys:
    print(f"{s:24s} {i:58s} " + " ".join(f"{t.get((s, i, m), float('nan')):15.2f}" for m in modes))
PY
