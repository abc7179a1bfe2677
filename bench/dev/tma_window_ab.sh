#!/usr/bin/env bash
# GPU machine (~1 min): depthwise backward_weight window tiles with and without the TMA window
# (bench/dev/tma_window.patch: DirectPath::WindowTma, measured slower and not kept; apply it with
# `git apply bench/dev/tma_window.patch` first, it carries the -DCKGEN_NO_TMA_WINDOW probe switch
# this A/B builds against), verified on bench/dev/shapes_dw_tma.csv (the path's edge cases: H stride
# 2, asymmetric and 2-pixel padding, 5 channel tiles, and two problems that fall back).
set -uo pipefail
cd "$(dirname "$0")/../.."
SHAPES=${SHAPES:-$PWD/bench/dev/shapes_dw_tma.csv} FLAG_SETS="tma: notma:-DCKGEN_NO_TMA_WINDOW" KB=0,44,66,88 \
  bash bench/dev/dw_bw_warps_call.sh
