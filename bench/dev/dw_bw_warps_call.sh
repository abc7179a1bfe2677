#!/usr/bin/env bash
# GPU machine (~4 min): depthwise backward_weight window tiles at 3 / 4 / 6 / 8 warps
# (bench/dev/candidates/dww6_backward_weight.yaml beside the default set) over slice counts, built
# once per FLAG_SETS entry (flag_sweep.sh). Its first run (results/2026-11-28_H200_dw_bw_warps_prmt/)
# built "base:" and "prmt:-DCKGEN_BF16_PRMT", a probe switch for bf16's byte-permute conversion that
# direct_common.hpp has taken unconditionally since (the switch is gone).
#   bash bench/dev/dw_bw_warps_call.sh      # $OUT/slices.txt, $OUT/flags.txt, $OUT/sass_ops.txt
# sass_ops.txt: the bf16 64x64 window kernel's instruction mix per flag set.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT
VARIANTS=backward_weight DTYPE=fp16,bf16 PER_INSTANCE=1 OUT=$OUT/slices WORK=/tmp/dwbw-warps \
  KERNELS="*_2d_t*x64x1_w*_wt1x1x1_direct_v4x4x4_2st" SHAPES=${SHAPES:-$ROOT/bench/dev/shapes_dw.csv} \
  FLAG_SETS="${FLAG_SETS:-base:}" PROF_ARGS="--k-batch ${KB:-0,33,44,66,88,132}" \
  GEN_EXTRA="--config $ROOT/configs/backward_weight/default.yaml --config $ROOT/bench/dev/candidates/dww6_backward_weight.yaml" \
  bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/run.txt" 2>&1
cp "$OUT/slices/flags.txt" "$OUT/flags.txt" 2>/dev/null
python3 - "$OUT/slices" <<'PY' > "$OUT/slices.txt"
import csv, glob, sys, os
rows = []
for f in glob.glob(sys.argv[1] + "/flags_*_backward_weight.csv"):
    s = os.path.basename(f).split("_")[1]
    rows += [dict(r, set=s) for r in csv.DictReader(open(f)) if r["shape"].startswith(("dw_", "tma_"))]
best = {}
for r in rows:
    if r["verified"] == "pass":
        k = (r["shape"], r["datatype"], r["instance"].split("_2d_")[1], r["set"])
        best.setdefault(k, []).append((float(r["ms"]) * 1e3, r["k_batch"]))
for k in sorted(best):
    v = sorted(best[k])
    print(f"{k[0]:18s} {k[1]} {k[3]:5s} {k[2]:44s} " + " ".join(f"kb{kb}:{us:.2f}" for us, kb in v[:6]))
print("failed rows:", sum(1 for r in rows if r["verified"] != "pass"))
PY
for set in ${FLAG_SETS:-base:}; do
  s=${set%%:*}
  o=$(ls /tmp/dwbw-warps/build_$s/CMakeFiles/*/instances/backward_weight/*bf16_2d_t64x64x1_w4x1x1*.o 2>/dev/null | head -1)
  [ -n "$o" ] && { echo "== $s $o"; cuobjdump -sass "$o" | awk '/Function/ && /DirectPathE1E/ {p=1} /Function/ && !/DirectPathE1E/ {p=0} p' | grep -oE "^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9.]+" | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -12; }
done > "$OUT/sass_ops.txt" 2>&1
tar czf "$OUT/slices_csv.tgz" -C "$OUT" slices && rm -rf "$OUT/slices"
cat "$OUT/run.txt" "$OUT/slices.txt" "$OUT/sass_ops.txt" | tail -120
