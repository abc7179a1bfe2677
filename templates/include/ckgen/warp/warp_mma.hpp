// Selects the warp-level MMA backend from Config::kMathUnit.
// Backends: WarpMmaSync (warp/mma_nvidia.hpp), WarpFma (warp/mma_fma.hpp). An AMD backend (MFMA / WMMA,
// warp/mma_amd.hpp) plugs in here with the same interface: kAccPerTile, kAccVec, acc_coord(),
// tile(acc, sA, sB, wm0, wn0, lane).
#pragma once

#include "ckgen/core/config_traits.hpp"
#include "ckgen/warp/mma_fma.hpp"
#include "ckgen/warp/mma_nvidia.hpp"
#include "ckgen/warp/mma_wgmma.hpp"
#if defined(CKGEN_AMD) && __has_include("ckgen/warp/mma_amd.hpp")
#include "ckgen/warp/mma_amd.hpp"
#define CKGEN_HAS_MMA_AMD 1
#endif

namespace ckgen {

template <class Tr, MathUnit U = Tr::Config::kMathUnit>
struct WarpMmaFor {
  static_assert(U == MathUnit::MmaSync || U == MathUnit::Fma || U == MathUnit::Wgmma,
                "ckgen: this math unit has no backend yet (MmaSync, Fma, and Mfma/Wmma on AMD are implemented)");
  using type = WarpFma<Tr>;
};
template <class Tr>
struct WarpMmaFor<Tr, MathUnit::MmaSync> {
  using type = WarpMmaSync<Tr>;
};
template <class Tr>
struct WarpMmaFor<Tr, MathUnit::Wgmma> {  // warpgroup MMA (sm_90a, wavelet pipeline)
  using type = WarpWgmma<Tr>;
};
#if defined(CKGEN_HAS_MMA_AMD)
template <class Tr>
struct WarpMmaFor<Tr, MathUnit::Mfma> {
  using type = WarpMfma<Tr>;
};
template <class Tr>
struct WarpMmaFor<Tr, MathUnit::Wmma> {
  using type = WarpWmma<Tr>;
};
#endif

}  // namespace ckgen
