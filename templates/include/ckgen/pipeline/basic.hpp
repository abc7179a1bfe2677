// Basic pipeline: one shared-memory buffer per operand; the next k tile is prefetched into
// registers while the current one is multiplied (global -> regs -> LDS -> MMA). The backward
// fusions (gradient mask, bias_grad) are applied as dy is staged (block/tile_loader.hpp).
#pragma once

#include "ckgen/block/block_gemm.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/block/tile_loader.hpp"

namespace ckgen {

template <class Tr, class View>
struct PipelineBasic {
  using Raw = typename Tr::Raw;
  using Gemm = BlockGemm<Tr>;

  // acc += A[m0.., kb..ke) * B[kb..ke), n0..]
  CKGEN_DEVICE static void run(const View& v, typename Gemm::Acc& acc, int m0, int n0, int kb,
                               int ke, unsigned char* smem, int tid) {
    Raw* sA = reinterpret_cast<Raw*>(smem);
    Raw* sB = sA + Tr::kSmemAElems;
    const Gemm gemm(tid);
    const int nk = ke > kb ? (ke - kb + Tr::BK - 1) / Tr::BK : 0;
    if (nk == 0) return;
    TileLoader<Tr, View, true> la;
    TileLoader<Tr, View, false> lb;
    la.init(v, m0, tid);
    lb.init(v, n0, tid);
    if constexpr (decltype(la)::kRegStage && decltype(lb)::kRegStage) {
      la.load(v, kb, tid);
      lb.load(v, kb, tid);
      la.store(v, sA, tid);
      lb.store(v, sB, tid);
      __syncthreads();
      for (int t = 0; t < nk; ++t) {
        const bool more = t + 1 < nk;
        if (more) {
          la.load(v, kb + (t + 1) * Tr::BK, tid);
          lb.load(v, kb + (t + 1) * Tr::BK, tid);
        }
        gemm(acc, sA, sB);
        __syncthreads();
        if (more) {
          la.store(v, sA, tid);
          lb.store(v, sB, tid);
          __syncthreads();
        }
      }
    } else {
      // Staging would not fit in registers: copy straight to shared memory, no prefetch.
      for (int t = 0; t < nk; ++t) {
        if (t > 0) __syncthreads();  // everyone is done with the previous tile
        la.copy_direct(v, kb + t * Tr::BK, sA, tid);
        lb.copy_direct(v, kb + t * Tr::BK, sB, tid);
        __syncthreads();
        gemm(acc, sA, sB);
      }
    }
    if constexpr (decltype(la)::kDb) la.flush_bias_grad(v, smem, n0 == 0, tid);
  }
};

}  // namespace ckgen
