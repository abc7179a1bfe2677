#!/usr/bin/env bash
# Shared by the device scripts (source it after ROOT, OUT, WORK and BUDGET are set):
#   start_run              the common start: $OUT and $WORK made; PYTHONPATH=$ROOT, unbuffered,
#                          no colour; the JIT, autotune and inductor caches under $WORK, autotune
#                          off; cd $ROOT; $OUT/summary.txt emptied and the GPU logged
#   log MSG...             a timestamped line to stdout and $OUT/summary.txt
#   left                   seconds left of $BUDGET
#   ckgen_id               the checkout's HEAD and a hash of the sources the run reads (ckgen/,
#                          templates/, configs/, arch_specs.json as they are in the working tree:
#                          a copied tree may carry a stale HEAD); bash bench/device_lib.sh --id
#                          prints the same here, to match a result to a commit
#   run_limited SECS CMD   CMD in its own process group, all of it (a build's compilers too)
#                          ended when SECS have passed; CMD's exit status
#   gtest_prefix           GoogleTest from the .deb carried in .gtest/, unpacked under $WORK once;
#                          prints its usr prefix
#   build_project DIR TESTS [generate arguments...]
#                          ckgen generate (sm_90a) + emit-cmake + CMake + ninja -j $JOBS into
#                          DIR/build, GoogleTests when TESTS is ON; logs $OUT/{cmake,build}_<DIR
#                          name>.log, the first errors printed on failure
#   build_tests_and_pairs VARIANT [TEST ARGS...] -- [PAIR ARGS...]
#                          side by side: $WORK/gt, the tests set of VARIANT with its GoogleTests
#                          (generate --set tests TEST ARGS), and $WORK/pf, profilers of VARIANT
#                          (generate PAIR ARGS); the build logged; exit 1 when one fails
#   kernel_args NAME "GLOB ..."
#                          sets array NAME to --kernels GLOB for each space-separated glob (not
#                          expanded against the file system)
#   run_gtests VARIANT SEED SECS [LOG]
#                          $WORK/gt's GoogleTests of VARIANT (the seeded sweep: SEED) within SECS
#                          into $OUT/LOG (default test.log); the counts and the failed tests logged

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $((BUDGET - SECONDS)); }
ckgen_id() {
  local root head sources
  root=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
  head=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo "no git")
  sources=$(cd "$root" && find ckgen templates configs arch_specs.json -type f \
    -not -path '*/__pycache__/*' -not -name '*.pyc' | LC_ALL=C sort \
    | xargs -d '\n' sha256sum | sha256sum | cut -c1-12)
  echo "HEAD $head, sources $sources"
}
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = --id ]; then
  ckgen_id
fi

kernel_args() {
  local -n _args=$1
  local _g _globs
  read -ra _globs <<< "$2"
  _args=()
  for _g in "${_globs[@]}"; do _args+=(--kernels "$_g"); done
}

start_run() {
  mkdir -p "$OUT" "$WORK"
  export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 NO_COLOR=1
  export CKGEN_CACHE_DIR=$WORK/jit CKGEN_AUTOTUNE_DIR=$WORK/autotune CKGEN_AUTOTUNE=0
  export TORCHINDUCTOR_CACHE_DIR=$WORK/inductor
  cd "$ROOT" || exit 1
  : > "$OUT/summary.txt"
  log "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
}

run_limited() {
  local limit=$1 pid watcher rc
  shift
  if ! command -v setsid > /dev/null; then
    timeout -k 5 "$limit" "$@"
    return $?
  fi
  setsid "$@" &
  pid=$!
  (
    trap 'kill "$s" 2> /dev/null; exit 0' TERM
    sleep "$limit" & s=$!
    wait "$s"
    kill -TERM -- "-$pid" 2> /dev/null && sleep 5 && kill -KILL -- "-$pid" 2> /dev/null
  ) > /dev/null 2>&1 &
  watcher=$!
  wait "$pid"
  rc=$?
  kill "$watcher" 2> /dev/null
  return $rc
}

gtest_prefix() {
  local gt=$WORK/gtest
  [ -d "$gt/usr" ] || { mkdir -p "$gt" && for f in "$ROOT"/.gtest/*.deb; do dpkg -x "$f" "$gt"; done; }
  echo "$gt/usr"
}

build_project() {
  local d=$1 t=$2 name gt
  name=$(basename "$1")
  gt=$(gtest_prefix)
  shift 2
  python3 -m ckgen.cli generate --arch sm_90a "$@" -o "$d" -q || return 1
  python3 -m ckgen.cli emit-cmake -o "$d" --platform nvidia --gpu-targets 90a > /dev/null || return 1
  cmake -S "$d" -B "$d/build" -G Ninja -DGTest_ROOT="$gt" -DCMAKE_PREFIX_PATH="$gt" \
    -DCKGEN_BUILD_TESTS="$t" > "$OUT/cmake_$name.log" 2>&1 || { tail -20 "$OUT/cmake_$name.log"; return 1; }
  ninja -C "$d/build" -j "${JOBS:-$(nproc)}" > "$OUT/build_$name.log" 2>&1 ||
    { grep -m20 -B2 -A8 error "$OUT/build_$name.log"; return 1; }
}

build_tests_and_pairs() {
  local v=$1 t0=$SECONDS p1 p2 r1 r2 a
  local tests=() pairs=() side=tests
  shift
  for a in "$@"; do
    if [ "$a" = -- ]; then side=pairs; elif [ $side = tests ]; then tests+=("$a"); else pairs+=("$a"); fi
  done
  build_project "$WORK/gt" ON --set tests --variant "$v" "${tests[@]}" &
  p1=$!
  build_project "$WORK/pf" OFF --variant "$v" "${pairs[@]}" &
  p2=$!
  wait $p1
  r1=$?
  wait $p2
  r2=$?
  log "build rc $r1 $r2 in $((SECONDS - t0)) s"
  [ "$r1$r2" = 00 ] || { grep -h -m 10 -B2 -A6 error "$OUT"/build_*.log | tee -a "$OUT/summary.txt"; exit 1; }
}

run_gtests() {
  local t0=$SECONDS out=$OUT/${4:-test.log}
  CKGEN_SWEEP_SEED=$2 timeout "$3" "$WORK/gt/build/bin/test_grouped_conv_$1" --gtest_brief=1 > "$out" 2>&1
  log "$1 tests rc $? in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out" | tr '\n' ' ')"
  grep -E "^\[  FAILED" "$out" | head -20 | tee -a "$OUT/summary.txt"
}
