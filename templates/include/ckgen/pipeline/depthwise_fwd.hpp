// The direct kernel's forward / backward_data main loop (pipeline/depthwise.hpp): a thread's V
// channels at PP pixels, fp32 accumulators over the taps (DirectPath picks the tap walk).
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/core/fast_div.hpp"
#include "ckgen/core/limits.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/pipeline/depthwise_traits.hpp"

namespace ckgen {

namespace direct {

// The weight that output channel j (forward; backward_data: input-gradient channel j) multiplies
// with input channel c of its group (forward; backward_data: output-gradient channel c) at tap t,
// in GKZYXC with Cg = C = K per group: forward w(j, t, c), backward_data w(group base + c, t, j % Cg).
template <bool kFwd, int Cg>
CKGEN_DEVICE CKGEN_FORCEINLINE int64_t weight_index(int j, int taps, int t, int c) {
  if constexpr (kFwd || Cg == 1)
    return (int64_t(j) * taps + t) * Cg + c;
  else
    return (int64_t(j - j % Cg + c) * taps + t) * Cg + j % Cg;
}

// The weights of channels g0 .. g0 + V - 1 at tap t for group channel c (generic filter).
template <DataType D, int V, bool kFwd, int Cg>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_tap_weights(const typename DataTypeTraits<D>::raw* __restrict__ w,
                                                     int g0, int taps, int t, int c, float (&f)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) f[k] = raw_to_float<D>(w[weight_index<kFwd, Cg>(g0 + k, taps, t, c)]);
}

// acc[k] += (input channel c of k's group) * wv[k]: f holds the V input channels at the
// thread's positions, whole groups of Cg (depthwise: acc[k] += f[k] * wv[k]).
template <int V, int Cg>
CKGEN_DEVICE CKGEN_FORCEINLINE void group_fma(float (&acc)[V], const float (&f)[V], const float (&wv)[V],
                                              int c) {
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = fmaf(f[k - k % Cg + c], wv[k], acc[k]);
}

// The V weights at ws (shared memory, fp32): 16-byte loads where V allows (ws is then 16-byte
// aligned).
template <int V>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_smem_weights(const float* ws, float (&wv)[V]) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int k = 0; k < V; k += 4) {
      const Vec<float, 4> q = *reinterpret_cast<const Vec<float, 4>*>(ws + k);
#pragma unroll
      for (int e = 0; e < 4; ++e) wv[k + e] = q.v[e];
    }
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) wv[k] = ws[k];
  }
}

// The packet at p when ok, else zeros (a predicated load: no branch around the math).
template <DataType D, int V>
CKGEN_DEVICE CKGEN_FORCEINLINE packet_t<D, V> load_if(bool ok,
                                                      const typename DataTypeTraits<D>::raw* __restrict__ p) {
  packet_t<D, V> r{};
  if (ok) r = *reinterpret_cast<const packet_t<D, V>*>(p);
  return r;
}

// Forward's fused channel vectors (bias, scale) of the thread's V channels from g0, read once
// before its stores (store_pixel); unread for other instances.
template <class Cfg>
using StoreChannels = fusion::ChannelVals<Cfg, Cfg::kVecC>;
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE StoreChannels<Cfg> store_channels(const DirectArgs& a, int g0) {
  StoreChannels<Cfg> ch;
  if constexpr (Cfg::kVariant == Variant::Forward && Cfg::kFused) ch.load(a.ep, g0);
  return ch;
}

// The V channels from g0 of the written tensor at pixel index pix, in the output's datatype:
// forward applies its fused epilogue first (ch: channels g0.. of G * K; the residual at the
// output's offset).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void store_pixel(const DirectArgs& a, int64_t pix, int g0,
                                                const StoreChannels<Cfg>& ch, float (&acc)[Cfg::kVecC]) {
  using Raw = typename DataTypeTraits<Cfg::kOutDataType>::raw;
  const int64_t off = pix * a.chans + g0;
  if constexpr (Cfg::kVariant == Variant::Forward && Cfg::kFused)
    fusion::apply<Cfg, Cfg::kVecC>(a.ep, acc, ch, off);
  store<Cfg::kOutDataType, Cfg::kVecC>(static_cast<Raw*>(a.dst) + off, acc);
}

// DirectPath::RowPair: unit u (PP pixel indices from u * PP) covers output rows h, h + 1 (h = 2 hp)
// and columns w .. w + PC - 1 (w = wc * PC) of image n, depth d; m is the output pixel (h, w).
struct RowPairUnit {
  int n, d, h, w;
  int64_t m;
  bool second;  // row h + 1 < Ho
};
template <int PC>
CKGEN_DEVICE CKGEN_FORCEINLINE RowPairUnit row_pair_unit(const DirectArgs& a, int u) {
  RowPairUnit r;
  int hp, wc;
  split_pixel(a, u, r.n, r.d, hp, wc);  // a.fd_pix: Do, ceil(Ho / 2), Wo / PC
  r.h = 2 * hp;
  r.w = wc * PC;
  r.m = int64_t(r.n) * a.out_spatial + (int64_t(r.d) * a.out_[1] + r.h) * a.out_[2] + r.w;
  r.second = r.h + 1 < a.out_[1];
  return r;
}

// The KY + 1 input rows under a pair unit: source row sr's PC + KX - 1 packets from column
// w - pl (H / W stride and dilation 1; depth: one tap at d * s - pl).
template <DataType D, int V, int kCols>
struct RowPairRows {
  using Raw = typename DataTypeTraits<D>::raw;
  const Raw* base;
  int cy, cx;
  bool z_ok;
  CKGEN_DEVICE CKGEN_FORCEINLINE RowPairRows(const DirectArgs& a, const RowPairUnit& u, const Raw* x,
                                             int g0) {
    const int iz = u.d * a.s[0] - a.pl[0];
    cy = u.h - a.pl[1];
    cx = u.w - a.pl[2];
    z_ok = unsigned(iz) < unsigned(a.in_[0]);
    base = x + ((int64_t(u.n) * a.in_spatial + (int64_t(iz) * a.in_[1] + cy) * a.in_[2] + cx) * a.chans + g0);
  }
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const DirectArgs& a, int sr, packet_t<D, V> (&r)[kCols]) const {
    const bool row_ok = z_ok && unsigned(cy + sr) < unsigned(a.in_[1]);
    const Raw* rowp = base + int64_t(sr) * a.in_[2] * a.chans;
#pragma unroll
    for (int q = 0; q < kCols; ++q)
      r[q] = load_if<D, V>(row_ok && unsigned(cx + q) < unsigned(a.in_[2]), rowp + int64_t(q) * a.chans);
  }
};

// forward's pair path (DirectPath::RowPair): two output rows of PP / 2 pixels, the KY + 1 input
// rows under them loaded one row ahead.
template <class Cfg, int KY, int KX, class TapWeights>
CKGEN_DEVICE CKGEN_FORCEINLINE void row_pair(const DirectArgs& a, const int& g0, const int& m0,
                                             TapWeights& tap_weights) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP, Cg = Tr::Cg;
  // Source row sr feeds output row o at filter row sr - o; its packets are loaded one row ahead.
  constexpr int PC = PP / 2, kCols = PC + KX - 1, kSrc = KY + 1;
  const RowPairUnit u = row_pair_unit<PC>(a, m0 / PP);
  const RowPairRows<D, V, kCols> src(a, u, static_cast<const Raw*>(a.x), g0);
  float acc[2][PC][V];
#pragma unroll
  for (int o = 0; o < 2; ++o)
#pragma unroll
    for (int j = 0; j < PC; ++j)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[o][j][k] = 0.f;
  packet_t<D, V> rows[2][kCols];
  src.load(a, 0, rows[0]);
#pragma unroll
  for (int sr = 0; sr < kSrc; ++sr) {
    if (sr + 1 < kSrc) src.load(a, sr + 1, rows[(sr + 1) & 1]);
#pragma unroll
    for (int q = 0; q < kCols; ++q) {
      float f[V];
      to_floats<D, V>(rows[sr & 1][q], f);
#pragma unroll
      for (int kx = 0; kx < KX; ++kx) {
        const int j = q - kx;
        if (j < 0 || j >= PC) continue;
#pragma unroll
        for (int o = 0; o < 2; ++o) {
          const int ky = sr - o;
          if (ky < 0 || ky >= KY) continue;
          float wv[V];
          tap_weights(ky * KX + kx, 0, wv);
          group_fma<V, Cg>(acc[o][j], f, wv, 0);
        }
      }
    }
  }
  const StoreChannels<Cfg> ch = store_channels<Cfg>(a, g0);
#pragma unroll
  for (int o = 0; o < 2; ++o)
    if (o == 0 || u.second)
#pragma unroll
      for (int j = 0; j < PC; ++j) store_pixel<Cfg>(a, u.m + int64_t(o) * a.out_[2] + j, g0, ch, acc[o][j]);
}

// fwd_bwd_data's compile-time plan: KZ, KY, KX > 0 is a compile-time filter (else 0, 0, 0), Path
// the tap walk (DirectPath).
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
struct DirectFwdPlan {
  using Tr = DirectTraits<Cfg>;
  static constexpr bool kFwd = Tr::kVariant == Variant::Forward;
  static constexpr bool kCT = KZ > 0;
  static constexpr int kTaps = kCT ? KZ * KY * KX : 1;
  static constexpr bool kGather = Path == DirectPath::Gather;
  static constexpr bool kWindow = Path == DirectPath::Window;
  static constexpr bool kQuad = Path == DirectPath::QuadS2;
  static constexpr bool kRowPair = Path == DirectPath::RowPair;
  // Where a tap's weights live: depthwise compile-time filter in registers (wr), Cg > 1
  // compile-time filter in shared memory (wsm), generic filter read per tap.
  static constexpr bool kRegW = kCT && Tr::Cg == 1;
  static constexpr bool kSmemW = kCT && Tr::Cg > 1;
  static_assert(!(kFwd && (kGather || kQuad)), "ckgen: forward never gathers");
  static_assert(!kQuad || (KZ == 1 && KY == 3 && KX == 3), "ckgen: the quad path is for 1x3x3 filters");
  static_assert(!kWindow || kCT, "ckgen: the window path needs a compile-time filter");
  static_assert(!kRowPair || (kFwd && KZ == 1 && kRegW && Tr::PP % 2 == 0),
                "ckgen: the pair path is forward's, for a depthwise 1x3x3 filter and an even PP");
  // wsm row: 16-byte aligned, the fill's banks kDirectFilterRowPad apart per row
  static constexpr int kRow = Tr::Gt + kDirectFilterRowPad;
};

// The weights of the thread's V channels (from g0; gv: its group vector) at tap t for group
// channel c, from shared memory (wsm: Cg > 1, compile-time filter) or per tap from w.
template <class Cfg, bool kSmemW, int kRow>
CKGEN_DEVICE CKGEN_FORCEINLINE void stored_tap_weights(
    const float* wsm, const int& gv, const typename DirectTraits<Cfg>::Raw* __restrict__ const& wg,
    const int& g0, const int& taps, const int t, const int c, float (&wv)[DirectTraits<Cfg>::V]) {
  using Tr = DirectTraits<Cfg>;
  constexpr int V = Tr::V, Cg = Tr::Cg;
  if constexpr (kSmemW)
    load_smem_weights<V>(wsm + (t * Cg + c) * kRow + gv * V, wv);
  else
    load_tap_weights<Tr::kDataType, V, Tr::kVariant == Variant::Forward, Cg>(wg, g0, taps, t, c, wv);
}

// Cg > 1, compile-time filter: the block's weights into wsm as fp32, [tap][c][channel] rows of kRow.
template <class Cfg, int kTaps, int kRow>
CKGEN_DEVICE CKGEN_FORCEINLINE void fill_filter_smem(
    const DirectArgs& a, const typename DirectTraits<Cfg>::Raw* __restrict__ const& wg, const int& tid,
    float* wsm) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int Cg = Tr::Cg;
  constexpr bool kFwd = Tr::kVariant == Variant::Forward;
  // The block's Ct channels are whole groups, so their weights are one contiguous slab of
  // Ct x taps x Cg elements (GKZYXC), read coalesced. Element (channel q, tap t, last index l)
  // goes to wsm[t][c][j]: forward w(j, t, c) -> c = l, j = q; backward_data w(group base + c,
  // t, j % Cg) -> c = q % Cg, j = q - q % Cg + l.
  const int ch0 = int(blockIdx.y) * Tr::Gt;
  const Raw* __restrict__ slab = wg + int64_t(ch0) * kTaps * Cg;
  const int live_elems = (a.chans - ch0 < Tr::Gt ? a.chans - ch0 : Tr::Gt) * kTaps * Cg;
  for (int e = tid; e < Tr::Gt * kTaps * Cg; e += Tr::kThreads) {
    const int q = e / (kTaps * Cg), t = (e / Cg) % kTaps, l = e % Cg;
    const int c = kFwd ? l : q % Cg, j = kFwd ? q : q - q % Cg + l;
    wsm[(t * Cg + c) * kRow + j] = e < live_elems ? raw_to_float<D>(slab[e]) : 0.f;
  }
  __syncthreads();
}

// backward_data's quad path: the sum of input-gradient pixel (2 qa + u, 2 qb + v) of a quad over
// the taps that meet it (padding parities PH, PW), from the quad's 2 x 2 dy pixels f.
template <class Cfg, int PH, int PW, class TapWeights>
CKGEN_DEVICE CKGEN_FORCEINLINE void quad_sum(const int u, const int v,
                                             const float (&f)[2][2][DirectTraits<Cfg>::V],
                                             TapWeights& tap_weights, float (&acc)[DirectTraits<Cfg>::V]) {
  constexpr int V = DirectTraits<Cfg>::V, Cg = DirectTraits<Cfg>::Cg;
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.f;
#pragma unroll
  for (int ky = 0; ky < 3; ++ky)
#pragma unroll
    for (int kx = 0; kx < 3; ++kx) {
      // constant once unrolled: which taps meet this pixel, in which row / column
      if (((PH + u + ky) & 1) == 0 && ((PW + v + kx) & 1) == 0) {
        const int ri = (u - ky + 2 - PH) / 2, ci = (v - kx + 2 - PW) / 2;
#pragma unroll
        for (int c = 0; c < Cg; ++c) {
          float wv[V];
          tap_weights(ky * 3 + kx, c, wv);
          group_fma<V, Cg>(acc, f[ri][ci], wv, c);
        }
      }
    }
}

// Pixels in one row (DirectPath::Window): pixel j reads column cx[0] + j + kx (forward) or
// cx[0] + j - kx (backward_data); column q of the window is cx[0] + q0 + q.
template <class Cfg, int KZ, int KY, int KX, class TapWeights>
CKGEN_DEVICE CKGEN_FORCEINLINE void window_taps(
    const DirectArgs& a, const bool (&live)[DirectTraits<Cfg>::PP],
    const typename DirectTraits<Cfg>::Raw* const (&base)[DirectTraits<Cfg>::PP],
    const int (&cz)[DirectTraits<Cfg>::PP], const int (&cy)[DirectTraits<Cfg>::PP],
    const int (&cx)[DirectTraits<Cfg>::PP], const int& sz, const int& sy, const int& sx, const int& stz,
    const int& sty, TapWeights& tap_weights, float (&acc)[DirectTraits<Cfg>::PP][DirectTraits<Cfg>::V]) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP, Cg = Tr::Cg;
  constexpr bool kFwd = Tr::kVariant == Variant::Forward;
  constexpr int kCols = PP + KX - 1;
  constexpr int q0 = kFwd ? 0 : -(KX - 1);
  constexpr int kRows = KZ * KY;
  // Filter row fr's kCols packets; row fr + 1's loads are issued before row fr's FMAs.
  auto load_row = [&](int fr, packet_t<D, V>(&r)[kCols]) {
    const int kz = fr / KY, ky = fr % KY;
    const int dz = kz * stz, dy = ky * sty;
    const bool row_ok = live[0] && unsigned(cz[0] + dz) < unsigned(sz) && unsigned(cy[0] + dy) < unsigned(sy);
    const Raw* rowp = base[0] + (int64_t(dz) * sy + dy) * sx * a.chans;
#pragma unroll
    for (int q = 0; q < kCols; ++q) {
      const bool ok = row_ok && unsigned(cx[0] + q0 + q) < unsigned(sx);
      r[q] = load_if<D, V>(ok, rowp + int64_t(q0 + q) * a.chans);
    }
  };
  packet_t<D, V> rows[2][kCols];
  load_row(0, rows[0]);
#pragma unroll
  for (int fr = 0; fr < kRows; ++fr) {
    if (fr + 1 < kRows) load_row(fr + 1, rows[(fr + 1) & 1]);
    const int kz = fr / KY, ky = fr % KY;
#pragma unroll
    for (int q = 0; q < kCols; ++q) {
      float f[V];
      to_floats<D, V>(rows[fr & 1][q], f);
#pragma unroll
      for (int kx = 0; kx < KX; ++kx) {  // column q feeds pixel j = q - kx (backward_data: q + q0 + kx)
        const int j = kFwd ? q - kx : q + q0 + kx;
        if (j < 0 || j >= PP) continue;
#pragma unroll
        for (int c = 0; c < Cg; ++c) {
          float wv[V];
          tap_weights((kz * KY + ky) * KX + kx, c, wv);
          group_fma<V, Cg>(acc[j], f, wv, c);
        }
      }
    }
  }
}

// One tap (kz, ky, kx) = tap t of any filter (DirectPath::Linear, backward_data's Gather): the PP
// pixels' source packets (Gather: the dy pixels that meet the tap, exact divisions), the tap's
// weights shared by them.
template <class Cfg, bool kGather>
CKGEN_DEVICE CKGEN_FORCEINLINE void tap_step(
    const DirectArgs& a, const typename DirectTraits<Cfg>::Raw* src, const int& g0, const int kz,
    const int ky, const int kx, const int64_t (&nbase)[DirectTraits<Cfg>::PP],
    const typename DirectTraits<Cfg>::Raw* const (&base)[DirectTraits<Cfg>::PP],
    const int (&cz)[DirectTraits<Cfg>::PP], const int (&cy)[DirectTraits<Cfg>::PP],
    const int (&cx)[DirectTraits<Cfg>::PP], const bool (&live)[DirectTraits<Cfg>::PP], const int sz,
    const int sy, const int sx, const int stz, const int sty, const int stx,
    float (&f)[DirectTraits<Cfg>::PP][DirectTraits<Cfg>::V]) {
  using Tr = DirectTraits<Cfg>;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP;
  packet_t<D, V> r[PP];
  if constexpr (!kGather) {
    const int dz = kz * stz, dy = ky * sty, dx = kx * stx;
    const int64_t delta = ((int64_t(dz) * sy + dy) * sx + dx) * a.chans;
#pragma unroll
    for (int j = 0; j < PP; ++j) {
      const bool ok = live[j] && unsigned(cz[j] + dz) < unsigned(sz) && unsigned(cy[j] + dy) < unsigned(sy) &&
                      unsigned(cx[j] + dx) < unsigned(sx);
      r[j] = load_if<D, V>(ok, base[j] + delta);
    }
  } else {
#pragma unroll
    for (int j = 0; j < PP; ++j) {
      // All three coordinates are computed (no short-circuit): an offset is never formed
      // from an unset coordinate, and a refused tap reads at offset 0 of its pixel.
      int oz = 0, oy = 0, ox = 0;
      const bool okz = gather_coord(cz[j] - kz * a.dil[0], a.fd_s[0], a.s[0], sz, oz);
      const bool oky = gather_coord(cy[j] - ky * a.dil[1], a.fd_s[1], a.s[1], sy, oy);
      const bool okx = gather_coord(cx[j] - kx * a.dil[2], a.fd_s[2], a.s[2], sx, ox);
      const bool ok = live[j] && okz && oky && okx;
      const int64_t off = ok ? (nbase[j] + (int64_t(oz) * sy + oy) * sx + ox) * a.chans + g0 : 0;
      r[j] = load_if<D, V>(ok, src + off);
    }
  }
#pragma unroll
  for (int j = 0; j < PP; ++j) to_floats<D, V>(r[j], f[j]);
}

// forward / backward_data. KZ, KY, KX > 0: the filter size at compile time (filter in registers
// or, Cg > 1, shared memory); Path: see DirectPath.
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_DEVICE CKGEN_FORCEINLINE void fwd_bwd_data(const DirectArgs& a) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP, Cg = Tr::Cg;
  using Pl = DirectFwdPlan<Cfg, KZ, KY, KX, Path>;
  constexpr bool kFwd = Pl::kFwd, kCT = Pl::kCT, kGather = Pl::kGather, kWindow = Pl::kWindow,
                 kQuad = Pl::kQuad, kRowPair = Pl::kRowPair, kRegW = Pl::kRegW, kSmemW = Pl::kSmemW;
  constexpr int kTaps = Pl::kTaps, kRow = Pl::kRow;
  __shared__ __attribute__((aligned(16))) float wsm[kSmemW ? kTaps * Cg * kRow : 1];

  const int tid = threadIdx.x;
  const int gv = tid % Tr::TG, row = tid / Tr::TG;
  const int g0 = int(blockIdx.y) * Tr::Gt + gv * V;
  const int m0 = int(blockIdx.x) * Tr::P + row * PP;
  const int taps = kCT ? kTaps : a.taps;
  const Raw* __restrict__ wg = static_cast<const Raw*>(a.w);
  if constexpr (kSmemW) fill_filter_smem<Cfg, kTaps, kRow>(a, wg, tid, wsm);
  if (g0 >= a.chans || m0 >= a.pixels) return;

  const int fz = kCT ? KZ : a.fil[0], fy = kCT ? KY : a.fil[1], fx = kCT ? KX : a.fil[2];
  // Depthwise compile-time filter: the group vector's V x taps weights are contiguous; V-element loads.
  float wr[kRegW ? kTaps : 1][V];
  if constexpr (kRegW) {
    const Raw* __restrict__ wp = wg + int64_t(g0) * taps;
#pragma unroll
    for (int e = 0; e < V * kTaps; e += V) {
      float f[V];
      load<D, V>(wp + e, f);
#pragma unroll
      for (int k = 0; k < V; ++k) wr[(e + k) % kTaps][(e + k) / kTaps] = f[k];
    }
  }
  // The weights of the thread's V channels at tap t for group channel c.
  auto tap_weights = [&](int t, int c, float(&wv)[V]) {
    if constexpr (kRegW) {
#pragma unroll
      for (int k = 0; k < V; ++k) wv[k] = wr[t][k];
    } else {
      stored_tap_weights<Cfg, kSmemW, kRow>(wsm, gv, wg, g0, taps, t, c, wv);
    }
  };

  if constexpr (kQuad) {
    // One quad at a time: dy's 2 x 2 pixels in registers, the quad's four sums, then the stores.
    const Raw* __restrict__ src = static_cast<const Raw*>(a.y);
    Raw* __restrict__ dst = static_cast<Raw*>(a.dst);
    const int ho = a.out_[1], wo = a.out_[2], hi = a.in_[1], wi = a.in_[2];
    auto quad = [&](auto ph_c, auto pw_c) {
      constexpr int PH = decltype(ph_c)::value, PW = decltype(pw_c)::value;
#pragma unroll 1
      for (int j = 0; j < PP; ++j) {
        const int m = m0 + j;
        if (m >= a.pixels) break;
        int n, d, qa, qb;
        split_pixel(a, m, n, d, qa, qb);
        const int r0 = qa + (a.pl[1] - 2 + PH) / 2, c0 = qb + (a.pl[2] - 2 + PW) / 2;
        const int64_t img = int64_t(n) * a.out_spatial + int64_t(d) * ho * wo;
        float f[2][2][V];
#pragma unroll
        for (int rr = 0; rr < 2; ++rr)
#pragma unroll
          for (int cc = 0; cc < 2; ++cc) {
            const bool ok = unsigned(r0 + rr) < unsigned(ho) && unsigned(c0 + cc) < unsigned(wo);
            const int64_t off = ok ? (img + int64_t(r0 + rr) * wo + c0 + cc) * a.chans + g0 : 0;
            to_floats<D, V>(load_if<D, V>(ok, src + off), f[rr][cc]);
          }
        const int64_t out_img = int64_t(n) * a.in_spatial + int64_t(d) * hi * wi;
#pragma unroll
        for (int u = 0; u < 2; ++u)
#pragma unroll
          for (int v = 0; v < 2; ++v) {
            float acc[V];
            quad_sum<Cfg, PH, PW>(u, v, f, tap_weights, acc);
            const int ih = 2 * qa + u, iw = 2 * qb + v;
            if (ih < hi && iw < wi) store<D, V>(dst + (out_img + int64_t(ih) * wi + iw) * a.chans + g0, acc);
          }
      }
    };
    using Zero = std::integral_constant<int, 0>;
    using One = std::integral_constant<int, 1>;
    const int ph = a.pl[1] & 1, pw = a.pl[2] & 1;  // the same for every thread
    if (ph == 0 && pw == 0)
      quad(Zero{}, Zero{});
    else if (ph == 0)
      quad(Zero{}, One{});
    else if (pw == 0)
      quad(One{}, Zero{});
    else
      quad(One{}, One{});
    return;
  }

  if constexpr (kRowPair) return row_pair<Cfg, KY, KX>(a, g0, m0, tap_weights);

  // The read tensor: sizes, per-pixel coordinates of tap 0 and (linear) base pointers.
  const Raw* __restrict__ src = static_cast<const Raw*>(kFwd ? a.x : a.y);
  const int sz = kFwd ? a.in_[0] : a.out_[0], sy = kFwd ? a.in_[1] : a.out_[1],
            sx = kFwd ? a.in_[2] : a.out_[2];
  const int src_spatial = kFwd ? a.in_spatial : a.out_spatial;
  const int stz = kFwd ? a.dil[0] : -a.dil[0], sty = kFwd ? a.dil[1] : -a.dil[1],
            stx = kFwd ? a.dil[2] : -a.dil[2];
  int64_t nbase[PP];
  const Raw* base[PP];
  int cz[PP], cy[PP], cx[PP];
  bool live[PP];
#pragma unroll
  for (int j = 0; j < PP; ++j) {
    const int m = m0 + j;
    live[j] = m < a.pixels;
    int n, d, h, w;
    split_pixel(a, live[j] ? m : m0, n, d, h, w);
    nbase[j] = int64_t(n) * src_spatial;
    cz[j] = kFwd ? d * a.s[0] - a.pl[0] : d + a.pl[0];  // backward_data: the gather's origin
    cy[j] = kFwd ? h * a.s[1] - a.pl[1] : h + a.pl[1];
    cx[j] = kFwd ? w * a.s[2] - a.pl[2] : w + a.pl[2];
    base[j] = src + ((nbase[j] + (int64_t(cz[j]) * sy + cy[j]) * sx + cx[j]) * a.chans + g0);
  }

  float acc[PP][V] = {};

  if constexpr (kWindow) {
    window_taps<Cfg, KZ, KY, KX>(a, live, base, cz, cy, cx, sz, sy, sx, stz, sty, tap_weights, acc);
  } else {
    int t = 0;
#pragma unroll
    for (int kz = 0; kz < fz; ++kz)
#pragma unroll
      for (int ky = 0; ky < fy; ++ky)
#pragma unroll
        for (int kx = 0; kx < fx; ++kx, ++t) {
          float f[PP][V];
          tap_step<Cfg, kGather>(a, src, g0, kz, ky, kx, nbase, base, cz, cy, cx, live, sz, sy, sx, stz, sty,
                                 stx, f);
#pragma unroll
          for (int c = 0; c < Cg; ++c) {
            float wv[V];
            tap_weights(t, c, wv);
#pragma unroll
            for (int j = 0; j < PP; ++j) group_fma<V, Cg>(acc[j], f[j], wv, c);
          }
        }
  }
  const StoreChannels<Cfg> ch = store_channels<Cfg>(a, g0);
#pragma unroll
  for (int j = 0; j < PP; ++j)
    if (live[j]) store_pixel<Cfg>(a, m0 + j, g0, ch, acc[j]);
}

}  // namespace direct

}  // namespace ckgen
