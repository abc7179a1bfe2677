#!/usr/bin/env bash
# GPU machine, one call: build the instances of one sweep config and profile them on a shapes
# file at the given split counts (0 = each instance's choice), run 1 verified on the GPU, run 2
# timing only; the summary keeps the TOP fastest (instance, split) per shape, best of the runs:
#   CONFIG=bench/dev/bw_rows_sweep.yaml SHAPES=bench/dev/shapes_rows_sweep.csv VARIANT=backward_weight \
#     KB=0,6,11,16,22 bash bench/dev/sweep_call.sh   -> $OUT/$NAME_{1,2}.csv, $OUT/$NAME.txt (NAME: sweep)
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
cd "$ROOT" || exit 1
W=${W:-/tmp/sweep}; NAME=${NAME:-sweep}; TOP=${TOP:-14}; DT=${DT:-fp16}; KB=${KB:-0}
t0=$SECONDS
# shellcheck disable=SC2086  # GEN_ARGS: extra generate filters (--datatype fp16 --ndim 2)
small_generate "$W/g" --config "$CONFIG" ${GEN_ARGS:-} && small_build "$W/g" "$W/g/build" || exit 1
cp "$W/g/build.log" "$OUT/build.log"
echo "build $((SECONDS - t0)) s"
for rep in 1 2; do
  timeout 200 "$W/g/build/bin/ckgen_profiler_$VARIANT" --shapes "$SHAPES" --datatype "$DT" --k-batch "$KB" \
    --verify $([ $rep = 1 ] && echo gpu || echo none) --warmup 3 --repeat 10 --csv "$OUT/${NAME}_$rep.csv" > "$OUT/${NAME}_$rep.log" 2>&1
  echo "profile $rep rc=$? FAIL lines: $(grep -c FAIL "$OUT/${NAME}_$rep.log")"
done
python3 - "$OUT" "$NAME" "$TOP" <<'PY' | tee "$OUT/$NAME.txt"
import csv, re, sys
t = {}
for rep in (1, 2):
    for r in csv.DictReader(open(f"{sys.argv[1]}/{sys.argv[2]}_{rep}.csv")):
        if r["verified"] in ("fail", "error") or not float(r["ms"] or 0): continue
        k = (r["shape"], re.sub(r"^grouped_conv_\w+?_(fp16|bf16)_\dd_", "", r["instance"]) + f" kb{r['k_batch']}")
        t[k] = min(t.get(k, 1e30), float(r["ms"]) * 1e3)
for s in sorted({k[0] for k in t}):
    rows = sorted((v, i) for (sh, i), v in t.items() if sh == s)
    print(f"== {s}")
    for v, i in rows[:int(sys.argv[3])]: print(f"  {v:8.2f}  {i}")
PY
