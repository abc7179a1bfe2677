// Rendered from ckgen/model/instance.py by `python -m ckgen.model.cxx`; do not edit by hand.
// KernelKey: the static description of an instance (the fields of KernelInstance, a
// triple as three fields), mirroring the generated Config; the key of the registry.
#pragma once

#include <string>

#include "ckgen/core/vocab.hpp"

namespace ckgen {

struct KernelKey {
  std::string name;
  Variant variant;
  DataType datatype;
  int ndim;
  int tile_m;
  int tile_n;
  int tile_k;
  int wave_m;
  int wave_n;
  int wave_k;
  int warp_m;
  int warp_n;
  int warp_k;
  Pipeline pipeline;
  int stages;
  Scheduler scheduler;
  int load_waves;
  int math_waves;
  Epilogue epilogue;
  bool swap_ab = false;  // wavelet_tma: the MMA computes the transposed tile (pipeline/tma_ws.hpp)
  bool ping_pong = false;  // wavelet_tma: two math warpgroups take turns on units (TmaTraits::kPingPong)
  int vec_a;
  int vec_b;
  int vec_c;
  Specialization specialization;
  int groups_to_merge;
  int k_batch;
  Reduction reduction;
  bool persistent;
  Stage stage;
  ChannelOp channel_op;
  Activation activation;
  bool residual;
  bool stats;
  DataType out_datatype;  // the output's datatype (datatype unless the instance converts)
  const char* arch;
  int channel_pad = 0;  // > 0: a face padding channels to this multiple (kernel/channel_pad.hpp)
  bool mask_copy = false;  // a face masking a copy of dy ahead of a plain instance (kernel/mask_copy.hpp)
};

}  // namespace ckgen
