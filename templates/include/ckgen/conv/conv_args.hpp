// ConvArgs: what the implicit-GEMM device kernel reads of a problem (filled on the host once
// per call), and the epilogue's output modes.
#pragma once

#include <cstdint>

#include "ckgen/conv/dim_class.hpp"
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
  // backward_data: the class of residue r along dim i (fill_dim_classes; dims whose stride is
  // above kClassTableStride are derived per block).
  DimClassEntry cls[3][kClassTableStride];
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

// Host: the class table of the problem in `a` (its sizes, strides, dilations and pads set).
inline void fill_dim_classes(ConvArgs& a) {
  for (int i = 0; i < 3; ++i)
    for (int r = 0; r < kClassTableStride && r < a.s[i]; ++r)
      a.cls[i][r] = make_dim_class_entry(r, a.in_[i], a.fil[i], a.s[i], a.dil[i], a.pl[i]);
}

// Device: the class of residue r along dim I, from the table or, for a stride above
// kClassTableStride, derived. The residue selects among the loaded entries' values: every index is
// a constant (a select of their addresses would copy the arguments to scratch memory on AMD).
template <int I>
CKGEN_HOST_DEVICE CKGEN_FORCEINLINE DimClassEntry dim_class_entry(const ConvArgs& p, int r) {
  static_assert(kClassTableStride == 4, "ckgen: dim_class_entry selects among four entries");
  if (p.s[I] > kClassTableStride) return make_dim_class_entry(r, p.in_[I], p.fil[I], p.s[I], p.dil[I], p.pl[I]);
  const DimClassEntry e0 = p.cls[I][0], e1 = p.cls[I][1], e2 = p.cls[I][2], e3 = p.cls[I][3];
  return r == 0 ? e0 : r == 1 ? e1 : r == 2 ? e2 : e3;
}

// Device: class `cls` (r0, r1, r2 in mixed radix s0, s1, s2) of every dim.
CKGEN_HOST_DEVICE CKGEN_FORCEINLINE void load_dim_classes(const ConvArgs& p, int cls, DimClass dc[3],
                                                          FastDiv cnt[3], FastDiv taps[3]) {
  int r0 = 0, r1 = 0, r2 = 0;
  if (p.num_classes > 1) {
    r2 = cls % p.s[2];
    const int q = cls / p.s[2];
    r1 = q % p.s[1];
    r0 = q / p.s[1];
  }
  const DimClassEntry e0 = dim_class_entry<0>(p, r0), e1 = dim_class_entry<1>(p, r1), e2 = dim_class_entry<2>(p, r2);
  dc[0] = e0.dc, dc[1] = e1.dc, dc[2] = e2.dc;
  cnt[0] = e0.cnt, cnt[1] = e1.cnt, cnt[2] = e2.cnt;
  taps[0] = e0.taps, taps[1] = e1.taps, taps[2] = e2.taps;
}

}  // namespace ckgen
