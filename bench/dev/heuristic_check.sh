#!/usr/bin/env bash
# GPU machine (or any machine with the built project): the dispatcher's cost model against a
# benchmark's profiles. For VARIANT, every datatype and shape set profiled: `ckgen check-heuristic`
# over the profile CSVs (PROFILES: a folder of prof_<set>_<variant>_<dtype>.csv, or a
# logs.tar.gz of bench/device.sh holding them) with the project GEN built by bench/device.sh
# (its lib/libckgen_dispatch.so selects). -> $OUT/heuristic_<variant>.tar.gz (tables and JSON)
# and a one-line summary per file on stdout.
#   VARIANT=forward GEN=/tmp/wf/gen_default PROFILES=bench/results/<run>/logs.tar.gz bash bench/dev/heuristic_check.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
V=${VARIANT:?forward, backward_data or backward_weight}
T=$(mktemp -d)
P=$PROFILES
if [[ $P == *.tar.gz ]]; then mkdir -p "$T/prof" && tar xzf "$P" -C "$T/prof" && P=$T/prof; fi
mkdir -p "$OUT" "$T/h"
export PYTHONPATH=$ROOT NO_COLOR=1 COLUMNS=250
for f in "$P"/prof_*_"$V"_*.csv; do
  b=$(basename "$f" .csv)
  set=${b#prof_}
  set=${set%_"$V"_*}
  timeout 120 python3 -m ckgen.cli check-heuristic -o "$GEN" --results "$f" \
    --shapes "$ROOT/templates/project/shapes/$set.csv" --json "$T/h/$b.json" > "$T/h/$b.txt" 2>&1
  echo "$b rc=$? $(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['summary']; print('geomean %.3f median %.3f max %.2f within10 %.2f' % (s['geomean_ratio'], s['median_ratio'], s['max_ratio'], s['within_10pct']))" "$T/h/$b.json" 2>/dev/null)"
done
tar czf "$OUT/heuristic_$V.tar.gz" -C "$T/h" .
rm -rf "$T"
