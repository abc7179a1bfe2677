#!/usr/bin/env bash
# Shared by the device scripts (source it after OUT and BUDGET are set):
#   log MSG...             a timestamped line to stdout and $OUT/summary.txt
#   left                   seconds left of $BUDGET
#   run_limited SECS CMD   CMD in its own process group, all of it (a build's compilers too)
#                          ended when SECS have passed; CMD's exit status

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $((BUDGET - SECONDS)); }

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
