#!/usr/bin/env bash
# Where a forward wavelet_tma launch spends its time (GPU machine): the same instances built
# with parts of the kernel switched off by bench/dev/probe_tma.patch (applied to this copy of the
# tree, reverted at the end; the product never carries it) and timed on the 1x1 / 3x3 rows
# (bench/dev/flag_sweep.sh, one flag set per mode). Modes ('+' combines them):
#   full | NO_LOAD (no copies: the load thread only arrives) | NO_MMA | NO_STORE (no epilogue)
#   | RETURN (the launch alone) | NO_LOOP (launch and barrier set-up) | STAGGER=<ns> (the second
#   half of the blocks' math warps start that much later). Results are not verified (the switched
#   kernels are wrong on purpose).
#   MODES="full NO_LOAD NO_MMA+NO_STORE" OUT=... bash bench/dev/tma_probe.sh
#     -> $OUT/flags_<mode>_forward.csv, $OUT/flags.txt (time per shape, instance and mode)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KERNELS=${KERNELS:-"*fp16_2d_t64x128x64_*wltma4_lm1x4_cshuffle_v8x8x8,*fp16_2d_t128x128x64_*wltma4_*cshuffle_v8x8x8_kb0,*fp16_2d_t64x64x64_*wltma4_lm1x4_cshuffle_v8x8x8"}
SHAPE=${SHAPE:-"r50_l3_1x1_512_256,r50_l2_1x1_128_512,r50_l4_1x1_1024_512,r50_l1_1x1_64_256,head_3x3_256_256_50"}
sets=""
for mode in ${MODES:-full NO_LOAD NO_MMA NO_STORE NO_MMA+NO_STORE}; do
  flags=""; [ "$mode" != full ] && flags=$(echo "$mode" | tr '+' '\n' | sed 's/^/-DCKGEN_PROBE_/' | paste -sd';')
  sets="$sets $mode:$flags"
done
(cd "$ROOT" && patch -p1 -s --no-backup-if-mismatch < bench/dev/probe_tma.patch) || exit 1
trap '(cd "$ROOT" && patch -p1 -R -s --no-backup-if-mismatch < bench/dev/probe_tma.patch)' EXIT
FLAG_SETS=$sets VARIANTS=forward KERNELS=$KERNELS SHAPES=$ROOT/bench/dev/shapes_1x1.csv VERIFY=none PER_INSTANCE=1 \
  PROF_TIMEOUT=100 PROF_ARGS="--k-batch 1 --shape $SHAPE" bash "$ROOT/bench/dev/flag_sweep.sh"
