// Default epilogue: fp32 accumulators -> output (in the output's datatype, Tr::kOutDataType),
// stored straight from registers with bounds checks. Each lane owns runs of kAccVec consecutive
// columns (2 for mma.sync, 4 for Fma); they are written kVecC (capped at the run length) elements
// per store. Output modes (OutMode): Direct (convert to the output type), AtomicF32 (split-K one
// stage), PartialF32 (split-K two stages, the split's own workspace slice). A fused instance
// (epilogue/fusion.hpp) applies its operations to each Direct vector before the conversion.
#pragma once

#include "ckgen/block/block_gemm.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/epilogue/fusion.hpp"

namespace ckgen {

template <class Tr, class View>
struct EpilogueDefault {
  using Raw = typename Tr::OutRaw;
  using Gemm = BlockGemm<Tr>;
  using Mma = typename Gemm::Mma;
  static constexpr int kRun = Mma::kAccVec;
  static constexpr int W = Tr::VC < kRun ? Tr::VC : kRun;
  static_assert(kRun % W == 0, "ckgen: store width must divide the accumulator run");

  CKGEN_DEVICE CKGEN_FORCEINLINE static void run(const View& v, const ConvArgs& p, const typename Gemm::Acc& acc,
                               int m0, int n0, int split, int tid) {
    const Gemm gemm(tid);
    const int M = v.M(), N = v.N();
#pragma unroll
    for (int i = 0; i < Tr::RepM; ++i) {
#pragma unroll
      for (int e = 0; e < Mma::kAccPerTile; e += kRun) {
        int r, c;
        Mma::acc_coord(gemm.lane, e, r, c);
        const int m = m0 + gemm.wm0 + i * Tr::IM + r;
        if (m >= M) continue;
        const int64_t row = v.c_row(m);
#pragma unroll
        for (int j = 0; j < Tr::RepN; ++j) {
#pragma unroll
          for (int s = 0; s < kRun; s += W) {
            const int n = n0 + gemm.wn0 + j * Tr::IN + c + s;
            if (n >= N) continue;  // N % kVecC == 0 (is_supported): a W run is all in or out
            const float* a = &acc[i][j][e + s];
            const int64_t off = row + n;
            if (p.out_mode == OutMode::Direct) {
              Vec<Raw, W> out;
              if constexpr (Tr::Config::kEpilogueOps) {
                float f[W];
#pragma unroll
                for (int q = 0; q < W; ++q) f[q] = a[q];
                fusion::apply<typename Tr::Config, W>(p.ep, f, v.c_chan(n), off);
#pragma unroll
                for (int q = 0; q < W; ++q) out.v[q] = float_to_raw<Tr::kOutDataType>(f[q]);
              } else {
#pragma unroll
                for (int q = 0; q < W; ++q) out.v[q] = float_to_raw<Tr::kOutDataType>(a[q]);
              }
              *reinterpret_cast<Vec<Raw, W>*>(static_cast<Raw*>(p.dst) + off) = out;
            } else if (p.out_mode == OutMode::AtomicF32) {
#pragma unroll
              for (int q = 0; q < W; ++q) atomic_add_f32(p.ws + off + q, a[q]);
            } else {
              Vec<float, W> out;
#pragma unroll
              for (int q = 0; q < W; ++q) out.v[q] = a[q];
              *reinterpret_cast<Vec<float, W>*>(p.ws + split * p.ws_split_stride + off) = out;
            }
          }
        }
      }
    }
  }
};

// CShuffle epilogue (Epilogue::CShuffle): the block's fp32 C tile is staged through shared
// memory (float [BM][BN + 4], reusing the main loop's buffers: ConfigTraits::kSmemCBytes), then
// every thread stores kVecC consecutive columns of one row per access (16-byte stores for
// 8 x 16-bit), rows in order so a warp writes whole row segments. Output modes other than
// Direct (split-K workspace) go through the default epilogue. With stats (a forward's channel
// statistics) a thread, whose column chunk is the same in every round (T % kVPR == 0), sums the
// values it writes (as rounded to the output type) and their squares per column; the block's
// sums meet in shared memory, then one fp32 atomic per column and statistic adds them to
// p.ep.stats (sums at c, sums of squares at G*K + c; zeroed by the launch).
template <class Tr, class View>
struct EpilogueCShuffle {
  using Raw = typename Tr::OutRaw;
  using Gemm = BlockGemm<Tr>;
  using Mma = typename Gemm::Mma;
  static constexpr int kLd = Tr::kLdC;  // floats per staged row
  static constexpr int V = Tr::VC;
  static constexpr int kVPR = Tr::BN / V;
  static constexpr int kTotal = Tr::BM * kVPR;
  static constexpr int T = Tr::kThreads;
  static constexpr bool kStats = Tr::Config::kStats;
  static_assert(!kStats || T % kVPR == 0, "ckgen: stats needs a fixed column chunk per thread");
  static_assert(!kStats || 2 * Tr::BN <= Tr::BM * kLd, "ckgen: stats sums in the staged tile's space");

  CKGEN_DEVICE CKGEN_FORCEINLINE static void run(const View& v, const ConvArgs& p,
                                                 const typename Gemm::Acc& acc, int m0, int n0,
                                                 int split, int tid, unsigned char* smem) {
    if (p.out_mode != OutMode::Direct) {
      EpilogueDefault<Tr, View>::run(v, p, acc, m0, n0, split, tid);
      return;
    }
    const Gemm gemm(tid);
    float* sC = reinterpret_cast<float*>(smem);
    __syncthreads();  // the main loop's last reads of shared memory are done
#pragma unroll
    for (int i = 0; i < Tr::RepM; ++i) {
#pragma unroll
      for (int e = 0; e < Mma::kAccPerTile; ++e) {
        int r, c;
        Mma::acc_coord(gemm.lane, e, r, c);
        const int row = gemm.wm0 + i * Tr::IM + r;
#pragma unroll
        for (int j = 0; j < Tr::RepN; ++j) sC[row * kLd + gemm.wn0 + j * Tr::IN + c] = acc[i][j][e];
      }
    }
    __syncthreads();
    const int M = v.M(), N = v.N();
    float sum[kStats ? V : 1] = {}, sq[kStats ? V : 1] = {};
#pragma unroll 2
    for (int idx = tid; idx < kTotal; idx += T) {
      const int row = idx / kVPR, col = (idx - row * kVPR) * V;
      const int m = m0 + row, n = n0 + col;
      if (m >= M || n >= N) continue;  // N % kVecC == 0 (is_supported): a vector is all in or out
      const float* src = sC + row * kLd + col;
      Vec<Raw, V> out;
      if constexpr (Tr::Config::kEpilogueOps) {
        float f[V];
#pragma unroll
        for (int q = 0; q < V; ++q) f[q] = src[q];
        const int64_t off = v.c_row(m) + n;
        fusion::apply<typename Tr::Config, V>(p.ep, f, v.c_chan(n), off);
#pragma unroll
        for (int q = 0; q < V; ++q) out.v[q] = float_to_raw<Tr::kOutDataType>(f[q]);
        *reinterpret_cast<Vec<Raw, V>*>(static_cast<Raw*>(p.dst) + off) = out;
        if constexpr (kStats) {
#pragma unroll
          for (int q = 0; q < V; ++q) {
            const float y = raw_to_float<Tr::kOutDataType>(out.v[q]);
            sum[q] += y;
            sq[q] = fmaf(y, y, sq[q]);
          }
        }
      } else {
#pragma unroll
        for (int q = 0; q < V; ++q) out.v[q] = float_to_raw<Tr::kOutDataType>(src[q]);
        *reinterpret_cast<Vec<Raw, V>*>(static_cast<Raw*>(p.dst) + v.c_row(m) + n) = out;
      }
    }
    if constexpr (kStats) flush_stats(v, p, sum, sq, n0, tid, sC);
  }

  // The block's column sums: sC (free once every thread's stores have read it) holds BN sums
  // then BN sums of squares; thread tid's chunk is tid % kVPR in every round.
  CKGEN_DEVICE static void flush_stats(const View& v, const ConvArgs& p, const float (&sum)[V],
                                       const float (&sq)[V], int n0, int tid, float* sC) {
    __syncthreads();
    for (int c = tid; c < 2 * Tr::BN; c += T) sC[c] = 0.f;
    __syncthreads();
    const int col = (tid % kVPR) * V;
#pragma unroll
    for (int q = 0; q < V; ++q) {
      atomic_add_f32(sC + col + q, sum[q]);
      atomic_add_f32(sC + Tr::BN + col + q, sq[q]);
    }
    __syncthreads();
    for (int c = tid; c < Tr::BN; c += T) {
      const int n = n0 + c;
      if (n >= v.N()) continue;
      const int64_t ch = v.c_chan(n);
      atomic_add_f32(p.ep.stats + ch, sC[c]);
      atomic_add_f32(p.ep.stats + p.GK + ch, sC[Tr::BN + c]);
    }
    __syncthreads();  // the next tile's main loop reuses shared memory
  }
};

}  // namespace ckgen
