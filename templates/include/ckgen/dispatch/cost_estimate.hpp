// What the cost model (dispatch/cost_model.hpp) estimates of an instance on a problem, and the
// target's numbers it estimates with (ckgen/generated/arch_params.hpp, rendered from
// arch_specs.json; the compute-unit count is the device's when a device is present).
#pragma once

#include <cstdint>

#include "ckgen/core/vocab.hpp"
#include "ckgen/generated/arch_params.hpp"

namespace ckgen {

struct CostEstimate {
  double us = 1e30;            // estimated time
  double tile_efficiency = 0;  // useful / padded M*N*K
  int64_t tiles = 0;           // blocks launched (all groups, classes and splits)
  int blocks_per_cu = 0;       // resident blocks per compute unit (occupancy)
  int64_t waves = 0;           // ceil(tiles / (CUs * blocks_per_cu))
  int k_batch = 1;
};

struct ArchNumbers {
  int compute_units = arch_params::kComputeUnits;
  int lds_bytes = arch_params::kLdsBytes;
  int warp_size = arch_params::kWarpSize;
  int register_file_bytes_per_cu = arch_params::kRegisterFileBytesPerCu;
  double bandwidth_gbs = arch_params::kBandwidthGBs;
  // Measured / estimated time per variant and pipeline (arch_specs.json cost_calibration).
  double calibration(Variant v, Pipeline p) const { return arch_params::kCostCalibration[int(v)][int(p)]; }
  double peak_tflops(DataType d) const {
    const double v = d == DataType::FP16   ? arch_params::kPeakTflopsFp16
                     : d == DataType::BF16 ? arch_params::kPeakTflopsBf16
                                           : arch_params::kPeakTflopsFp32;
    return v > 0 ? v : 1.0;
  }
};

}  // namespace ckgen
