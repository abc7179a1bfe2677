#!/usr/bin/env bash
# Forward stride1 sweep (bench/dev/fwd_s1_sweep.yaml) on bench/dev/shapes_fwd_s1.csv, fp16,
# verified on the GPU: $OUT/fwd_s1_1.csv, fwd_s1_2.csv (every instance per shape) and $OUT/fwd_s1.txt.
CONFIG=bench/dev/fwd_s1_sweep.yaml SHAPES=bench/dev/shapes_fwd_s1.csv VARIANT=forward KB=0 NAME=fwd_s1 TOP=8 \
  W=${W:-/tmp/fwds1} exec bash "$(dirname "$0")/sweep_call.sh"
