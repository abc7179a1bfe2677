// The direct kernel's matrix path for backward_weight: Pipeline::Direct with WarpTile<16, 8, 16>
// (NVIDIA sm_80+, fp16 / bf16, C = K = Cg per group with Cg = 1, 2, 4 or 8, filters of up to
// kDirectMmaMaxTaps taps in at most kDirectMmaBwdFilterRows filter rows whose staged columns fit;
// DepthwiseKernel::is_supported refuses the rest with the reason).
//
// Per 8-channel chunk (8 / Cg whole groups) the weight gradient is a GEMM over the output pixels:
// dW[t, c][k] = sum over pixels p of x(p at tap t)[c] * dy(p)[k], rows (tap, input channel c of
// the chunk), columns output channel k of the chunk. One m16n8k16 covers two taps (rows 0-7 tap
// 2i, 8-15 tap 2i + 1) and 16 pixels; both operands come from pixel-major shared memory through
// ldmatrix.trans. The 8 x 8 product of a tap pairs every input with every output channel of the
// chunk; only the pairs of one group are stored (Cg = 8: all, depthwise: the diagonal), so
// smaller groups spend more of the (idle) tensor core, none of the memory traffic.
//
// A unit of work is one row segment: P consecutive output pixels of an output row (n, d, h).
// Per unit the block stages, 16-byte cp.async with zeros outside the tensors, the source columns
// of every filter row ((P - 1) * s + (X - 1) * dil + 1 columns each) and the P output-gradient
// pixels, into a ring of kStages units in dynamic shared memory (up to kDirectMmaBwdMaxSmem: the
// copies of one unit take a global-memory latency and its math is short, so units in flight
// are what hides it). A block reduces its slice of consecutive units for Ct
// channels; warp w owns the chunks w * GW .. + GW - 1 over all of the slice's pixels, so no
// reduction crosses warps. The result leaves as in the FMA path: one slice -> dw directly,
// Stage::One -> fp32 atomics into a zeroed workspace, Stage::Two -> the slice's partials.
#pragma once

#include "ckgen/portability.hpp"

#include <algorithm>
#include <cstdint>

#include "ckgen/async_copy.hpp"
#include "ckgen/config.hpp"
#include "ckgen/direct_common.hpp"
#include "ckgen/direct_mma.hpp"
#include "ckgen/mma_nvidia.hpp"
#include "ckgen/vocab.hpp"

namespace ckgen {

inline constexpr int kDirectMmaBwdFilterRows = 3;  // filter rows (Z * Y) staged per unit
inline constexpr int kDirectMmaBwdMaxStages = 6;    // units in flight + the one multiplied
inline constexpr int kDirectMmaBwdMaxSmem = 96 * 1024;  // dynamic shared memory per block

template <class Cfg>
struct DirectMmaBwdTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr int P = Cfg::Tile::kM;   // output pixels of a unit (one row segment)
  static constexpr int Gt = Cfg::Tile::kN;  // channels of a block
  static constexpr int Cg = Cfg::Tile::kK;  // channels per group
  static constexpr int W = Cfg::Waves::kM;  // warps
  static constexpr int kThreads = W * 32;
  static constexpr int kChunks = Gt / 8;  // 16-byte channel chunks per pixel
  static constexpr int GW = kChunks / W;  // chunks per warp
  static constexpr int kTapTiles = (kDirectMmaMaxTaps + 1) / 2;  // m16 tiles: two taps each
  static constexpr int kRows = kDirectMmaBwdFilterRows;
  static constexpr int kCols = P + kDirectMmaColumnSlack;  // staged source columns per filter row
  static constexpr int kPixelBytes = Gt * int(sizeof(Raw));  // one staged column / pixel
  static constexpr int kYOffset = kRows * kCols * kPixelBytes;  // the gradient pixels in a stage
  static constexpr int kStageBytes = (kRows * kCols + P) * kPixelBytes;
  static constexpr int kStages = std::min(kDirectMmaBwdMaxStages, kDirectMmaBwdMaxSmem / kStageBytes);
  static constexpr int kSmemBytes = kStages * kStageBytes;
  // Accumulators per lane: GW chunks x kTapTiles x 4. One chunk (20) fits 64 registers, so
  // 1024 threads per SM; more take 128 (512 threads).
  static constexpr int kAcc = GW * kTapTiles * 4;
  static constexpr int kMinBlocks = std::max(1, (kAcc <= 20 ? 1024 : 512) / kThreads);
  static_assert(Cfg::kVecC == 8 && (Cg == 1 || Cg == 2 || Cg == 4 || Cg == 8),
                "ckgen: the direct matrix path for backward_weight takes vector 8 and Cg in 1/2/4/8");
  static_assert(Gt % 64 == 0 && P % 16 == 0 && kChunks % W == 0,
                "ckgen: direct matrix backward_weight needs Ct % 64 == 0, P % 16 == 0 and warps "
                "that split the Ct / 8 channel chunks evenly");
  static_assert(kStages >= 2, "ckgen: direct matrix backward_weight needs two staged units within 96 KB");
};

namespace direct {

template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void bwd_weight_mma(const DirectArgs& a) {
#if defined(CKGEN_NVIDIA)
  using Tr = DirectMmaBwdTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Cfg::kDataType;
  constexpr int P = Tr::P, Gt = Tr::Gt, GW = Tr::GW, S = Tr::kStages;
  constexpr int T2 = Tr::kTapTiles, Cg = Tr::Cg, kChunks = Tr::kChunks;
  // Stage b: [R][kCols] staged columns, then [P] gradient pixels, Gt channels each (byte
  // offsets below: the swizzle of column c depends on c % 8 only, so a lane's offsets are
  // computed once and move by whole 8-column steps).
  extern __shared__ __attribute__((aligned(128))) unsigned char direct_bw_smem[];
  constexpr int kPB = Tr::kPixelBytes;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int ch0 = int(blockIdx.y) * Gt;
  const int taps = a.taps, fy = a.fil[1], fx = a.fil[2];
  const Raw* __restrict__ x = static_cast<const Raw*>(a.x);
  const Raw* __restrict__ dy = static_cast<const Raw*>(a.y);
  const int wo = a.out_[2];
  const int segs = (wo + P - 1) / P;
  const int units = a.pixels / wo * segs;
  const int u0 = int(blockIdx.x) * a.slice_pixels;  // the matrix path slices row segments
  const int u1 = units - u0 < a.slice_pixels ? units : u0 + a.slice_pixels;
  const int cols = int(mma_staged_cols(true, P, a.s[2], a.dil[2], fx));

  // The copies: thread tid moves chunk g of columns cq, cq + kColStep, ... of every staged row
  // and of the gradient pixels (kColStep is a multiple of 8: one swizzled chunk offset sw).
  const int g = tid % kChunks, cq = tid / kChunks;
  const bool chunk_ok = ch0 + g * 8 < a.chans;
  constexpr int kColStep = Tr::kThreads / kChunks;
  static_assert(kColStep % 8 == 0, "ckgen: the copies keep one swizzle per thread");
  constexpr int kColIters = (Tr::kCols + kColStep - 1) / kColStep, kPixIters = (P + kColStep - 1) / kColStep;
  const int sw = mma_chunk(g, cq) * 16;
  const int64_t col_stride = int64_t(kColStep) * a.chans;  // source elements between a thread's columns
  unsigned char* const my_smem = direct_bw_smem + cq * kPB + sw;
  const int fz = a.fil[0];
  auto stage = [&](int u, int buf) {
    const int row = segs == 1 ? u : u / segs, w0 = (u - row * segs) * P;
    int q, n, d, h;
    a.fd_pix[1].divmod(row, q, h);
    a.fd_pix[0].divmod(q, n, d);
    const int z0 = d * a.s[0] - a.pl[0], y0 = h * a.s[1] - a.pl[1], c0 = w0 * a.s[2] - a.pl[2] + cq;
    const Raw* const img = x + (int64_t(n) * a.in_spatial * a.chans + int64_t(c0) * a.chans + ch0 + g * 8);
    unsigned char* const dst0 = my_smem + buf * Tr::kStageBytes;
    int r = 0;
    for (int kz = 0; kz < fz; ++kz) {
      const int iz = z0 + kz * a.dil[0];
      for (int ky = 0; ky < fy; ++ky, ++r) {
        const int iy = y0 + ky * a.dil[1];
        const bool row_ok = chunk_ok && unsigned(iz) < unsigned(a.in_[0]) && unsigned(iy) < unsigned(a.in_[1]);
        const Raw* src = img + (int64_t(iz) * a.in_[1] + iy) * a.in_[2] * a.chans;
        unsigned char* dst = dst0 + r * Tr::kCols * kPB;
#pragma unroll
        for (int k = 0; k < kColIters; ++k) {
          if (cq + k * kColStep < cols) {
            const bool ok = row_ok && unsigned(c0 + k * kColStep) < unsigned(a.in_[2]);
            async_copy_zfill<16, true>(dst, ok ? src : x, ok);
          }
          src += col_stride;
          dst += kColStep * kPB;
        }
      }
    }
    const Raw* ysrc = dy + (int64_t(row) * wo + w0 + cq) * a.chans + ch0 + g * 8;
    unsigned char* ydst = dst0 + Tr::kYOffset;
#pragma unroll
    for (int k = 0; k < kPixIters; ++k) {
      if (cq + k * kColStep < P) {
        const bool ok = chunk_ok && w0 + cq + k * kColStep < wo;  // past the row: zero gradient
        async_copy_zfill<16, true>(ydst, ok ? ysrc : dy, ok);
      }
      ysrc += col_stride;
      ydst += kColStep * kPB;
    }
  };

  // This lane's ldmatrix rows. A (x4.trans): matrix j = lane / 8 holds tap 2i + (j & 1) at
  // pixels (j / 2) * 8 + lane % 8 of the k16 step; taps past the last read a valid column (their
  // rows are never stored). B (x2.trans): pixels lane % 16 of the step.
  // k16 step ks moves A by 16 * s columns and B by 16 pixels: whole 8-column steps.
  const int j = lane >> 3;
  const int cw = warp * GW;  // this warp's first chunk
  uint32_t a_off[GW][T2], b_off[GW];
#pragma unroll
  for (int i = 0; i < T2; ++i) {
    const int t = 2 * i + (j & 1) < taps ? 2 * i + (j & 1) : taps - 1;
    const int r = t / fx, kx = t - r * fx;
    const int col = ((j >> 1) * 8 + (lane & 7)) * a.s[2] + kx * a.dil[2];
#pragma unroll
    for (int gi = 0; gi < GW; ++gi)
      a_off[gi][i] = uint32_t((r * Tr::kCols + col) * kPB + mma_chunk(cw + gi, col) * 16);
  }
#pragma unroll
  for (int gi = 0; gi < GW; ++gi)
    b_off[gi] = uint32_t(Tr::kYOffset + (lane & 15) * kPB + mma_chunk(cw + gi, lane & 15) * 16);
  const uint32_t a_step = uint32_t(16 * a.s[2] * kPB), smem0 = nvmma::smem_addr(direct_bw_smem);

  float acc[GW][T2][4];
#pragma unroll
  for (int gi = 0; gi < GW; ++gi)
#pragma unroll
    for (int i = 0; i < T2; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[gi][i][e] = 0.f;

  // The ring: S - 1 units in flight ahead of the one multiplied (one commit group per unit,
  // empty past the slice's last, so wait<S - 2> always means "unit u has landed").
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (u0 + s < u1) stage(u0 + s, s);
    async_commit();
  }
  for (int u = u0; u < u1; ++u) {
    const int buf = (u - u0) % S;
    async_wait<S - 2>();
    __syncthreads();  // unit u visible to all; every warp is done with unit u - 1
    if (u + S - 1 < u1) stage(u + S - 1, (u + S - 1 - u0) % S);
    async_commit();
    const uint32_t base = smem0 + uint32_t(buf * Tr::kStageBytes);
#pragma unroll
    for (int ks = 0; ks < P / 16; ++ks) {
#pragma unroll
      for (int gi = 0; gi < GW; ++gi) {
        uint32_t b[2];
        nvmma::ldsm_x2_t(b, base + b_off[gi] + uint32_t(ks * 16 * kPB));
#pragma unroll
        for (int i = 0; i < T2; ++i) {
          if (2 * i < taps) {
            uint32_t af[4];
            nvmma::ldsm_x4_t(af, base + a_off[gi][i] + ks * a_step);
            nvmma::mma_m16n8k16<D>(acc[gi][i], af, b[0], b[1]);
          }
        }
      }
    }
  }

  // Lane l holds rows l / 4 (tap 2i) and l / 4 + 8 (tap 2i + 1): input channel c = l / 4 of the
  // chunk, output channels k = 2 (l % 4) + 0, 1. Kept where c and k share a group.
  const int c = lane >> 2;
#pragma unroll
  for (int gi = 0; gi < GW; ++gi) {
    const int cb = ch0 + (cw + gi) * 8;
    if (cb >= a.chans) continue;
#pragma unroll
    for (int i = 0; i < T2; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = 2 * i + (e >> 1), k = 2 * (lane & 3) + (e & 1);
        if (t >= taps || c / Cg != k / Cg) continue;
        const int64_t off = (int64_t(cb + k) * taps + t) * Cg + c % Cg;
        const float v = acc[gi][i][e];
        if (a.mode == OutMode::Direct)
          static_cast<Raw*>(a.dst)[off] = float_to_raw<D>(v);
        else if (a.mode == OutMode::AtomicF32)
          atomic_add_f32(a.ws + off, v);
        else
          a.ws[int64_t(blockIdx.x) * a.ws_stride + off] = v;
      }
  }
#else
  static_assert(sizeof(Cfg) == 0, "ckgen: the direct matrix path is NVIDIA mma.sync");
#endif
}

}  // namespace direct
}  // namespace ckgen
