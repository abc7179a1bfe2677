#!/usr/bin/env bash
# GPU machine (~4 min): depthwise backward_weight window tiles at 3 / 4 / 6 / 8 warps
# (bench/dev/candidates/dww6_backward_weight.yaml beside the default set) over slice counts, built
# once per FLAG_SETS entry: bench/dev/dw_bw_slices_call.sh with those tiles (its overrides pass
# through), then the bf16 64x64 window kernel's SASS instruction mix per flag set. Its first run
# (results/2026-11-28_H200_dw_bw_warps_prmt/) built "base:" and "prmt:-DCKGEN_BF16_PRMT", a probe
# switch for bf16's byte-permute conversion that direct_common.hpp has taken unconditionally since
# (the switch is gone).
#   bash bench/dev/dw_bw_warps_call.sh      # $OUT/slices.txt, $OUT/flags.txt, $OUT/sass_ops.txt
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ckgen-out}
WORK=/tmp/dwbw-warps
WORK=$WORK KB=${KB:-0,33,44,66,88,132} KERNELS="${KERNELS:-*_2d_t*x64x1_w*_wt1x1x1_direct_v4x4x4_2st}" \
  GEN_EXTRA="--config $ROOT/configs/backward_weight/default.yaml --config $ROOT/bench/dev/candidates/dww6_backward_weight.yaml" \
  bash "$ROOT/bench/dev/dw_bw_slices_call.sh" > /dev/null
for set in ${FLAG_SETS:-base:}; do
  s=${set%%:*}
  o=$(ls $WORK/build_$s/CMakeFiles/*/instances/backward_weight/*bf16_2d_t64x64x1_w4x1x1*.o 2>/dev/null | head -1)
  [ -n "$o" ] && { echo "== $s $o"; cuobjdump -sass "$o" | awk '/Function/ && /DirectPathE1E/ {p=1} /Function/ && !/DirectPathE1E/ {p=0} p' | grep -oE "^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9.]+" | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -12; }
done > "$OUT/sass_ops.txt" 2>&1
cat "$OUT/slices_run.txt" "$OUT/slices.txt" "$OUT/sass_ops.txt" | tail -120
