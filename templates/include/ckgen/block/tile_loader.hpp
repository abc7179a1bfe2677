// Global -> registers -> shared memory loader of one operand tile (A: BM x BK, B: BK x BN),
// vectorized by kVecA / kVecB along the operand's contiguous dim. The index math comes from the
// variant's view (conv/conv_maps.hpp): the M/N part once per block (`fix`), the K part per k step.
// Backward fusions (A is dy): a gradient mask multiplies dy by the activation's gradient at the
// saved forward output y (read at dy's offsets) before it is staged (multistage: y copied beside
// dy, the product taken in shared memory, apply_mask); bias_grad (backward_weight) also sums the
// staged dy per thread and column, flushed once per block (flush_bias_grad).
#pragma once

#include <type_traits>

#include "ckgen/core/async_copy.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/epilogue/fusion.hpp"

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
  // Vector idx -> (row, vector column) in rc(). Row-major by default; for the interleaved (wgmma)
  // layout 8 consecutive vectors go down 8 rows of one column, so 8 threads fill one 128-byte
  // core matrix (no bank conflicts) while each row still reads whole 32-byte sectors.
  static constexpr bool kRowsFirst = Tr::kSmemInterleaved && kRows % 8 == 0;
  using Cfg = typename Tr::Config;
  static constexpr bool kMask = IsA && Cfg::kGradMask;
  static constexpr bool kDb = IsA && Cfg::kBiasGrad;
  static_assert(!kDb || !kKMajor, "ckgen: bias_grad sums dy along the tile's contiguous M");
  static constexpr int kStageRegs = kIters * int(sizeof(VecT) * (kMask ? 2 : 1) + 3) / 4;
  static constexpr bool kRegStage = kStageRegs <= 40;
  static constexpr int kChunk = 8;  // copy_direct: loads in flight per thread

  VecT reg[kRegStage ? kIters : 1];
  bool reg_ok[kRegStage ? kIters : 1];
  Fix fix[kCacheFix ? kIters : 1];
  VecT yreg[kMask && kRegStage ? kIters : 1];
  // bias_grad's sums per vector and element; one set where every vector of a thread sits in the
  // same column (the thread count a multiple of the vectors per row).
  static constexpr bool kDbOneCol = !kRowsFirst && T % kVPR == 0;
  static constexpr int kDbSets = kDbOneCol ? 1 : kIters;
  float dsum[kDb ? kDbSets : 1][kDb ? V : 1];
  int mn0_;

  CKGEN_DEVICE static bool active(int idx) { return kTotal % T == 0 || idx < kTotal; }

  // Vector idx -> (row, vector column), in the order kRowsFirst names.
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

  // The saved forward output's address and vector at dy's address src.
  CKGEN_DEVICE static const Raw* y_ptr(const View& v, const Raw* src) {
    return static_cast<const Raw*>(v.p.ep.y) + (src - static_cast<const Raw*>(v.p.out));
  }
  CKGEN_DEVICE static VecT y_at(const View& v, const Raw* src) {
    return *reinterpret_cast<const VecT*>(y_ptr(v, src));
  }
  // The vector staged for loaded dy d (y: the saved output there), structural zeros applied;
  // bias_grad adds it to vector i's column sums.
  CKGEN_DEVICE CKGEN_FORCEINLINE VecT staged(const View& v, const VecT& d, const VecT& y, bool ok,
                                              int i) {
    VecT val;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      Raw x = d.v[e];
      if constexpr (kMask) x = fusion::grad_mask<Cfg::kActivation, Tr::kDataType>(x, y.v[e], v.p.ep.alpha);
      val.v[e] = ok ? x : Raw(0);
      if constexpr (kDb) dsum[kDbOneCol ? 0 : i][e] += raw_to_float<Tr::kDataType>(val.v[e]);
    }
    return val;
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE void init(const View& v, int mn0, int tid) {
    mn0_ = mn0;
    if constexpr (kDb) {
#pragma unroll
      for (int i = 0; i < kDbSets; ++i)
#pragma unroll
        for (int e = 0; e < V; ++e) dsum[i][e] = 0.f;
    }
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
      if constexpr (kMask) yreg[i] = y_at(v, src);
    }
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE void store(const View& v, Raw* smem, int tid) {
    static_assert(kRegStage, "ckgen: register staging over budget, use copy_direct");
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      if (!active(tid + i * T)) continue;
      *reinterpret_cast<VecT*>(smem_at(smem, i, tid)) = staged(v, reg[i], yreg[kMask ? i : 0], reg_ok[i], i);
    }
  }

  // Synchronous global -> shared copy, kChunk loads in flight at a time.
  CKGEN_DEVICE CKGEN_FORCEINLINE void copy_direct(const View& v, int k0, Raw* smem, int tid) {
    const KPart hk = hoisted_k(v, k0, tid);
#pragma unroll
    for (int i0 = 0; i0 < kIters; i0 += kChunk) {
      VecT tmp[kChunk];
      VecT ytmp[kMask ? kChunk : 1];
      bool ok[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const int i = i0 + j;
        if (i < kIters && active(tid + i * T)) {
          const Raw* src = ptr_at(v, i, k0, hk, tid, ok[j]);
          tmp[j] = *reinterpret_cast<const VecT*>(src);
          if constexpr (kMask) ytmp[j] = y_at(v, src);
        }
      }
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const int i = i0 + j;
        if (i < kIters && active(tid + i * T))
          *reinterpret_cast<VecT*>(smem_at(smem, i, tid)) = staged(v, tmp[j], ytmp[kMask ? j : 0], ok[j], i);
      }
    }
  }

  // bias_grad: the block's column sums meet in shared memory (BM floats at `scratch`, free
  // after the main loop), then one fp32 atomic per channel adds them to db[g*K + m] when `write`
  // (the block of GEMM N tile 0: every N tile loads the same dy). Called by every thread.
  CKGEN_DEVICE void flush_bias_grad(const View& v, unsigned char* scratch, bool write, int tid) const {
    static_assert(kDb && T == Tr::kThreads, "ckgen: bias_grad needs the loader of every thread");
    float* sdb = reinterpret_cast<float*>(scratch);
    __syncthreads();
    for (int c = tid; c < kMN; c += T) sdb[c] = 0.f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kDbSets; ++i) {
      if (!active(tid + i * T)) continue;
      int row, col;
      rc(tid + i * T, row, col);
#pragma unroll
      for (int e = 0; e < V; ++e) atomic_add_f32(sdb + col * V + e, dsum[i][e]);
    }
    __syncthreads();
    if (write) {
      for (int c = tid; c < kMN; c += T)
        if (mn0_ + c < v.M()) atomic_add_f32(v.p.ep.db + int64_t(v.g) * v.p.K + mn0_ + c, sdb[c]);
    }
    __syncthreads();
  }

  // Multistage path: cp.async global -> shared (zero-fill for structural zeros) where the
  // access size allows it, else copy_direct. A gradient mask copies y's vectors into ysmem at
  // the same offsets (apply_mask multiplies them in once they have landed); copy_direct applies
  // it as it stages.
#if defined(CKGEN_HAS_CP_ASYNC)
  static constexpr bool kCpAsync = sizeof(VecT) == 4 || sizeof(VecT) == 8 || sizeof(VecT) == 16;
#else
  static constexpr bool kCpAsync = false;
#endif
  CKGEN_DEVICE CKGEN_FORCEINLINE void copy_async(const View& v, int k0, Raw* smem, int tid, Raw* ysmem = nullptr) {
    static_assert(!kDb, "ckgen: bias_grad is summed by the basic pipeline (and wavelet_tma) only");
    static_assert(!kMask || Tr::kMaskStage, "ckgen: a gradient mask is applied by the basic or multistage pipeline");
    if constexpr (kCpAsync) {
      const KPart hk = hoisted_k(v, k0, tid);
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        if (!active(tid + i * T)) continue;
        bool ok;
        const Raw* src = ptr_at(v, i, k0, hk, tid, ok);
        async_copy_zfill<int(sizeof(VecT)), kL1>(smem_at(smem, i, tid), src, ok);
        if constexpr (kMask) async_copy_zfill<int(sizeof(VecT)), kL1>(smem_at(ysmem, i, tid), y_ptr(v, src), ok);
      }
    } else {
      copy_direct(v, k0, smem, tid);
    }
  }
  // The multistage gradient mask: this thread's staged dy vectors (smem) times the activation's
  // gradient at its staged y vectors (ysmem), once its own copies have landed (before the
  // barrier that shows the tile to the other threads).
  CKGEN_DEVICE CKGEN_FORCEINLINE void apply_mask(const View& v, Raw* smem, Raw* ysmem, int tid) const {
    if constexpr (kMask && kCpAsync) {
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        if (!active(tid + i * T)) continue;
        VecT* d = reinterpret_cast<VecT*>(smem_at(smem, i, tid));
        const VecT y = *reinterpret_cast<const VecT*>(smem_at(ysmem, i, tid));
        VecT val = *d;
#pragma unroll
        for (int e = 0; e < V; ++e)
          val.v[e] = fusion::grad_mask<Cfg::kActivation, Tr::kDataType>(val.v[e], y.v[e], v.p.ep.alpha);
        *d = val;
      }
    }
  }
};

}  // namespace ckgen
