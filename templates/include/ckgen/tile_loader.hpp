// Global -> registers -> shared memory loader of one operand tile (A: BM x BK, B: BK x BN),
// vectorized by kVecA / kVecB along the operand's contiguous dim. The index math comes from the
// variant's view (conv_maps.hpp): the M/N part once per block (`fix`), the K part per k step.
#pragma once

#include <type_traits>

#include "ckgen/async_copy.hpp"
#include "ckgen/config.hpp"

namespace ckgen {

template <class Tr, class View, bool IsA>
struct TileLoader {
  using Raw = typename Tr::Raw;
  static constexpr bool kKMajor = IsA ? Tr::kAKMajor : Tr::kBKMajor;
  static constexpr int V = IsA ? Tr::VA : Tr::VB;
  static constexpr int kMN = IsA ? Tr::BM : Tr::BN;
  static constexpr int kRows = kKMajor ? kMN : Tr::BK;  // smem rows
  static constexpr int kCols = kKMajor ? Tr::BK : kMN;  // contiguous smem cols
  static constexpr int kLd = IsA ? Tr::kLdA : Tr::kLdB;
  static constexpr int kVPR = kCols / V;  // vectors per row
  static constexpr int kTotal = kRows * kVPR;
  static constexpr int T = Tr::kThreads;
  static constexpr int kIters = (kTotal + T - 1) / T;
  using VecT = Vec<Raw, V>;
  using Fix = std::conditional_t<IsA, typename View::AFix, typename View::BFix>;

  VecT reg[kIters];
  bool reg_ok[kIters];
  Fix fix[kIters];

  CKGEN_DEVICE static bool active(int idx) { return kTotal % T == 0 || idx < kTotal; }

  CKGEN_DEVICE static auto get_fix(const View& v, int mn) {
    if constexpr (IsA) return v.a_fix(mn); else return v.b_fix(mn);
  }
  // Always a valid address; ok = false for a structural zero.
  CKGEN_DEVICE static const Raw* get_ptr(const View& v, const Fix& f, int k, bool& ok) {
    if constexpr (IsA) return v.a_ptr(f, v.a_k(k), ok); else return v.b_ptr(f, v.b_k(k), ok);
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE void init(const View& v, int mn0, int tid) {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int idx = tid + i * T;
      const int row = idx / kVPR, col = idx % kVPR;
      fix[i] = get_fix(v, kKMajor ? mn0 + row : mn0 + col * V);
    }
  }

  // Loads are issued unconditionally from valid addresses (no branch, so they all stay in
  // flight together); structural zeros are applied when the registers are stored.
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const View& v, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int idx = tid + i * T;
      if (!active(idx)) continue;
      const int row = idx / kVPR, col = idx % kVPR;
      const Raw* src = get_ptr(v, fix[i], kKMajor ? k0 + col * V : k0 + row, reg_ok[i]);
      reg[i] = *reinterpret_cast<const VecT*>(src);
    }
  }

  // Multistage path: global -> shared directly (cp.async), zeros stored for structural zeros.
  CKGEN_DEVICE CKGEN_FORCEINLINE void copy_async(const View& v, int k0, Raw* smem, int tid) const {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int idx = tid + i * T;
      if (!active(idx)) continue;
      const int row = idx / kVPR, col = idx % kVPR;
      bool ok;
      const Raw* src = get_ptr(v, fix[i], kKMajor ? k0 + col * V : k0 + row, ok);
      async_copy_zfill<int(sizeof(VecT))>(smem + row * kLd + col * V, src, ok);
    }
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE void store(Raw* smem, int tid) const {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int idx = tid + i * T;
      if (!active(idx)) continue;
      const int row = idx / kVPR, col = idx % kVPR;
      VecT val;
#pragma unroll
      for (int e = 0; e < V; ++e) val.v[e] = reg_ok[i] ? reg[i].v[e] : Raw(0);
      *reinterpret_cast<VecT*>(smem + row * kLd + col * V) = val;
    }
  }
};

}  // namespace ckgen
