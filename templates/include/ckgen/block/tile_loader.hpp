// Global -> registers -> shared memory loader of one operand tile (A: BM x BK, B: BK x BN),
// vectorized by kVecA / kVecB along the operand's contiguous dim. The index math comes from the
// variant's view (conv/conv_maps.hpp): the M/N part once per block (`fix`), the K part per k step.
#pragma once

#include <type_traits>

#include "ckgen/core/async_copy.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"

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
  static constexpr int T = Tr::kLoadThreads;  // all threads, or the wavelet load warps
  static constexpr int kIters = (kTotal + T - 1) / T;
  using VecT = Vec<Raw, V>;
  using Fix = std::conditional_t<IsA, typename View::AFix, typename View::BFix>;
  // cp.async through L1 for A (Config::kCacheA 1 / 0 when present, else the view's default:
  // the merged-group views re-read A across taps within a block).
  static constexpr bool kL1 = IsA && cache_a_l1<typename Tr::Config, View>();

  // Register budget: the per-row index part (`fix`) is cached only while it is small, and the
  // register staging of the basic pipeline only while it is small; otherwise `fix` is
  // recomputed every k step and the basic pipeline copies straight to shared memory
  // (copy_direct). Keeps vec-1 / large-tile instances out of local memory.
  static constexpr int kFixRegs = kIters * int(sizeof(Fix)) / 4;
  static constexpr bool kCacheFix = kFixRegs <= 48;
  static constexpr int kStageRegs = kIters * int(sizeof(VecT) + 3) / 4;
  static constexpr bool kRegStage = kStageRegs <= 40;
  static constexpr int kChunk = 8;  // copy_direct: loads in flight per thread

  VecT reg[kRegStage ? kIters : 1];
  bool reg_ok[kRegStage ? kIters : 1];
  Fix fix[kCacheFix ? kIters : 1];
  int mn0_;

  CKGEN_DEVICE static bool active(int idx) { return kTotal % T == 0 || idx < kTotal; }

  // Vector idx -> (row, vector column). Row-major by default; for the interleaved (wgmma)
  // layout 8 consecutive vectors go down 8 rows of one column, so 8 threads fill one 128-byte
  // core matrix (no bank conflicts) while each row still reads whole 32-byte sectors.
  static constexpr bool kRowsFirst = Tr::kSmemInterleaved && kRows % 8 == 0;
  CKGEN_DEVICE static void rc(int idx, int& row, int& col) {
    if constexpr (kRowsFirst) {
      const int rest = idx >> 3;
      col = rest % kVPR;
      row = ((rest / kVPR) << 3) + (idx & 7);
    } else {
      row = idx / kVPR;
      col = idx % kVPR;
    }
  }

  CKGEN_DEVICE static auto get_fix(const View& v, int mn) {
    if constexpr (IsA) return v.a_fix(mn); else return v.b_fix(mn);
  }
  using KPart = std::conditional_t<IsA, typename View::AK, typename View::BK>;
  CKGEN_DEVICE static KPart get_k(const View& v, int k) {
    if constexpr (IsA) return v.a_k(k); else return v.b_k(k);
  }
  // Always a valid address; ok = false for a structural zero.
  CKGEN_DEVICE static const Raw* get_ptr(const View& v, const Fix& f, const KPart& k, bool& ok) {
    if constexpr (IsA) return v.a_ptr(f, k, ok); else return v.b_ptr(f, k, ok);
  }

  // A K-major operand's reduction index depends only on the tile column. Where every vector
  // of a thread sits in the same column (the thread count is a multiple of the vectors per
  // row, or of 8 x that for the rows-first order), the reduction part of the address (the
  // divisions into tap and channel) is computed once per thread and k step (`hoisted_k`),
  // not once per vector.
  static constexpr bool kHoistK =
      kKMajor && (kRowsFirst ? (T % 8 == 0 && (T / 8) % kVPR == 0) : T % kVPR == 0);
  CKGEN_DEVICE static KPart hoisted_k(const View& v, int k0, int tid) {
    if constexpr (kHoistK) {
      int row, col;
      rc(tid, row, col);
      return get_k(v, k0 + col * V);
    } else {
      return KPart{};
    }
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE const Raw* ptr_at(const View& v, int i, int k0,
                                                   const KPart& hk, int tid, bool& ok) const {
    const int idx = tid + i * T;
    int row, col;
    rc(idx, row, col);
    KPart kp;
    if constexpr (kHoistK) kp = hk; else kp = get_k(v, kKMajor ? k0 + col * V : k0 + row);
    if constexpr (kCacheFix) {
      return get_ptr(v, fix[i], kp, ok);
    } else {
      return get_ptr(v, get_fix(v, kKMajor ? mn0_ + row : mn0_ + col * V), kp, ok);
    }
  }
  CKGEN_DEVICE static Raw* smem_at(Raw* smem, int i, int tid) {
    int row, col;
    rc(tid + i * T, row, col);
    return smem + Tr::template smem_offset<kKMajor, kLd>(row, col * V);
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE void init(const View& v, int mn0, int tid) {
    mn0_ = mn0;
    if constexpr (kCacheFix) {
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        int row, col;
        rc(tid + i * T, row, col);
        fix[i] = get_fix(v, kKMajor ? mn0 + row : mn0 + col * V);
      }
    }
  }

  // Loads are issued unconditionally from valid addresses (no branch, so they all stay in
  // flight together); structural zeros are applied when the registers are stored.
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const View& v, int k0, int tid) {
    static_assert(kRegStage, "ckgen: register staging over budget, use copy_direct");
    const KPart hk = hoisted_k(v, k0, tid);
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      if (!active(tid + i * T)) continue;
      const Raw* src = ptr_at(v, i, k0, hk, tid, reg_ok[i]);
      reg[i] = *reinterpret_cast<const VecT*>(src);
    }
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE void store(Raw* smem, int tid) const {
    static_assert(kRegStage, "ckgen: register staging over budget, use copy_direct");
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      if (!active(tid + i * T)) continue;
      VecT val;
#pragma unroll
      for (int e = 0; e < V; ++e) val.v[e] = reg_ok[i] ? reg[i].v[e] : Raw(0);
      *reinterpret_cast<VecT*>(smem_at(smem, i, tid)) = val;
    }
  }

  // Synchronous global -> shared copy, kChunk loads in flight at a time.
  CKGEN_DEVICE CKGEN_FORCEINLINE void copy_direct(const View& v, int k0, Raw* smem, int tid) const {
    const KPart hk = hoisted_k(v, k0, tid);
#pragma unroll
    for (int i0 = 0; i0 < kIters; i0 += kChunk) {
      VecT tmp[kChunk];
      bool ok[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const int i = i0 + j;
        if (i < kIters && active(tid + i * T))
          tmp[j] = *reinterpret_cast<const VecT*>(ptr_at(v, i, k0, hk, tid, ok[j]));
      }
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const int i = i0 + j;
        if (i < kIters && active(tid + i * T)) {
          VecT val;
#pragma unroll
          for (int e = 0; e < V; ++e) val.v[e] = ok[j] ? tmp[j].v[e] : Raw(0);
          *reinterpret_cast<VecT*>(smem_at(smem, i, tid)) = val;
        }
      }
    }
  }

  // Multistage path: cp.async global -> shared (zero-fill for structural zeros) where the
  // access size allows it, else copy_direct.
  CKGEN_DEVICE CKGEN_FORCEINLINE void copy_async(const View& v, int k0, Raw* smem, int tid) const {
#if defined(CKGEN_HAS_CP_ASYNC)
    constexpr bool kCp = sizeof(VecT) == 4 || sizeof(VecT) == 8 || sizeof(VecT) == 16;
#else
    constexpr bool kCp = false;
#endif
    if constexpr (kCp) {
      const KPart hk = hoisted_k(v, k0, tid);
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        if (!active(tid + i * T)) continue;
        bool ok;
        const Raw* src = ptr_at(v, i, k0, hk, tid, ok);
        async_copy_zfill<int(sizeof(VecT)), kL1>(smem_at(smem, i, tid), src, ok);
      }
    } else {
      copy_direct(v, k0, smem, tid);
    }
  }
};

}  // namespace ckgen
