// Warp-level "MMA" on plain FMA units: the fp32 path (and a fallback for any data type and
// platform). Same backend interface as mma_nvidia.hpp.
//
// Lane mapping of one IM x IN = 16 x 8 tile (warp size 32): lane l owns row l/2 and the four
// consecutive columns 4*(l%2) .. 4*(l%2)+3, so the epilogue stores 4 contiguous outputs.
// WarpTile K only has to divide the block tile K.
#pragma once

#include "ckgen/config.hpp"

namespace ckgen {

template <class Tr>
struct WarpFma {
  using Raw = typename Tr::Raw;
  static constexpr int kAccPerTile = 4;
  static constexpr int kAccVec = 4;
  static constexpr int RepM = Tr::RepM, RepN = Tr::RepN;
  static_assert(Tr::IM == 16 && Tr::IN == 8, "ckgen: Fma needs WarpTile<16, 8, k>");
  static_assert(Tr::kWarpSize == 32, "ckgen: the Fma lane mapping needs warp size 32");

  CKGEN_DEVICE static void acc_coord(int lane, int i, int& r, int& c) {
    r = lane >> 1;
    c = ((lane & 1) << 2) + i;
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
    const int r = lane >> 1, c = (lane & 1) << 2;
#pragma unroll 2
    for (int k = 0; k < Tr::BK; ++k) {
      float a[RepM];
      float b[RepN][4];
#pragma unroll
      for (int i = 0; i < RepM; ++i) a[i] = a_at(sA, wm0 + i * 16 + r, k);
#pragma unroll
      for (int j = 0; j < RepN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) b[j][e] = b_at(sB, k, wn0 + j * 8 + c + e);
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
