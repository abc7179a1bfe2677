// Index maps of the TMA warp-specialized kernel (pipeline/tma_ws.hpp): a work unit's tile, x's
// im2col copies and the output rows and columns of the epilogues; the kernel's lambdas call them.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/pipeline/tma_traits.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA) && defined(CKGEN_HAS_TMA)

namespace tma_ws {

// A work unit: group g, tap (backward_weight), tile (m0, n0), k tiles [kt0, kt1) of its split.
struct Unit {
  int g, tap, m0, n0, kt0, kt1, img;  // img: stride1's image (m0 is then a row of it)
};

// Unit `unit` (split fastest; tile = (g, tap, tm, tn), tn fastest); k_range: the split's k tiles.
template <class Cfg, class KRange>
CKGEN_DEVICE CKGEN_FORCEINLINE Unit decode_unit(const TmaConvArgs& p, int unit, KRange& k_range) {
  using Tr = TmaTraits<Cfg>;
  Unit u;
  int tile, split, gt, r, tm, tn;
  p.by_k_split.divmod(unit, tile, split);
  p.by_tiles_mn.divmod(tile, gt, r);
  p.by_taps.divmod(gt, u.g, u.tap);
  p.by_tiles_n.divmod(r, tm, tn);
  u.img = 0;
  if constexpr (Tr::kPatch) p.by_tiles_img.divmod(tm, u.img, tm);
  u.m0 = tm * Tr::BM;
  u.n0 = tn * (Tr::kRows ? 64 : Tr::BN);  // the row form: a 64-channel block of every tap
  k_range(split, u.kt0, u.kt1);
  return u;
}

// The corner of GEMM row pm in x (its output pixel's first input pixel); 3D instances on a problem
// whose depth does not fold (p.deep) take the 5D map (row pm = (n * Do + od, oh, ow)).
struct Corner {
  int w, h, d, n;
};

template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE Corner im2col_corner(const TmaConvArgs& p, int pm) {
  constexpr bool kDeep = Cfg::kNDim == 3;
  Corner c;
  int img, rem, oh, ow;
  p.by_pq.divmod(pm, img, rem);
  p.by_q.divmod(rem, oh, ow);
  c.w = ow * p.s_w - p.pl_w;
  c.h = oh * p.s_h - p.pl_h;
  c.d = 0;
  c.n = img;
  if constexpr (kDeep)
    if (p.deep) {
      int od;
      p.by_do.divmod(img, c.n, od);
      c.d = od * p.s_d - p.pl_d;
    }
  return c;
}

// One copy of 64 channels of x from channel ch at tap (fz, fy, fx) for the rows from corner c.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_x(const TmaConvArgs& p, void* dst, const CUtensorMap* map,
                                           uint64_t* bar, int ch, const Corner& c, int fz, int fy, int fx) {
  constexpr bool kDeep = Cfg::kNDim == 3;
  if constexpr (kDeep)
    if (p.deep) {
      tma::load_im2col_5d(dst, map, bar, ch, c.w, c.h, c.d, c.n, uint16_t(fx * p.d_w), uint16_t(fy * p.d_h),
                          uint16_t(fz * p.d_d));
      return;
    }
  (void)fz;
  tma::load_im2col_4d(dst, map, bar, ch, c.w, c.h, c.n, uint16_t(fx * p.d_w), uint16_t(fy * p.d_h));
}

// Epilogue rows: whether row `row` of the tile is a pixel (stride1: a position ow < Q of an output
// row), where its row starts in y (or in the fp32 split workspace), and the written column of
// tile column tc (the row form: tap tc / 64's column of channel n0 + tc % 64, the columns being
// dw's X * C of filter row u.tap).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE bool row_ok(const TmaConvArgs& p, int row) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kPatch) {
    int oh, ow;
    p.by_wp.divmod(row, oh, ow);
    return row < p.M && ow < p.Q;
  } else {
    return row < p.M;
  }
}

template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE int64_t row_base(const TmaConvArgs& p, const int& g, const Unit& u, int row) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kWeightGrad) {
    return (int64_t(g) * p.M + row) * p.ld_row + int64_t(u.tap) * p.K;
  } else if constexpr (Tr::kPatch) {  // dense output (stride1 takes no stride phases)
    int oh, ow;
    p.by_wp.divmod(row, oh, ow);
    return ((int64_t(u.img) * p.P + oh) * p.Q + ow) * p.GK + int64_t(g) * p.K;
  } else {
    int64_t pix = row;
    if (!p.out_dense) {
      int n, rem, oh, ow;
      p.by_pq.divmod(row, n, rem);
      p.by_q.divmod(rem, oh, ow);
      pix = int64_t(n) * p.out_sn + int64_t(oh) * p.out_sh + int64_t(ow) * p.out_sw + p.out_base;
    }
    return pix * p.GK + int64_t(g) * p.K;
  }
}

template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE int gcol(const TmaConvArgs& p, const int& n0, int tc) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kRows)
    return (tc >> 6) * p.C + n0 + (tc & 63);
  else
    return n0 + tc;
}

}  // namespace tma_ws

#endif  // CKGEN_NVIDIA && CKGEN_HAS_TMA

}  // namespace ckgen
