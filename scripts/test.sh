#!/usr/bin/env bash
# The test command of ckgen (README "Set up", command 2; .ci/run calls exactly this).
#
#   bash scripts/test.sh [pytest args...]
#
# 1. Installs the system packages the tests use when one is missing (Debian/Ubuntu):
#    cmake, ninja-build, libgtest-dev, the build engines ccache, distcc and sccache (where
#    packaged; tests/test_build_cache.py), and, for the slow tests only, clang-19, lld-19,
#    llvm-19 and clang-22, lld-22, llvm-22 (AMD device-only builds; gfx950 needs LLVM >= 20,
#    Debian bookworm-security has 22) and hipcc (AMD host build). A quick run (a -m marker
#    expression containing "not slow", or CKGEN_QUICK=1) installs only the first set.
#    sudo is used only when not root. CKGEN_SKIP_APT=1 skips this.
# 2. Creates .venv (with the system site-packages, so installed dependencies are reused) unless
#    a virtualenv is already active, and installs ckgen editable with its test extras into it.
# 3. Runs the linters (ruff check, ruff format --check, mypy ckgen; any failure fails the run),
#    then the whole pytest suite, slow tests included (wheel build, full nvcc build of the
#    generated test project). nvcc is not installable from apt: tests that need it skip,
#    visibly, where it is not on PATH (/usr/local/bin/nvcc or /usr/local/cuda/bin/nvcc).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
t0=$SECONDS

# --- 1. system packages -------------------------------------------------------------------
APT_PACKAGES=(cmake ninja-build libgtest-dev ccache distcc)
APT_SLOW_PACKAGES=(clang-19 lld-19 llvm-19 clang-22 lld-22 llvm-22 hipcc)
quick="${CKGEN_QUICK:-0}"
prev=""
for a in "$@"; do  # -m EXPR, -mEXPR or -m=EXPR with "not slow" in EXPR
  expr=""
  if [[ "$prev" == -m ]]; then expr="$a"; elif [[ "$a" == -m?* ]]; then expr="${a#-m}"; fi
  if [[ "$expr" =~ (^|[^[:alnum:]_])not[[:space:]]+slow($|[^[:alnum:]_]) ]]; then quick=1; fi
  prev="$a"
done
if [[ "$quick" != 1 ]]; then APT_PACKAGES+=("${APT_SLOW_PACKAGES[@]}"); fi
if [[ "${CKGEN_SKIP_APT:-0}" != 1 ]] && command -v dpkg-query >/dev/null; then
  installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
  # sccache is packaged from Debian 12 on; elsewhere its tests skip, with the reason
  packaged() {  # sed reads to the end: grep -q could SIGPIPE apt-cache under pipefail
    local c
    c="$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p')"
    [[ -n "$c" && "$c" != "(none)" ]]
  }
  if packaged sccache; then APT_PACKAGES+=(sccache); fi
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    SUDO=()
    if [[ $(id -u) -ne 0 ]]; then SUDO=(sudo); fi
    echo "test.sh: installing ${missing[*]}"
    # ${SUDO[@]+...}: an empty array is "unbound" under set -u in bash < 4.4
    ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -q
    if ! installed sccache && [[ " ${missing[*]} " != *" sccache "* ]] && packaged sccache; then
      missing+=(sccache)
    fi
    ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "test.sh: system packages present (${APT_PACKAGES[*]})"
  fi
  if [[ "$quick" == 1 ]]; then
    echo "test.sh: quick run: not installing ${APT_SLOW_PACKAGES[*]} (slow tests only)"
  fi
fi
for d in /usr/local/cuda/bin /usr/local/bin; do
  if [[ -x "$d/nvcc" && ":$PATH:" != *":$d:"* ]]; then PATH="$PATH:$d"; fi
done
export PATH

# --- 2. Python environment ----------------------------------------------------------------
if [[ -n "${VIRTUAL_ENV:-}" ]]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  if [[ ! -x .venv/bin/python ]]; then
    "${PYTHON:-python3}" -m venv --system-site-packages .venv
  fi
  PY="$ROOT/.venv/bin/python"
fi
# Editable install of this checkout (a different checkout installed elsewhere must not be the
# one under test). Build isolation needs the index; without it, reuse an installed hatchling.
if ! "$PY" -m pip install -q -e ".[test]"; then
  echo "test.sh: retrying without build isolation"
  "$PY" -m pip install -q hatchling 2>/dev/null || true
  "$PY" -m pip install -q --no-build-isolation -e ".[test]"
fi
here="$("$PY" -c 'import ckgen, pathlib; print(pathlib.Path(ckgen.__file__).resolve().parent.parent)')"
if [[ "$here" != "$ROOT" ]]; then
  echo "test.sh: ckgen imports from $here, not from $ROOT" >&2
  exit 1
fi
echo "test.sh: environment ready in $((SECONDS - t0)) s ($("$PY" --version), $(command -v nvcc || echo 'no nvcc'))"

# --- 3. the linters, then the tests --------------------------------------------------------
"$PY" -m ruff check
"$PY" -m ruff format --check
"$PY" -m mypy ckgen
"$PY" -m pytest -ra --durations=15 "$@"
echo "test.sh: done in $((SECONDS - t0)) s"
