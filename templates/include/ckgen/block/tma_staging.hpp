// Copies wavelet_tma stages in its workspace when a tensor's rows are not the 16-byte multiples
// the copy engine needs (one group only):
//   pad_channels: rows of k 16-bit elements re-laid as rows of kp (zeros past k; kp < k crops):
//     backward_data's and backward_weight's dy with K padded, forward's w padded to the im2col
//     width, and the crop of backward_weight's padded dw.
//   im2col: x as a dense matrix, row (n, oh, ow), column j = tap * C + c (zeros past taps * C),
//     cp columns (cp % 8 == 0): forward and backward_weight with C % 8 != 0 run as 1x1 GEMMs
//     over it. A block takes T output pixels of one output line (n, oh): it stages the Y input rows they read (the span of input pixels under the T windows,
//     C channels each) in shared memory with coalesced loads, then writes the T x cp tile as
//     16-byte vectors.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/fast_div.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/core/problem.hpp"

namespace ckgen {

// The 2D convolution geometry a device kernel walks (1D: height 1): input channels, output
// height / width, strides, left pads, dilations, filter width.
struct ConvGeometry2D {
  int C, P, Q, s_h, s_w, pl_h, pl_w, d_h, d_w, X;
};
inline ConvGeometry2D conv_geometry_2d(const ConvProblem& p) {
  return {int(p.C),         int(p.out[1]),    int(p.out[2]),      int(p.stride[1]),   int(p.stride[2]),
          int(p.pad_l[1]),  int(p.pad_l[2]),  int(p.dilation[1]), int(p.dilation[2]), int(p.filter[2])};
}

#if defined(CKGEN_NVIDIA)

template <class Raw>
CKGEN_GLOBAL void pad_channels_kernel(const Raw* __restrict__ src, Raw* __restrict__ dst, int64_t rows,
                                      int k, int kp) {
  chain_wait();
  chain_release();
  const int64_t n = rows * kp, step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t r = i / kp;
    const int c = int(i - r * kp);
    dst[i] = c < k ? src[r * k + c] : Raw(0);
  }
}
// kp % 8 == 0 (the padding copies): a thread writes one 16-byte vector of a row (the 8 source
// elements it covers are read as they lie; a warp's reads are one contiguous run of src), where
// the element-wise kernel above pays a 64-bit division and a 2-byte store per element.
template <class Raw>
CKGEN_GLOBAL void pad_channels_vec_kernel(const Raw* __restrict__ src, Raw* __restrict__ dst, int64_t vecs, int k,
                                          int row_vecs, float4* __restrict__ clear, int64_t clear_vecs) {
  chain_wait();
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vecs; i += step) {
    const int64_t r = i / row_vecs;
    const int c0 = int(i - r * row_vecs) * 8;
    const Raw* s = src + r * k + c0;
    union {
      uint4 u;
      Raw e[8];
    } v;
#pragma unroll
    for (int j = 0; j < 8; ++j) v.e[j] = c0 + j < k ? s[j] : Raw(0);
    reinterpret_cast<uint4*>(dst)[i] = v.u;
  }
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < clear_vecs; i += step)
    clear[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}
// dst[r][c] = c < k ? src[r][c] : 0 for rows x kp elements (src rows k elements apart).
// after_kernel: chained to the stream's previous kernel (core/chain.hpp). clear (16-byte aligned, its
// allocation rounded up to 16 bytes): the clear_n fp32 split sums zeroed in the same launch (the
// padding copies; kp % 8 == 0), one launch fewer in the call's chain.
template <class Raw>
gpuError_t pad_channels(const Raw* src, Raw* dst, int64_t rows, int64_t k, int64_t kp, gpuStream_t stream,
                        bool after_kernel = false, float* clear = nullptr, int64_t clear_n = 0) {
  constexpr int kThreads = 256;
  const int64_t clear_vecs = clear != nullptr ? (clear_n + 3) / 4 : 0;
  if (kp % 8 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0 && reinterpret_cast<uintptr_t>(clear) % 16 == 0) {
    const int64_t vecs = rows * (kp / 8);
    return launch_chained(pad_channels_vec_kernel<Raw>,
                          dim3(unsigned(detail::grid_stride_blocks(std::max(vecs, clear_vecs), kThreads, 8))),
                          dim3(kThreads), 0, stream, after_kernel, nullptr, src, dst, vecs, int(k), int(kp / 8),
                          reinterpret_cast<float4*>(clear), clear_vecs);
  }
  if (clear != nullptr) return cudaErrorInvalidValue;
  return launch_chained(pad_channels_kernel<Raw>, dim3(unsigned(detail::grid_stride_blocks(rows * kp, kThreads, 8))),
                        dim3(kThreads), 0, stream, after_kernel, nullptr, src, dst, rows, int(k), int(kp));
}

struct Im2colArgs : ConvGeometry2D {
  int H, W, Y, red, cp;  // input height, width; filter height; taps * C; columns written
  int T, rs;             // output pixels per block; staged row stride (elements, a multiple of 8)
  bool vec_loads;        // W * C % 8 == 0: stage x through 16-byte loads
  bool run_cols;         // d_w == 1 and X * C >= 8: a filter row's columns are one staged run
  FastDiv tiles_q, p, vecs, c, x;  // by ceil(Q / T), P, cp / 8, C, X
  FastDiv rows_e, rows_v, xc;      // by rs, rs / 8, X * C
};
// 256 threads per block, 32 registers: 8 blocks per SM. (Loading up to 16 staged elements per
// thread before storing any takes 40 registers, 6 blocks per SM, and is slower.)
inline constexpr int kIm2colThreads = 256;

template <class Raw>
CKGEN_GLOBAL void im2col_kernel(const Raw* __restrict__ x, Raw* __restrict__ col, const Im2colArgs a) {
  chain_wait();
  chain_release();
  extern __shared__ __attribute__((aligned(16))) unsigned char im2col_smem[];
  Raw* s = reinterpret_cast<Raw*>(im2col_smem);
  int nh, qt, n, oh;
  a.tiles_q.divmod(int(blockIdx.x), nh, qt);  // nh = n * P + oh
  a.p.divmod(nh, n, oh);
  const int ow0 = qt * a.T, h0 = oh * a.s_h - a.pl_h;
  // Staged row fy holds x's row h0 + fy * d_h from element e0a on (a multiple of 8 at or below
  // e0, the first element under the block's windows): staged element r is x's element e0a + r
  // of that row, zero outside x. Column j of pixel t then reads staged element sh + ... below.
  const int e0 = (ow0 * a.s_w - a.pl_w) * a.C, e0a = e0 & ~7, sh = e0 - e0a, wc = a.W * a.C;
  const Raw* xn = x + int64_t(n) * a.H * wc;
  if (a.vec_loads) {  // rows start at multiples of 8 elements: every vector is inside x or outside
    const int nv = a.rows_v.value();
    for (int k = threadIdx.x; k < a.Y * nv; k += kIm2colThreads) {
      int fy, v;
      a.rows_v.divmod(k, fy, v);
      const int ih = h0 + fy * a.d_h, e = e0a + v * 8;
      uint4 val = make_uint4(0, 0, 0, 0);
      if (unsigned(ih) < unsigned(a.H) && e >= 0 && e < wc)
        val = *reinterpret_cast<const uint4*>(xn + int64_t(ih) * wc + e);
      reinterpret_cast<uint4*>(s)[k] = val;
    }
  } else {
    for (int k = threadIdx.x; k < a.Y * a.rs; k += kIm2colThreads) {
      int fy, r;
      a.rows_e.divmod(k, fy, r);
      const int ih = h0 + fy * a.d_h, e = e0a + r;
      s[k] = unsigned(ih) < unsigned(a.H) && unsigned(e) < unsigned(wc) ? xn[int64_t(ih) * wc + e] : Raw(0);
    }
  }
  __syncthreads();
  const int rows = min(a.T, a.Q - ow0), vecs = a.vecs.value();
  uint4* out = reinterpret_cast<uint4*>(col) + (int64_t(nh) * a.Q + ow0) * vecs;
  for (int i = threadIdx.x; i < rows * vecs; i += kIm2colThreads) {
    int t, v;
    a.vecs.divmod(i, t, v);
    int j = v * 8;
    uint4 pack;
    Raw* e8 = reinterpret_cast<Raw*>(&pack);
    if (a.run_cols) {  // columns [fy * X * C, (fy + 1) * X * C) are staged row fy from t's window on
      int fy, rem;
      a.xc.divmod(j, fy, rem);
      const Raw* src = s + fy * a.rs + sh + t * a.s_w * a.C + rem;
      const int left = a.xc.value() - rem, next = a.rs - a.xc.value();  // a vector crosses one row at most
#pragma unroll
      for (int e = 0; e < 8; ++e) e8[e] = j + e < a.red ? src[e < left ? e : e + next] : Raw(0);
    } else {
      int tap, c, fy, fx;
      a.c.divmod(j, tap, c);
      a.x.divmod(tap, fy, fx);
      int at = fy * a.rs + sh + (t * a.s_w + fx * a.d_w) * a.C + c;  // staged element of column j
      const int fx_step = a.d_w * a.C;
#pragma unroll
      for (int e = 0; e < 8; ++e, ++j) {
        e8[e] = j < a.red ? s[at] : Raw(0);
        ++at;
        if (++c == a.C) {  // next tap: back over C channels, on by one dilated filter column
          c = 0;
          at += fx_step - a.C;
          if (++fx == a.X) {  // next filter row: the next staged row, back to filter column 0
            fx = 0;
            at += a.rs - a.X * fx_step;
          }
        }
      }
    }
    out[int64_t(t) * vecs + v] = pack;
  }
}

// How a problem's im2col copy is tiled: output pixels per block, the staged row stride and
// shared bytes (0, 0, 0: the staged rows of even one window exceed kMaxBytes).
struct Im2colTiling {
  int T = 0, rs = 0;
  std::size_t smem = 0;
};
inline Im2colTiling im2col_tiling(const ConvProblem& p) {
  constexpr std::size_t kMaxBytes = 48 * 1024;
  Im2colTiling t;
  for (int T = 64; T >= 1; T /= 2) {
    const int64_t span = ((T - 1) * p.stride[2] + (p.filter[2] - 1) * p.dilation[2] + 1) * p.C;
    const int64_t rs = (span + 7 + 7) / 8 * 8;  // up to 7 elements ahead of the first (alignment)
    const std::size_t bytes = std::size_t(p.filter[1] * rs) * 2;
    if (bytes <= kMaxBytes) {
      t.T = T;
      t.rs = int(rs);
      t.smem = bytes;
      return t;
    }
  }
  return t;
}

// x (NHWC, one group, 16-bit elements) -> col (N*P*Q rows of cp); cp % 8 == 0, cp >= taps * C.
template <class Raw>
gpuError_t im2col(const Raw* x, Raw* col, const ConvProblem& p, int64_t cp, gpuStream_t stream,
                  bool after_kernel = false) {
  const Im2colTiling t = im2col_tiling(p);
  if (t.T == 0) return cudaErrorInvalidValue;
  Im2colArgs a{};
  static_cast<ConvGeometry2D&>(a) = conv_geometry_2d(p);
  a.H = int(p.in[1]);
  a.W = int(p.in[2]);
  a.Y = int(p.filter[1]);
  a.red = int(p.filter_spatial() * p.C);
  a.cp = int(cp);
  a.T = t.T;
  a.rs = t.rs;
  a.vec_loads = (p.in[2] * p.C) % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  a.run_cols = p.dilation[2] == 1 && p.filter[2] * p.C >= 8;
  a.rows_e.init(t.rs);
  a.rows_v.init(t.rs / 8);
  a.xc.init(p.filter[2] * p.C);
  a.tiles_q.init(detail::ceil_div(p.out[2], int64_t(t.T)));
  a.p.init(p.out[1]);
  a.vecs.init(cp / 8);
  a.c.init(p.C);
  a.x.init(p.filter[2]);
  const int64_t blocks = p.N * p.out[1] * a.tiles_q.value();
  return launch_chained(im2col_kernel<Raw>, dim3(unsigned(blocks)), dim3(kIm2colThreads), std::size_t(t.smem), stream,
                        after_kernel, nullptr, x, col, a);
}

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
