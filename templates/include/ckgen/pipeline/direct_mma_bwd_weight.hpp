// The direct kernel's matrix path for backward_weight: Pipeline::Direct with WarpTile<16, 8, 16>
// (NVIDIA sm_80+, fp16 / bf16, C = K = Cg per group, Cg in kDirectMmaBwdGroupChannels, filters of up to
// kDirectMmaMaxTaps taps in at most kDirectMmaBwdFilterRows filter rows whose staged columns fit;
// DepthwiseKernel::is_supported refuses the rest with the reason).
//
// Per pair of 8-channel chunks of one group (Cg <= 8: a chunk with itself, 8 / Cg whole groups;
// Cg = 16 / 32: every chunk of the group with every chunk of it, R = Cg / 8 partners each) the
// weight gradient is a GEMM over the output pixels: dW[t, c][k] = sum over pixels p of
// x(p at tap t)[c] * dy(p)[k], rows (tap, input channel c of the A chunk), columns output channel
// k of the B chunk. One m16n8k16 covers two taps (rows 0-7 tap 2i, 8-15 tap 2i + 1) and 16
// pixels; both operands come from pixel-major shared memory through ldmatrix.trans, one A
// fragment feeding the R products of its chunk. The 8 x 8 product of a tap pairs every input
// with every output channel of the chunks; only the pairs of one group are stored (Cg >= 8: all,
// depthwise: the diagonal), so smaller groups spend more of the (idle) tensor core, none of the
// memory traffic.
//
// A unit of work is one row segment: P consecutive output pixels of an output row (n, d, h);
// units run segment-major, so consecutive units are consecutive output rows. Per unit the block
// stages, 16-byte cp.async with zeros outside the tensors, the P output-gradient pixels and the
// source rows it reads that are not staged yet ((P - 1) * s + (X - 1) * dil + 1 columns each; at
// H stride 1 and a 3-row filter one new row per unit instead of three, see DirectRowCursor),
// kStages units ahead, in dynamic shared memory (up to kDirectMmaBwdMaxSmem: the copies of one
// unit take a global-memory latency and its math is short, so units in flight are what hides
// it). A block reduces its slice of consecutive units for Ct
// channels; warp w owns the chunks w * GW .. + GW - 1 over all of the slice's pixels, so no
// reduction crosses warps. The result leaves as in the FMA path: one slice -> dw directly,
// Stage::One -> fp32 atomics into a zeroed workspace, Stage::Two -> the slice's partials.
#pragma once

#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <cstdint>

#include "ckgen/core/async_copy.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/limits.hpp"
#include "ckgen/pipeline/direct_common.hpp"
#include "ckgen/pipeline/direct_mma.hpp"
#include "ckgen/warp/mma_nvidia.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Staged columns per row, of which a unit reads (M - 1) * s + (X - 1) * dil + 1: the forward
// matrix path's direct_mma_cols (schedule/direct_plan.hpp): M + 16, and M + 24 for 16-pixel
// units (a 3-wide filter at W stride 2 reads 33 columns, e.g. the 28x28 depthwise stride-2 layer;
// larger units keep M + 16 so that 64-pixel ones hold four buffers).

// The ring of staged source rows beside `stages` gradient buffers within kDirectMmaBwdMaxSmem.
CKGEN_HOST_DEVICE constexpr int direct_bwd_ring_rows(int stages, int row_bytes, int pixel_bytes) {
  return (kDirectMmaBwdMaxSmem - stages * pixel_bytes) / row_bytes;
}
// The most gradient buffers S whose ring still holds S - 1 units ahead in the reuse mode (each
// new unit one row, one of them a fresh unit of kRows rows: S + 2 kRows - 2 rows), at least 2.
CKGEN_HOST_DEVICE constexpr int direct_bwd_stages(int row_bytes, int unit_pixel_bytes) {
  int s = kDirectMmaBwdMaxStages;
  while (s > 2 && direct_bwd_ring_rows(s, row_bytes, unit_pixel_bytes) < s + 2 * kDirectMmaBwdFilterRows - 2)
    --s;
  return s;
}

template <class Cfg>
struct DirectMmaBwdTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr int P = Cfg::Tile::kM;   // output pixels of a unit (one row segment)
  static constexpr int Gt = Cfg::Tile::kN;  // channels of a block
  static constexpr int Cg = Cfg::Tile::kK;  // channels per group
  static constexpr int W = Cfg::Waves::kM;  // warps
  static constexpr int kThreads = W * 32;
  static constexpr int kChunks = Gt / 8;                         // 16-byte channel chunks per pixel
  static constexpr int R = Cg > 8 ? Cg / 8 : 1;                  // chunks of a group: B partners of an A chunk
  static constexpr int GW = kChunks / W;                         // chunks per warp
  static constexpr int kTapTiles = (kDirectMmaMaxTaps + 1) / 2;  // m16 tiles: two taps each
  static constexpr int kRows = kDirectMmaBwdFilterRows;
  static constexpr int kCols = direct_mma_cols(P);           // staged source columns per row
  static constexpr int kPixelBytes = Gt * int(sizeof(Raw));  // one staged column / pixel
  // kStages gradient buffers of P pixels and a ring of kRing staged source rows.
  static constexpr int kRowBytes = kCols * kPixelBytes;
  static constexpr int kStages = direct_bwd_stages(kRowBytes, P* kPixelBytes);
  static constexpr int kRing = direct_bwd_ring_rows(kStages, kRowBytes, P* kPixelBytes);
  static constexpr int kRingBytes = kRing * kRowBytes;
  static constexpr int kSmemBytes = kRingBytes + kStages * P * kPixelBytes;
  // Two blocks per SM (the shared memory allows no more): up to 128 registers for 256 threads,
  // so the lane's ldmatrix offsets stay in registers instead of being recomputed per load.
  static constexpr int kAcc = GW * R * kTapTiles * 4;  // accumulators per lane
  // Groups of 32 channels hold four partners' accumulators: one block's worth of registers.
  static constexpr int kMinBlocks = kAcc <= 48 ? 2 : 1;
  static_assert(Cfg::kVecC == 8 && one_of(kDirectMmaBwdGroupChannels, Cg) && Gt % Cg == 0,
                "ckgen: the direct matrix path for backward_weight takes vector 8, Cg in "
                "kDirectMmaBwdGroupChannels and blocks of whole groups");
  static_assert(Gt % 64 == 0 && P % 16 == 0 && kChunks % W == 0,
                "ckgen: direct matrix backward_weight needs Ct % 64 == 0, P % 16 == 0 and warps "
                "that split the Ct / 8 channel chunks evenly");
  static_assert(kRing >= 2 * kRows,
                "ckgen: direct matrix backward_weight needs a ring of two units' rows within 112 KB");
};

namespace direct {

// Which staged source rows a unit reads, as ring positions (the ring holds kRing rows). Units
// are walked in order; in the reuse mode (Z = 1, H dilation 1, H stride <= Y) a unit that
// continues the previous one (same segment, next output row of the same image) reads its rows
// iy0 .. iy0 + Y - 1 at positions first .. first + Y - 1 where the previous unit's first was
// first - s: only its last s rows are new. Otherwise its Z * Y rows are all new, at the next
// free positions. The kernel stages as many units ahead as keep the rows of every unit in
// flight within kRing consecutive positions, so no copy overwrites a row still to be read.
struct DirectRowCursor {
  int prev_row = -2, prev_seg = -1, first = 0, next = 0;
  // Moves to unit (row, seg); returns its first row's position, `fresh` the first new row index.
  template <int kRing>
  CKGEN_DEVICE CKGEN_FORCEINLINE int advance(bool reuse, int row, int seg, int h, int sy, int rows,
                                             int& fresh) {
    const bool cont = reuse && seg == prev_seg && row == prev_row + 1 && h != 0;
    int f = cont ? first + sy : next;
    if (f >= kRing) f -= kRing;
    fresh = cont ? rows - sy : 0;
    int nx = f + rows;
    if (nx >= kRing) nx -= kRing;
    first = f;
    next = nx;
    prev_row = row;
    prev_seg = seg;
    return f;
  }
};

// Stages unit u into gradient buffer buf and the ring rows it does not share with the previous
// unit (cursor); records the ring position of its first row in unit_first[buf].
template <class Cfg, class Locate>
CKGEN_DEVICE CKGEN_FORCEINLINE void bwd_mma_stage(
    const DirectArgs& a, const int u, const int buf, Locate& locate, DirectRowCursor& cursor,
    const bool& reuse, const int& unit_rows, const int& tid, int* unit_first, const int& fz, const int& fy,
    const int& wo, const int& cq, const int& g, const int& ch0, const bool& chunk_ok, const int& cols,
    const int64_t& col_stride, const uint32_t& my_smem,
    const typename DirectMmaBwdTraits<Cfg>::Raw* __restrict__ const& x,
    const typename DirectMmaBwdTraits<Cfg>::Raw* __restrict__ const& dy) {
  using Tr = DirectMmaBwdTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr int P = Tr::P, kChunks = Tr::kChunks, kRing = Tr::kRing;
  constexpr int kPB = Tr::kPixelBytes, kRowBytes = Tr::kCols * kPB;
  constexpr int kColStep = Tr::kThreads / kChunks;
  constexpr int kColIters = (Tr::kCols + kColStep - 1) / kColStep, kPixIters = (P + kColStep - 1) / kColStep;
  int row, seg, n, d, h, fresh;
  locate(u, row, seg, n, d, h);
  const int first = cursor.advance<kRing>(reuse, row, seg, h, a.s[1], unit_rows, fresh);
  if (tid == 0) unit_first[buf] = first;
  const int w0 = seg * P;
  const int z0 = d * a.s[0] - a.pl[0], y0 = h * a.s[1] - a.pl[1], c0 = w0 * a.s[2] - a.pl[2] + cq;
  const Raw* const img = x + (int64_t(n) * a.in_spatial * a.chans + int64_t(c0) * a.chans + ch0 + g * 8);
  // Row j of the unit: (kz, ky) = (j / Y, j % Y) (reuse: Z = 1, ky = j), ring position first + j.
  for (int j = fresh; j < unit_rows; ++j) {
    const int kz = fz == 1 ? 0 : j / fy, ky = j - kz * fy;
    const int iz = z0 + kz * a.dil[0], iy = y0 + ky * a.dil[1];
    const bool row_ok = chunk_ok && unsigned(iz) < unsigned(a.in_[0]) && unsigned(iy) < unsigned(a.in_[1]);
    const Raw* src = img + (int64_t(iz) * a.in_[1] + iy) * a.in_[2] * a.chans;
    const int pos = first + j < kRing ? first + j : first + j - kRing;
    uint32_t dst = my_smem + uint32_t(pos * kRowBytes);
#pragma unroll
    for (int k = 0; k < kColIters; ++k) {
      if (cq + k * kColStep < cols) {
        const bool ok = row_ok && unsigned(c0 + k * kColStep) < unsigned(a.in_[2]);
        async_copy_zfill_shared<16, true>(dst, ok ? src : x, ok);
      }
      src += col_stride;
      dst += kColStep * kPB;
    }
  }
  const Raw* ysrc = dy + (int64_t(row) * wo + w0 + cq) * a.chans + ch0 + g * 8;
  uint32_t ydst = my_smem + uint32_t(Tr::kRingBytes + buf * P * kPB);
#pragma unroll
  for (int k = 0; k < kPixIters; ++k) {
    if (cq + k * kColStep < P) {
      const bool ok = chunk_ok && w0 + cq + k * kColStep < wo;  // past the row: zero gradient
      async_copy_zfill_shared<16, true>(ydst, ok ? ysrc : dy, ok);
    }
    ysrc += col_stride;
    ydst += kColStep * kPB;
  }
}

// The block's result: lane l holds rows l / 4 (tap 2i) and l / 4 + 8 (tap 2i + 1), input channel
// c = l / 4 of the A chunk, output channels k = 2 (l % 4) + 0, 1 of the B chunk (partner pj of the
// group's chunks); kept where c and k share a group.
template <class Cfg, class Acc>
CKGEN_DEVICE CKGEN_FORCEINLINE void bwd_mma_store(const DirectArgs& a, const int& lane, const int& ch0,
                                                  const int& cw, const int& taps, const Acc& acc) {
  using Tr = DirectMmaBwdTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Cfg::kDataType;
  constexpr int GW = Tr::GW, T2 = Tr::kTapTiles, Cg = Tr::Cg, R = Tr::R;
  const int c = lane >> 2;
#pragma unroll
  for (int gi = 0; gi < GW; ++gi) {
    const int chunk = cw + gi;
    if (ch0 + chunk * 8 >= a.chans) continue;
    const int cl = R > 1 ? (chunk % R) * 8 + c : c % Cg;  // input channel within its group
#pragma unroll
    for (int pj = 0; pj < R; ++pj) {
      const int kb = ch0 + (chunk / R * R + pj) * 8;  // the B chunk's first output channel
#pragma unroll
      for (int i = 0; i < T2; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int t = 2 * i + (e >> 1), k = 2 * (lane & 3) + (e & 1);
          if (t >= taps || (R == 1 && c / Cg != k / Cg)) continue;
          const int64_t off = (int64_t(kb + k) * taps + t) * Cg + cl;
          const float v = acc[gi][pj][i][e];
          if (a.mode == OutMode::Direct)
            static_cast<Raw*>(a.dst)[off] = float_to_raw<D>(v);
          else if (a.mode == OutMode::AtomicF32)
            atomic_add_f32(a.ws + off, v);
          else
            a.ws[int64_t(blockIdx.x) * a.ws_stride + off] = v;
        }
    }
  }
}

template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void bwd_weight_mma(const DirectArgs& a) {
#if defined(CKGEN_NVIDIA)
  using Tr = DirectMmaBwdTraits<Cfg>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = Cfg::kDataType;
  constexpr int P = Tr::P, GW = Tr::GW, S = Tr::kStages, R = Tr::R;
  constexpr int T2 = Tr::kTapTiles, kChunks = Tr::kChunks, kRing = Tr::kRing;
  // [kRing][kCols] staged source rows, then [S][P] gradient pixels, Gt channels each (byte
  // offsets below: the swizzle of column c depends on c % 8 only, so a lane's offsets are
  // computed once and move by whole 8-column steps).
  extern __shared__ __attribute__((aligned(128))) unsigned char direct_bw_smem[];
  // The ring position of each buffered unit's first row, written when it is staged, read
  // after the barrier that makes its copies visible (the math skips the cursor's bookkeeping).
  __shared__ int unit_first[S];
  constexpr int kPB = Tr::kPixelBytes, kRowBytes = Tr::kCols * kPB;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int ch0 = int(blockIdx.y) * Tr::Gt;
  const int taps = a.taps, fz = a.fil[0], fy = a.fil[1], fx = a.fil[2];
  const Raw* __restrict__ x = static_cast<const Raw*>(a.x);
  const Raw* __restrict__ dy = static_cast<const Raw*>(a.y);
  const int wo = a.out_[2];
  const int segs = (wo + P - 1) / P;
  const int rows_total = a.pixels / wo;             // output rows N * Do * Ho
  const int units = rows_total * segs;              // unit u: segment u / rows_total of row u % rows_total
  const int u0 = int(blockIdx.x) * a.slice_pixels;  // the matrix path slices units
  const int u1 = units - u0 < a.slice_pixels ? units : u0 + a.slice_pixels;
  const int cols = int(mma_staged_cols(true, P, a.s[2], a.dil[2], fx));
  const bool reuse = fz == 1 && a.dil[1] == 1 && a.s[1] <= fy;
  const int unit_rows = reuse ? fy : fz * fy;  // rows a fresh unit stages (at most kRows)
  // Units staged ahead of the one multiplied: the rows of those L + 1 units must fit the ring.
  // Every unit may start afresh: (L + 1) * rows <= kRing. Reuse mode with L <= Ho (at most one
  // fresh unit among L consecutive ones): (L - 1) * s + 2 * rows <= kRing.
  auto imin = [](int p, int q) { return p < q ? p : q; };
  const int ahead_fresh = imin(S - 1, kRing / unit_rows - 1);
  const int ahead_reuse = imin(imin(S - 1, (kRing - 2 * unit_rows) / a.s[1] + 1), a.out_[1]);
  const int ahead = reuse && ahead_reuse > ahead_fresh ? ahead_reuse : ahead_fresh;

  // The copies: thread tid moves chunk g of columns cq, cq + kColStep, ... of every staged row
  // and of the gradient pixels (kColStep is a multiple of 8: one swizzled chunk offset sw).
  const int g = tid % kChunks, cq = tid / kChunks;
  const bool chunk_ok = ch0 + g * 8 < a.chans;
  constexpr int kColStep = Tr::kThreads / kChunks;
  static_assert(kColStep % 8 == 0, "ckgen: the copies keep one swizzle per thread");
  const int sw = mma_chunk(g, cq) * 16;
  const int64_t col_stride = int64_t(kColStep) * a.chans;  // source elements between a thread's columns
  const uint32_t smem0 = nvmma::smem_addr(direct_bw_smem), my_smem = smem0 + uint32_t(cq * kPB + sw);
  // Unit u's output row (n, d, h) and segment.
  auto locate = [&](int u, int& row, int& seg, int& n, int& d, int& h) {
    seg = segs == 1 ? 0 : u / rows_total;
    row = u - seg * rows_total;
    int q;
    a.fd_pix[1].divmod(row, q, h);
    a.fd_pix[0].divmod(q, n, d);
  };
  DirectRowCursor cursor;
  auto stage = [&](int u, int buf) {
    bwd_mma_stage<Cfg>(a, u, buf, locate, cursor, reuse, unit_rows, tid, unit_first, fz, fy, wo, cq, g, ch0,
                       chunk_ok, cols, col_stride, my_smem, x, dy);
  };

  // This lane's ldmatrix rows. A (x4.trans): matrix j = lane / 8 holds tap 2i + (j & 1) at
  // pixels (j / 2) * 8 + lane % 8 of the k16 step, in the unit's row kz * Y + ky; taps past the
  // last read a valid column (their rows are never stored). B (x2.trans): pixels lane % 16 of
  // the step. k16 step ks moves A by 16 * s columns and B by 16 pixels: whole 8-column steps.
  const int j = lane >> 3;
  const int cw = warp * GW;  // this warp's first chunk
  uint32_t a_off[GW][T2], b_off[GW][R];
  int a_row[T2];
#pragma unroll
  for (int i = 0; i < T2; ++i) {
    const int t = 2 * i + (j & 1) < taps ? 2 * i + (j & 1) : taps - 1;
    const int r = t / fx, kx = t - r * fx;
    const int col = ((j >> 1) * 8 + (lane & 7)) * a.s[2] + kx * a.dil[2];
    a_row[i] = r;
#pragma unroll
    for (int gi = 0; gi < GW; ++gi) a_off[gi][i] = uint32_t(col * kPB + mma_chunk(cw + gi, col) * 16);
  }
#pragma unroll
  for (int gi = 0; gi < GW; ++gi)
#pragma unroll
    for (int pj = 0; pj < R; ++pj) {
      const int gj = (cw + gi) / R * R + pj;  // R == 1: the chunk itself
      b_off[gi][pj] = uint32_t(Tr::kRingBytes + (lane & 15) * kPB + mma_chunk(gj, lane & 15) * 16);
    }
  const uint32_t a_step = uint32_t(16 * a.s[2] * kPB);

  float acc[GW][R][T2][4] = {};

  // The pipeline: `ahead` units in flight beyond the one multiplied (one commit group per
  // unit, empty past the slice's last, so waiting for ahead - 1 pending groups always means
  // "unit u has landed").
  for (int s = 0; s < ahead; ++s) {
    if (u0 + s < u1) stage(u0 + s, s);
    async_commit();
  }
  for (int u = u0; u < u1; ++u) {
    const int buf = (u - u0) % S;
    async_wait_n<kDirectMmaBwdMaxStages - 2>(ahead - 1);
    __syncthreads();  // unit u visible to all; every warp is done with unit u - 1
    if (u + ahead < u1) stage(u + ahead, (u + ahead - u0) % S);
    async_commit();
    const int first = unit_first[buf];
    uint32_t a_base[T2];
#pragma unroll
    for (int i = 0; i < T2; ++i) {
      const int pos = first + a_row[i] < kRing ? first + a_row[i] : first + a_row[i] - kRing;
      a_base[i] = smem0 + uint32_t(pos * kRowBytes);
    }
    const uint32_t b_base = smem0 + uint32_t(buf * P * kPB);
#pragma unroll
    for (int ks = 0; ks < P / 16; ++ks) {
#pragma unroll
      for (int gi = 0; gi < GW; ++gi) {
        uint32_t b[R][2];
#pragma unroll
        for (int pj = 0; pj < R; ++pj) nvmma::ldsm_x2_t(b[pj], b_base + b_off[gi][pj] + uint32_t(ks * 16 * kPB));
#pragma unroll
        for (int i = 0; i < T2; ++i) {
          if (2 * i < taps) {
            uint32_t af[4];
            nvmma::ldsm_x4_t(af, a_base[i] + a_off[gi][i] + ks * a_step);
#pragma unroll
            for (int pj = 0; pj < R; ++pj) nvmma::mma_m16n8k16<D>(acc[gi][pj][i], af, b[pj][0], b[pj][1]);
          }
        }
      }
    }
  }

  bwd_mma_store<Cfg>(a, lane, ch0, cw, taps, acc);
#else
  static_assert(sizeof(Cfg) == 0, "ckgen: the direct matrix path is NVIDIA mma.sync");
#endif
}

}  // namespace direct
}  // namespace ckgen
