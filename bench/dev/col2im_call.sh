#!/usr/bin/env bash
# GPU machine: backward_data through fp32 columns + col2im (bench/dev/col2im_bd_fp32.patch,
# applied to the machine's copy of the tree only), then bench/device.sh's backward_data GTests
# (random sweep and <variant>_im2col_wide included) and its benchmark against cuDNN in the same
# run: $OUT/summary.txt, compare.csv, cudnn.csv, logs.tar.gz (~7 min on an H200).
set -u
patch -p1 -s --no-backup-if-mismatch < bench/dev/col2im_bd_fp32.patch || exit 1
trap 'patch -p1 -R -s --no-backup-if-mismatch < bench/dev/col2im_bd_fp32.patch' EXIT
GEN_ARGS="--variant backward_data" BUILD_SETS="tests default" bash bench/device.sh build test bench peer
