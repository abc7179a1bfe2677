#!/usr/bin/env bash
# The same instances built with several sets of device-compiler definitions and profiled side by
# side (GPU machine), e.g. a template constant's candidate values:
#   FLAG_SETS="0: 4:-DCKGEN_TMA_PREFETCH=4 8:-DCKGEN_TMA_PREFETCH=8" OUT=... bash bench/dev/flag_sweep.sh
# FLAG_SETS: space-separated name:flags (flags ';'-separated). KERNELS: comma-separated globs.
# Writes $OUT/flags_<name>_<variant>.csv and $OUT/flags.txt (time per shape and set, geomean ratios;
# PER_INSTANCE=1: time per shape, instance and set instead). DTYPE: the profiler's --datatype
# (default fp16; e.g. fp16,bf16 with PER_INSTANCE=1, whose rows name the datatype).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/flags-out}
WORK=${WORK:-/tmp/flags-work}
VARIANTS=${VARIANTS:-forward}
KERNELS=${KERNELS:-"*_fp16_2d_*wltma*"}
SHAPES=${SHAPES:-$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv}
VERIFY=${VERIFY:-gpu}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
args=(); IFS=, read -ra globs <<< "$KERNELS"; for g in "${globs[@]}"; do args+=(--kernels "$g"); done
for v in $VARIANTS; do args+=(--variant "$v"); done
python3 -m ckgen.cli generate --arch sm_90a "${args[@]}" ${GEN_EXTRA:-} -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
names=()
for set in ${FLAG_SETS:-"base:"}; do
  name=${set%%:*} flags=${set#*:}; names+=("$name")
  b=$WORK/build_$name; t0=$SECONDS
  cmake -S "$WORK/gen" -B "$b" -G Ninja -DCKGEN_BUILD_TESTS=OFF "-DCKGEN_EXTRA_FLAGS=$flags" > "$OUT/build_$name.log" 2>&1 &&
    ninja -C "$b" -j "$(nproc)" >> "$OUT/build_$name.log" 2>&1 || { tail -20 "$OUT/build_$name.log"; exit 1; }
  echo "build $name ($flags) $((SECONDS - t0)) s"
  for v in $VARIANTS; do
    t0=$SECONDS
    timeout ${PROF_TIMEOUT:-150} "$b/bin/ckgen_profiler_$v" --shapes "$SHAPES" --datatype "${DTYPE:-fp16}" --verify "$VERIFY" \
      --warmup 3 --repeat 7 ${PROF_ARGS:-} --csv "$OUT/flags_${name}_$v.csv" > "$OUT/flags_${name}_$v.log" 2>&1
    echo "profile $name $v rc=$? in $((SECONDS - t0)) s; FAIL lines: $(grep -c FAIL "$OUT/flags_${name}_$v.log")"
  done
done
python3 - "$OUT" "${PER_INSTANCE:-0}" "${names[@]}" <<'PY' | tee "$OUT/flags.txt"
import csv, sys, math, os
out, per_instance, names = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
best = {}  # (variant, shape, set) -> best ms over instances
inst = {}  # (variant, shape, instance, set) -> ms
for n in names:
    for v in ("forward", "backward_data", "backward_weight"):
        f = f"{out}/flags_{n}_{v}.csv"
        if not os.path.exists(f): continue
        for r in csv.DictReader(open(f)):
            if r["verified"] not in ("pass", "none") or not float(r["ms"] or 0): continue
            ms = float(r["ms"]) * 1e3
            k = (v, r["shape"], n); best[k] = min(best.get(k, 1e30), ms)
            k = (v, r["shape"], r["instance"], n); inst[k] = min(inst.get(k, 1e30), ms)
if per_instance:
    print(f"{'shape':30s} {'instance':72s} " + " ".join(f"{n:>15s}" for n in names))
    for v, s, i in sorted({k[:3] for k in inst}):
        print(f"{s:30s} {i.replace('grouped_conv_', ''):72s} " + " ".join(f"{inst.get((v, s, i, n), float('nan')):15.2f}" for n in names))
    sys.exit(0)
keys = sorted({k[:2] for k in best})
print(f"{'variant':14s} {'shape':30s} " + " ".join(f"{n:>9s}" for n in names))
for v, s in keys:
    print(f"{v:14s} {s:30s} " + " ".join(f"{best.get((v, s, n), float('nan')):9.2f}" for n in names))
for n in names[1:]:
    r = [best[(v, s, n)] / best[(v, s, names[0])] for v, s in keys if (v, s, n) in best and (v, s, names[0]) in best]
    ri = [inst[k[:3] + (n,)] / inst[k] for k in inst if k[3] == names[0] and k[:3] + (n,) in inst]
    if r:
        print(f"{n} / {names[0]}: best per shape geomean {math.exp(sum(map(math.log, r)) / len(r)):.4f} ({len(r)} shapes); "
              f"per instance geomean {math.exp(sum(map(math.log, ri)) / len(ri)):.4f} ({len(ri)} rows)")
PY
