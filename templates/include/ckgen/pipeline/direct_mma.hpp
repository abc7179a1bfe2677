// The direct kernel's matrix path: Pipeline::Direct with WarpTile<16, 8, 16> (NVIDIA sm_80+,
// fp16 / bf16, C = K = Cg per group with Cg in kDirectMmaGroupChannels (8, 16, 32), forward and
// backward_data (strided: one W phase a block, fwd_bwd_data_mma's kPhased), filters of up to
// kDirectMmaMaxTaps taps whose staged columns fit, see mma_staged_cols; DepthwiseKernel::is_supported refuses the rest with the reason). Per group
// the convolution is a GEMM of pixels x Cg output channels over taps x Cg input channels: per tap,
// m16 pixel tile and 8-channel output chunk one mma.sync m16n8k8 (Cg = 8), or m16n8k16 over each
// pair of the group's input chunks (Cg = 16: one, 32: two).
//
// A block covers P consecutive pixels of one row of the iterated tensor (forward: an output row
// (n, d, h), backward_data: an input-gradient row) and Ct channels (Ct / 8 groups), or of a band
// of consecutive rows of one (n, d) plane (direct_mma_band_rows). Per filter row (kz, ky) the
// source pixels of all its taps are one run of source columns: forward w0 * s - pl .. + (P - 1)
// * s + (X - 1) * dil, backward_data w0 + pl - (X - 1) * dil .. + P - 1 + (X - 1) * dil. The
// block stages such a run once (16-byte cp.async, zeros outside the tensor) into a ring of up to
// kDirectMmaMaxStages buffers, and tap kx of pixel p reads staged column p * s + kx * dil
// (backward_data: p + (X - 1 - kx) * dil): no re-copy per tap; a band stages each of its source
// rows once for all its rows. A staged column is Gt channels and kDirectMmaColumnPad bytes, so
// at unit stride ldmatrix's eight rows of one group chunk fall into eight bank quads (stride 2:
// two rows a quad) and every lane's address is a fixed base plus per-tap and compile-time
// offsets. The weights of every tap are staged once: row q of tap t holds the 16 bytes GKZYXC
// stores at (channel ch0 + q, t, 8 h .. 8 h + 7), one plane per input chunk h of a group
// (sB[tap][h][q]): forward row j = w(j, t, 8 h + 0..7) read as B[c][j]; backward_data row (group
// base + c) = w(group base + c, t, 8 h + 0..7), read transposed (ldmatrix.trans) as B[c][j].
// ldmatrix.x4 loads four group chunks' B (two chunks' A) at once where a warp's chunks allow.
// Warps: WM of them along the pixels (warp w % WM takes the m16 tiles w % WM, + WM, ...), and
// where there are more warps than m16 tiles, w / WM picks one of WN equal sets of the block's
// groups (whole groups: GW chunks, a multiple of Cg / 8); each lane stores its accumulators as
// channel pairs, a fused forward's operations (epilogue/fusion.hpp) applied to each pair first.
#pragma once

#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ckgen/core/async_copy.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/dim_class.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/pipeline/direct_common.hpp"
#include "ckgen/schedule/direct_plan.hpp"
#include "ckgen/warp/mma_nvidia.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

template <class Cfg>
struct DirectMmaTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr int P = Cfg::Tile::kM;   // pixels of a block (one row segment)
  static constexpr int Gt = Cfg::Tile::kN;  // channels of a block
  static constexpr int W = Cfg::Waves::kM;  // warps
  static constexpr int kThreads = W * 32;
  static constexpr int kChunks = Gt / 8;  // 16-byte group chunks per staged column
  static constexpr int Cg = Cfg::Tile::kK;  // channels per group
  static constexpr int R = Cg / 8;          // 8-channel chunks of a group: the weights' planes
  // Warps over (m16 pixel tiles) x (group sets): WM warps along the pixels, each with MT tiles;
  // more warps than tiles split the block's groups into WN sets of GW.
  static constexpr int kTilesM = P / 16;
  static constexpr int WM = W < kTilesM ? W : kTilesM;
  static constexpr int WN = W / WM;
  static constexpr int MT = kTilesM / WM;
  static constexpr int GW = kChunks / WN;
  static constexpr int kCols = direct_mma_cols(P);  // staged source columns per filter row
  static constexpr int kColElems = Gt + kDirectMmaColumnPad / int(sizeof(Raw));  // a staged column
  static constexpr DirectMmaRing kRing = direct_mma_ring(P, Gt, Cg, int(sizeof(Raw)));
  static constexpr int kRowBytes = kRing.row_bytes;
  static constexpr int kStages = kRing.stages;
  static constexpr int kSmemBytes = kStages * kRowBytes + kRing.weight_bytes;
  static_assert(kRowBytes == kCols * kColElems * int(sizeof(Raw)), "ckgen: direct_mma_ring's row is sA's");
  // 1024 threads per SM (64 registers) where a lane holds at most 16 accumulators, else 512
  // (128 registers; 64 spill): its warps wait on shared and global loads, and small layers give
  // each SM only a few blocks, so register room for all of them matters.
  // Groups of 32 channels hold four weight planes' fragments a tap: the 128-register budget.
  static constexpr int kMinBlocks = std::max(1, (MT * GW * 4 <= 16 && R <= 2 ? 1024 : 512) / kThreads);
  static_assert(one_of(kDirectMmaGroupChannels, Cg) && Cfg::kVecC == 8,
                "ckgen: the direct matrix path serves C = K in kDirectMmaGroupChannels per group with vector 8");
  static_assert(GW % R == 0, "ckgen: a warp of the direct matrix path takes whole groups");
  static_assert(Gt % 64 == 0 && P % 16 == 0 && kTilesM % WM == 0 && W % WM == 0 && kChunks % WN == 0,
                "ckgen: direct matrix path needs Ct % 64 == 0, P % 16 == 0, and warps that divide "
                "(or are a multiple of) the m16 tiles and split the groups evenly");
  static_assert(kStages >= 2, "ckgen: direct matrix path needs two staged filter rows within 48 KB");
  static_assert(kThreads >= kChunks, "ckgen: direct matrix path copies a staged column's chunks in one pass");
};

namespace direct {

// XOR swizzle of a staged column's 16-byte chunk g (within each run of 8 chunks).
CKGEN_HOST_DEVICE constexpr int mma_chunk(int g, int col) { return (g & ~7) | ((g ^ col) & 7); }

// A dimension's taps as a block walks them: backward_data's stride class of its coordinate
// (conv/dim_class.hpp make_dim_class: the taps f0, f0 + fstep, ... that reach it, `taps` of
// them, reading output coordinates off0, off0 - dstep, ...), or every tap of the filter, `dil`
// apart (unit_walk: forward, and backward_data at unit stride).
CKGEN_HOST_DEVICE inline DimClass unit_walk(int f, int dil) { return DimClass{0, 0, f, 0, 1, 0, dil}; }

// Source columns a block stages per filter row: its P pixels with all X taps (the host's
// is_supported compares them with DirectMmaTraits::kCols, the kernel stages that many). A
// backward_data block at W stride s takes one W phase (pixels s apart) and the taps of its
// stride class: at most (X - 1) / fstep + 1 of them, dstep columns apart.
CKGEN_HOST_DEVICE inline int64_t mma_staged_cols(bool fwd, int P, int64_t stride, int64_t dil, int64_t taps_x) {
  if (fwd) return (P - 1) * stride + (taps_x - 1) * dil + 1;
  const DimClass c = make_dim_class(0, 1, int(taps_x), int(stride), int(dil), 0);
  return P + (taps_x - 1) / c.fstep * c.dstep;
}

#if defined(CKGEN_NVIDIA)  // the steps of the matrix path (mma.sync, ldmatrix)
// Stages source row (iz, iy) into buffer buf: its `cols` columns from c0, this thread's group
// chunk of columns cfirst + j * kPass (col_src: column cfirst of source row (0, 0); s_cols: its
// place in buffer 0).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_stage_row(
    const DirectArgs& a, const int iz, const int iy, const int buf, const bool& chunk_ok, const int& sz,
    const int& sy, const int& sx, const typename DirectMmaTraits<Cfg>::Raw* const& col_src,
    const uint32_t& s_cols, const int& cfirst, const int& c0, const int& cols, const int64_t& pass_elems,
    const typename DirectMmaTraits<Cfg>::Raw* __restrict__ const& src) {
  using Tr = DirectMmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr uint32_t kColBytes = Tr::kColElems * sizeof(Raw);
  constexpr int kPass = Tr::kThreads / Tr::kChunks;  // columns a pass of the block covers
  constexpr int kPasses = (Tr::kCols + kPass - 1) / kPass;
  const bool row_ok = chunk_ok && unsigned(iz) < unsigned(sz) && unsigned(iy) < unsigned(sy);
  const Raw* p = col_src + (int64_t(iz) * sy + iy) * sx * a.chans;
  const uint32_t s = s_cols + uint32_t(buf) * Tr::kRowBytes;
#pragma unroll
  for (int j = 0; j < kPasses; ++j, p += pass_elems) {
    const int c = cfirst + j * kPass;
    const bool ok = row_ok && unsigned(c0 + c) < unsigned(sx);
    if (c < cols) async_copy_zfill_shared<16, true>(s + uint32_t(j * kPass) * kColBytes, ok ? p : src, ok);
  }
}

// Stages the weights of every tap (in the first filter row's commit group): element e of the
// block's (tap, input chunk) x Gt rows lands at sB[e / Gt / R][e / Gt % R][e % Gt] (s_w: sB plus
// this thread's 16 bytes).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_stage_weights(
    const DirectArgs& a, const typename DirectMmaTraits<Cfg>::Raw* __restrict__ const& wg, const int& tid,
    const int& ch0, const int& taps, const uint32_t s_w) {
  using Tr = DirectMmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr int Gt = Tr::Gt, Cg = Tr::Cg, R = Tr::R;
  // (tap, input chunk) th = t * R + h: the 16 bytes at row qc's weights + th * 8 (GKZYXC: a row's
  // taps x Cg elements are contiguous)
  if constexpr (Tr::kThreads % Gt == 0) {  // a thread keeps its row qc, steps by kStep (tap, chunk)s
    constexpr int kStep = Tr::kThreads / Gt;
    const int qc = tid % Gt, th0 = tid / Gt;
    const bool ok = ch0 + qc < a.chans;
    const Raw* p = wg + (int64_t(ch0 + qc) * taps * Cg + th0 * 8);
#pragma unroll
    for (int i = 0; i < (kDirectMmaMaxTaps * R + kStep - 1) / kStep; ++i)
      if (th0 + i * kStep < taps * R)
        async_copy_zfill_shared<16, true>(s_w + uint32_t(i * Tr::kThreads) * 16, ok ? p + i * kStep * 8 : wg,
                                          ok);
  } else {
    for (int e = tid; e < taps * R * Gt; e += Tr::kThreads) {
      const int th = e / Gt, qc = e - th * Gt;
      const bool ok = ch0 + qc < a.chans;
      async_copy_zfill_shared<16, true>(s_w + uint32_t(e - tid) * 16,
                                        wg + (ok ? int64_t(ch0 + qc) * taps * Cg + th * 8 : 0), ok);
    }
  }
}

// The phased blocks' weights: only the taps of the walks tz x ty x tx, in walk order (sB[w][h][q]
// for walked tap w = (jz * ty.taps + jy) * tx.taps + jx), with the first row's commit group.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_stage_walked_weights(
    const DirectArgs& a, const typename DirectMmaTraits<Cfg>::Raw* __restrict__ const& wg, const int& tid,
    const int& ch0, const int& taps, const int& fy, const int& fx, const DimClass& tz, const DimClass& ty,
    const DimClass& tx, const uint32_t s_w) {
  using Tr = DirectMmaTraits<Cfg>;
  constexpr int Gt = Tr::Gt, Cg = Tr::Cg, R = Tr::R;
  const int n = tz.taps * ty.taps * tx.taps * R * Gt;
  for (int e = tid; e < n; e += Tr::kThreads) {
    const int th = e / Gt, qc = e - th * Gt, w = th / R, h = th - w * R;
    const int jzy = w / tx.taps, jx = w - jzy * tx.taps, jz = jzy / ty.taps, jy = jzy - jz * ty.taps;
    const int t = ((tz.f0 + jz * tz.fstep) * fy + ty.f0 + jy * ty.fstep) * fx + tx.f0 + jx * tx.fstep;
    const bool ok = ch0 + qc < a.chans;
    async_copy_zfill_shared<16, true>(s_w + uint32_t(e - tid) * 16,
                                      wg + (ok ? int64_t(ch0 + qc) * taps * Cg + t * Cg + h * 8 : 0), ok);
  }
}

// The taps of one staged filter row (buffer buf; tap t0 + kx of the filter) on this lane's
// accumulators: a_lane / b_lane are the lane's ldmatrix addresses of tap 0 in buffer 0.
// kPhased (backward_data at stride > 1): only the taps of tx, `unit` staged columns apart; t0
// indexes the walked weights (mma_stage_walked_weights), the row's taps follow it.
template <class Cfg, int KZ, bool kPhased, class Acc>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_row_taps(const DirectArgs& a, const int buf, const int t0,
                                                 const int& fx, const DimClass& tx, const uint32_t& a_lane,
                                                 const uint32_t& b_lane, const int& colstep, Acc& acc) {
  using Tr = DirectMmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Cfg::kDataType;
  constexpr bool kFwd = Cfg::kVariant == Variant::Forward;
  constexpr bool kCT = KZ > 0;
  constexpr int Gt = Tr::Gt, MT = Tr::MT, GW = Tr::GW, R = Tr::R;
  constexpr int BG = GW % 4 == 0 ? 4 : GW % 2 == 0 ? 2 : 1;
  constexpr int AG = GW % 2 == 0 ? 2 : 1;
  constexpr uint32_t kColBytes = Tr::kColElems * sizeof(Raw);
  // Warps with four group chunks take one tap an iteration: unrolled, several taps' fragments
  // outlive the 64-register cap and spill. With two chunks three taps fit, and the next tap's
  // loads overlap this one's MMAs.
  const int nk = kPhased ? tx.taps : fx;
#pragma unroll(GW <= 2 ? 3 : 1)
  for (int j = 0; j < nk; ++j) {
    const int kx = kPhased ? tx.f0 + j * tx.fstep : j;
    const int t = t0 + (kPhased ? j : kx);
    const int cofs = kPhased ? (nk - 1 - j) * tx.dstep : (kFwd ? kx : fx - 1 - kx) * (kCT ? 1 : a.dil[2]);
    // Every fragment of the tap first, then the MMAs: the shared loads overlap instead of
    // each MMA waiting on its own two loads.
    // b[h][gi]: the 8 x 8 weights of rows chunk gi, input plane h
    uint32_t b[R][GW], af[MT][GW][2];
    const uint32_t a_tap = a_lane + uint32_t(buf) * Tr::kRowBytes + uint32_t(cofs) * kColBytes;
#pragma unroll
    for (int h = 0; h < R; ++h) {
      const uint32_t b_tap = b_lane + uint32_t(t * R + h) * (Gt * 8 * sizeof(Raw));
#pragma unroll
      for (int gi = 0; gi < GW; gi += BG) {
        uint32_t f[BG];
        nvmma::ldsm<BG, !kFwd>(f, b_tap + gi * (8 * 8 * sizeof(Raw)));
#pragma unroll
        for (int j = 0; j < BG; ++j) b[h][gi + j] = f[j];
      }
    }
#pragma unroll
    for (int gi = 0; gi < GW; gi += AG)
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        uint32_t f[2 * AG];
        nvmma::ldsm<2 * AG>(f, a_tap + uint32_t(mi * Tr::WM * 16 * colstep) * kColBytes + gi * 16);
#pragma unroll
        for (int j = 0; j < AG; ++j) {
          af[mi][gi + j][0] = f[2 * j];
          af[mi][gi + j][1] = f[2 * j + 1];
        }
      }
#pragma unroll
    for (int gi = 0; gi < GW; ++gi)
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        if constexpr (R == 1) {
          nvmma::mma_m16n8k8<D>(acc[mi][gi], af[mi][gi], b[0][gi]);
        } else {
          // output chunk gi of the group from chunk gb: k16 over input chunks (i, i + 1); B(i, o)
          // is forward rows o of plane i - gb, backward_data rows i of plane o - gb
          const int gb = gi / R * R;
#pragma unroll
          for (int i = gb; i < gb + R; i += 2) {
            const uint32_t a4[4] = {af[mi][i][0], af[mi][i][1], af[mi][i + 1][0], af[mi][i + 1][1]};
            const uint32_t b0 = kFwd ? b[i - gb][gi] : b[gi - gb][i];
            const uint32_t b1 = kFwd ? b[i + 1 - gb][gi] : b[gi - gb][i + 1];
            nvmma::mma_m16n8k16<D>(acc[mi][gi], a4, b0, b1);
          }
        }
      }
  }
}

// The fused channel vectors of this lane's channel pairs lane_ch + 8 gi (gi < GW), read once a
// block (forward instances with epilogue operations; unread otherwise).
template <class Cfg>
struct MmaLaneChannels {
  fusion::ChannelVals<Cfg, 2> pair[DirectMmaTraits<Cfg>::GW];
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const DirectArgs& a, const int lane_ch) {
    if constexpr (Cfg::kEpilogueOps)
#pragma unroll
      for (int gi = 0; gi < DirectMmaTraits<Cfg>::GW; ++gi)
        pair[gi].load(a.ep, lane_ch + gi * 8, lane_ch + gi * 8 < a.chans);
  }
};

// Stores this lane's accumulators as output row h of the band (lane_dst: its first pixel and
// channel pair in row h0; the block's pixels pix_elems apart, wlen of them; ch: its channels'
// fused vectors) and clears them for the next row.
template <class Cfg, class Acc>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_store_row(const DirectArgs& a, const int h, const int& h0,
                                                  typename DirectMmaTraits<Cfg>::Raw* const& lane_dst,
                                                  const int64_t& row_elems, const int& pix_elems,
                                                  const int& lane_w, const int& lane_ch, const int& wlen,
                                                  const MmaLaneChannels<Cfg>& ch, Acc& acc) {
  using Tr = DirectMmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Cfg::kDataType;
  constexpr int MT = Tr::MT, GW = Tr::GW;
  Raw* const d = lane_dst + (h - h0) * row_elems;
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int gi = 0; gi < GW; ++gi) {
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int dw = mi * Tr::WM * 16 + hh * 8;  // pixels past lane_w
        float f[2] = {acc[mi][gi][2 * hh], acc[mi][gi][2 * hh + 1]};
        if (lane_w + dw < wlen && lane_ch + gi * 8 < a.chans) {
          Raw* const o = d + int64_t(dw) * pix_elems + gi * 8;
          // output channel lane_ch + gi * 8 of the pixel's G * K (forward: C = K a group)
          if constexpr (Cfg::kEpilogueOps)
            fusion::apply<Cfg, 2>(a.ep, f, ch.pair[gi], o - static_cast<const Raw*>(a.dst));
          store<D, 2>(o, f);
        }
      }
    }
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int gi = 0; gi < GW; ++gi)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][gi][e] = 0.f;
}
#endif  // CKGEN_NVIDIA

// KZ, KY, KX > 0: the filter's size at compile time, with unit W dilation (every tap's staged
// column a compile-time offset; the launch takes it for 1x3x3 filters), else 0, 0, 0.
// kPhased: backward_data at a stride > 1. A block takes rows of dx of one H phase (stride H
// apart) and one W phase of them (pixels ph + s * j), and walks only the taps that reach them
// (its stride class per dimension, the same for each of its rows): the staged dy columns of a tap are
// consecutive, no MMA multiplies a tap that misses, and only the walked taps' weights are
// staged; a phase no tap reaches stores zeros.
template <class Cfg, int KZ, int KY, int KX, bool kPhased>
CKGEN_DEVICE CKGEN_FORCEINLINE void fwd_bwd_data_mma(const DirectArgs& a) {
#if defined(CKGEN_NVIDIA)
  using Tr = DirectMmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr bool kFwd = Cfg::kVariant == Variant::Forward;
  constexpr int P = Tr::P, Gt = Tr::Gt, MT = Tr::MT, GW = Tr::GW, S = Tr::kStages;
  __shared__ __attribute__((aligned(128))) Raw sA[S][Tr::kCols][Tr::kColElems];
  __shared__ __attribute__((aligned(128))) Raw sB[kDirectMmaMaxTaps][Tr::R][Gt][8];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % Tr::WM, g0 = warp / Tr::WM * GW;  // first m16 tile, first group
  const int ch0 = int(blockIdx.y) * Gt;
  constexpr bool kCT = KZ > 0;
  static_assert(!kCT || KZ * KY * KX <= kDirectMmaMaxTaps,
                "ckgen: the matrix path stages kDirectMmaMaxTaps taps");
  const int taps = kCT ? KZ * KY * KX : a.taps, fy = kCT ? KY : a.fil[1], fx = kCT ? KX : a.fil[2];
  const Raw* __restrict__ src = static_cast<const Raw*>(kFwd ? a.x : a.y);
  const Raw* __restrict__ wg = static_cast<const Raw*>(a.w);
  const int sz = kFwd ? a.in_[0] : a.out_[0], sy = kFwd ? a.in_[1] : a.out_[1],
            sx = kFwd ? a.in_[2] : a.out_[2];
  const int src_spatial = kFwd ? a.in_spatial : a.out_spatial;

  // The block's band: rows h0 .. h0 + rows - 1 of one plane (n, d) of the iterated tensor (one
  // row unless the host chose bands, see direct_mma_band_rows; phased: every hs-th row), from
  // pixel w0 of each row (phased: of its W phase).
  static_assert(!kPhased || (!kFwd && !kCT), "ckgen: the phased blocks are backward_data's, filter at run time");
  const int wfull = kFwd ? a.out_[2] : a.in_[2], hlen = kFwd ? a.out_[1] : a.in_[1];
  const int ps = kPhased ? a.s[2] : 1;  // W phases: a block's pixels are ps apart
  const int segs = ((wfull + ps - 1) / ps + P - 1) / P;
  const int band = int(blockIdx.x) / segs, w0 = (int(blockIdx.x) - band * segs) * P;
  int plane, hb, n, d, h0, ph = 0;
  a.fd_bands.divmod(band, plane, hb);
  a.fd_pix[0].divmod(plane, n, d);
  // phased: band hb = (bi * sy + rho) * sx + ph takes rows h0 = rho + bi * band_rows * sy, +sy, ...
  // (one H phase: the same taps reach each), pixels ph + sx * j of each
  const int hs = kPhased ? a.s[1] : 1;
  if constexpr (kPhased) {
    int hq, bi, rho;
    a.fd_s[2].divmod(hb, hq, ph);
    a.fd_s[1].divmod(hq, bi, rho);
    h0 = rho + bi * a.band_rows * hs;
  } else {
    h0 = hb * a.band_rows;
  }
  const int rows = min(a.band_rows, (hlen - h0 + hs - 1) / hs);
  if (kPhased && rows <= 0) return;  // a band past the last row of its H phase
  const int wlen = (wfull - ph + ps - 1) / ps;  // the block's row: pixels ph, ph + ps, ...
  // Filter row (0, 0)'s source row for row h0 (kz / ky move it by +-dil; phased: then / s), the
  // taps each dimension walks, and the first staged column.
  const int z0 = kFwd ? d * a.s[0] - a.pl[0] : d + a.pl[0];
  const int y0 = kFwd ? h0 * a.s[1] - a.pl[1] : h0 + a.pl[1];
  const int dx = kCT ? 1 : a.dil[2];
  const DimClass tz = kPhased ? make_dim_class(d, a.in_[0], a.fil[0], a.s[0], a.dil[0], a.pl[0])
                               : unit_walk(KZ > 0 ? KZ : a.fil[0], a.dil[0]);
  const DimClass ty = kPhased ? make_dim_class(h0, hlen, fy, a.s[1], a.dil[1], a.pl[1]) : unit_walk(fy, a.dil[1]);
  const DimClass tx = kPhased ? make_dim_class(ph, wfull, fx, ps, dx, a.pl[2]) : unit_walk(fx, dx);
  // phased: dy column of pixel 0 under the last tap
  const int c0 = kFwd      ? w0 * a.s[2] - a.pl[2]
                 : kPhased ? w0 + tx.off0 - (tx.taps - 1) * tx.dstep
                           : w0 + a.pl[2] - (fx - 1) * dx;
  const int cols = kFwd ? int(mma_staged_cols(true, P, a.s[2], dx, fx)) : P + (tx.taps - 1) * tx.dstep;
  const int colstep = kFwd ? a.s[2] : 1;

  const int g = tid % Tr::kChunks;
  const bool chunk_ok = ch0 + g * 8 < a.chans;
  const Raw* const img = src + (int64_t(n) * src_spatial * a.chans + ch0 + g * 8);

  // Copies: thread tid moves group chunk g of staged columns cfirst + j * kPass (those below
  // `cols`); per filter row only the source row changes, so a copy is a pointer step, a bound
  // test and the cp.async.
  constexpr int kPass = Tr::kThreads / Tr::kChunks;  // columns a pass of the block covers
  const int cfirst = tid / Tr::kChunks;
  const uint32_t s_cols = nvmma::smem_addr(&sA[0][cfirst][g * 8]);
  const Raw* const col_src = img + int64_t(c0 + cfirst) * a.chans;  // column cfirst of source row (0, 0)
  const int64_t pass_elems = int64_t(kPass) * a.chans;

  // Stages source row (iz, iy) into buffer `buf`: its `cols` columns from c0.
  auto stage = [&](int iz, int iy, int buf) {
    mma_stage_row<Cfg>(a, iz, iy, buf, chunk_ok, sz, sy, sx, col_src, s_cols, cfirst, c0, cols, pass_elems,
                       src);
  };

  float acc[MT][GW][4] = {};

  // The weights of every tap (phased: of the walked taps), with the first filter row's commit group.
  if constexpr (kPhased)
    mma_stage_walked_weights<Cfg>(a, wg, tid, ch0, taps, fy, fx, tz, ty, tx,
                                  nvmma::smem_addr(&sB[0][0][0][0]) + uint32_t(tid) * 16);
  else
    mma_stage_weights<Cfg>(a, wg, tid, ch0, taps, nvmma::smem_addr(&sB[0][0][0][0]) + uint32_t(tid) * 16);
  // ldmatrix widths: B takes BG group chunks' 8 x 8 weights at once, A the m16 x k8 tiles of AG
  // chunks (x4: lanes 16-31 address the second chunk).
  constexpr int BG = GW % 4 == 0 ? 4 : GW % 2 == 0 ? 2 : 1;
  constexpr int AG = GW % 2 == 0 ? 2 : 1;
  const int lrow = lane & 15;  // the A row this lane addresses (rows 0-7, 8-15 of an m16 tile)
  // Per-lane shared addresses of tap 0 in buffer 0; a tap moves A by whole columns and B by a
  // tap's Gt rows, a group chunk by 16 bytes (A) / 8 rows (B), an m16 tile by 16 columns.
  const uint32_t a_lane =
      nvmma::smem_addr(&sA[0][(wm * 16 + lrow) * colstep][(g0 + (AG == 2 ? lane >> 4 : 0)) * 8]);
  const uint32_t b_lane = nvmma::smem_addr(&sB[0][0][g0 * 8 + lane % (8 * BG)][0]);
  // The taps of one staged filter row (buffer buf; tap t0 + kx of the filter).
  auto row_taps = [&](int buf, int t0) {
    mma_row_taps<Cfg, KZ, kPhased>(a, buf, t0, fx, tx, a_lane, b_lane, colstep, acc);
  };

  // Lane (row l / 4, pair l % 4) of each m16 x n8 tile: pixels +0 / +8, channels 2 (l % 4) + 0, 1.
  // The lane's first pixel (of the block's row) and channel pair in row h0; a row moves it by W
  // pixels.
  const int lane_w = w0 + wm * 16 + (lane >> 2), lane_ch = ch0 + g0 * 8 + (lane & 3) * 2;
  Raw* const lane_dst = static_cast<Raw*>(a.dst) +
                        ((int64_t(plane) * hlen + h0) * wfull + ph + lane_w * ps) * a.chans + lane_ch;
  const int64_t row_elems = int64_t(wfull) * a.chans;
  MmaLaneChannels<Cfg> lane_chv;
  lane_chv.load(a, lane_ch);
  auto store_row = [&](int h) {
    mma_store_row<Cfg>(a, h, h0, lane_dst, row_elems, ps * a.chans, lane_w, lane_ch, wlen, lane_chv, acc);
  };

  if (!kPhased && a.band_shares_rows && a.band_rows > 1) {
    // Bands sharing source rows (fil[0] == 1, unit stride and dilation along H, S >= Y + 1:
    // direct_mma_band_shares_rows):
    // row h0 + o reads source rows ybase + o .. + Y - 1, so the band's rows + Y - 1 source rows
    // are staged once each, in order, S - 1 ahead; row o waits for its Y rows (all but the last
    // S - 1 - Y commit groups) and the barrier frees the buffer of row o - 1 for row o + S - 1.
    const int srows = rows + fy - 1;
    const int ybase = kFwd ? y0 : y0 - (fy - 1);
#pragma unroll
    for (int u = 0; u < S - 1; ++u) {
      if (u < srows) stage(z0, ybase + u, u);
      async_commit();
    }
    for (int o = 0, buf = 0; o < rows; ++o) {  // buf: source row o's buffer
      async_wait_n<S - 1>(S - 1 - fy);
      __syncthreads();
      if (o + S - 1 < srows) stage(z0, ybase + o + S - 1, buf == 0 ? S - 1 : buf - 1);
      async_commit();
      // source row o + j's buffer (j < Y <= S - 1: one wrap at most); a compile-time filter's
      // rows of taps in one unrolled stretch
#pragma unroll(kCT ? KY : 1)
      for (int j = 0; j < fy; ++j)
        row_taps(buf + j < S ? buf + j : buf + j - S, (kFwd ? j : fy - 1 - j) * fx);
      store_row(h0 + o);
      buf = buf == S - 1 ? 0 : buf + 1;
    }
  } else {
    // Each of the band's rows in turn (one row unless the host chose bands that share no source
    // rows; phased: rows hs apart), its filter rows (kz, ky) staged in turn, S - 1 in flight
    // ahead of the one multiplied (one commit group per filter row, empty past the last, so
    // wait<S - 2> always means "filter row r has landed"). Row o's source rows are row h0's
    // moved by o strides (phased: by o); phased filter rows are the tz x ty walk (none where no
    // W tap reaches the block's phase).
    const int frows = !kPhased ? (kCT ? KZ : a.fil[0]) * fy : tx.taps > 0 ? tz.taps * ty.taps : 0;
    const int row_shift = kFwd ? a.s[1] : 1;  // source rows from one of the band's rows to the next
    // kMulti: several rows (or phased); else the one row's loop alone, with the filter's taps
    // in order (a row's latency is all a small layer's blocks have).
    auto rows_loop = [&](auto multi) {
      constexpr bool kMulti = decltype(multi)::value;
      const int total = kMulti ? rows * frows : frows;
      int jz = 0, jy = 0, jo = 0;  // the next filter row to stage: (kz, ky) = (tz, ty).f0 + j * fstep
      auto stage_next = [&](int buf) {
        const int kz = tz.f0 + jz * tz.fstep, ky = ty.f0 + jy * ty.fstep;
        int iz = kFwd ? z0 + kz * a.dil[0] : z0 - kz * a.dil[0];
        int iy = kFwd ? y0 + ky * a.dil[1] : y0 - ky * a.dil[1];
        if constexpr (kPhased) iz = tz.off0 - jz * tz.dstep, iy = ty.off0 - jy * ty.dstep;  // the class's dy rows
        stage(iz, kMulti ? iy + jo * row_shift : iy, buf);
        if (++jy == ty.taps) {
          jy = 0;
          if (++jz == tz.taps && kMulti) jz = 0, ++jo;
        }
      };
      int mz = 0, my = 0, mo = 0;  // the filter row multiplied next, as (jz, jy), of row mo
#pragma unroll
      for (int s = 0; s < S - 1; ++s) {
        if (s < total) stage_next(s);
        async_commit();
      }
      for (int r = 0, buf = 0; r < total; ++r) {  // buf: filter row r's buffer
        async_wait<S - 2>();
        __syncthreads();  // row r visible to all; every warp is done with row r - 1
        if (r + S - 1 < total) stage_next(buf == 0 ? S - 1 : buf - 1);
        async_commit();
        if constexpr (kMulti) {
          row_taps(buf, kPhased ? (mz * ty.taps + my) * tx.taps : (mz * fy + my) * fx);
          if (++my == ty.taps) {
            my = 0;
            if (++mz == tz.taps) mz = 0, store_row(h0 + hs * mo++);
          }
        } else {
          row_taps(buf, r * fx);
        }
        buf = buf == S - 1 ? 0 : buf + 1;
      }
      if constexpr (!kMulti) store_row(h0);
    };
    if constexpr (kPhased) {
      rows_loop(std::true_type{});
    } else {
      if (rows > 1)
        rows_loop(std::true_type{});
      else
        rows_loop(std::false_type{});
    }
    if (kPhased && frows == 0) {  // no tap reaches the phase: the weights' copies, and zeros
      async_wait<0>();
      for (int o = 0; o < rows; ++o) store_row(h0 + hs * o);
    }
  }
#else
  static_assert(sizeof(Cfg) == 0, "ckgen: the direct matrix path is NVIDIA mma.sync");
#endif
}

}  // namespace direct
}  // namespace ckgen
