// Warp-level "MMA" on plain FMA units: the fp32 path (and a fallback for any data type and
// platform). Same backend interface as warp/mma_nvidia.hpp.
//
// Lane mapping of one IM x IN tile (IM * IN == 4 * warp size: 16 x 8 for warp 32, 16 x 16 for
// warp 64): lane l owns row l / (IN/4) and the four consecutive columns 4*(l % (IN/4)) + 0..3,
// so the epilogue stores 4 contiguous outputs. No cross-lane operations: the "warp" is only a
// grouping of threads, so this runs on any hardware warp size. WarpTile K only has to divide
// the block tile K.
#pragma once

#include "ckgen/core/config_traits.hpp"

namespace ckgen {

template <class Tr>
struct WarpFma {
  using Raw = typename Tr::Raw;
  static constexpr int kAccPerTile = 4;
  static constexpr int kAccVec = 4;
  static constexpr int RepM = Tr::RepM, RepN = Tr::RepN;
  static constexpr int kLanesPerRow = Tr::IN / 4;
  static_assert(Tr::IN % 4 == 0 && Tr::IM * Tr::IN == 4 * Tr::kWarpSize,
                "ckgen: Fma needs WarpTile M*N == 4 * warp size (16x8 for warp 32, 16x16 for 64)");

  CKGEN_DEVICE static void acc_coord(int lane, int i, int& r, int& c) {
    r = lane / kLanesPerRow;
    c = (lane % kLanesPerRow) * 4 + i;
  }

  CKGEN_DEVICE static float a_at(const Raw* sA, int m, int k) {
    if constexpr (Tr::kAKMajor)
      return raw_to_float<Tr::kDataType>(sA[m * Tr::kLdA + k]);
    else
      return raw_to_float<Tr::kDataType>(sA[k * Tr::kLdA + m]);
  }
  CKGEN_DEVICE static float b_at(const Raw* sB, int k, int n) {
    if constexpr (Tr::kBKMajor)
      return raw_to_float<Tr::kDataType>(sB[n * Tr::kLdB + k]);
    else
      return raw_to_float<Tr::kDataType>(sB[k * Tr::kLdB + n]);
  }

  CKGEN_DEVICE static void tile(float (&acc)[RepM][RepN][4], const Raw* sA, const Raw* sB,
                                int wm0, int wn0, int lane) {
    const int r = lane / kLanesPerRow, c = (lane % kLanesPerRow) * 4;
#pragma unroll 2
    for (int k = 0; k < Tr::BK; ++k) {
      float a[RepM];
      float b[RepN][4];
#pragma unroll
      for (int i = 0; i < RepM; ++i) a[i] = a_at(sA, wm0 + i * Tr::IM + r, k);
#pragma unroll
      for (int j = 0; j < RepN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) b[j][e] = b_at(sB, k, wn0 + j * Tr::IN + c + e);
#pragma unroll
      for (int i = 0; i < RepM; ++i)
#pragma unroll
        for (int j = 0; j < RepN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] = fmaf(a[i], b[j][e], acc[i][j][e]);
    }
  }
};

}  // namespace ckgen
