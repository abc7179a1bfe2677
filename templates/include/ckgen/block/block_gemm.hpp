// Block-level GEMM step: every warp multiplies its part of the shared-memory A and B tiles
// with the configured warp-level backend. Warp w sits at (w % WaveM, w / WaveM).
#pragma once

#include "ckgen/core/config_traits.hpp"
#include "ckgen/warp/warp_mma.hpp"

namespace ckgen {

template <class Tr>
struct BlockGemm {
  using Raw = typename Tr::Raw;
  using Mma = typename WarpMmaFor<Tr>::type;
  static constexpr int kAcc = Mma::kAccPerTile;
  using Acc = float[Tr::RepM][Tr::RepN][kAcc];

  int wm0, wn0, lane;

  CKGEN_DEVICE explicit BlockGemm(int tid) {
    const int warp = tid / Tr::kWarpSize;
    lane = tid % Tr::kWarpSize;
    if constexpr (Tr::kWgmma) {  // warpgroups (4 warps stacked along M, 16 rows each)
      const int wg = warp / 4, gm = Tr::WM / 4;
      wm0 = (wg % gm) * Tr::kWarpTileM + (warp % 4) * 16;
      wn0 = (wg / gm) * Tr::kWarpTileN;
    } else {
      wm0 = (warp % Tr::WM) * Tr::kWarpTileM;
      wn0 = (warp / Tr::WM) * Tr::kWarpTileN;
    }
  }

  CKGEN_DEVICE static void clear(Acc& acc) {
#pragma unroll
    for (int i = 0; i < Tr::RepM; ++i)
#pragma unroll
      for (int j = 0; j < Tr::RepN; ++j)
#pragma unroll
        for (int e = 0; e < kAcc; ++e) acc[i][j][e] = 0.f;
  }

  CKGEN_DEVICE void operator()(Acc& acc, const Raw* sA, const Raw* sB) const {
    Mma::tile(acc, sA, sB, wm0, wn0, lane);
  }
};

}  // namespace ckgen
