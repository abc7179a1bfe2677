# Sourced by the bench/dev probes that build a few instances into their own profiler project on
# the GPU machine (sm_90a). Sets ROOT / OUT, makes $OUT, exports PYTHONPATH.
#   small_generate DIR [ckgen generate args...]   generate + emit-cmake into DIR
#   small_build DIR BUILD [cmake args...]         configure (no tests) and build; logs in BUILD.log
#                                                 (NINJA_JOBS, NINJA_TARGETS: ninja's -j and targets)
#   rows_build DIR                                the instances of $ROWS ("variant:dtype:kernel
#                                                 glob:shape set:shape" lines), 2D, into DIR/gen
#                                                 built in DIR/gen/build
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1

small_generate() {
  local dir=$1
  shift
  python3 -m ckgen.cli generate --arch sm_90a "$@" -o "$dir" -q || return 1
  python3 -m ckgen.cli emit-cmake -o "$dir" --platform nvidia --gpu-targets 90a > /dev/null
}

small_build() {
  local dir=$1 build=$2
  shift 2
  cmake -S "$dir" -B "$build" -G Ninja -DCKGEN_BUILD_TESTS=OFF "$@" > "$build.cmake.log" 2>&1 || return 1
  # shellcheck disable=SC2086  # NINJA_TARGETS: a list of target names
  ninja -C "$build" ${NINJA_JOBS:+-j "$NINJA_JOBS"} ${NINJA_TARGETS:-} > "$build.log" 2>&1 ||
    { grep -m5 -A5 error "$build.log"; return 1; }
}

rows_build() {
  local dir=$1 v dt k args=()
  while IFS=: read -r v dt k _ _; do args+=(--variant "$v" --datatype "$dt" --kernels "$k"); done <<< "$ROWS"
  small_generate "$dir/gen" "${args[@]}" --ndim 2 && small_build "$dir/gen" "$dir/gen/build"
}
