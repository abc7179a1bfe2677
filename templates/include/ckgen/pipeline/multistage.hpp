// Multistage pipeline: kStages shared-memory buffers per operand filled by cp.async
// (core/async_copy.hpp) kStages-1 k tiles ahead of the math; one barrier per k tile.
//
//   prologue: issue tiles 0 .. S-2 (one commit group each, empty groups keep the count)
//   step t:   wait until tile t landed; barrier (tile t visible to all, tile t-1 consumed);
//             issue tile t+S-1 into the buffer of tile t-1; multiply tile t.
// A gradient mask (backward) copies y beside dy (sY, an A buffer a stage); each thread multiplies
// its own vectors of tile t between the wait and the barrier.
#pragma once

#include "ckgen/core/async_copy.hpp"
#include "ckgen/block/block_gemm.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/block/tile_loader.hpp"

namespace ckgen {

template <class Tr, class View>
struct PipelineMultistage {
  using Raw = typename Tr::Raw;
  using Gemm = BlockGemm<Tr>;
  static constexpr int S = Tr::kStages;
  static_assert(S >= 2, "ckgen: the multistage pipeline needs at least 2 stages");

  CKGEN_DEVICE static void run(const View& v, typename Gemm::Acc& acc, int m0, int n0, int kb,
                               int ke, unsigned char* smem, int tid) {
    Raw* sA = reinterpret_cast<Raw*>(smem);
    Raw* sB = sA + S * Tr::kSmemAElems;
    Raw* sY = sB + S * Tr::kSmemBElems;  // kMaskStage: y beside dy
    const Gemm gemm(tid);
    const int nk = ke > kb ? (ke - kb + Tr::BK - 1) / Tr::BK : 0;
    if (nk == 0) return;
    TileLoader<Tr, View, true> la;
    TileLoader<Tr, View, false> lb;
    la.init(v, m0, tid);
    lb.init(v, n0, tid);
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < nk) {
        la.copy_async(v, kb + s * Tr::BK, sA + s * Tr::kSmemAElems, tid, sY + s * Tr::kSmemAElems);
        lb.copy_async(v, kb + s * Tr::BK, sB + s * Tr::kSmemBElems, tid);
      }
      async_commit();
    }
    int read = 0, write = S - 1;
    for (int t = 0; t < nk; ++t) {
      async_wait<S - 2>();
      if constexpr (Tr::kMaskStage) la.apply_mask(v, sA + read * Tr::kSmemAElems, sY + read * Tr::kSmemAElems, tid);
      __syncthreads();
      const int tn = t + S - 1;
      if (tn < nk) {
        la.copy_async(v, kb + tn * Tr::BK, sA + write * Tr::kSmemAElems, tid, sY + write * Tr::kSmemAElems);
        lb.copy_async(v, kb + tn * Tr::BK, sB + write * Tr::kSmemBElems, tid);
      }
      async_commit();
      gemm(acc, sA + read * Tr::kSmemAElems, sB + read * Tr::kSmemBElems);
      read = read + 1 == S ? 0 : read + 1;
      write = write + 1 == S ? 0 : write + 1;
    }
    async_wait<0>();
  }
};

}  // namespace ckgen
