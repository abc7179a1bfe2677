// Default epilogue: fp32 accumulators -> output, stored straight from registers with bounds
// checks. Each lane owns runs of kAccVec consecutive columns (2 for mma.sync, 4 for Fma); they
// are written kVecC (capped at the run length) elements per store. Output modes (OutMode):
// Direct (convert to the output type), AtomicF32 (split-K one stage), PartialF32 (split-K two
// stages, the split's own workspace slice). A fused instance (epilogue/fusion.hpp) applies its
// operations to each Direct vector before the conversion.
#pragma once

#include "ckgen/block/block_gemm.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/epilogue/fusion.hpp"

namespace ckgen {

template <class Tr, class View>
struct EpilogueDefault {
  using Raw = typename Tr::Raw;
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
                for (int q = 0; q < W; ++q) out.v[q] = float_to_raw<Tr::kDataType>(f[q]);
              } else {
#pragma unroll
                for (int q = 0; q < W; ++q) out.v[q] = float_to_raw<Tr::kDataType>(a[q]);
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
// Direct (split-K workspace) go through the default epilogue.
template <class Tr, class View>
struct EpilogueCShuffle {
  using Raw = typename Tr::Raw;
  using Gemm = BlockGemm<Tr>;
  using Mma = typename Gemm::Mma;
  static constexpr int kLd = Tr::kLdC;  // floats per staged row
  static constexpr int V = Tr::VC;
  static constexpr int kVPR = Tr::BN / V;
  static constexpr int kTotal = Tr::BM * kVPR;
  static constexpr int T = Tr::kThreads;

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
        for (int q = 0; q < V; ++q) out.v[q] = float_to_raw<Tr::kDataType>(f[q]);
        *reinterpret_cast<Vec<Raw, V>*>(static_cast<Raw*>(p.dst) + off) = out;
        continue;
      }
#pragma unroll
      for (int q = 0; q < V; ++q) out.v[q] = float_to_raw<Tr::kDataType>(src[q]);
      *reinterpret_cast<Vec<Raw, V>*>(static_cast<Raw*>(p.dst) + v.c_row(m) + n) = out;
    }
  }
};

}  // namespace ckgen
