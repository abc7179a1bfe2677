#!/usr/bin/env bash
# The model-zoo corpus (bench/shapes/models.csv) on the GPU machine, in one call of < 10 minutes:
#   (A) issue 50 item 8: the best default instance of every corpus layer against cuDNN, per model;
#   (B) issue 49 item 4: the dispatcher's pick, leave one model out (bench/heuristic_eval.py).
#
#   bash bench/device_corpus.sh                                     # fp16: (A) and (B)
#   DTYPES=bf16 bash bench/device_corpus.sh                         # bf16: (A) and, time left, (B)
#   SHAPES_CSV=r.csv MAP_CSV=r_map.csv METHODS=cost,db EVAL_DB=configs/tuning/sm_90a_H200.json \
#     bash bench/device_corpus.sh          # random layers (bench/random_layers.py --map), shipped db
#   VARIANTS=forward DTYPES="fp16 bf16" PHASES="build peer profile report" bash bench/device_corpus.sh
#
# Phases (PHASES, default all):
#   build    bench/corpus_shapes.py (the corpus' 666 unique problems, round-robin over models);
#            ckgen generate of the default set for ARCH, the VARIANTS and DTYPES (every ndim, or
#            NDIMS), SHARD instances a translation unit; cmake (no GoogleTest) + ninja
#   peer     cuDNN over the same problems and DTYPES (bench/peer_corpus.py: CUDA-graph replay,
#            cudnn.benchmark), at most PEER_LIMIT s; after the build (PEER_WITH_BUILD=0, the
#            default) or in the background while ninja builds (PEER_WITH_BUILD=1: saves the
#            peer's time, but cuDNN's sub-10 us rows read up to 1.2x slower with every core busy)
#   profile  each profiler over the corpus, one datatype and variant at a time, --verify none,
#            --warmup WARMUP --repeat REPEAT --iters ITERS, --k-batch KBATCH; each run gets an
#            equal share of the time left before EVAL_RESERVE s remain; a run cut short keeps its
#            finished problems (the CSV is written problem by problem)
#   eval     bench/heuristic_eval.py on EVAL_DTYPES (default DTYPES): cost model alone, top-8
#            of the cost model, tuning database of the other models (leave one model out);
#            folds past the time box are skipped (named in the summary)
#   report   bench/corpus_report.py: the benchmark CSV, the per-model table and plot;
#            corpus_shapes.py --check: the corpus rows no default instance serves
#
# $OUT at the end (8 files; TAG defaults to the DTYPES joined by '_'):
#   summary.txt                    every step's rc and seconds, the counts, the tables
#   cudnn_TAG.csv                  cuDNN's times
#   TAG_models.csv / .md / .png    (A): benchmark rows, per-model table, plot (png: matplotlib)
#   lomo_TAG.md, lomo_TAG.csv      (B): summary tables, one line per method x layer
#   raw_TAG.tar                    profiler CSVs (gzip), corpus.csv, corpus_map.csv,
#                                  unsupported.csv, every log
# While it runs, the profiler CSVs lie in $OUT/prof/ (gzipped as each run ends), so a call killed
# from outside still brings them back.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/ckgen-corpus-out}
WORK=${WORK:-/tmp/ckgen-corpus-work}
PHASES=${PHASES:-"build peer profile eval report"}
VARIANTS=${VARIANTS:-"forward backward_data backward_weight"}
DTYPES=${DTYPES:-fp16}
EVAL_DTYPES=${EVAL_DTYPES:-$DTYPES}
NDIMS=${NDIMS:-}    # e.g. "2 3"; default every ndim of the corpus
MODELS=${MODELS:-}  # e.g. resnet50,vgg16_bn; default every model
KERNELS=${KERNELS:-}  # name globs (space-separated) for `ckgen generate --kernels`; default all
SHAPES_CSV=${SHAPES_CSV:-}  # a shapes CSV to run instead of the corpus, with MAP_CSV (its corpus map)
MAP_CSV=${MAP_CSV:-}
METHODS=${METHODS:-cost,topk,lomo_db}  # bench/heuristic_eval.py methods; "db" needs EVAL_DB
EVAL_DB=${EVAL_DB:-}        # a tuning database for the "db" method (e.g. configs/tuning/<arch>_<gpu>.json)
ARCH=${ARCH:-sm_90a}
TARGETS=${TARGETS:-90a}
JOBS=${JOBS:-$(nproc)}
SHARD=${SHARD:-4}
WARMUP=${WARMUP:-1}
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-3}
KBATCH=${KBATCH:-0}
BUDGET=${BUDGET:-530}            # seconds for the whole script
PEER_LIMIT=${PEER_LIMIT:-200}  # the profiles wait for it
PEER_WITH_BUILD=${PEER_WITH_BUILD:-0}  # 1: time cuDNN beside the ninja build (see peer above)
EVAL_RESERVE=${EVAL_RESERVE:-120}  # seconds kept after profiling for eval + report + packing
TAG=${TAG:-$(echo $DTYPES | tr ' ' '_')}
left() { echo $((BUDGET - SECONDS)); }
LOGS=$WORK/logs
GEN=$WORK/gen
CORPUS=$WORK/corpus
PROF=$OUT/prof
mkdir -p "$OUT" "$WORK" "$LOGS" "$PROF" "$CORPUS"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 NO_COLOR=1 COLUMNS=200
unset CKGEN_TUNING_DB
ckgen() { python3 -m ckgen.cli "$@"; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
log() { echo "[$(date +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
comma() { echo "$*" | tr ' ' ','; }
finish() {
  cp -f "$CORPUS"/*.csv "$LOGS/" 2>/dev/null
  tar -cf "$OUT/raw_$TAG.tar" -C "$OUT" prof -C "$WORK" logs 2>/dev/null && rm -rf "$PROF"
  log "done (phases: $PHASES); out: $(ls "$OUT" | tr '\n' ' ')"
}
trap finish EXIT

: > "$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$OUT/summary.txt"
log "ckgen $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) arch=$ARCH variants=[$VARIANTS] dtypes=[$DTYPES] eval=[$EVAL_DTYPES] jobs=$JOBS shard=$SHARD warmup=$WARMUP repeat=$REPEAT iters=$ITERS k_batch=$KBATCH budget=$BUDGET"

corpus_args=()
[ -n "$NDIMS" ] && corpus_args+=(--ndim "$(comma $NDIMS)")
[ -n "$MODELS" ] && corpus_args+=(--models "$MODELS")
if [ -n "$SHAPES_CSV" ]; then  # another problem set as the corpus (e.g. bench/random_layers.py --map)
  cp "$SHAPES_CSV" "$CORPUS/corpus.csv" && cp "$MAP_CSV" "$CORPUS/corpus_map.csv" || exit 1
  log "corpus: $SHAPES_CSV, map $MAP_CSV"
else
  python3 "$ROOT/bench/corpus_shapes.py" --out-dir "$CORPUS" "${corpus_args[@]}" 2>&1 | tee -a "$OUT/summary.txt"
fi
SHAPES=$CORPUS/corpus.csv
[ -s "$SHAPES" ] || { log "no corpus shapes"; exit 1; }

gen_args=()
for v in $VARIANTS; do gen_args+=(--variant "$v"); done
for d in $DTYPES; do gen_args+=(--datatype "$d"); done
for n in $NDIMS; do gen_args+=(--ndim "$n"); done
read -ra kernel_globs <<< "$KERNELS"  # no pathname expansion of the globs
for k in "${kernel_globs[@]}"; do gen_args+=(--kernels "$k"); done

if has build; then
  t0=$SECONDS
  n=$(ckgen list-instances --arch "$ARCH" "${gen_args[@]}" --format names 2> /dev/null | grep -c grouped_conv_)
  timeout 180 python3 -m ckgen.cli generate --arch "$ARCH" "${gen_args[@]}" --shard-size "$SHARD" -j "$JOBS" \
    -o "$GEN" -q > "$LOGS/generate.log" 2>&1 \
    && timeout 60 python3 -m ckgen.cli emit-cmake -o "$GEN" --platform nvidia --gpu-targets "$TARGETS" >> "$LOGS/generate.log" 2>&1 \
    && timeout 120 cmake -S "$GEN" -B "$GEN/build" -G Ninja -DCKGEN_BUILD_TESTS=OFF > "$LOGS/cmake.log" 2>&1
  rc=$?
  log "generate + configure rc=$rc in $((SECONDS - t0)) s: $n instances"
  [ $rc -eq 0 ] || { tail -30 "$LOGS/generate.log" "$LOGS/cmake.log" | tee -a "$OUT/summary.txt"; exit 1; }
fi

peer_pid=""
start_peer() {
  timeout $((PEER_LIMIT + 60)) python3 "$ROOT/bench/peer_corpus.py" --datatype "$(comma $DTYPES)" \
    --variants "$(comma $VARIANTS)" --time-limit "$PEER_LIMIT" --out "$OUT/cudnn_$TAG.csv" "$SHAPES" \
    > "$LOGS/peer.log" 2>&1 &
  peer_pid=$!
  peer_t0=$SECONDS
}
has peer && [ "$PEER_WITH_BUILD" = 1 ] && start_peer

if has build; then
  t0=$SECONDS
  bt=$(( $(left) - EVAL_RESERVE - 90 ))  # leave at least 90 s of profiling
  timeout "$bt" ninja -C "$GEN/build" -j "$JOBS" > "$LOGS/build.log" 2>&1
  rc=$?
  log "build rc=$rc in $((SECONDS - t0)) s (time box $bt s): $(tail -1 "$LOGS/build.log" | cut -c1-120)"
  [ $rc -eq 0 ] || { grep -m 20 -B2 -A6 -E "error|FAILED" "$LOGS/build.log" | tee -a "$OUT/summary.txt"; }
fi

has peer && [ -z "$peer_pid" ] && start_peer  # on a quiet machine

if [ -n "$peer_pid" ]; then
  wait "$peer_pid"
  log "peer rc=$? in $((SECONDS - peer_t0)) s (beside the build: $PEER_WITH_BUILD): $(tail -1 "$LOGS/peer.log")"
  grep -c "^skip" "$LOGS/peer.log" | xargs -I{} echo "peer: {} skipped (see peer.log)" | tee -a "$OUT/summary.txt"
fi

if has profile; then
  runs=()
  for d in $DTYPES; do for v in $VARIANTS; do runs+=("$v:$d"); done; done
  n_left=${#runs[@]}
  for r in "${runs[@]}"; do
    v=${r%%:*}
    d=${r##*:}
    bin=$GEN/build/bin/ckgen_profiler_$v
    n_left=$((n_left - 1))
    [ -x "$bin" ] || { log "profile $v $d: no $bin"; continue; }
    share=$(( ($(left) - EVAL_RESERVE) / (n_left + 1) ))
    [ "$share" -lt 20 ] && share=20
    t0=$SECONDS
    csv=$PROF/${v}_${d}.csv
    timeout "$share" "$bin" --shapes "$SHAPES" --datatype "$d" --verify none --warmup "$WARMUP" \
      --repeat "$REPEAT" --iters "$ITERS" --k-batch "$KBATCH" --csv "$csv" > "$LOGS/prof_${v}_${d}.log" 2>&1
    rc=$?
    rows=0
    [ -f "$csv" ] && rows=$(($(wc -l < "$csv") - 1))
    done_shapes=$(grep -c "^\[$v $d\]" "$LOGS/prof_${v}_${d}.log")
    noinst=$(grep -c "NO INSTANCE supports" "$LOGS/prof_${v}_${d}.log")
    log "profile $v $d rc=$rc in $((SECONDS - t0)) s (time box $share s): $rows rows, $done_shapes problems reached, $noinst without an instance"
    [ -f "$csv" ] && gzip -1 -f "$csv"
  done
fi

if has eval; then
  t0=$SECONDS
  files=()
  for d in $EVAL_DTYPES; do for v in $VARIANTS; do
    [ -s "$PROF/${v}_${d}.csv.gz" ] && files+=("$PROF/${v}_${d}.csv.gz")
  done; done
  el=$(( $(left) - 45 ))
  if [ ${#files[@]} -eq 0 ] || [ "$el" -lt 20 ]; then
    log "eval skipped: ${#files[@]} profile(s), $el s left"
  else
    timeout $((el + 20)) python3 "$ROOT/bench/heuristic_eval.py" --lib "$GEN/build" --shapes "$SHAPES" \
      --map "$CORPUS/corpus_map.csv" --out-dir "$WORK/eval" --datatypes "$(comma $EVAL_DTYPES)" \
      --methods "$METHODS" ${EVAL_DB:+--db "$EVAL_DB"} --time-limit "$el" "${files[@]}" > "$LOGS/eval.log" 2>&1
    log "eval rc=$? in $((SECONDS - t0)) s (time box $el s)"
    cp -f "$WORK/eval/summary.md" "$OUT/lomo_$TAG.md" 2> /dev/null
    cp -f "$WORK/eval/outcomes.csv" "$OUT/lomo_$TAG.csv" 2> /dev/null
    sed -n '/^| method/,/^$/p' "$WORK/eval/summary.md" 2> /dev/null | tee -a "$OUT/summary.txt"
    grep -E "time limit|Error|error" "$LOGS/eval.log" | head -5 | tee -a "$OUT/summary.txt"
  fi
fi

if has report; then
  t0=$SECONDS
  [ -z "$SHAPES_CSV" ] && timeout 60 python3 "$ROOT/bench/corpus_shapes.py" --out-dir "$CORPUS" --check "$GEN/build" \
    --datatype "$(comma $DTYPES)" "${corpus_args[@]}" 2>&1 | grep "no default instance" | tee -a "$OUT/summary.txt"
  profs=("$PROF"/*.csv.gz)
  if [ -s "$OUT/cudnn_$TAG.csv" ] && [ -e "${profs[0]}" ]; then
    timeout 60 python3 "$ROOT/bench/corpus_report.py" --map "$CORPUS/corpus_map.csv" --cudnn "$OUT/cudnn_$TAG.csv" \
      --out-dir "$OUT" --tag "$TAG" "${profs[@]}" > "$LOGS/report.log" 2>&1
    log "report rc=$? in $((SECONDS - t0)) s: $(tail -2 "$LOGS/report.log" | tr '\n' ' ')"
    sed -n '/^| model/,/^$/p' "$OUT/${TAG}_models.md" 2> /dev/null | tee -a "$OUT/summary.txt"
  else
    log "report skipped: no cuDNN CSV or no profiles"
  fi
fi
