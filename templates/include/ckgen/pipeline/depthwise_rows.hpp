// The direct kernel's row windows (DirectPath::Rows / RowsS2): depthwise filters of any size the
// 1x3x3 paths do not take (direct_row_window in schedule/direct_plan.hpp says which). A thread's
// PP pixels are one unit of a row of the iterated tensor (rows padded to whole units, the pixels
// past a row's end dead; backward_data: one W phase of a row, see rows_bwd_data); per filter row
// (a runtime loop over Z x Y) it loads and converts the source columns under them once and
// applies the row's taps to all PP pixels. The window is compiled for KX >= the taps a filter
// row applies (kDirectWindowWidths): taps past them carry zero weights (forward / backward_data)
// or are never written (backward_weight), and columns past the window are not loaded.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/core/limits.hpp"
#include "ckgen/pipeline/depthwise_fwd.hpp"

namespace ckgen {

namespace direct {

// A unit of the row windows' order: image n, depth d, row h of the iterated tensor, its first
// pixel's column w (unit index m0 / PP split by a.fd_pix = D, H, ceil(W / PP)).
struct RowUnit {
  int n, d, h, w;
};
template <int PP>
CKGEN_DEVICE CKGEN_FORCEINLINE RowUnit row_unit(const DirectArgs& a, int m0) {
  RowUnit u;
  int wc;
  split_pixel(a, m0 / PP, u.n, u.d, u.h, wc);
  u.w = wc * PP;
  return u;
}

// The kCols source packets of one filter row from column c0 (pixel j at window offset o reads
// column c0 + j * S + o): the first `cols` of them where in range, zeros elsewhere.
template <DataType D, int V, int kCols>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_window(const typename DataTypeTraits<D>::raw* rowp, bool row_ok, int c0,
                                                int cols, int width, int chans, packet_t<D, V> (&r)[kCols]) {
#pragma unroll
  for (int q = 0; q < kCols; ++q)
    r[q] = load_if<D, V>(row_ok && q < cols && unsigned(c0 + q) < unsigned(width), rowp + int64_t(q) * chans);
}

// forward / backward_data: the block's filter staged in dynamic shared memory as fp32 rows of
// taps ([tap][channel], kDirectFilterRowPad floats of padding; GKZYXC with C = 1: the block's
// channels' filters are one contiguous slab of Gt x taps).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void stage_row_filter(const DirectArgs& a, float* wsm) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr int kRow = Tr::Gt + kDirectFilterRowPad;
  const int ch0 = int(blockIdx.y) * Tr::Gt, taps = a.taps;
  const Raw* __restrict__ slab = static_cast<const Raw*>(a.w) + int64_t(ch0) * taps;
  const int live_elems = (a.chans - ch0 < Tr::Gt ? a.chans - ch0 : Tr::Gt) * taps;
  for (int e = int(threadIdx.x); e < Tr::Gt * taps; e += Tr::kThreads)
    wsm[(e % taps) * kRow + e / taps] = e < live_elems ? raw_to_float<Tr::kDataType>(slab[e]) : 0.f;
  __syncthreads();
}

// The row's taps at window offsets o < live (tap t0 + tap(o)) of the thread's V channels from the
// staged filter, zeros past live.
template <class Cfg, int KX, class TapOf>
CKGEN_DEVICE CKGEN_FORCEINLINE void row_weights(const float* wsm, int gv, int t0, int live, TapOf tap,
                                                float (&wv)[KX][DirectTraits<Cfg>::V]) {
  constexpr int V = DirectTraits<Cfg>::V, kRow = DirectTraits<Cfg>::Gt + kDirectFilterRowPad;
#pragma unroll
  for (int o = 0; o < KX; ++o) {
    if (o < live) {
      load_smem_weights<V>(wsm + (t0 + tap(o)) * kRow + gv * V, wv[o]);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) wv[o][k] = 0.f;
    }
  }
}

// acc[j] += column (j * S + o) of the window x wv[o], for every pixel j and offset o.
template <DataType D, int V, int PP, int KX, int S, int kCols>
CKGEN_DEVICE CKGEN_FORCEINLINE void window_fma(const packet_t<D, V> (&r)[kCols], const float (&wv)[KX][V],
                                               float (&acc)[PP][V]) {
#pragma unroll
  for (int q = 0; q < kCols; ++q) {
    float f[V];
    to_floats<D, V>(r[q], f);
#pragma unroll
    for (int o = 0; o < KX; ++o) {  // column q feeds pixel j = (q - o) / S at offset o
      if (q < o || (q - o) % S != 0 || (q - o) / S >= PP) continue;
      group_fma<V, 1>(acc[(q - o) / S], f, wv[o], 0);
    }
  }
}

// forward, W stride S (1 or 2): a unit is PP consecutive output pixels of a row; pixel j at tap
// kx reads input column w * S - pl + j * S + kx: offset o = kx.
template <class Cfg, int KX, int S>
CKGEN_DEVICE CKGEN_FORCEINLINE void rows_fwd(const DirectArgs& a) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP;
  constexpr int kCols = (PP - 1) * S + KX;
  static_assert(Tr::Cg == 1 && !Tr::kMma && Tr::kVariant == Variant::Forward && (S == 1 || S == 2),
                "ckgen: forward row windows are depthwise FMA, W stride 1 or 2");
  extern __shared__ __attribute__((aligned(16))) float row_wsm[];
  stage_row_filter<Cfg>(a, row_wsm);
  const int tid = threadIdx.x;
  const int gv = tid % Tr::TG, g0 = int(blockIdx.y) * Tr::Gt + gv * V;
  const int m0 = int(blockIdx.x) * Tr::P + tid / Tr::TG * PP;
  if (g0 >= a.chans || m0 >= a.pixels) return;

  const RowUnit u = row_unit<PP>(a, m0);
  const int fy = a.fil[1], fx = a.fil[2];
  const int cz = u.d * a.s[0] - a.pl[0], cy = u.h * a.s[1] - a.pl[1], c0 = u.w * S - a.pl[2];
  const int cols = (PP - 1) * S + fx;
  const Raw* base = static_cast<const Raw*>(a.x) + (int64_t(u.n) * a.in_spatial * a.chans + g0);
  float acc[PP][V] = {};
  int t0 = 0;  // the filter row's first tap
#pragma unroll 1
  for (int kz = 0; kz < a.fil[0]; ++kz) {
#pragma unroll 1
    for (int ky = 0; ky < fy; ++ky, t0 += fx) {
      const int iz = cz + kz * a.dil[0], iy = cy + ky * a.dil[1];
      const bool row_ok = unsigned(iz) < unsigned(a.in_[0]) && unsigned(iy) < unsigned(a.in_[1]);
      packet_t<D, V> r[kCols];
      load_window<D, V, kCols>(base + ((int64_t(iz) * a.in_[1] + iy) * a.in_[2] + c0) * a.chans, row_ok, c0,
                               cols, a.in_[2], a.chans, r);
      float wv[KX][V];
      row_weights<Cfg, KX>(row_wsm, gv, t0, fx, [](int o) { return o; }, wv);
      window_fma<D, V, PP, KX, S>(r, wv, acc);
    }
  }
  const int64_t pix = int64_t(u.n) * a.out_spatial + (int64_t(u.d) * a.out_[1] + u.h) * a.out_[2] + u.w;
  const StoreChannels<Cfg> ch = store_channels<Cfg>(a, g0);
#pragma unroll
  for (int j = 0; j < PP; ++j)
    if (u.w + j < a.out_[2]) store_pixel<Cfg>(a, pix + j, g0, ch, acc[j]);
}

// backward_data (W dilation 1): dx pixel i gathers dy at (i + pl - k * dil) / s where exact.
// kStrided (some stride > 1): along W a row's pixels are split by phase: unit (phase p, chunk c)
// holds the PP pixels p + S * (c * PP + j) (a.fd_pix[2] counts S x chunks a row, the chunk
// fastest: wc = c * S + p), which all meet the same taps kx = e + S * t (e = (p + pl) mod S,
// t < T = ceil((X - e) / S)) at consecutive dy columns (w + pl - e) / S - t + j: a window of
// PP + T - 1 columns, offset o = T - 1 - t; along H and D a filter row meets the unit's dy row
// where the division is exact (gather_coord), else it is skipped. Unit strides: S = 1, e = 0,
// T = X, every row meets. KX bounds T.
template <class Cfg, int KX, bool kStrided>
CKGEN_DEVICE CKGEN_FORCEINLINE void rows_bwd_data(const DirectArgs& a) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP;
  constexpr int kCols = PP + KX - 1;
  static_assert(Tr::Cg == 1 && !Tr::kMma && Tr::kVariant == Variant::BackwardData,
                "ckgen: backward_data row windows are depthwise FMA");
  extern __shared__ __attribute__((aligned(16))) float row_wsm[];
  stage_row_filter<Cfg>(a, row_wsm);
  const int tid = threadIdx.x;
  const int gv = tid % Tr::TG, g0 = int(blockIdx.y) * Tr::Gt + gv * V;
  const int m0 = int(blockIdx.x) * Tr::P + tid / Tr::TG * PP;
  if (g0 >= a.chans || m0 >= a.pixels) return;

  int n, d, h, wc;
  split_pixel(a, m0 / PP, n, d, h, wc);
  const int fy = a.fil[1], fx = a.fil[2];
  int S = 1, w = wc * PP, e = 0, T = fx;
  if constexpr (kStrided) {
    S = a.s[2];
    int c, ph;
    a.fd_s[2].divmod(wc, c, ph);
    w = ph + S * c * PP;  // the unit's first dx column; its pixels are S apart
    e = (ph + a.pl[2]) % S;
    T = fx > e ? (fx - e + S - 1) / S : 0;
  }
  const int c0 = (w + a.pl[2] - e) / S - (T - 1);
  const Raw* base = static_cast<const Raw*>(a.y) + (int64_t(n) * a.out_spatial * a.chans + g0);
  float acc[PP][V] = {};
  int t0 = 0;  // the filter row's first tap
#pragma unroll 1
  for (int kz = 0; kz < a.fil[0]; ++kz) {
#pragma unroll 1
    for (int ky = 0; ky < fy; ++ky, t0 += fx) {
      int oz = d + a.pl[0] - kz * a.dil[0], oy = h + a.pl[1] - ky * a.dil[1];
      bool ok = unsigned(oz) < unsigned(a.out_[0]) && unsigned(oy) < unsigned(a.out_[1]);
      if constexpr (kStrided)
        ok = T > 0 && gather_coord(oz, a.fd_s[0], a.s[0], a.out_[0], oz) &&
             gather_coord(oy, a.fd_s[1], a.s[1], a.out_[1], oy);
      if (!ok) continue;
      packet_t<D, V> r[kCols];
      load_window<D, V, kCols>(base + ((int64_t(oz) * a.out_[1] + oy) * a.out_[2] + c0) * a.chans, true, c0,
                               PP + T - 1, a.out_[2], a.chans, r);
      float wv[KX][V];
      row_weights<Cfg, KX>(row_wsm, gv, t0, T, [&](int o) { return e + S * (T - 1 - o); }, wv);
      window_fma<D, V, PP, KX, 1>(r, wv, acc);
    }
  }
  Raw* __restrict__ dst =
      static_cast<Raw*>(a.dst) + ((int64_t(n) * a.in_spatial + (int64_t(d) * a.in_[1] + h) * a.in_[2] + w) * a.chans + g0);
#pragma unroll
  for (int j = 0; j < PP; ++j)
    if (w + S * j < a.in_[2]) store<D, V>(dst + int64_t(S) * j * a.chans, acc[j]);
}

// backward_weight: filter rows fr .. fr + R - 1 (row r's taps (kz, ky, o) summed in acc[r * KX + o];
// rows past the filter's stay zero and cost nothing) of a thread's units in [mb, me) (the padded order): per unit
// the PP dy pixels once (dead ones zero), then per row the window of the x row under them.
// Offsets o >= X sum columns of other taps and are never written.
template <class Cfg, int KX, int S, int R>
CKGEN_DEVICE CKGEN_FORCEINLINE void weight_rows(const DirectArgs& a, const typename DirectTraits<Cfg>::Raw* __restrict__ x,
                                                const typename DirectTraits<Cfg>::Raw* __restrict__ dy, const int g0,
                                                const int row, const int mb, const int me, const int fr,
                                                float (&acc)[R * KX][1][DirectTraits<Cfg>::V]) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP;
  constexpr int kCols = (PP - 1) * S + KX;
  const int rows = a.fil[0] * a.fil[1];
  int dz[R], dyr[R];  // the rows' offsets from the unit's first input row, in rows of each dim
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int f = fr + r < rows ? fr + r : fr;
    dz[r] = f / a.fil[1] * a.dil[0];
    dyr[r] = f % a.fil[1] * a.dil[1];
  }
  const int cols = (PP - 1) * S + a.fil[2];
  for (int m0 = mb + row * PP; m0 < me; m0 += Tr::P) {
    const RowUnit u = row_unit<PP>(a, m0);
    const int64_t pix = int64_t(u.n) * a.out_spatial + (int64_t(u.d) * a.out_[1] + u.h) * a.out_[2] + u.w;
    float gy[PP][V];
#pragma unroll
    for (int j = 0; j < PP; ++j)
      to_floats<D, V>(load_if<D, V>(u.w + j < a.out_[2], dy + (pix + j) * a.chans + g0), gy[j]);
    const int cz = u.d * a.s[0] - a.pl[0], cy = u.h * a.s[1] - a.pl[1], c0 = u.w * S - a.pl[2];
    const Raw* img = x + (int64_t(u.n) * a.in_spatial * a.chans + g0);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r > 0 && fr + r >= rows) break;  // the last pass of a filter with fewer rows left
      const int iz = cz + dz[r], iy = cy + dyr[r];
      const bool row_ok = unsigned(iz) < unsigned(a.in_[0]) && unsigned(iy) < unsigned(a.in_[1]);
      packet_t<D, V> w[kCols];
      load_window<D, V, kCols>(img + ((int64_t(iz) * a.in_[1] + iy) * a.in_[2] + c0) * a.chans, row_ok, c0, cols,
                               a.in_[2], a.chans, w);
#pragma unroll
      for (int q = 0; q < kCols; ++q) {
        float f[V];
        to_floats<D, V>(w[q], f);
#pragma unroll
        for (int o = 0; o < KX; ++o) {  // column q meets pixel j = (q - o) / S at tap o
          if (q < o || (q - o) % S != 0 || (q - o) / S >= PP) continue;
          const int j = (q - o) / S;
#pragma unroll
          for (int k = 0; k < V; ++k) acc[r * KX + o][0][k] = fmaf(f[k], gy[j][k], acc[r * KX + o][0][k]);
        }
      }
    }
  }
}

}  // namespace direct

}  // namespace ckgen
