// The direct kernel's backward_weight (pipeline/depthwise.hpp): a block reduces dy * x over one
// slice of output pixels for its channel tile and every tap, then combines its threads.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/core/limits.hpp"
#include "ckgen/pipeline/depthwise_fwd.hpp"
#include "ckgen/pipeline/depthwise_rows.hpp"

namespace ckgen {

namespace direct {

// backward_weight's block sums of its threads' partials pass through at most this many floats of
// static shared memory (20 KB: the nine taps of a 64-channel, 128-thread, 4-wide tile in one pass),
// an entry's row of channels padded by kDirectCombinePad floats (16-byte stores stay aligned, the
// summing threads' reads spread over the banks; both in core/limits.hpp).

// backward_weight's window paths (DirectPath::Window / WindowS2, depthwise compile-time filter): a
// thread's PP pixels of one output row (m0 % PP == 0, Wo % PP == 0); per filter row the kCols source
// columns from the first pixel's leftmost one, each loaded and converted once. (No lookahead
// across pixel groups: it costs registers and gains nothing.)
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_DEVICE CKGEN_FORCEINLINE void weight_window(
    const DirectArgs& a, const typename DirectTraits<Cfg>::Raw* __restrict__ const& x,
    const typename DirectTraits<Cfg>::Raw* __restrict__ const& dy, const int& g0, const int& row,
    const int& mb, const int& me, float (&acc)[KZ * KY * KX][1][DirectTraits<Cfg>::V]) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP;
  constexpr int S = Path == DirectPath::WindowS2 ? 2 : 1;
  constexpr int kCols = (PP - 1) * S + KX;
  // NVIDIA, W stride 1, 4 or more pixels a thread: two steps a loop iteration, so the second's
  // loads issue under the first's FMAs (at stride 2, or with three steps, the longer body
  // loses more than it hides).
  constexpr int kStepUnroll = S == 1 && PP >= 4 ? 2 : 1;
#if defined(CKGEN_NVIDIA)
#pragma unroll(kStepUnroll)
#endif
  for (int m0 = mb + row * PP; m0 < me; m0 += Tr::P) {
    float gy[PP][V];
#pragma unroll
    for (int j = 0; j < PP; ++j)
      to_floats<D, V>(load_if<D, V>(true, dy + int64_t(m0 + j) * a.chans + g0), gy[j]);
    int n, d, h, w;
    split_pixel(a, m0, n, d, h, w);
    const int cz = d * a.s[0] - a.pl[0], cy = h * a.s[1] - a.pl[1], cx = w * S - a.pl[2];
#pragma unroll
    for (int kz = 0; kz < KZ; ++kz) {
#pragma unroll
      for (int ky = 0; ky < KY; ++ky) {
        const int iz = cz + kz * a.dil[0], iy = cy + ky * a.dil[1];
        const bool row_ok = unsigned(iz) < unsigned(a.in_[0]) && unsigned(iy) < unsigned(a.in_[1]);
        const Raw* rowp =
            x + ((int64_t(n) * a.in_spatial + (int64_t(iz) * a.in_[1] + iy) * a.in_[2] + cx) * a.chans + g0);
        packet_t<D, V> r[kCols];
#pragma unroll
        for (int q = 0; q < kCols; ++q)
          r[q] = load_if<D, V>(row_ok && unsigned(cx + q) < unsigned(a.in_[2]), rowp + int64_t(q) * a.chans);
#pragma unroll
        for (int q = 0; q < kCols; ++q) {
          float f[V];
          to_floats<D, V>(r[q], f);
#pragma unroll
          for (int kx = 0; kx < KX; ++kx) {  // column q feeds pixel j = (q - kx) / S at tap kx
            if ((q - kx) % S != 0 || q < kx || (q - kx) / S >= PP) continue;
            const int j = (q - kx) / S;
            const int t = (kz * KY + ky) * KX + kx;
#pragma unroll
            for (int k = 0; k < V; ++k) acc[t][0][k] = fmaf(f[k], gy[j][k], acc[t][0][k]);
          }
        }
      }
    }
  }
}

// backward_weight's linear path: taps [t0, t0 + NT) of a thread's pixels, PP at a time (a
// compile-time filter: all its taps, t0 = 0; a runtime one: those below a.taps, the pass's taps
// decomposed once).
template <class Cfg, int KZ, int KY, int KX, int NT>
CKGEN_DEVICE CKGEN_FORCEINLINE void weight_linear(
    const DirectArgs& a, const typename DirectTraits<Cfg>::Raw* __restrict__ const& x,
    const typename DirectTraits<Cfg>::Raw* __restrict__ const& dy, const int& g0, const int& row,
    const int& mb, const int& me, const int t0,
    float (&acc)[NT][DirectTraits<Cfg>::Cg][DirectTraits<Cfg>::V]) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP, Cg = Tr::Cg;
  constexpr bool kCT = KZ > 0;
  static_assert(!kCT || NT == KZ * KY * KX, "ckgen: a compile-time filter's taps in one pass");
  // a runtime filter: the pass's taps as source offsets, decomposed once (a tap past the filter
  // is dead)
  int oz[NT], oy[NT], ox[NT];
  bool tap_live[NT];
  if constexpr (!kCT) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int tt = t0 + t < a.taps ? t0 + t : t0;
      const int yx = a.fil[1] * a.fil[2];
      const int kz = tt / yx;
      const int ky = (tt - kz * yx) / a.fil[2];
      const int kx = tt - kz * yx - ky * a.fil[2];
      tap_live[t] = t0 + t < a.taps;
      oz[t] = kz * a.dil[0], oy[t] = ky * a.dil[1], ox[t] = kx * a.dil[2];
    }
  }
  for (int m0 = mb + row * PP; m0 < me; m0 += Tr::P) {
    float gy[PP][V];
    int64_t nbase[PP];
    int cz[PP], cy[PP], cx[PP];
    bool live[PP];
#pragma unroll
    for (int j = 0; j < PP; ++j) {
      const int m = m0 + j;
      live[j] = m < me;
      int n, d, h, w;
      split_pixel(a, live[j] ? m : m0, n, d, h, w);
      nbase[j] = int64_t(n) * a.in_spatial;
      cz[j] = d * a.s[0] - a.pl[0];
      cy[j] = h * a.s[1] - a.pl[1];
      cx[j] = w * a.s[2] - a.pl[2];
      to_floats<D, V>(load_if<D, V>(live[j], dy + int64_t(m) * a.chans + g0), gy[j]);
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      // the tap's source offsets: a compile-time filter's tap t, else the pass's decomposed one
      const int kz = t / (KY > 0 ? KY * KX : 1), ky = (t / (KX > 0 ? KX : 1)) % (KY > 0 ? KY : 1),
                kx = t % (KX > 0 ? KX : 1);
      const int tz = kCT ? kz * a.dil[0] : oz[t], ty = kCT ? ky * a.dil[1] : oy[t],
                tx = kCT ? kx * a.dil[2] : ox[t];
#pragma unroll
      for (int j = 0; j < PP; ++j) {
        const int iz = cz[j] + tz, iy = cy[j] + ty, ix = cx[j] + tx;
        const bool ok = live[j] && (kCT || tap_live[t]) && unsigned(iz) < unsigned(a.in_[0]) &&
                        unsigned(iy) < unsigned(a.in_[1]) && unsigned(ix) < unsigned(a.in_[2]);
        const int64_t off = (nbase[j] + (int64_t(iz) * a.in_[1] + iy) * a.in_[2] + ix) * a.chans + g0;
        float f[V];
        to_floats<D, V>(load_if<D, V>(ok, x + off), f);
#pragma unroll
        for (int c = 0; c < Cg; ++c) group_fma<V, Cg>(acc[t][c], f, gy[j], c);
      }
    }
  }
}

// backward_weight: one block = one slice of output pixels x one group tile. Path: Linear, or
// Window / WindowS2 (compile-time depthwise filter, W dilation 1, W stride 1 / 2, Wo % PP == 0:
// a thread's PP pixels lie in one output row), or Rows / RowsS2 (depthwise, up to kRowsPerPass
// filter rows a pass, the pixels in the row windows' padded order).
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_DEVICE CKGEN_FORCEINLINE void bwd_weight(const DirectArgs& a) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, Cg = Tr::Cg;
  constexpr bool kCT = KZ > 0;
  constexpr bool kWin = Path == DirectPath::Window || Path == DirectPath::WindowS2;
  constexpr bool kRows = Path == DirectPath::Rows || Path == DirectPath::RowsS2;
  static_assert(!(kCT || kRows) || Cg == 1, "ckgen: small groups take one tap at a time (Cg x V accumulators)");
  static_assert(Path == DirectPath::Linear || (kWin && kCT) || (kRows && !kCT),
                "ckgen: backward_weight windows need a compile-time filter, row windows a runtime one");
  // Row windows: filter rows a pass, their KX x V sums in registers (at most 64 a thread, at
  // most 4 rows).
  constexpr int kRowsPerPass = !kRows ? 1 : 64 / (KX * V) < 1 ? 1 : 64 / (KX * V) > 4 ? 4 : 64 / (KX * V);
  // taps accumulated at once: the compile-time filter's, a pass of row windows, else a pass of
  // the generic path (direct_bwd_generic_taps)
  constexpr int kTaps = kCT ? KZ * KY * KX : kRows ? kRowsPerPass * KX : direct_bwd_generic_taps(Cg, V);
  constexpr int kEntries = kTaps * Cg;             // fp32 sums a thread holds per channel
  constexpr int kLd = Tr::Gt + kDirectCombinePad;  // floats per (pixel row, entry)
  constexpr int kFit = kDirectCombineFloats / (Tr::Rows * kLd);
  constexpr int kChunk = kFit < 1 ? 1 : kFit > kEntries ? kEntries : kFit;  // entries a pass
  __shared__ float red[Tr::Rows * kChunk * kLd];

  const int tid = threadIdx.x;
  const int gv = tid % Tr::TG, row = tid / Tr::TG;
  const int g0 = int(blockIdx.y) * Tr::Gt + gv * V;
  const bool gok = g0 < a.chans;
  const int slice = int(blockIdx.x);
  const int mb = slice * a.slice_pixels;
  const int me = a.pixels - mb < a.slice_pixels ? a.pixels : mb + a.slice_pixels;
  const int taps = a.taps;
  const Raw* __restrict__ x = static_cast<const Raw*>(a.x);
  const Raw* __restrict__ dy = static_cast<const Raw*>(a.y);

  // Accumulates taps [t0, t0 + kTaps) (kCT: all of them; kRows: those of filter rows t0 ..
  // t0 + kRowsPerPass - 1) over this thread's pixels: acc[t][c][k] is channel k's weight for
  // input channel c of its group (depthwise: c = 0).
  auto accumulate = [&](int t0, float(&acc)[kTaps][Cg][V]) {
#pragma unroll
    for (int t = 0; t < kTaps; ++t)
#pragma unroll
      for (int c = 0; c < Cg; ++c)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[t][c][k] = 0.f;
    if (!gok) return;
    if constexpr (kRows)
      weight_rows<Cfg, KX, Path == DirectPath::RowsS2 ? 2 : 1, kRowsPerPass>(a, x, dy, g0, row, mb, me, t0, acc);
    else if constexpr (kWin)
      weight_window<Cfg, KZ, KY, KX, Path>(a, x, dy, g0, row, mb, me, acc);
    else
      weight_linear<Cfg, KZ, KY, KX, kTaps>(a, x, dy, g0, row, mb, me, t0, acc);
  };

  // Sums acc over the block's pixel rows and writes each entry e (tap tap_of(e, base), group
  // channel e % Cg; < 0: not written, a row window's offsets past the filter) of the Gt
  // channels: kChunk of the kTaps x Cg entries a pass through `red` ([pixel row][entry][channel]:
  // a thread stores V consecutive floats an entry); consecutive threads sum a channel's
  // consecutive entries, so a pass's stores of the weights are contiguous per channel; rows
  // summed in order.
  const int frows = a.fil[0] * a.fil[1], fx = a.fil[2];
  auto tap_of = [&](int e, int base) -> int {  // base: the pass's t0 (kRows: its first filter row)
    if constexpr (kRows) {
      const int r = e / KX, o = e % KX;
      return o < fx && base + r < frows ? (base + r) * fx + o : -1;
    } else if constexpr (kCT) {
      return base + e / Cg;
    } else {  // the last pass's taps past the filter
      return base + e / Cg < taps ? base + e / Cg : -1;
    }
  };
  auto combine = [&](int base, const float(&acc)[kTaps][Cg][V]) {
#pragma unroll
    for (int e0 = 0; e0 < kEntries; e0 += kChunk) {
#pragma unroll
      for (int e = 0; e < kChunk; ++e)
        if (e0 + e < kEntries)
#pragma unroll
          for (int k = 0; k < V; ++k)
            red[(row * kChunk + e) * kLd + gv * V + k] = acc[(e0 + e) / Cg][(e0 + e) % Cg][k];
      __syncthreads();
      for (int q = tid; q < Tr::Gt * kChunk; q += Tr::kThreads) {
        const int gq = q / kChunk, e = q % kChunk;
        const int g = int(blockIdx.y) * Tr::Gt + gq;
        const int t = e0 + e < kEntries ? tap_of(e0 + e, base) : -1;
        if (t >= 0 && g < a.chans) {
          float s = 0.f;
          for (int r = 0; r < Tr::Rows; ++r) s += red[(r * kChunk + e) * kLd + gq];
          const int64_t off = weight_index<true, Cg>(g, taps, t, (e0 + e) % Cg);
          if (a.mode == OutMode::Direct)
            static_cast<Raw*>(a.dst)[off] = float_to_raw<D>(s);
          else if (a.mode == OutMode::AtomicF32)
            atomic_add_f32(a.ws + off, s);
          else
            a.ws[slice * a.ws_stride + off] = s;
        }
      }
      __syncthreads();
    }
  };

  float acc[kTaps][Cg][V];
  if constexpr (kCT) {
    accumulate(0, acc);
    combine(0, acc);
  } else if constexpr (kRows) {
    for (int fr = 0; fr < frows; fr += kRowsPerPass) {
      accumulate(fr, acc);
      combine(fr, acc);
    }
  } else {
    for (int t0 = 0; t0 < taps; t0 += kTaps) {
      accumulate(t0, acc);
      combine(t0, acc);
    }
  }
}

}  // namespace direct

}  // namespace ckgen
