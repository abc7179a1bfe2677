// DepthwiseKernel<Config>: the direct (not implicit-GEMM) kernel of Pipeline::Direct instances,
// for depthwise problems (C = K = 1 per group) and problems with small groups (C = K = Cg per
// group, Cg = 2, 4 or 8: ResNeXt-style). NDHWGC / GKZYXC / NDHWGK: the
// G * Cg channels of a pixel are contiguous, and output channel j of group j / Cg reads the input
// channels of the same group, so a thread's V output channels (whole groups) read the V input
// channels at the same positions. Any filter size, stride, dilation and (asymmetric) padding,
// 1D/2D/3D. WarpTile<16, 8, 16> instances (Cg = 8, 16-bit, forward / backward_data) run the
// matrix path instead (pipeline/direct_mma.hpp: mma.sync per tap, its own limits in is_supported).
//
// Config fields (ckgen/rules.py checks them; DirectTraits static_asserts them):
//   Tile<P, Ct, Cg>  a block covers Ct channels (Ct / Cg groups) and P pixels; Cg: the channels
//   per group it serves (1 = depthwise); Waves<w, 1, 1>: w warps;
//   kVecA = kVecB = kVecC = V: each thread owns V consecutive channels (V / Cg whole groups;
//   16-byte accesses at V = 8 for fp16 / bf16, V = 4 for fp32). Threads: TG = Ct / V across
//   the channels (fastest), Rows = threads / TG across the pixels, PP = P / Rows per thread.
//
// forward / backward_data: a thread owns V channels at PP consecutive pixels (of the output, of
//   the input gradient), loops over the taps with fp32 accumulators, each tap's weights shared
//   by its PP pixels; a 1x3x3 filter takes a compile-time path (depthwise: the group vector's
//   whole filter in registers, loaded once as V * 9 contiguous elements; Cg > 1: the block's
//   Ct x 9 x Cg weights in shared memory as fp32, [tap][c][channel]), any other filter the
//   generic path (the tap's weights read per tap, L1-resident). Per tap and input channel c of
//   the group, output channel j adds its group's input channel c times w(j, tap, c).
//   backward_data gathers: dx[i] = sum over taps of dy[(i + pl - f * d) / s] * w[f] where the
//   division is exact and in range (no zero insertion).
// backward_weight: block (slice, channel tile) reduces dy * x over its slice of the N*Do*Ho*Wo
//   output pixels for its Gt channels and all taps (depthwise 1x3x3: all 9 x V accumulators in
//   registers, the source read per filter row as a window of the thread's pixels where they
//   share a row (DirectPath::Window / WindowS2) or per tap (Linear, up to 2 pixels per thread);
//   otherwise, and for small groups, one tap at a time with Cg x V accumulators),
//   combines its threads through shared memory ([Rows][Gt] floats), then: one slice -> converted
//   straight into dw; Stage::One -> fp32 atomics into a zeroed workspace of G * taps floats +
//   convert; Stage::Two -> its slice of a [slices][G * taps] fp32 workspace + reduce/convert
//   (schedule/splitk_finish.hpp). Slices: RunOptions::k_batch, else the
//   instance's kKBatch, else direct_auto_slices (schedule/direct_plan.hpp).
#pragma once

#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/pipeline/direct_common.hpp"
#include "ckgen/pipeline/direct_mma.hpp"
#include "ckgen/pipeline/direct_mma_bwd_weight.hpp"
#include "ckgen/schedule/direct_plan.hpp"
#include "ckgen/core/fast_div.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/schedule/splitk_finish.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

template <class Cfg>
struct DirectTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr DataType kDataType = Cfg::kDataType;
  static constexpr int V = Cfg::kVecC;
  static constexpr int P = Cfg::Tile::kM;
  static constexpr int Gt = Cfg::Tile::kN;  // channels of a block (depthwise: groups)
  static constexpr int Cg = Cfg::Tile::kK;  // channels per group (C = K) served
  static constexpr int kThreads = Cfg::Waves::kM * Cfg::kWarpSize;
  static constexpr int TG = Gt / V;
  static constexpr int Rows = kThreads / TG;
  static constexpr int PP = direct_fma_pixels_per_thread(P, Gt, V, kThreads);  // = P / Rows

  static_assert(Cfg::kPipeline == Pipeline::Direct, "ckgen: DirectTraits is for Pipeline::Direct");
  static_assert(Cfg::kVecA == V && Cfg::kVecB == V && is_pow2_upto8(V) && V * sizeof(Raw) <= 16,
                "ckgen: direct needs one vector size 1/2/4/8 of at most 16 bytes");
  static_assert((Cg == 1 || Cg == 2 || Cg == 4 || Cg == 8) && V % Cg == 0 &&
                    Cfg::Waves::kN == 1 && Cfg::Waves::kK == 1,
                "ckgen: direct needs Tile<P, Ct, Cg> with Cg in 1/2/4/8 dividing V, Waves<w, 1, 1>");
  // WarpTile<16, 8, 16>: the matrix path (forward / backward_data pipeline/direct_mma.hpp, backward_weight
  // pipeline/direct_mma_bwd_weight.hpp), else plain FMA (WarpTile<1, 1, 1>).
  static constexpr bool kMma = Cfg::WarpTile::kM == 16;
  static_assert((Cfg::WarpTile::kM == 1 && Cfg::WarpTile::kN == 1 && Cfg::WarpTile::kK == 1) ||
                    (kMma && Cfg::WarpTile::kN == 8 && Cfg::WarpTile::kK == 16),
                "ckgen: direct takes WarpTile<1, 1, 1> (FMA) or <16, 8, 16> (mma.sync)");
  // The FMA path's thread layout (the matrix paths lay out their warps in their own traits).
  static_assert(kMma || (Gt % V == 0 && kThreads % TG == 0 && P % Rows == 0 && PP >= 1),
                "ckgen: direct threads must tile the block's groups and pixels");
  // Blocks per SM the launch bounds ask for: FMA 1 (see depthwise_conv_kernel), the matrix
  // paths their traits' kMinBlocks (named lazily: only the chosen traits are instantiated).
  struct FmaBlocks {
    static constexpr int kMinBlocks = 1;
  };
  using MinBlocksFrom =
      std::conditional_t<!kMma, FmaBlocks,
                         std::conditional_t<kVariant == Variant::BackwardWeight, DirectMmaBwdTraits<Cfg>,
                                            DirectMmaTraits<Cfg>>>;
  static constexpr int kMinBlocks = MinBlocksFrom::kMinBlocks;
  static_assert(kThreads <= 1024, "ckgen: too many threads per block");
  static_assert(Cfg::kGroupsToMerge == 1 && Cfg::kEpilogue == Epilogue::Default &&
                    Cfg::kSpecialization == Specialization::Default &&
                    Cfg::kScheduler == Scheduler::Intrawave && Cfg::kReduction == Reduction::SplitK &&
                    !Cfg::kPersistent && Cfg::kLoadWaves == 0 && Cfg::kMathWaves == 0,
                "ckgen: direct takes the default value of every GEMM-only field");
  static_assert(kVariant == Variant::BackwardWeight || (Cfg::kKBatch == 1 && Cfg::kStage == Stage::One),
                "ckgen: direct forward / backward_data do not split (kKBatch 1, Stage::One)");
};

// How forward / backward_data find a tap's source pixel (DepthwiseKernel::run picks one):
//   Linear  c + k * step (forward: c = o * s - pl, step = dil; backward_data with unit strides:
//           c = i + pl, step = -dil): one uniform offset per tap from a per-pixel base;
//   Window  Linear with a compile-time filter, W stride and dilation 1 and a thread's PP pixels
//           in one row (Wo % PP == 0): per filter row the PP + X - 1 source columns are loaded
//           and converted once and shared by the PP pixels (instead of PP * X loads);
//   Gather  backward_data with a stride > 1: o = (i + pl - k * dil) / s where exact and in range.
//   QuadS2  backward_data, 1x3x3 filter, H and W stride 2, dilation 1, depth stride 1 without
//           depth padding: a thread's pixel m is a quad of 2 x 2 input-gradient pixels (a.pixels
//           and a.fd_pix count quads). Over the quad's rows 2 qa + u (u = 0, 1) and the taps
//           ky = 0..2 the numerators 2 qa + u + pl - ky are four consecutive integers, so the
//           quad reads two dy rows r0, r0 + 1 (r0 = qa + (pl - 2 + (pl & 1)) / 2), and likewise
//           two dy columns: 4 loads for 4 pixels instead of 36 gathered taps. Which (u, ky) pairs
//           meet, and in which of the two rows, follows from the padding's parity alone.
//   WindowS2  backward_weight only: Window at W stride 2 (the PP pixels read 2 * PP + KX - 2
//           columns per filter row). backward_weight takes Window / WindowS2 for the depthwise
//           compile-time filter: per filter row a thread loads and converts the (PP - 1) * s + KX
//           input columns its PP output pixels read once, instead of PP * KX loads.
//   RowPair forward, depthwise 1x3x3 filter, H and W stride and dilation 1 (direct_fma_row_pair):
//           a thread's PP pixels are two output rows x PC = PP / 2 columns, so each of the KY + 1
//           source rows under them is loaded and converted once for both rows: (KY + 1) x
//           (PC + KX - 1) loads instead of the window's KY x (PP + KX - 1) (4 x 6 = 24 against 30
//           at PP = 8). a.pixels and a.fd_pix count the pair order (direct_fma_pixels): index i
//           is column i % PC of row i / PC % 2 of unit i / PP, unit u = ((n * Do + d) *
//           ceil(Ho / 2) + hp) * (Wo / PC) + wc at rows 2 hp, 2 hp + 1 and columns wc * PC ...;
//           the row past an odd Ho is dead (not stored).
enum class DirectPath { Linear, Window, Gather, WindowS2, QuadS2, RowPair };

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
CKGEN_DEVICE CKGEN_FORCEINLINE void group_fma(float (&acc)[V], const float (&f)[V], const float (&wv)[V], int c) {
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = fmaf(f[k - k % Cg + c], wv[k], acc[k]);
}

// The packet at p when ok, else zeros (a predicated load: no branch around the math).
template <DataType D, int V>
CKGEN_DEVICE CKGEN_FORCEINLINE packet_t<D, V> load_if(bool ok,
                                                      const typename DataTypeTraits<D>::raw* __restrict__ p) {
  packet_t<D, V> r{};
  if (ok) r = *reinterpret_cast<const packet_t<D, V>*>(p);
  return r;
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
  CKGEN_DEVICE CKGEN_FORCEINLINE RowPairRows(const DirectArgs& a, const RowPairUnit& u, const Raw* x, int g0) {
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

// forward / backward_data. KZ, KY, KX > 0: the filter size at compile time (filter in registers
// or, Cg > 1, shared memory); Path: see DirectPath.
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_DEVICE CKGEN_FORCEINLINE void fwd_bwd_data(const DirectArgs& a) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP, Cg = Tr::Cg;
  constexpr bool kFwd = Tr::kVariant == Variant::Forward;
  constexpr bool kCT = KZ > 0;
  constexpr int kTaps = kCT ? KZ * KY * KX : 1;
  constexpr bool kGather = Path == DirectPath::Gather;
  constexpr bool kWindow = Path == DirectPath::Window;
  constexpr bool kQuad = Path == DirectPath::QuadS2;
  constexpr bool kRowPair = Path == DirectPath::RowPair;
  // Where a tap's weights live: depthwise compile-time filter in registers (wr), Cg > 1
  // compile-time filter in shared memory (wsm), generic filter read per tap.
  constexpr bool kRegW = kCT && Cg == 1;
  constexpr bool kSmemW = kCT && Cg > 1;
  static_assert(!(kFwd && (kGather || kQuad)), "ckgen: forward never gathers");
  static_assert(!kQuad || (KZ == 1 && KY == 3 && KX == 3), "ckgen: the quad path is for 1x3x3 filters");
  static_assert(!kWindow || kCT, "ckgen: the window path needs a compile-time filter");
  static_assert(!kRowPair || (kFwd && KZ == 1 && kRegW && PP % 2 == 0),
                "ckgen: the pair path is forward's, for a depthwise 1x3x3 filter and an even PP");
  constexpr int kRow = Tr::Gt + 4;  // wsm row: 16-byte aligned, the fill's banks 4 apart per row
                                   // (rules.py DIRECT_FILTER_ROW_PAD)
  __shared__ __attribute__((aligned(16))) float wsm[kSmemW ? kTaps * Cg * kRow : 1];

  const int tid = threadIdx.x;
  const int gv = tid % Tr::TG, row = tid / Tr::TG;
  const int g0 = int(blockIdx.y) * Tr::Gt + gv * V;
  const int m0 = int(blockIdx.x) * Tr::P + row * PP;
  const int taps = kCT ? kTaps : a.taps;
  const Raw* __restrict__ wg = static_cast<const Raw*>(a.w);
  if constexpr (kSmemW) {
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
  auto tap_weights = [&](int t, int c, float (&wv)[V]) {
    if constexpr (kRegW) {
#pragma unroll
      for (int k = 0; k < V; ++k) wv[k] = wr[t][k];
    } else if constexpr (kSmemW) {
      const float* ws = wsm + (t * Cg + c) * kRow + gv * V;
      if constexpr (V % 4 == 0) {  // 16-byte shared loads (ws is 16-byte aligned)
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
    } else {
      load_tap_weights<D, V, kFwd, Cg>(wg, g0, taps, t, c, wv);
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
            const int ih = 2 * qa + u, iw = 2 * qb + v;
            if (ih < hi && iw < wi) store<D, V>(dst + (out_img + int64_t(ih) * wi + iw) * a.chans + g0, acc);
          }
      }
    };
    using Zero = std::integral_constant<int, 0>;
    using One = std::integral_constant<int, 1>;
    const int ph = a.pl[1] & 1, pw = a.pl[2] & 1;  // the same for every thread
    if (ph == 0 && pw == 0) quad(Zero{}, Zero{});
    else if (ph == 0) quad(Zero{}, One{});
    else if (pw == 0) quad(One{}, Zero{});
    else quad(One{}, One{});
    return;
  }

  if constexpr (kRowPair) {
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
    Raw* __restrict__ dst = static_cast<Raw*>(a.dst);
#pragma unroll
    for (int o = 0; o < 2; ++o)
      if (o == 0 || u.second)
#pragma unroll
        for (int j = 0; j < PC; ++j) store<D, V>(dst + (u.m + int64_t(o) * a.out_[2] + j) * a.chans + g0, acc[o][j]);
    return;
  }

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
    if constexpr (kFwd) {
      cz[j] = d * a.s[0] - a.pl[0];
      cy[j] = h * a.s[1] - a.pl[1];
      cx[j] = w * a.s[2] - a.pl[2];
    } else {
      cz[j] = d + a.pl[0];
      cy[j] = h + a.pl[1];
      cx[j] = w + a.pl[2];
    }
    base[j] = src + ((nbase[j] + (int64_t(cz[j]) * sy + cy[j]) * sx + cx[j]) * a.chans + g0);
  }

  float acc[PP][V];
#pragma unroll
  for (int j = 0; j < PP; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k) acc[j][k] = 0.f;

  if constexpr (kWindow) {
    // All PP pixels in one row: pixel j reads column cx[0] + j + kx (forward) or
    // cx[0] + j - kx (backward_data); column q of the window is cx[0] + q0 + q.
    constexpr int kCols = PP + KX - 1;
    constexpr int q0 = kFwd ? 0 : -(KX - 1);
    constexpr int kRows = KZ * KY;
    // Filter row fr's kCols packets; row fr + 1's loads are issued before row fr's FMAs.
    auto load_row = [&](int fr, packet_t<D, V> (&r)[kCols]) {
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
  } else {
  int t = 0;
#pragma unroll
  for (int kz = 0; kz < fz; ++kz) {
#pragma unroll
    for (int ky = 0; ky < fy; ++ky) {
#pragma unroll
      for (int kx = 0; kx < fx; ++kx, ++t) {
        packet_t<D, V> r[PP];
        if constexpr (!kGather) {
          const int dz = kz * stz, dy = ky * sty, dx = kx * stx;
          const int64_t delta = ((int64_t(dz) * sy + dy) * sx + dx) * a.chans;
#pragma unroll
          for (int j = 0; j < PP; ++j) {
            const bool ok = live[j] && unsigned(cz[j] + dz) < unsigned(sz) &&
                            unsigned(cy[j] + dy) < unsigned(sy) && unsigned(cx[j] + dx) < unsigned(sx);
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
        float f[PP][V];
#pragma unroll
        for (int j = 0; j < PP; ++j) to_floats<D, V>(r[j], f[j]);
#pragma unroll
        for (int c = 0; c < Cg; ++c) {
          float wv[V];
          tap_weights(t, c, wv);
#pragma unroll
          for (int j = 0; j < PP; ++j) group_fma<V, Cg>(acc[j], f[j], wv, c);
        }
      }
    }
  }
  }  // taps
  Raw* __restrict__ dst = static_cast<Raw*>(a.dst);
#pragma unroll
  for (int j = 0; j < PP; ++j)
    if (live[j]) store<D, V>(dst + int64_t(m0 + j) * a.chans + g0, acc[j]);
}

// backward_weight's block sums of its threads' partials pass through at most this many floats of
// static shared memory (20 KB: the nine taps of a 64-channel, 128-thread, 4-wide tile in one pass),
// an entry's row of channels padded by kDirectCombinePad floats (16-byte stores stay aligned, the
// summing threads' reads spread over the banks).
inline constexpr int kDirectCombineFloats = 5120;
inline constexpr int kDirectCombinePad = 4;

// backward_weight: one block = one slice of output pixels x one group tile. Path: Linear, or
// Window / WindowS2 (compile-time depthwise filter, W dilation 1, W stride 1 / 2, Wo % PP == 0:
// a thread's PP pixels lie in one output row).
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_DEVICE CKGEN_FORCEINLINE void bwd_weight(const DirectArgs& a) {
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Tr::kDataType;
  constexpr int V = Tr::V, PP = Tr::PP, Cg = Tr::Cg;
  constexpr bool kCT = KZ > 0;
  static_assert(!kCT || Cg == 1, "ckgen: small groups take one tap at a time (Cg x V accumulators)");
  constexpr bool kWin = Path == DirectPath::Window || Path == DirectPath::WindowS2;
  static_assert(Path == DirectPath::Linear || (kWin && kCT), "ckgen: backward_weight windows need a compile-time filter");
  constexpr int kTaps = kCT ? KZ * KY * KX : 1;  // taps accumulated at once
  constexpr int kEntries = kTaps * Cg;  // fp32 sums a thread holds per channel
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

  // Accumulates taps [t0, t0 + kTaps) (kCT: all of them) over this thread's pixels: acc[t][c][k]
  // is channel k's weight for input channel c of its group (depthwise: c = 0).
  auto accumulate = [&](int t0, float (&acc)[kTaps][Cg][V]) {
#pragma unroll
    for (int t = 0; t < kTaps; ++t)
#pragma unroll
      for (int c = 0; c < Cg; ++c)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[t][c][k] = 0.f;
    if (!gok) return;
    int rz = 0, ry = 0, rx = 0;  // the runtime tap t0 (generic filter)
    if constexpr (!kCT) {
      const int yx = a.fil[1] * a.fil[2];
      rz = t0 / yx;
      ry = (t0 - rz * yx) / a.fil[2];
      rx = t0 - rz * yx - ry * a.fil[2];
    }
    if constexpr (kWin) {
      // PP pixels of one output row (m0 % PP == 0, Wo % PP == 0); per filter row the kCols
      // source columns from the first pixel's leftmost one, each loaded and converted once.
      // (One filter row of lookahead across pixel groups measured 3 % slower on an H200 and
      // took more registers: bench/NOTES.md, "Depthwise backward_weight: a window per filter row".)
      constexpr int S = Path == DirectPath::WindowS2 ? 2 : 1;
      constexpr int kCols = (PP - 1) * S + KX;
      // NVIDIA, W stride 1, 4 or more pixels a thread: two steps a loop iteration (the second's
      // loads issue under the first's FMAs): depthwise 56x56 10.63 -> 10.24 us (bf16, 8 pixels a
      // thread) on an H200; at stride 2 it took 1-7 % longer and three steps 5-8 % longer
      // everywhere (bench/NOTES.md, "Two window steps a loop iteration"). Fewer pixels a thread
      // were not measured.
      constexpr int kStepUnroll = S == 1 && PP >= 4 ? 2 : 1;
#if defined(CKGEN_NVIDIA)
#pragma unroll(kStepUnroll)
#endif
      for (int m0 = mb + row * PP; m0 < me; m0 += Tr::P) {
        float gy[PP][V];
#pragma unroll
        for (int j = 0; j < PP; ++j) to_floats<D, V>(load_if<D, V>(true, dy + int64_t(m0 + j) * a.chans + g0), gy[j]);
        int n, d, h, w;
        split_pixel(a, m0, n, d, h, w);
        const int cz = d * a.s[0] - a.pl[0], cy = h * a.s[1] - a.pl[1], cx = w * S - a.pl[2];
#pragma unroll
        for (int kz = 0; kz < KZ; ++kz) {
#pragma unroll
          for (int ky = 0; ky < KY; ++ky) {
            const int iz = cz + kz * a.dil[0], iy = cy + ky * a.dil[1];
            const bool row_ok = unsigned(iz) < unsigned(a.in_[0]) && unsigned(iy) < unsigned(a.in_[1]);
            const Raw* rowp = x + ((int64_t(n) * a.in_spatial + (int64_t(iz) * a.in_[1] + iy) * a.in_[2] + cx) *
                                       a.chans + g0);
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
    } else {
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
      for (int t = 0; t < kTaps; ++t) {
        const int kz = kCT ? t / (KY * KX) : rz;
        const int ky = kCT ? (t / KX) % KY : ry;
        const int kx = kCT ? t % KX : rx;
#pragma unroll
        for (int j = 0; j < PP; ++j) {
          const int iz = cz[j] + kz * a.dil[0], iy = cy[j] + ky * a.dil[1],
                    ix = cx[j] + kx * a.dil[2];
          const bool ok = live[j] && unsigned(iz) < unsigned(a.in_[0]) &&
                          unsigned(iy) < unsigned(a.in_[1]) && unsigned(ix) < unsigned(a.in_[2]);
          const int64_t off =
              (nbase[j] + (int64_t(iz) * a.in_[1] + iy) * a.in_[2] + ix) * a.chans + g0;
          float f[V];
          to_floats<D, V>(load_if<D, V>(ok, x + off), f);
#pragma unroll
          for (int c = 0; c < Cg; ++c) group_fma<V, Cg>(acc[t][c], f, gy[j], c);
        }
      }
    }
    }  // Linear
  };

  // Sums acc over the block's pixel rows and writes taps [t0, t0 + kTaps) of the Gt channels:
  // kChunk of the kTaps x Cg entries a pass through `red` ([pixel row][entry][channel]: a thread
  // stores V consecutive floats an entry); consecutive threads sum a channel's consecutive entries,
  // so a pass's stores of the weights are contiguous per channel; rows summed in order.
  auto combine = [&](int t0, const float (&acc)[kTaps][Cg][V]) {
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
        if (e0 + e < kEntries && g < a.chans) {
          float s = 0.f;
          for (int r = 0; r < Tr::Rows; ++r) s += red[(r * kChunk + e) * kLd + gq];
          const int64_t off = weight_index<true, Cg>(g, taps, t0 + (e0 + e) / Cg, (e0 + e) % Cg);
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
  } else {
    for (int t0 = 0; t0 < taps; ++t0) {
      accumulate(t0, acc);
      combine(t0, acc);
    }
  }
}

}  // namespace direct

// KZ, KY, KX > 0: compile-time filter size (else 0, 0, 0); Path: forward / backward_data only.
// FMA: one block per SM is enough: registers up to the per-thread maximum (without the minimum
// ptxas caps 256-thread blocks at 64 registers and spills the register-held filter). The matrix
// paths: see their traits' kMinBlocks.
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_GLOBAL void CKGEN_LAUNCH_BOUNDS_MIN_BLOCKS(DirectTraits<Cfg>::kThreads, DirectTraits<Cfg>::kMinBlocks)
    depthwise_conv_kernel(const CKGEN_GRID_CONSTANT DirectArgs a) {
  // backward_weight's conversion of the slices (launch_splitk_finish, chained) may be placed now:
  // its blocks wait in chain_wait until this grid has completed.
  if constexpr (Cfg::kVariant == Variant::BackwardWeight) chain_release();
  if constexpr (Cfg::kVariant == Variant::BackwardWeight && DirectTraits<Cfg>::kMma)
    direct::bwd_weight_mma<Cfg>(a);
  else if constexpr (Cfg::kVariant == Variant::BackwardWeight)
    direct::bwd_weight<Cfg, KZ, KY, KX, Path>(a);
  else if constexpr (DirectTraits<Cfg>::kMma)
    direct::fwd_bwd_data_mma<Cfg, KZ, KY, KX>(a);
  else
    direct::fwd_bwd_data<Cfg, KZ, KY, KX, Path>(a);
}

template <class Cfg>
class DepthwiseKernel final : public KernelBase {
 public:
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr int64_t kMax32 = (int64_t(1) << 31) - 1;

  DepthwiseKernel() {
    key_ = config_key<Cfg>();  // Cfg's GEMM-only fields are static_asserted to their defaults
    key_.tile_m = Tr::P;
    key_.tile_n = Tr::Gt;
    key_.tile_k = Tr::Cg;
    key_.wave_m = Cfg::Waves::kM;
    key_.wave_n = 1;
    key_.wave_k = 1;
    key_.warp_m = Cfg::WarpTile::kM;
    key_.warp_n = Cfg::WarpTile::kN;
    key_.warp_k = Cfg::WarpTile::kK;
    key_.vec_a = key_.vec_b = key_.vec_c = Tr::V;
  }

  const KernelKey& key() const override { return key_; }

  // backward_weight slices: RunOptions::k_batch, else kKBatch, else direct_auto_slices.
  int resolve_slices(const ConvProblem& p, const RunOptions& opts) const {
    if constexpr (kVariant != Variant::BackwardWeight) {
      return 1;
    } else {
      if (opts.k_batch > 0) return opts.k_batch;
      if (Cfg::kKBatch > 0) return Cfg::kKBatch;
      return direct_auto_slices(direct_pixels(kVariant, p), Tr::P, channel_tiles(p),
                                Tr::kThreads, detail::device_sm_count(), Tr::kMma);
    }
  }
  DirectSlices slices(const ConvProblem& p, const RunOptions& opts) const {
    return direct_weight_slices(p, Tr::P, Tr::kMma, resolve_slices(p, opts));
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    if (std::string e = detail::common_refusal(p, Cfg::kNDim, [&]() -> std::string {
          if (std::string r = detail::split_reduce_refusal(opts.split_reduce); !r.empty()) return r;
          if (opts.streamk_blocks != 0)
            return "RunOptions::streamk_blocks is for StreamK instances (this one uses direct slices)";
          return {};
        });
        !e.empty())
      return e;
    if (p.C != Tr::Cg || p.K != Tr::Cg)
      return "direct instance serves C = K = " + str(Tr::Cg) + " per group (problem has C=" +
             str(p.C) + ", K=" + str(p.K) + ")";
    // 32-bit index math: pixel indices and coordinates (tensor offsets are 64-bit).
    if (p.N * p.in_spatial() > kMax32 || p.N * p.out_spatial() > kMax32 || chans(p) > kMax32)
      return "N * spatial size or G * C exceeds 2^31-1 (32-bit index math)";
    // a block's first pixel index past the last one, the row pairs' dead rows included
    const int64_t pixels = direct_fma_pixels(kVariant, p, fma_pp());
    if (pixels + Tr::P > kMax32)
      return "the launch's pixel indices (N * D * H * W; with row pairs N * Do * ceil(Ho / 2) * 2 * Wo) "
             "plus a tile exceed 2^31-1 (32-bit index math)";
    if (chans(p) % Tr::V != 0)
      return "direct vector width " + str(Tr::V) + " needs G * C (" + str(chans(p)) +
             ") to be a multiple of " + str(Tr::V);
    const int64_t lim = int64_t(1) << 30;
    for (int i = 0; i < 3; ++i)
      if (p.in[i] + p.pad_l[i] + p.pad_r[i] > lim || (p.filter[i] - 1) * p.dilation[i] > lim ||
          p.stride[i] > lim)
        return "a spatial size exceeds 2^30";
    if (channel_tiles(p) > 65535) return "G * C / tile N exceeds 65535 (grid.y limit)";
    if constexpr (kVariant == Variant::BackwardWeight) {
      if (opts.k_batch < 0 || opts.k_batch > kDirectMaxSlices)
        return "k_batch " + str(opts.k_batch) + " out of range 0..1024 (0 = chosen per problem)";
      if (p.weight_elems() * kDirectMaxSlices > kMax32)
        return "G * K * Z * Y * X * C too large for the workspace index";
      if constexpr (Tr::kMma) {
        if (std::string e = mma_staging_refusal(p, true, DirectMmaBwdTraits<Cfg>::kCols); !e.empty()) return e;
        if (p.filter[0] * p.filter[1] > kDirectMmaBwdFilterRows)
          return "the direct matrix path for backward_weight stages at most " + str(kDirectMmaBwdFilterRows) +
                 " filter rows (Z * Y; problem has " + str(p.filter[0] * p.filter[1]) + ")";
      }
    } else {
      if ((pixels + Tr::P - 1) / Tr::P > kMax32) return "too many pixel blocks for grid.x";
      if constexpr (Tr::kMma) {
        constexpr bool kFwd = kVariant == Variant::Forward;
        if (!kFwd && (p.stride[0] > 1 || p.stride[1] > 1 || p.stride[2] > 1))
          return "the direct matrix path takes backward_data with unit strides only";
        if (std::string e = mma_staging_refusal(p, kFwd, DirectMmaTraits<Cfg>::kCols); !e.empty()) return e;
        if (direct_row_segments(kVariant, p, Tr::P) > kMax32) return "too many row segments for grid.x";
      }
    }
    return {};
  }

  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if constexpr (kVariant != Variant::BackwardWeight) {
      return 0;
    } else {
      const DirectSlices s = slices(p, opts);
      if (s.count <= 1) return 0;
      const std::size_t elems = std::size_t(p.weight_elems());
      return (Cfg::kStage == Stage::One ? 1 : std::size_t(s.count)) * elems * sizeof(float);
    }
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    DirectArgs a;
    a.x = t.in;
    a.w = t.wei;
    a.y = t.out;
    a.dst = kVariant == Variant::Forward ? t.out : kVariant == Variant::BackwardData ? t.in : t.wei;
    a.ws = static_cast<float*>(workspace);
    a.chans = int(chans(p));
    for (int i = 0; i < 3; ++i) {
      a.in_[i] = int(p.in[i]);
      a.out_[i] = int(p.out[i]);
      a.fil[i] = int(p.filter[i]);
      a.s[i] = int(p.stride[i]);
      a.dil[i] = int(p.dilation[i]);
      a.pl[i] = int(p.pad_l[i]);
      a.fd_pix[i].init(kVariant == Variant::BackwardData ? p.in[i] : p.out[i]);
      a.fd_s[i].init(p.stride[i]);
    }
    a.taps = int(p.filter_spatial());
    a.in_spatial = int(p.in_spatial());
    a.out_spatial = int(p.out_spatial());
    const int64_t pixels = direct_fma_pixels(kVariant, p, fma_pp());
    a.pixels = int(pixels);
    a.mode = OutMode::Direct;
    a.ws_stride = p.weight_elems();
    const unsigned gtiles = unsigned(channel_tiles(p));
    const bool k3x3 = p.filter[0] == 1 && p.filter[1] == 3 && p.filter[2] == 3;
    gpuError_t e;
    if constexpr (kVariant != Variant::BackwardWeight) {
      a.slice_pixels = 0;
      if constexpr (Tr::kMma) {  // the matrix path: a block per segment of a band of rows (pipeline/direct_mma.hpp)
        a.band_rows = direct_mma_band_rows(p, DirectMmaTraits<Cfg>::kStages,
                                           direct_row_segments(kVariant, p, Tr::P) * gtiles, detail::device_sm_count());
        a.fd_bands.init(direct_bands_per_plane(kVariant, p, a.band_rows));
        const dim3 rgrid(unsigned(direct_band_segments(kVariant, p, Tr::P, a.band_rows)), gtiles, 1);
        if (k3x3 && p.dilation[2] == 1)  // the filter at compile time
          depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Linear><<<rgrid, Tr::kThreads, 0, stream>>>(a);
        else
          depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear><<<rgrid, Tr::kThreads, 0, stream>>>(a);
      } else {
        const dim3 grid(unsigned((pixels + Tr::P - 1) / Tr::P), gtiles, 1);
        const bool gather = kVariant == Variant::BackwardData &&
                            (p.stride[0] > 1 || p.stride[1] > 1 || p.stride[2] > 1);
        const bool pair = direct_fma_row_pair(kVariant, p, fma_pp());
        const bool window = direct_fma_window(kVariant, p, Tr::PP);
        constexpr DirectPath kG = kVariant == Variant::BackwardData ? DirectPath::Gather
                                                                    : DirectPath::Linear;
        constexpr DirectPath kQ = kVariant == Variant::BackwardData ? DirectPath::QuadS2
                                                                    : DirectPath::Linear;
        const bool quad = gather && k3x3 && p.stride[0] == 1 && p.stride[1] == 2 && p.stride[2] == 2 &&
                          p.dilation[1] == 1 && p.dilation[2] == 1 && p.pad_l[0] == 0;
        if (quad) {  // the grid and the pixel split count 2 x 2 quads of dx (DirectPath::QuadS2)
          const int64_t qh = (p.in[1] + 1) / 2, qw = (p.in[2] + 1) / 2;
          a.fd_pix[1].init(qh);
          a.fd_pix[2].init(qw);
          a.pixels = int(p.N * p.in[0] * qh * qw);
          const dim3 qgrid(unsigned((a.pixels + Tr::P - 1) / Tr::P), gtiles, 1);
          depthwise_conv_kernel<Cfg, 1, 3, 3, kQ><<<qgrid, Tr::kThreads, 0, stream>>>(a);
        } else if (pair) {  // the pixel split counts the pair order's units (DirectPath::RowPair)
          a.fd_pix[1].init((p.out[1] + 1) / 2);
          a.fd_pix[2].init(p.out[2] / (Tr::PP / 2));
          row_pair_kernel()<<<grid, Tr::kThreads, 0, stream>>>(a);
        } else if (window)
          depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Window><<<grid, Tr::kThreads, 0, stream>>>(a);
        else if (k3x3 && !gather)
          depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Linear><<<grid, Tr::kThreads, 0, stream>>>(a);
        else if (k3x3)
          depthwise_conv_kernel<Cfg, 1, 3, 3, kG><<<grid, Tr::kThreads, 0, stream>>>(a);
        else if (!gather)
          depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear><<<grid, Tr::kThreads, 0, stream>>>(a);
        else
          depthwise_conv_kernel<Cfg, 0, 0, 0, kG><<<grid, Tr::kThreads, 0, stream>>>(a);
      }
      return gpuGetLastError();
    } else {
      const DirectSlices s = slices(p, opts);
      a.slice_pixels = int(s.chunk);  // the matrix path: row segments per slice
      if (s.count > 1) {
        if (workspace == nullptr) return invalid_value();
        a.mode = Cfg::kStage == Stage::One ? OutMode::AtomicF32 : OutMode::PartialF32;
      }
      if (a.mode == OutMode::AtomicF32) {
        e = gpuMemsetAsync(workspace, 0, std::size_t(p.weight_elems()) * sizeof(float), stream);
        if (e != gpuSuccess) return e;
      }
      const dim3 grid(unsigned(s.count), gtiles, 1);
      int smem = 0;
      const auto kernel = bwd_kernel(p, smem);
      if constexpr (Tr::kMma) {  // the matrix path: its ring of units in dynamic shared memory
        static std::atomic<uint64_t> done{0};
        if ((e = detail::allow_dynamic_smem(kernel, smem, done)) != gpuSuccess) return e;
      }
      kernel<<<grid, Tr::kThreads, smem, stream>>>(a);
      e = gpuGetLastError();
      if (e != gpuSuccess || a.mode == OutMode::Direct) return e;
      const int64_t n = p.weight_elems();
      const int splits = Cfg::kStage == Stage::One ? 1 : s.count;
      return launch_splitk_finish<Cfg::kDataType>(a.ws, splits, a.ws_stride, static_cast<Raw*>(a.dst),
                                                  n, stream, true);
    }
  }

 private:
  // backward_weight's kernel for p and its dynamic shared memory: the matrix path (its ring of
  // units), or for depthwise FMA tiles with a 1x3x3 filter a window when the thread's pixels share
  // a row and read neighbouring columns, else the Linear 9-tap path up to
  // kDirectBwdLinearMaxPixels pixels per thread (its hoisted loads spill beyond); otherwise the
  // generic one-tap-at-a-time path.
  static auto bwd_kernel(const ConvProblem& p, int& smem) {
    auto kernel = depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>;
    smem = 0;
    if constexpr (Tr::kMma) {
      smem = DirectMmaBwdTraits<Cfg>::kSmemBytes;
    } else if constexpr (Tr::Cg == 1) {
      switch (direct_fma_bwd_path(p, Tr::Cg, Tr::PP)) {
        case DirectBwdPath::Window: kernel = depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Window>; break;
        case DirectBwdPath::WindowS2: kernel = depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::WindowS2>; break;
        case DirectBwdPath::Linear9:
          if constexpr (Tr::PP <= kDirectBwdLinearMaxPixels) kernel = depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Linear>;
          break;
        case DirectBwdPath::Generic: break;
      }
    }
    return kernel;
  }

  // The matrix paths' staging limits (forward / backward_data: pipeline/direct_mma.hpp, backward_weight:
  // pipeline/direct_mma_bwd_weight.hpp): the taps whose weights are staged at once and the source
  // columns a filter row stages (cols_staged); the refusal, or empty.
  static std::string mma_staging_refusal(const ConvProblem& p, bool fwd_map, int cols_staged) {
    using detail::str;
    if (p.filter_spatial() > kDirectMmaMaxTaps)
      return "the direct matrix path stages at most " + str(kDirectMmaMaxTaps) + " filter taps (problem has " +
             str(p.filter_spatial()) + ")";
    const int64_t cols = direct::mma_staged_cols(fwd_map, Tr::P, p.stride[2], p.dilation[2], p.filter[2]);
    if (cols > cols_staged)
      return "the direct matrix path stages " + str(cols_staged) +
             " source columns per filter row (this stride / dilation needs " + str(cols) + ")";
    return {};
  }

  static int64_t chans(const ConvProblem& p) { return p.G * p.C; }  // channels per pixel
  // Whether the instance has a pair path (DirectPath::RowPair: forward, depthwise FMA, an even
  // PP >= 4), and the pixels a thread takes that direct_fma_pixels / direct_fma_row_pair
  // test (0: never pairs), and its kernel (the generic one where it has none: never launched).
  static constexpr bool kRowPairs = kVariant == Variant::Forward && Tr::Cg == 1 && !Tr::kMma &&
                                 Tr::PP >= 4 && Tr::PP % 2 == 0;
  static constexpr int fma_pp() { return kRowPairs ? Tr::PP : 0; }
  static auto row_pair_kernel() {
    if constexpr (kRowPairs)
      return depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::RowPair>;
    else
      return depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>;
  }
  static int64_t channel_tiles(const ConvProblem& p) { return (chans(p) + Tr::Gt - 1) / Tr::Gt; }
  static gpuError_t invalid_value() {
#if defined(CKGEN_NVIDIA)
    return cudaErrorInvalidValue;
#elif defined(CKGEN_AMD_NOGPUINC)
    return 1;
#else
    return hipErrorInvalidValue;
#endif
  }
  KernelKey key_;
};

}  // namespace ckgen
