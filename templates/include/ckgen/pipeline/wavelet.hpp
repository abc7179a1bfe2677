// Wavelet pipeline (warp-specialized): kLoadWaves load warps do the conv-to-GEMM address math
// (the variant's view through TileLoader), the global loads and the shared-memory writes into a
// kStages-deep ring; kMathWaves math warps (the wave layout) read shared memory, multiply and
// run the epilogue. Block = math warps first (warps 0 .. kMathWaves-1, so wgmma warpgroups
// start at warp 0), then the load warps. One piece of machinery for the three variants: the
// view decides what A and B are, the loader how they are fetched.
//
// NVIDIA (sm_80+): one `full` and one `empty` mbarrier per stage.
//   load warps, k tile t, stage s = t % S: wait empty[s] (phase t / S - 1) for t >= S;
//     cp.async A and B (zero-fill for structural zeros); cp.async.mbarrier.arrive.noinc on
//     full[s] (count = load threads), or a plain arrive after synchronous copies.
//   math warps: wait full[s] (phase t / S);
//     mma.sync / FMA backends: multiply, then one arrive per warp on empty[s];
//     wgmma (sm_90a): fence.proxy.async (cp.async writes -> async proxy), issue the stage's
//       wgmmas, commit, wait until at most this group is in flight, release stage t - 1.
// Elsewhere (AMD): the same roles in lockstep, one block barrier per k tile (load warps fill
// tile t + S - 1 while the math warps multiply tile t).
#pragma once

#include <cstdint>

#include "ckgen/core/async_copy.hpp"
#include "ckgen/block/block_gemm.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/block/mbarrier.hpp"
#include "ckgen/block/tile_loader.hpp"

namespace ckgen {

template <class Tr, class View>
struct PipelineWavelet {
  using Raw = typename Tr::Raw;
  using Gemm = BlockGemm<Tr>;
  using Mma = typename Gemm::Mma;
  using LA = TileLoader<Tr, View, true>;
  using LB = TileLoader<Tr, View, false>;
  static constexpr int S = Tr::kStages;
  static constexpr int kMathWarps = Tr::kMathThreads / Tr::kWarpSize;
  static_assert(S >= 2, "ckgen: the wavelet pipeline needs at least 2 stages");
#if defined(CKGEN_HAS_CP_ASYNC)
  static constexpr bool kCpA = sizeof(typename LA::VecT) == 4 || sizeof(typename LA::VecT) == 8 ||
                               sizeof(typename LA::VecT) == 16;
  static constexpr bool kCpB = sizeof(typename LB::VecT) == 4 || sizeof(typename LB::VecT) == 8 ||
                               sizeof(typename LB::VecT) == 16;
#else
  static constexpr bool kCpA = false, kCpB = false;
#endif

  CKGEN_DEVICE static Raw* stage_a(unsigned char* smem, int s) {
    return reinterpret_cast<Raw*>(smem) + s * Tr::kSmemAElems;
  }
  CKGEN_DEVICE static Raw* stage_b(unsigned char* smem, int s) {
    return reinterpret_cast<Raw*>(smem) + S * Tr::kSmemAElems + s * Tr::kSmemBElems;
  }
  CKGEN_DEVICE static uint64_t* full_bar(unsigned char* smem) {
    return reinterpret_cast<uint64_t*>(smem + Tr::kSmemBytes - Tr::kBarrierBytes);
  }
  CKGEN_DEVICE static uint64_t* empty_bar(unsigned char* smem) { return full_bar(smem) + S; }

  CKGEN_DEVICE static int num_k_tiles(int kb, int ke) {
    return ke > kb ? (ke - kb + Tr::BK - 1) / Tr::BK : 0;
  }

#if defined(CKGEN_HAS_MBARRIER)
  // Every thread of the block calls this once (it ends with a block barrier).
  CKGEN_DEVICE static void init(unsigned char* smem, int tid) {
    if (tid == 0) {
      for (int s = 0; s < S; ++s) {
        mbar::init(full_bar(smem) + s, Tr::kLoadThreads);
        mbar::init(empty_bar(smem) + s, kMathWarps);
      }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
    }
    __syncthreads();
  }

  // Load warps (ltid = thread index among the load threads).
  CKGEN_DEVICE static void produce(const View& v, int m0, int n0, int kb, int ke,
                                   unsigned char* smem, int ltid) {
    const int nk = num_k_tiles(kb, ke);
    LA la;
    LB lb;
    la.init(v, m0, ltid);
    lb.init(v, n0, ltid);
    for (int t = 0; t < nk; ++t) {
      const int s = t % S;
      if (t >= S) mbar::wait(empty_bar(smem) + s, uint32_t((t / S - 1) & 1));
      la.copy_async(v, kb + t * Tr::BK, stage_a(smem, s), ltid);
      lb.copy_async(v, kb + t * Tr::BK, stage_b(smem, s), ltid);
      if constexpr (kCpA && kCpB) {
        mbar::arrive_cp_async(full_bar(smem) + s);
      } else {
        async_wait<0>();
        mbar::arrive(full_bar(smem) + s);
      }
    }
    async_wait<0>();
  }

  // Math warps (tid < kMathThreads).
  CKGEN_DEVICE static void consume(typename Gemm::Acc& acc, int kb, int ke, unsigned char* smem,
                                   int tid) {
    const int nk = num_k_tiles(kb, ke);
    const Gemm gemm(tid);
    const bool leader = (tid % Tr::kWarpSize) == 0;
    if constexpr (Tr::kWgmma) {
      for (int t = 0; t < nk; ++t) {
        const int s = t % S;
        mbar::wait(full_bar(smem) + s, uint32_t((t / S) & 1));
#if defined(CKGEN_HAS_WGMMA)
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
        Mma::fence_acc(acc);
        Mma::fence();
        gemm(acc, stage_a(smem, s), stage_b(smem, s));
        Mma::commit();
        Mma::template wait<1>();  // tile t - 1 has been read
        Mma::fence_acc(acc);
        if (t > 0) {
          __syncwarp();
          if (leader) mbar::arrive(empty_bar(smem) + (t - 1) % S);
        }
      }
      Mma::template wait<0>();
      Mma::fence_acc(acc);
    } else {
      for (int t = 0; t < nk; ++t) {
        const int s = t % S;
        mbar::wait(full_bar(smem) + s, uint32_t((t / S) & 1));
        gemm(acc, stage_a(smem, s), stage_b(smem, s));
        __syncwarp();
        if (leader) mbar::arrive(empty_bar(smem) + s);
      }
    }
  }
#endif

  // Portable lockstep form (no mbarriers): every thread of the block runs it.
  CKGEN_DEVICE static void run_lockstep(const View& v, typename Gemm::Acc& acc, int m0, int n0,
                                        int kb, int ke, unsigned char* smem, int tid) {
    const int nk = num_k_tiles(kb, ke);
    const bool loader = tid >= Tr::kMathThreads;
    const int ltid = tid - Tr::kMathThreads;
    LA la;
    LB lb;
    if (loader) {
      la.init(v, m0, ltid);
      lb.init(v, n0, ltid);
      for (int s = 0; s < S - 1 && s < nk; ++s) {
        la.copy_direct(v, kb + s * Tr::BK, stage_a(smem, s), ltid);
        lb.copy_direct(v, kb + s * Tr::BK, stage_b(smem, s), ltid);
      }
    }
    __syncthreads();
    for (int t = 0; t < nk; ++t) {
      if (loader) {
        const int tn = t + S - 1;
        if (tn < nk) {
          la.copy_direct(v, kb + tn * Tr::BK, stage_a(smem, tn % S), ltid);
          lb.copy_direct(v, kb + tn * Tr::BK, stage_b(smem, tn % S), ltid);
        }
      } else {
        const Gemm gemm(tid);
        gemm(acc, stage_a(smem, t % S), stage_b(smem, t % S));
      }
      __syncthreads();
    }
  }
};

}  // namespace ckgen
