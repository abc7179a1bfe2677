#!/usr/bin/env bash
# GPU machine (for the build), one call: how the dispatcher selects with the shipped H100 tuning
# database (configs/tuning/sm_90a_H100.json) against the cost model alone, on the profiles it was
# made from (PROFILES: a merged profile CSV, every default instance timed per shape):
#   cost model alone; the shipped database (exact entries); a database of the even shapes judged
#   on the odd ones (the neighbour ranking). fp16 2D forward + backward_weight instances.
#   PROFILES=allprof.csv SHAPES=allshapes.csv bash bench/dev/db_check.sh -> $OUT/db_*.json, db_check.txt
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
cd "$ROOT" || exit 1
W=${W:-/tmp/dbcheck}
ckgen() { python3 -m ckgen.cli "$@"; }
t0=$SECONDS
small_generate "$W/g" --set default --variant forward --variant backward_weight --datatype fp16 --ndim 2 &&
  NINJA_TARGETS=ckgen_dispatch small_build "$W/g" "$W/g/build" || exit 1
echo "build $((SECONDS - t0)) s" | tee "$OUT/db_check.txt"
run() {  # run <label> [check-heuristic args]
  local label=$1; shift
  ckgen check-heuristic -o "$W/g" --results "$PROFILES" --shapes "$SHAPES" --json "$OUT/db_$label.json" "$@" \
    > "$W/$label.txt" 2>&1
  echo "== $label rc=$?: $(python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$OUT/db_$label.json")" \
    | tee -a "$OUT/db_check.txt"
}
run cost_model
run shipped --db configs/tuning/sm_90a_H100.json
ckgen tune -o "$W/g" --shapes "$SHAPES" --from-csv "$PROFILES" --part even --db "$W/db_even.json" >> "$OUT/db_check.txt" 2>&1
run even_on_odd --db "$W/db_even.json" --part odd
run cost_model_odd --part odd
tar czf "$OUT/db_logs.tar.gz" -C "$W" cost_model.txt shipped.txt even_on_odd.txt cost_model_odd.txt
