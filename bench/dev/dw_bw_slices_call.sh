#!/usr/bin/env bash
# GPU machine (~1.5 min): the depthwise backward_weight slice counts (k_batch) of the default direct
# FMA instances on bench/dev/shapes_dw.csv, fp16 and bf16, verified (flag_sweep.sh, one build):
# automatic (66 slices for the 64x64 tile at 132 SMs) against 16-512.
#   bash bench/dev/dw_bw_slices_call.sh     # $OUT/slices.txt, $OUT/flags.txt, $OUT/slices_csv.tgz
# KERNELS / KB / GEN_EXTRA / SHAPES / FLAG_SETS / WORK override the instance globs, the slice
# counts, the extra `ckgen generate` arguments, the shapes (rows named dw_* or tma_* are summed
# up), flag_sweep.sh's flag sets (one build each, named in slices.txt) and the work folder, e.g.
# candidates beside the default set:
#   GEN_EXTRA="--config configs/backward_weight/default.yaml --config bench/dev/candidates/dwv2_backward_weight.yaml"
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
VARIANTS=backward_weight DTYPE=fp16,bf16 PER_INSTANCE=1 OUT=$OUT/slices WORK=${WORK:-/tmp/dwbw-slices} \
  KERNELS="${KERNELS:-*_2d_*x1_w*_wt1x1x1_direct_*}" SHAPES=${SHAPES:-$ROOT/bench/dev/shapes_dw.csv} \
  FLAG_SETS="${FLAG_SETS:-base:}" PROF_ARGS="--k-batch ${KB:-0,16,33,66,99,132,198,264,512}" \
  GEN_EXTRA="${GEN_EXTRA:-}" bash "$ROOT/bench/dev/flag_sweep.sh" > "$OUT/slices_run.txt" 2>&1
cp "$OUT/slices/flags.txt" "$OUT/flags.txt" 2>/dev/null
python3 - "$OUT/slices" <<'PY' > "$OUT/slices.txt"
import csv, glob, os, sys
rows = []
for f in glob.glob(sys.argv[1] + "/flags_*_backward_weight.csv"):
    s = os.path.basename(f)[len("flags_"):-len("_backward_weight.csv")]
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
tar czf "$OUT/slices_csv.tgz" -C "$OUT" slices && rm -rf "$OUT/slices"
cat "$OUT/slices_run.txt" "$OUT/slices.txt"
