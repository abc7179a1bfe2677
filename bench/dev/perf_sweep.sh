#!/usr/bin/env bash
# Side-by-side sweep on the GPU machine: the default instances and the large-tile candidates
# (bench/dev/candidates/<variant>.yaml), fp16 2D, every RetinaNet shape, GPU-verified.
#   bash bench/dev/perf_sweep.sh      -> $OUT/sweep_<variant>.csv, $OUT/sweep.txt (best per shape)
#   CAND_PREFIX=stem_ VARIANTS=backward_data bash bench/dev/perf_sweep.sh   # candidates/stem_backward_data.yaml
#   GEN_EXTRA / PROF_ARGS: extra `ckgen generate` / profiler arguments (word-split), e.g.
#   GEN_EXTRA="--pipeline wavelet_tma" PROF_ARGS="--k-batch 0,1,2,4,8"
#   NDIM=3 SHAPES=...: the 3D instances (default 2D)
#   DTYPE=fp16,bf16: the datatypes generated and profiled (default fp16)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/sweep-out}
WORK=${WORK:-/tmp/sweep-work}
VARIANTS=${VARIANTS:-"forward backward_data backward_weight"}
SHAPES=${SHAPES:-$ROOT/templates/project/shapes/retinanet_r50fpn_n2.csv}
CAND_PREFIX=${CAND_PREFIX:-}  # candidates/<CAND_PREFIX><variant>.yaml
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1
args=()
for v in $VARIANTS; do args+=(--variant "$v" --config "$ROOT/configs/$v/default.yaml" --config "$ROOT/bench/dev/candidates/$CAND_PREFIX$v.yaml"); done
# shellcheck disable=SC2086
IFS=, read -ra dts <<< "${DTYPE:-fp16}"; for d in "${dts[@]}"; do args+=(--datatype "$d"); done
python3 -m ckgen.cli generate --arch sm_90a "${args[@]}" --ndim "${NDIM:-2}" ${GEN_EXTRA:-} -o "$WORK/gen" -q || exit 1
python3 -m ckgen.cli emit-cmake -o "$WORK/gen" --platform nvidia --gpu-targets 90a > /dev/null || exit 1
cmake -S "$WORK/gen" -B "$WORK/gen/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$OUT/build.log" 2>&1 || exit 1
t0=$SECONDS; ninja -C "$WORK/gen/build" -j "$(nproc)" >> "$OUT/build.log" 2>&1 || { grep -m20 -A5 error "$OUT/build.log"; exit 1; }
echo "build $((SECONDS - t0)) s"
# PROF_RUNS (optional): several profiler argument sets separated by ';', each run after the
# other into sweep_<variant>_<i>.csv (the summary below reads them all), e.g.
#   PROF_RUNS="--k-batch 0; --split-reduce cluster --k-batch 2,4,8"
IFS=';' read -r -a runs <<< "${PROF_RUNS:-${PROF_ARGS:-}}"
[ ${#runs[@]} -eq 0 ] && runs=("")
for v in $VARIANTS; do
  for i in "${!runs[@]}"; do
    t0=$SECONDS
    tag=$v; [ ${#runs[@]} -gt 1 ] && tag=${v}_$i
    # shellcheck disable=SC2086
    timeout 150 "$WORK/gen/build/bin/ckgen_profiler_$v" --shapes "$SHAPES" --datatype "${DTYPE:-fp16}" --verify gpu \
      --warmup 3 --repeat 7 ${runs[$i]} --csv "$OUT/sweep_$tag.csv" > "$OUT/sweep_$tag.log" 2>&1
    echo "profile $tag (${runs[$i]}) rc=$? in $((SECONDS - t0)) s; FAIL lines: $(grep -c FAIL "$OUT/sweep_$tag.log")"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/sweep.txt"
import csv, sys, glob, collections
rows = [r for f in sorted(glob.glob(sys.argv[1] + "/sweep_*.csv")) for r in csv.DictReader(open(f))]
ok = [r for r in rows if r["verified"] == "pass" and float(r["ms"] or 0) > 0]
wins = collections.Counter()
for key in sorted({(r["variant"], r["shape"], r["datatype"]) for r in ok}):
    rs = sorted((r for r in ok if (r["variant"], r["shape"], r["datatype"]) == key), key=lambda r: float(r["ms"]))
    wins[(key[0], rs[0]["instance"])] += 1
    print(f"{key[0]:16s} {key[1]:30s} {float(rs[0]['ms'])*1e3:8.2f} us {rs[0]['instance']}")
for (v, i), n in wins.most_common():
    print(f"wins {n:3d} {v} {i}")
print("failed rows:", sum(1 for r in rows if r["verified"] not in ("pass", "none")))
PY
