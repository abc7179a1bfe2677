# Sourced by the bench/dev direct-kernel calls: Nsight Compute sections (speed of light,
# occupancy, warp states, memory) of one profiler run, one kernel per call.
#   ncu_direct <profiler binary> <shape glob> <kernel glob> <report file>
ncu_direct() {
  timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis "$1" --shapes "$ROOT/templates/project/shapes/coverage.csv" \
    --shape "$2" --kernels "$3" --datatype fp16 --verify none \
    --warmup 0 --repeat 1 --iters 1 --timing loop > "$4" 2>&1
}
