// The direct kernel's matrix path: Pipeline::Direct with WarpTile<16, 8, 16> (NVIDIA sm_80+,
// fp16 / bf16, C = K = 8 per group, forward / backward_data). Per group the convolution is a
// GEMM of P pixels x 8 output channels over taps x 8 input channels, so two taps make one
// mma.sync m16n8k16 step (k = tap pair x channel; an odd last tap pairs with zeros).
//
// Per step the block stages, with 16-byte cp.async (zeros where a tap reads outside the source
// tensor or past the filter):
//   A  [tap][P pixels][Ct]: the two taps' source pixels, every channel of the block; each
//      16-byte group chunk sits at chunk (group ^ pixel) % 8 of its row, so ldmatrix's eight
//      rows of one group fall into eight different bank quads;
//   B  [tap][Ct rows of 8]: row q of tap t is the 16 bytes GKZYXC holds at (channel ch0 + q, t).
//      forward: row j = w(j, t, 0..7), read by ldmatrix as B[c][j]; backward_data: row
//      (group base + c) = w(group base + c, t, 0..7) indexed by the input-gradient channel,
//      read transposed (ldmatrix.trans) as B[c][j].
// A ring of up to five stages (as many as 48 KB of shared memory holds): the next pairs' copies
// fly while the current pair multiplies. Warp w takes
// the m16 pixel tiles w, w + W, ... of the block and every group; each lane stores its
// accumulators as channel pairs.
#pragma once

#include "ckgen/portability.hpp"

#include <algorithm>
#include <cstdint>

#include "ckgen/async_copy.hpp"
#include "ckgen/config.hpp"
#include "ckgen/direct_common.hpp"
#include "ckgen/mma_nvidia.hpp"
#include "ckgen/vocab.hpp"

namespace ckgen {

// The channels per group and vector of the matrix path, and its one warp tile.
inline constexpr int kDirectMmaGroupChannels = 8;
inline constexpr int kDirectMmaMaxStages = 5;
inline constexpr int kDirectMmaMaxSmem = 48 * 1024;  // static shared memory

template <class Cfg>
struct DirectMmaTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr int P = Cfg::Tile::kM;       // pixels of a block
  static constexpr int Gt = Cfg::Tile::kN;      // channels of a block
  static constexpr int W = Cfg::Waves::kM;      // warps
  static constexpr int kThreads = W * 32;
  static constexpr int kChunks = Gt / 8;         // 16-byte group chunks per pixel row
  static constexpr int kTilesPerWarp = P / 16 / W;
  static constexpr int kPixelsPerThread = P * kChunks / kThreads;  // A copies per tap
  // One stage: two taps of A (P x Gt) and B (Gt x 8); as many stages as 48 KB holds, up to
  // the five tap pairs of a 3x3 filter (every copy of a 3x3 block in flight at once).
  static constexpr int kStageBytes = 2 * (P + 8) * Gt * int(sizeof(Raw));
  static constexpr int kStages = std::min(kDirectMmaMaxStages, kDirectMmaMaxSmem / kStageBytes);
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static_assert(Cfg::Tile::kK == kDirectMmaGroupChannels && Cfg::kVecC == 8,
                "ckgen: the direct matrix path serves C = K = 8 per group with vector 8");
  static_assert(Gt % 64 == 0 && P % (16 * W) == 0 && kThreads % kChunks == 0 &&
                    (P * kChunks) % kThreads == 0,
                "ckgen: direct matrix path needs Ct % 64 == 0, P % (16 x warps) == 0 and threads "
                "that tile the staged rows");
  static_assert(kStages >= 2, "ckgen: direct matrix path needs two stages within 48 KB");
};

namespace direct {

// XOR swizzle of a pixel row's 16-byte chunk g (within each run of 8 chunks).
CKGEN_HOST_DEVICE constexpr int mma_chunk(int g, int pixel) { return (g & ~7) | ((g ^ pixel) & 7); }

template <class Cfg, bool kGather>
CKGEN_DEVICE CKGEN_FORCEINLINE void fwd_bwd_data_mma(const DirectArgs& a) {
#if defined(CKGEN_NVIDIA)
  using Tr = DirectMmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Cfg::kDataType;
  constexpr bool kFwd = Cfg::kVariant == Variant::Forward;
  constexpr int P = Tr::P, Gt = Tr::Gt, NP = Tr::kPixelsPerThread, MT = Tr::kTilesPerWarp;
  static_assert(!(kFwd && kGather), "ckgen: forward never gathers");
  constexpr int S = Tr::kStages;
  __shared__ __attribute__((aligned(128))) Raw sA[S][2][P][Gt];
  __shared__ __attribute__((aligned(128))) Raw sB[S][2][Gt][8];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int ch0 = int(blockIdx.y) * Gt;
  const int m0 = int(blockIdx.x) * P;
  const int taps = a.taps;
  const Raw* __restrict__ src = static_cast<const Raw*>(kFwd ? a.x : a.y);
  const Raw* __restrict__ wg = static_cast<const Raw*>(a.w);
  const int sz = kFwd ? a.in_[0] : a.out_[0], sy = kFwd ? a.in_[1] : a.out_[1],
            sx = kFwd ? a.in_[2] : a.out_[2];
  const int src_spatial = kFwd ? a.in_spatial : a.out_spatial;

  // This thread's A copies: chunk g of pixels p0 + i * (threads / chunks), for both taps; per
  // pixel the tap-0 coordinates and (linear paths) the tap-0 source pointer.
  const int g = tid % Tr::kChunks;
  const bool chunk_ok = ch0 + g * 8 < a.chans;
  int64_t nbase[NP];
  const Raw* base[NP];
  int cz[NP], cy[NP], cx[NP];
  bool live[NP];
#pragma unroll
  for (int i = 0; i < NP; ++i) {
    const int m = m0 + tid / Tr::kChunks + i * (Tr::kThreads / Tr::kChunks);
    live[i] = m < a.pixels && chunk_ok;
    int n, d, h, w;
    split_pixel(a, m < a.pixels ? m : 0, n, d, h, w);
    nbase[i] = int64_t(n) * src_spatial;
    cz[i] = kFwd ? d * a.s[0] - a.pl[0] : d + a.pl[0];
    cy[i] = kFwd ? h * a.s[1] - a.pl[1] : h + a.pl[1];
    cx[i] = kFwd ? w * a.s[2] - a.pl[2] : w + a.pl[2];
    base[i] = src + ((nbase[i] + (int64_t(cz[i]) * sy + cy[i]) * sx + cx[i]) * a.chans + ch0 + g * 8);
  }
  // Linear source steps per tap index (backward_data with unit strides walks the filter backwards).
  const int stz = kFwd ? a.dil[0] : -a.dil[0], sty = kFwd ? a.dil[1] : -a.dil[1],
            stx = kFwd ? a.dil[2] : -a.dil[2];
  int tk[3] = {0, 0, 0};  // the next tap to stage as (z, y, x): stage() runs in tap order

  // Stages tap pair `step` into buffer `buf`.
  auto stage = [&](int step, int buf) {
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int t = 2 * step + u;
      const bool tap_ok = t < taps;
      const int kz = tk[0], ky = tk[1], kx = tk[2];
      if (tap_ok && ++tk[2] == a.fil[2]) {
        tk[2] = 0;
        if (++tk[1] == a.fil[1]) {
          tk[1] = 0;
          ++tk[0];
        }
      }
      const int dz = kz * stz, dy = ky * sty, dx = kx * stx;
      const int64_t delta = ((int64_t(dz) * sy + dy) * sx + dx) * a.chans;
#pragma unroll
      for (int i = 0; i < NP; ++i) {
        const int p = tid / Tr::kChunks + i * (Tr::kThreads / Tr::kChunks);
        bool ok;
        const Raw* from;
        if constexpr (kGather) {
          int iz = 0, iy = 0, ix = 0;
          const bool okz = gather_coord(cz[i] - kz * a.dil[0], a.fd_s[0], a.s[0], sz, iz);
          const bool oky = gather_coord(cy[i] - ky * a.dil[1], a.fd_s[1], a.s[1], sy, iy);
          const bool okx = gather_coord(cx[i] - kx * a.dil[2], a.fd_s[2], a.s[2], sx, ix);
          ok = okz && oky && okx && tap_ok && live[i];
          from = src + (ok ? (nbase[i] + (int64_t(iz) * sy + iy) * sx + ix) * a.chans + ch0 + g * 8 : 0);
        } else {
          ok = tap_ok && live[i] && unsigned(cz[i] + dz) < unsigned(sz) &&
               unsigned(cy[i] + dy) < unsigned(sy) && unsigned(cx[i] + dx) < unsigned(sx);
          from = ok ? base[i] + delta : src;
        }
        async_copy_zfill<16, true>(&sA[buf][u][p][mma_chunk(g, p) * 8], from, ok);
      }
      for (int q = tid; q < Gt; q += Tr::kThreads) {
        const bool ok = tap_ok && ch0 + q < a.chans;
        const int64_t off = ok ? (int64_t(ch0 + q) * taps + t) * 8 : 0;
        async_copy_zfill<16, true>(&sB[buf][u][q][0], wg + off, ok);
      }
    }
  };

  float acc[MT][Tr::kChunks][4];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int gi = 0; gi < Tr::kChunks; ++gi)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mi][gi][r] = 0.f;

  // The ring: S - 1 tap pairs in flight ahead of the one multiplied (one commit group per
  // pair, empty past the last, so wait<S - 2> always means "pair `step` has landed").
  const int steps = (taps + 1) / 2;
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < steps) stage(s, s);
    async_commit();
  }
  for (int step = 0; step < steps; ++step) {
    const int buf = step % S;
    async_wait<S - 2>();
    __syncthreads();  // pair `step` visible to all; every warp is done with pair step - 1
    if (step + S - 1 < steps) stage(step + S - 1, (step + S - 1) % S);
    async_commit();
    const int mat = lane >> 3, r = lane & 7;
#pragma unroll
    for (int gi = 0; gi < Tr::kChunks; ++gi) {
      uint32_t b[2];  // k 0-7: the pair's first tap, k 8-15: its second
      const uint32_t baddr = nvmma::smem_addr(&sB[buf][mat & 1][gi * 8 + r][0]);
      if constexpr (kFwd)
        nvmma::ldsm_x2(b, baddr);
      else
        nvmma::ldsm_x2_t(b, baddr);
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        // Matrices: rows 0-7 / 8-15 of the m16 tile x the first / second tap.
        const int p = (warp + mi * Tr::W) * 16 + (mat & 1) * 8 + r;
        uint32_t af[4];
        nvmma::ldsm_x4(af, nvmma::smem_addr(&sA[buf][mat >> 1][p][mma_chunk(gi, p) * 8]));
        nvmma::mma_m16n8k16<D>(acc[mi][gi], af, b[0], b[1]);
      }
    }
  }

  // Lane (row l / 4, pair l % 4) of each m16 x n8 tile: pixels +0 / +8, channels 2 (l % 4) + 0, 1.
  Raw* __restrict__ dst = static_cast<Raw*>(a.dst);
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int gi = 0; gi < Tr::kChunks; ++gi) {
      const int ch = ch0 + gi * 8 + (lane & 3) * 2;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + (warp + mi * Tr::W) * 16 + (lane >> 2) + h * 8;
        const float f[2] = {acc[mi][gi][2 * h], acc[mi][gi][2 * h + 1]};
        if (m < a.pixels && ch < a.chans) store<D, 2>(dst + int64_t(m) * a.chans + ch, f);
      }
    }
#else
  static_assert(sizeof(Cfg) == 0, "ckgen: the direct matrix path is NVIDIA mma.sync");
#endif
}

}  // namespace direct
}  // namespace ckgen
