#!/usr/bin/env bash
# Forward ring sweep for grouped g4 (bench/dev/g4_fwd_sweep.yaml) on bench/dev/shapes_g4_fwd.csv, fp16,
# verified on the GPU: $OUT/g4_1.csv, g4_2.csv (every instance per shape) and $OUT/g4.txt.
CONFIG=bench/dev/g4_fwd_sweep.yaml SHAPES=bench/dev/shapes_g4_fwd.csv VARIANT=forward KB=0 NAME=g4 TOP=12 \
  W=${W:-/tmp/g4fwd} exec bash "$(dirname "$0")/sweep_call.sh"
