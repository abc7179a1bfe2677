// Epilogue steps of the TMA warp-specialized kernel (pipeline/tma_ws.hpp): a math warpgroup's fp32
// accumulators of one work unit stored into the written tensor or reduced into the split
// workspace, and the CShuffle slab writes (the fp32 rounds of a split, one column chunk of a
// store), as forced-inline steps of the kernel; the row / column maps (row_ok, row_base, gcol) are
// the kernel's lambdas, passed through. The loops of the cluster reduction and of the CShuffle
// copies stay in the kernel's body: taken out, they change the generated code.
// Accumulator i of an m64 slice holds row warp*16 + lane/4 (+8 for i&2), column 8*(i/4) +
// 2*(lane%4) + (i&1) (the m16n8 layout per n8 block). Row r, column c of the tile land at element
// row_base(r) + gcol(c) of y (or of the fp32 split workspace); row_ok: the row is a pixel
// (stride1: a position ow < Q of an output row); gcol(tc): n0 + tc, or (the row form) tap tc /
// 64's column of channel n0 + tc % 64 (columns = dw's X * C of filter row u.tap).
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/pipeline/tma_traits.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA) && defined(CKGEN_HAS_TMA)

namespace tma_ws {

// A fused instance's operations (epilogue/fusion.hpp) on columns col, col + 1 of group g's row
// at output offset `off` (col + 1 left alone past K; `pairs`: 4-byte aligned column pairs).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void fuse_pair(const TmaConvArgs& p, float& f0, float& f1, int g, int col,
                                              int64_t off, bool pairs) {
  const int64_t c = int64_t(g) * p.K + col;
  if (pairs && col + 1 < p.K) {
    float f[2] = {f0, f1};
    fusion::apply<Cfg, 2>(p.ep, f, c, off);
    f0 = f[0];
    f1 = f[1];
  } else {
    fusion::apply<Cfg, 1>(p.ep, &f0, c, off);
    if (col + 1 < p.K) fusion::apply<Cfg, 1>(p.ep, &f1, c + 1, off + 1);
  }
}

// swap_ab: accumulator 4j + 2h + q holds channel warp * 16 + lane / 4 + 8h of pixel
// wg * PN + 8j + 2 (lane % 4) + q (the m16n8 layout of the transposed tile): 2-byte stores
// (or 4-byte fp32 reductions into the split workspace), 8 channels x 4 pixels a warp.
template <class Cfg, class Acc, class RowOk, class RowBase>
CKGEN_DEVICE CKGEN_FORCEINLINE void store_swap(const TmaConvArgs& p, Acc& acc,
                                               typename TmaTraits<Cfg>::Raw* const& y, const int& m0,
                                               const int& n0, const int& wg, const int& warp, const int& lane,
                                               RowOk& row_ok, RowBase& row_base, const int& g) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
#pragma unroll
  for (int j = 0; j < Tr::PN / 8; ++j) {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int row = m0 + wg * Tr::PN + j * 8 + (lane & 3) * 2 + q;
      if (!row_ok(row)) continue;
      const int64_t rb = row_base(row);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = n0 + warp * 16 + (lane >> 2) + 8 * h;
        if (col >= p.K) continue;
        float v = acc[0][j * 4 + h * 2 + q];
        if constexpr (Cfg::kFused) fusion::apply<Cfg, 1>(p.ep, &v, int64_t(g) * p.K + col, rb + col);
        if (p.ws != nullptr)
          asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;\n" ::"l"(p.ws + rb + col), "f"(v)
                       : "memory");
        else
          y[rb + col] = float_to_raw<Cfg::kDataType>(v);
      }
    }
  }
}

// Default: converted pairs stored straight from registers (4-byte stores: a warp's store covers
// 8 rows x 16 bytes).
template <class Cfg, class Acc, class RowOk, class RowBase, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void store(const TmaConvArgs& p, Acc& acc,
                                          typename TmaTraits<Cfg>::Raw* const& y, const int& m0,
                                          const int& wg, const int& warp, const int& lane, RowOk& row_ok,
                                          RowBase& row_base, GCol& gcol, const int& g) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  const bool pairs = (p.K % 2) == 0;
#pragma unroll
  for (int i = 0; i < Tr::RepM; ++i) {
    const int r0 = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = r0 + h * 8;
      if (!row_ok(row)) continue;
      Raw* dst_row = y + row_base(row);
#pragma unroll
      for (int j = 0; j < Tr::BN / 8; ++j) {
        const int col = gcol(j * 8 + (lane & 3) * 2);
        if (col >= p.K) continue;
        Raw* dst = dst_row + col;
        float f0 = acc[i][j * 4 + h * 2], f1 = acc[i][j * 4 + h * 2 + 1];
        if constexpr (Cfg::kFused) fuse_pair<Cfg>(p, f0, f1, g, col, (dst_row - y) + col, pairs);
        const Raw v0 = float_to_raw<Cfg::kDataType>(f0);
        const Raw v1 = float_to_raw<Cfg::kDataType>(f1);
        if (pairs && col + 1 < p.K) {
          *reinterpret_cast<uint32_t*>(dst) = uint32_t(v0) | (uint32_t(v1) << 16);
        } else {
          dst[0] = v0;
          if (col + 1 < p.K) dst[1] = v1;
        }
      }
    }
  }
}

// split: fp32 reductions into the workspace (splitk_finish converts), 16 bytes a lane
// (tma::red_fragment_row).
template <class Cfg, class Acc, class RowOk, class RowBase, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void red_split(const TmaConvArgs& p, Acc& acc, const int& m0, const int& wg,
                                              const int& warp, const int& lane, RowOk& row_ok,
                                              RowBase& row_base, GCol& gcol) {
  using Tr = TmaTraits<Cfg>;
#pragma unroll
  for (int i = 0; i < Tr::RepM; ++i) {
    const int r0 = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = r0 + h * 8;
      const bool live = row_ok(row);  // the same for both lanes of a pair (one row)
      tma::red_fragment_row<Tr::BN>(acc[i], h, p.ws + (live ? row_base(row) : 0), p.K, live, gcol);
    }
  }
}

// Split, CShuffle: half h of this lane's accumulators (row slice a), columns [c0, c0 + 32), into
// the warp's fp32 slab (8 rows, kPitch floats apart).
template <int kPitch, class AccRow>
CKGEN_DEVICE CKGEN_FORCEINLINE void stage_slab_f32(const AccRow& a, float* slab, const int c0, const int h,
                                                   const int lane) {
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    const int j = c0 / 8 + jj;
    *reinterpret_cast<float2*>(slab + (lane >> 2) * kPitch + jj * 8 + (lane & 3) * 2) =
        make_float2(a[j * 4 + h * 2], a[j * 4 + h * 2 + 1]);
  }
}

// CShuffle: columns [c0, c0 + kSlabCols) of this lane's accumulators of row slice i (fused
// operations applied first), converted, into the warp's slab (kSlabStride elements a row).
template <class Cfg, class Acc, class RowOk, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void stage_chunk(const TmaConvArgs& p, Acc& acc,
                                                typename TmaTraits<Cfg>::Raw* const slab, const int i,
                                                const int c0, const int r0, const int64_t (&base)[2],
                                                const int lane, const bool vec, RowOk& row_ok, GCol& gcol,
                                                const int g) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
#pragma unroll
  for (int jj = 0; jj < Tr::kSlabCols / 8; ++jj) {
    const int j = c0 / 8 + jj;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float f0 = acc[i][j * 4 + h * 2], f1 = acc[i][j * 4 + h * 2 + 1];
      if constexpr (Cfg::kFused) {
        const int row = r0 + (lane >> 2) + 8 * h, col = gcol(c0 + jj * 8 + (lane & 3) * 2);
        if (row_ok(row) && col < p.K) fuse_pair<Cfg>(p, f0, f1, g, col, base[h] + col, vec);
      }
      const Raw v0 = float_to_raw<Cfg::kDataType>(f0);
      const Raw v1 = float_to_raw<Cfg::kDataType>(f1);
      *reinterpret_cast<uint32_t*>(slab + ((lane >> 2) + h * 8) * Tr::kSlabStride + jj * 8 +
                                   (lane & 3) * 2) = uint32_t(v0) | (uint32_t(v1) << 16);
    }
  }
}

// Split, CShuffle: the rounds of row slice i, half h: 32 columns at a time through the warp's fp32
// slab (stage_slab_f32), read back as 4 floats a lane and added into rows dst[0] / dst[1]
// (nullptr: not a pixel) of the workspace.
template <class Cfg, int kPitch, class Acc, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void red_rounds(const TmaConvArgs& p, Acc& acc, float* const slab,
                                               float* const (&dst)[2], const int i, const int h,
                                               const int lane, const int lr, const int lc, GCol& gcol) {
  using Tr = TmaTraits<Cfg>;
#pragma unroll
  for (int c0 = 0; c0 < Tr::BN; c0 += 32) {
    __syncwarp();
    stage_slab_f32<kPitch>(acc[i], slab, c0, h, lane);
    __syncwarp();
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const float4 v = *reinterpret_cast<const float4*>(slab + (rr * 4 + lr) * kPitch + lc);
      if (dst[rr] != nullptr) tma::red_add4(dst[rr], gcol(c0 + lc), p.K, v.x, v.y, v.z, v.w);
    }
  }
}

}  // namespace tma_ws

#endif  // CKGEN_NVIDIA && CKGEN_HAS_TMA

}  // namespace ckgen
