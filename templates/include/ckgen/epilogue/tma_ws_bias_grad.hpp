// bias_grad on wavelet_tma's backward_weight (pipeline/tma_ws.hpp): db[g * K + k] gains the sum of
// dy over a unit's pixels, computed by the tensor cores from the A tiles the unit's wgmma read.
//
// The A tile (BM / 64 blocks of 64 output channels x 64 pixels, the main loop's M-major operand)
// times an all-ones 16-pixel x 8 operand is the channel sums of 16 pixels in each of 8 columns: a
// wgmma m64n8k16 per k16 step and m64 slice, in the stage's commit group, accumulating 4 fp32 a
// lane. The ones lie in shared memory after the slabs (two 8 x 16-byte core matrices, no swizzle:
// kTmaBiasGradOnesBytes). Every column tile and every tap of a row tile reads the same dy, so its
// column units share the k16 steps of each stage (BiasGradSums::start): at most one more wgmma a
// stage each where there are four or more, spread over the units, not their k tiles (walking the
// k tiles in another order per unit costs more in the cache than it saves). At the unit's end the
// sums go to db: stored when one unit covers the channels, else added into db cleared by the call
// (TmaConvArgs::bias_grad_adds).
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/core/limits.hpp"
#include "ckgen/pipeline/tma_traits.hpp"
#include "ckgen/warp/mma_wgmma.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA) && defined(CKGEN_HAS_TMA)

namespace tma_ws {

template <class Cfg>
struct BiasGradSums {
  using Tr = TmaTraits<Cfg>;
  static constexpr bool kOn = Cfg::kBiasGrad;
  static_assert(!kOn || (Tr::kWeightGrad && !Tr::kRows && !Tr::kSwap && !Cfg::kGradMask),
                "ckgen: wavelet_tma sums bias_grad in backward_weight's default form, without a gradient mask");
  static_assert(kTmaBiasGradOnesBytes >= 256, "ckgen: bias_grad's ones are two 8 x 16-byte core matrices");
  static constexpr int kSteps = Tr::BK / 16;  // k16 steps of a stage
  using Op = wgmma_detail::Op8<Tr::kBF16, /*A M-major*/ 1, /*B K-major*/ 0>;
  static constexpr int kSets = kOn ? Tr::RepM : 1;
  float d[kSets][4];
  int steps = 0;    // k16 steps of each stage this unit sums: 0, 1, 2 or 4
  int kk0 = 0;      // its first, then every cols-th
  int stride = 1;
  bool first = true;  // the next stage is the unit's first: its wgmma start the sums (no zeroing
                      // instruction: one among wgmma in flight serializes them)

  // The ones (1.0 in the instance's datatype), written once by the first 64 math threads before
  // the block's first barrier and made visible to the tensor cores' (async) proxy.
  CKGEN_DEVICE CKGEN_FORCEINLINE static void fill_ones(unsigned char* ones, const int tid) {
    if constexpr (kOn) {
      if (tid < kTmaBiasGradOnesBytes / 4)
        reinterpret_cast<uint32_t*>(ones)[tid] = Tr::kBF16 ? 0x3F803F80u : 0x3C003C00u;
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
  }

  // Unit u's share: column unit col of the row's cols = tiles_n x taps (every column tile and tap
  // reads the same dy tiles) sums k16 steps col, col + cols, ... of each stage: one step a stage
  // for the first four columns when cols >= 4, two for cols 2 and 3, all four for one column.
  template <class U>
  CKGEN_DEVICE CKGEN_FORCEINLINE void start(const TmaConvArgs& p, const U& u) {
    if constexpr (kOn) {
      const int cols = p.tiles_n * p.taps, col = u.tap * p.tiles_n + u.n0 / Tr::BN;
      kk0 = col;
      stride = cols;
      steps = col >= kSteps ? 0 : (kSteps - 1 - col) / cols + 1;
      first = true;
    }
  }

  // The sums of one stage (N = steps; a0: this warpgroup's first A block; ones: the ones' shared
  // address), issued after its main wgmma.
  template <int N>
  CKGEN_DEVICE CKGEN_FORCEINLINE void issue(const uint32_t a0, const uint32_t ones) {
    if constexpr (kOn) {
      // no swizzle, K-major: core matrices 128 bytes apart along K, one along N
      const uint64_t db = wgmma_detail::plain_desc(ones, 128, 256);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const uint32_t kk = uint32_t(kk0 + j * stride);
#pragma unroll
        for (int i = 0; i < kSets; ++i)
          Op::run(d[i], tma::sw128_desc_mn(a0 + i * Tr::kBlockBytes + kk * 2048, Tr::kBlockBytes), db,
                  j > 0 || !first);
      }
      first = false;
    }
  }

  // After the unit's wgmma completed (wgmma.wait_group 0): the sums into db, added
  // (TmaConvArgs::bias_grad_adds) or stored; rows past the group's K belong to no channel of it.
  // Every lane reads the accumulators (a first read in a divergent branch would serialize the
  // kernel's wgmma): lane 4j writes row j, lane 4j + 1 row j + 8 of the warp's 16.
  CKGEN_DEVICE CKGEN_FORCEINLINE void flush(const TmaConvArgs& p, const int g, const int m0, const int wg,
                                            const int warp, const int lane) {
    if constexpr (kOn) {
      const bool add = p.bias_grad_adds();
#pragma unroll
      for (int i = 0; i < kSets; ++i) {
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
        const float v = (lane & 1) ? d[i][2] : d[i][0];
        const int r = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 2) + 8 * (lane & 1);
        if (steps > 0 && (lane & 3) < 2 && r < p.M) {
          float* dst = p.ep.db + int64_t(g) * p.M + r;
          if (add)
            atomicAdd(dst, v);
          else
            *dst = v;
        }
      }
    }
  }
};

}  // namespace tma_ws

#endif  // CKGEN_NVIDIA && CKGEN_HAS_TMA

}  // namespace ckgen
