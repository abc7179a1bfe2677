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
#include <type_traits>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/core/limits.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/pipeline/tma_traits.hpp"
#include "ckgen/pipeline/tma_ws_maps.hpp"

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

// A fused instance's bias / scale of one unit's BN tile columns, read once a unit and spread over
// the warp: lane l holds tile column 32 k + l's in register k (0 past K); a lane takes column tc's
// from lane tc % 32 with a shuffle. load() is issued before the unit's main loop, so the epilogue
// waits on no global load for them.
template <class Cfg>
struct UnitChannels {
  using Tr = TmaTraits<Cfg>;
  static constexpr bool kBias = Cfg::kEpilogueOps && fusion::kReadsBias<Cfg>;
  static constexpr bool kScale = Cfg::kEpilogueOps && fusion::kReadsScale<Cfg>;
  static constexpr int kRegs = (Tr::BN + 31) / 32;
  float b[kBias ? kRegs : 1];
  float s[kScale ? kRegs : 1];

  template <class GCol>
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const TmaConvArgs& p, const int g, GCol& gcol, const int lane) {
    if constexpr (kBias) {
#pragma unroll
      for (int k = 0; k < kRegs; ++k) {
        const int tc = 32 * k + lane;
        const int col = tc < Tr::BN ? gcol(tc) : p.K;
        const int64_t c = int64_t(g) * p.K + col;
        b[k] = col < p.K ? __ldg(p.ep.bias + c) : 0.f;
        if constexpr (kScale) s[k] = col < p.K ? __ldg(p.ep.scale + c) : 0.f;
      }
    }
  }
  // Columns tc, tc + 1 (tc even, tc % 32 + 1 < 32) of register k = tc / 32: every lane calls it.
  CKGEN_DEVICE CKGEN_FORCEINLINE void pair(const int k, const int src, float (&bias)[2],
                                           float (&scale)[2]) const {
    if constexpr (kBias) {
      bias[0] = __shfl_sync(0xffffffffu, b[k], src);
      bias[1] = __shfl_sync(0xffffffffu, b[k], src + 1);
    }
    if constexpr (kScale) {
      scale[0] = __shfl_sync(0xffffffffu, s[k], src);
      scale[1] = __shfl_sync(0xffffffffu, s[k], src + 1);
    }
  }
};

// The residual's 8 raw values of columns col..col+7 at element offset off (0 past K), as one
// 16-byte read through the read-only path when `vec` (K % 8 == 0: 16-byte aligned rows).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE uint4 residual_vec8(const TmaConvArgs& p, const int64_t off, const int col,
                                                   const bool vec) {
  using Raw = typename TmaTraits<Cfg>::Raw;
  const Raw* src = static_cast<const Raw*>(p.ep.residual) + off;
  if (vec && col + 8 <= p.K) return __ldg(reinterpret_cast<const uint4*>(src));
  uint32_t w[4] = {0u, 0u, 0u, 0u};
  for (int e = 0; e < 8 && col + e < p.K; ++e)
    w[e / 2] |= uint32_t(__ldg(reinterpret_cast<const unsigned short*>(src) + e)) << (16 * (e & 1));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Element e (0..7) of 8 16-bit values packed in 4 words, low half first.
CKGEN_DEVICE CKGEN_FORCEINLINE uint16_t raw16(const uint32_t (&w)[4], const int e) {
  return uint16_t((w[e / 2] >> (16 * (e & 1))) & 0xffffu);
}

// A fused instance's residual of one unit for this lane, as residual_rounds reads it: per row
// slice i, 32-column chunk c and half h, the 8 columns c * 32 + (lane % 4) * 8 of row
// warp * 16 + 8 h + lane / 4 (0 outside the output). Loaded before the unit's main loop (16-byte
// reads) where a thread's accumulators leave room (kOn: at most 64,
// detail::tma_residual_preload_registers); else residual_rounds reads
// each round's as it stages the round.
template <class Cfg>
struct UnitResidual {
  using Tr = TmaTraits<Cfg>;
  static constexpr bool kRounds = Cfg::kEpilogueOps && Cfg::kResidual && Tr::kStaged && !Tr::kSwap;
  static constexpr bool kOn =
      kRounds && detail::tma_residual_preload_registers(Tr::BM, Tr::BN, Cfg::Waves::kM, Cfg::kResidual, Tr::kStaged,
                                                        Tr::kSwap) > 0;
  static constexpr int kChunks = Tr::BN / Tr::kSlabCols;
  uint4 r[kOn ? Tr::RepM : 1][kOn ? kChunks : 1][2];

  template <class RowOk, class RowBase, class GCol>
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const TmaConvArgs& p, const int m0, const int wg, const int warp,
                                           const int lane, RowOk& row_ok, RowBase& row_base, GCol& gcol) {
    if constexpr (kOn) {
      const bool vec = (p.K % 8) == 0;
#pragma unroll
      for (int i = 0; i < Tr::RepM; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + 8 * h + (lane >> 2);
          const bool ok = row_ok(row);
          const int64_t base = ok ? row_base(row) : 0;
#pragma unroll
          for (int c = 0; c < kChunks; ++c) {
            const int col = gcol(c * Tr::kSlabCols + (lane & 3) * 8);
            r[i][c][h] = ok && col < p.K ? residual_vec8<Cfg>(p, base + col, col, vec)
                                         : make_uint4(0, 0, 0, 0);
          }
        }
      }
    }
  }
};

// The residual rows of this warp's slices of unit u prefetched into L2 (16-byte aligned rows:
// K % 8 == 0): lane l takes half l % 2 of row l / 2 of each slice. The kernel issues it for a
// unit and for its next one before the unit's main loop, so the epilogue reads from L2.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void prefetch_residual(const TmaConvArgs& p, const Unit& u, const int wg,
                                                      const int warp, const int lane) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Cfg::kEpilogueOps && Cfg::kResidual && !Tr::kSwap) {
    constexpr int kHalf = Tr::BN / 2;
    const int c = u.n0 + (lane & 1) * kHalf, cols = p.K - c < kHalf ? p.K - c : kHalf;
    if (p.K % 8 != 0 || cols <= 0) return;
#pragma unroll
    for (int i = 0; i < Tr::RepM; ++i) {
      const int row = u.m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 1);
      if (!row_ok<Cfg>(p, row)) continue;
      const auto* src =
          static_cast<const typename Tr::OutRaw*>(p.ep.residual) + row_base<Cfg>(p, u.g, u, row) + c;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src),
                   "r"(uint32_t(cols) * uint32_t(sizeof(typename Tr::OutRaw)))
                   : "memory");
    }
  }
}

// stats (a forward's channel statistics) in the CShuffle copy of a 32-column chunk: lane l copies
// the 8 columns (l % 4) * 8.. of its slab rows, so it sums those values as stored (and their
// squares) over its rows (ChunkStats). At the chunk's end a reduce-scatter over the lanes of one
// l % 4 (three shuffle steps) leaves lane l the warp's sums of column (l % 4) * 8 + l / 4, which
// it adds to its register for that chunk (UnitStats). The registers carry on over the warp's
// units while they keep the group and column tile; then one fp32 atomic per lane, chunk and
// statistic adds them into p.ep.stats (sums at g * K + col, squares G * K further): a column's
// atomics come from the warps that touched it, not from every 16 rows.
template <class Cfg>
struct ChunkStats {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  static constexpr bool kOn = Cfg::kStats;
  static_assert(!kOn || (Tr::kStaged && !Tr::kSwap && !Tr::kWeightGrad && !Cfg::kResidual && Tr::kSlabCols == 32),
                "ckgen: wavelet_tma sums stats in the CShuffle copy of a forward without residual");
  float s[kOn ? 8 : 1], q[kOn ? 8 : 1];

  CKGEN_DEVICE CKGEN_FORCEINLINE void clear() {
#pragma unroll
    for (int e = 0; e < (kOn ? 8 : 1); ++e) s[e] = q[e] = 0.f;
  }
  CKGEN_DEVICE CKGEN_FORCEINLINE void add(const int e, const Raw v) {
    if constexpr (kOn) {
      const float f = raw_to_float<Cfg::kOutDataType>(v);
      s[e] += f;
      q[e] = fmaf(f, f, q[e]);
    }
  }
  // The 8 values of one 16-byte vector.
  CKGEN_DEVICE CKGEN_FORCEINLINE void add(const uint4 v) {
    if constexpr (kOn) {
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 8; ++e) add(e, Raw(raw16(w, e)));
    }
  }
  // Reduce-scatter over the lanes of one lane % 4: lane l ends with column e = l / 4's sums in
  // s[0], q[0] (step m keeps the half of its columns that lane bit m selects and adds the other
  // lane's). Every lane calls it.
  CKGEN_DEVICE CKGEN_FORCEINLINE void reduce(const int lane) {
    if constexpr (kOn) {
#pragma unroll
      for (int h = 4, m = 16; h >= 1; h /= 2, m /= 2) {
        const bool hi = (lane & m) != 0;
#pragma unroll
        for (int k = 0; k < h; ++k) {
          const float ks = hi ? s[k + h] : s[k], ss = hi ? s[k] : s[k + h];
          const float kq = hi ? q[k + h] : q[k], sq = hi ? q[k] : q[k + h];
          s[k] = ks + __shfl_xor_sync(0xffffffffu, ss, m);
          q[k] = kq + __shfl_xor_sync(0xffffffffu, sq, m);
        }
      }
    }
  }
};

template <class Cfg>
struct UnitStats {
  using Tr = TmaTraits<Cfg>;
  static constexpr bool kOn = Cfg::kStats;
  static constexpr int kChunks = kOn ? Tr::BN / 32 : 1;
  static_assert(!kOn || Tr::kAccRows * Tr::kAccN / 2 <= kTmaStatsMaxAcc,
                "ckgen: wavelet_tma stats beside more accumulators spills (rule check_stats)");
  float s[kChunks], q[kChunks];
  int g = -1, n0 = -1;  // the group and column tile the registers hold

  CKGEN_DEVICE CKGEN_FORCEINLINE void clear() {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) s[c] = q[c] = 0.f;
  }
  // Chunk c's sums of unit (ug, un0), reduced over the warp (ChunkStats::reduce). Every lane
  // calls it; the registers hold no other unit's (flush_unless ends each run of units).
  CKGEN_DEVICE CKGEN_FORCEINLINE void take(const int c, ChunkStats<Cfg>& st, const int ug, const int un0,
                                           const int lane) {
    if constexpr (kOn) {
      st.reduce(lane);
      s[c] += st.s[0];
      q[c] += st.q[0];
      g = ug;
      n0 = un0;
    }
  }
  // The registers into p.ep.stats unless the warp's next unit (next_g, next_n0; -1: none) keeps
  // their group and column tile. Every lane calls it.
  template <class GCol>
  CKGEN_DEVICE CKGEN_FORCEINLINE void flush_unless(const TmaConvArgs& p, const int next_g, const int next_n0,
                                                   GCol& gcol, const int lane) {
    if constexpr (kOn) {
      if (g < 0 || (next_g == g && next_n0 == n0)) return;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int col = gcol(c * 32 + (lane & 3) * 8 + (lane >> 2));
        if (col < p.K) {
          float* dst = p.ep.stats + int64_t(g) * p.K + col;
          atomicAdd(dst, s[c]);
          atomicAdd(dst + p.GK, q[c]);
        }
      }
      clear();
      g = -1;
    }
  }
};

// swap_ab: accumulator 4j + 2h + q holds channel warp * 16 + lane / 4 + 8h of pixel
// wg * PN + 8j + 2 (lane % 4) + q (the m16n8 layout of the transposed tile): one-element stores
// (or 4-byte fp32 reductions into the split workspace), 8 channels x 4 pixels a warp.
template <class Cfg, class Acc, class RowOk, class RowBase>
CKGEN_DEVICE CKGEN_FORCEINLINE void store_swap(const TmaConvArgs& p, Acc& acc,
                                               typename TmaTraits<Cfg>::OutRaw* const& y, const int& m0,
                                               const int& n0, const int& wg, const int& warp, const int& lane,
                                               RowOk& row_ok, RowBase& row_base, const int& g) {
  using Tr = TmaTraits<Cfg>;
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
        if (p.ws != nullptr)
          asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;\n" ::"l"(p.ws + rb + col), "f"(v)
                       : "memory");
        else {
          if constexpr (Cfg::kFused) fusion::apply<Cfg, 1>(p.ep, &v, int64_t(g) * p.K + col, rb + col);
          y[rb + col] = float_to_raw<Cfg::kOutDataType>(v);
        }
      }
    }
  }
}

// Default: converted pairs stored straight from registers (a pair a store: 4 bytes of 16-bit
// outputs, a warp's store covering 8 rows x 16 bytes; 8 bytes of fp32 outputs).
template <class Cfg, class Acc, class RowOk, class RowBase, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void store(const TmaConvArgs& p, Acc& acc,
                                          typename TmaTraits<Cfg>::OutRaw* const& y, const int& m0,
                                          const int& wg, const int& warp, const int& lane, RowOk& row_ok,
                                          RowBase& row_base, GCol& gcol, const int& g) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::OutRaw;
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
        const Raw v0 = float_to_raw<Cfg::kOutDataType>(f0);
        const Raw v1 = float_to_raw<Cfg::kOutDataType>(f1);
        if (pairs && col + 1 < p.K) {
          if constexpr (sizeof(Raw) == 2)
            *reinterpret_cast<uint32_t*>(dst) = uint32_t(v0) | (uint32_t(v1) << 16);
          else
            *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
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
// operations applied first, from the unit's channels; kOpOnly: the channel op alone, the residual
// rounds add the rest), converted, into the warp's slab (kSlabStride elements a row).
template <class Cfg, bool kOpOnly = false, class Acc>
CKGEN_DEVICE CKGEN_FORCEINLINE void stage_chunk(const TmaConvArgs& p, Acc& acc,
                                                typename TmaTraits<Cfg>::Raw* const slab, const int i,
                                                const int c0, const int lane, const UnitChannels<Cfg>& ch) {
  using Tr = TmaTraits<Cfg>;
#pragma unroll
  for (int jj = 0; jj < Tr::kSlabCols / 8; ++jj) {
    const int j = c0 / 8 + jj;
    float b[2], s[2];
    if constexpr (Cfg::kEpilogueOps) ch.pair(c0 / 32, jj * 8 + (lane & 3) * 2, b, s);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float f[2] = {acc[i][j * 4 + h * 2], acc[i][j * 4 + h * 2 + 1]};
      uint32_t w;
      if constexpr (Cfg::kEpilogueOps && !kOpOnly) {
        // unguarded: nothing is read per row, and rows / columns outside y are never copied out
        static_assert(!Cfg::kResidual, "ckgen: a residual is added in the residual rounds");
        w = fusion::apply_pack2<Cfg, Cfg::kOutDataType>(p.ep, f, b, s);
      } else {
        if constexpr (kOpOnly) fusion::channel_op<Cfg, 2>(f, b, s);
        w = pack_pair<Cfg::kOutDataType>(f[0], f[1]);
      }
      *reinterpret_cast<uint32_t*>(slab + ((lane >> 2) + h * 8) * Tr::kSlabStride + jj * 8 + (lane & 3) * 2) = w;
    }
  }
}

// A residual add and activation on 8 outputs y (op(acc) already in the output type) with their
// residual r, 16 bytes each: identity, relu and relu6 in the output type's paired arithmetic
// (y + beta r rounded once, as the unfused add does), the other activations in fp32.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE uint4 residual_combine(const EpilogueArgs& e, const uint4 y, const uint4 r) {
  constexpr DataType D = Cfg::kOutDataType;
  constexpr Activation A = Cfg::kActivation;
  using Raw = typename DataTypeTraits<D>::raw;
  static_assert(sizeof(Raw) == 2, "ckgen: the residual rounds combine 16-bit outputs");
  uint32_t w[4] = {y.x, y.y, y.z, y.w};
  const uint32_t rw[4] = {r.x, r.y, r.z, r.w};
  if constexpr (A == Activation::Identity || A == Activation::Relu || A == Activation::Relu6) {
    using fusion::as_pair16;
    const auto beta = fusion::splat_pair16<D>(e.beta), lo = fusion::splat_pair16<D>(0.f),
               hi = fusion::splat_pair16<D>(6.f);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      auto v = __hfma2(as_pair16<D>(rw[k]), beta, as_pair16<D>(w[k]));
      if constexpr (A != Activation::Identity) v = __hmax2(v, lo);
      if constexpr (A == Activation::Relu6) v = __hmin2(v, hi);
      w[k] = fusion::pair16_bits<D>(v);
    }
  } else {
    float v[8], f[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      v[q] = raw_to_float<D>(Raw(raw16(w, q)));
      f[q] = raw_to_float<D>(Raw(raw16(rw, q)));
    }
    fusion::residual_act<Cfg, 8>(e, v, f);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w[k] = pack_pair<D>(v[2 * k], v[2 * k + 1]);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// CShuffle with a residual: per 32-column chunk of row slice i, op(acc) (the channel op) converted
// into the warp's slab as the plain copy stages it (stage_chunk), then each lane takes 8
// consecutive columns of two slab rows: 16 bytes of the slab and of the residual (UnitResidual,
// else global memory), the add and the activation (residual_combine), one 16-byte store. The
// residual is read as the output is written: whole sectors, a quarter of the requests of a
// per-pair read.
template <class Cfg, class Acc, class RowOk, class RowBase, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void residual_rounds(const TmaConvArgs& p, Acc& acc,
                                                    typename TmaTraits<Cfg>::Raw* const y,
                                                    typename TmaTraits<Cfg>::Raw* const slab, const int m0,
                                                    const int wg, const int warp, const int lane,
                                                    const UnitChannels<Cfg>& ch, const UnitResidual<Cfg>& res,
                                                    RowOk& row_ok, RowBase& row_base, GCol& gcol) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  const bool vec = (p.K % 8) == 0;
#pragma unroll
  for (int i = 0; i < Tr::RepM; ++i) {
    const int r0 = m0 + (wg * Tr::RepM + i) * 64 + warp * 16;
    bool ok[2];
    int64_t base[2];  // this lane's two slab rows, lane/4 and lane/4 + 8
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int row = r0 + (lane >> 2) + 8 * q;
      ok[q] = row_ok(row);
      base[q] = ok[q] ? row_base(row) : 0;
    }
#pragma unroll
    for (int c0 = 0; c0 < Tr::BN; c0 += Tr::kSlabCols) {
      stage_chunk<Cfg, true>(p, acc, slab, i, c0, lane, ch);
      __syncwarp();
      const int col = gcol(c0 + (lane & 3) * 8);
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        uint4 rv;
        if constexpr (UnitResidual<Cfg>::kOn) {
          rv = res.r[i][c0 / Tr::kSlabCols][q];
        } else {
          rv = ok[q] && col < p.K ? residual_vec8<Cfg>(p, base[q] + col, col, vec) : make_uint4(0, 0, 0, 0);
        }
        const uint4 sv =
            *reinterpret_cast<const uint4*>(slab + ((lane >> 2) + 8 * q) * Tr::kSlabStride + (lane & 3) * 8);
        const uint4 o = residual_combine<Cfg>(p.ep, sv, rv);
        if (!ok[q] || col >= p.K) continue;
        Raw* dst = y + base[q] + col;
        if (vec && col + 8 <= p.K) {
          *reinterpret_cast<uint4*>(dst) = o;
        } else {
          const uint32_t ow[4] = {o.x, o.y, o.z, o.w};
          for (int e = 0; e < 8 && col + e < p.K; ++e) dst[e] = Raw(raw16(ow, e));
        }
      }
      __syncwarp();
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
