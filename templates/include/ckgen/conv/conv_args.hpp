// ConvArgs: what the implicit-GEMM device kernel reads of a problem (filled on the host once
// per call), and the epilogue's output modes.
#pragma once

#include <cstdint>

#include "ckgen/core/fast_div.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/schedule/streamk_plan.hpp"

namespace ckgen {

// Output mode of the epilogue.
enum class OutMode : int {
  Direct = 0,      // convert and store to the output tensor
  AtomicF32 = 1,   // fp32 atomicAdd into the workspace (split-K, one stage)
  PartialF32 = 2,  // fp32 store into the split's slice of the workspace (split-K, two stages)
};

struct ConvArgs {
  const void* in = nullptr;
  const void* wei = nullptr;
  const void* out = nullptr;
  void* dst = nullptr;  // the written tensor (one of the three, non-const)
  float* ws = nullptr;

  int G, N, C, K;
  int in_[3], out_[3], fil[3], s[3], dil[3], pl[3];
  int in_spatial, out_spatial, ZYX, ZYXC;
  int64_t GC, GK;
  FastDiv fd_C, fd_K, fd_fil[3], fd_out[3];

  int M, Ng, Kred;   // GEMM sizes per group (backward_data: of the largest class)
  int tiles_n;       // blocks along GEMM N
  int num_classes;   // backward_data stride classes (1 otherwise)
  int k_batch;       // splits of Kred (backward_weight), 1 otherwise
  int k_chunk;       // Kred elements per split (a multiple of the block tile K)
  OutMode out_mode;
  int64_t ws_split_stride;  // elements per split slice (PartialF32)
  // groups_to_merge (kGroupsToMerge > 1): gm groups per block; fd_gmC / fd_gmK divide by
  // gm*C / gm*K (the merged channel runs, contiguous in NDHWGC / NDHWGK).
  int gm = 1;
  FastDiv fd_gmC, fd_gmK;
  // StreamK (backward_weight, Reduction::StreamKLinear / StreamKTree): see schedule/streamk_plan.hpp.
  StreamKArgs sk;
  // A fused epilogue's operands (epilogue/fusion.hpp); read only by fused instances.
  EpilogueArgs ep;
};

namespace detail {
CKGEN_HOST_DEVICE inline bool in_range(int v, int n) { return unsigned(v) < unsigned(n); }
}  // namespace detail

}  // namespace ckgen
