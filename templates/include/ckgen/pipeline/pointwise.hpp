// The pointwise kernel (Pipeline::Pointwise, NVIDIA sm_90a): forward and backward_data of a
// 1x1 convolution with unit strides and no padding, any ndim and group count. There the
// convolution is a GEMM over the N * spatial pixels, and a block's run of BM pixels is one
// contiguous run of memory in both its source (x, or dy) and its destination (y, or dx): a
// single bulk copy (cp.async.bulk, no tensor map) brings the source rows into shared memory and a
// single bulk copy stores the destination rows. The filter of every group (G * K * C elements)
// is copied into shared memory once per block. Built for the skinny layers (few channels on one
// side), which are bound by memory: a warp multiplies its rows with mma.sync against the filter
// and writes its 16-bit results into the block's output rows in shared memory.
//
// Per group g (R: the reduction, Nn: the output channels, per group):
//   forward        y[m, g, k] = sum_c x[m, g, c] * w[g, k, c]     R = C, Nn = K, B = w as [n][r]
//   backward_data  dx[m, g, c] = sum_k dy[m, g, k] * w[g, k, c]   R = K, Nn = C, B = w as [r][n]
//
// Persistent blocks walk the row tiles tile = blockIdx.x + i * gridDim.x. One thread issues the
// copies: the source ring has two stages (full[s] counts the bytes landed), the output two
// buffers, reused once the bulk store issued two tiles earlier has read its buffer
// (cp.async.bulk.wait_group.read 1). Per tile: wait for the stage, meet (the output buffer is
// free), multiply into it, fence to the async proxy, meet, store it, and refill the stage with the
// tile two ahead. Rows of a partial last tile are computed from stale shared memory and never
// stored (a row's outputs read only that row).
//
// The warp's rows: BM / warps, in m16 tiles (MT of them); per group the output channels in
// chunks of 64 columns (8 n8 tiles: MT x 32 fp32 accumulators), the reduction in k16 steps and
// a last k8 step where R % 16 == 8. Channel counts must be multiples of 8 (16-byte rows);
// columns past Nn in the last chunk read shared memory past the filter (the layout's slack,
// schedule/pointwise_plan.hpp) and are not stored. Tiles keep their global layout in shared
// memory (one copy each way): rows of 64 or 128 channels put an ldmatrix's 8 rows on the same
// banks, which the cost model prices (pointwise_bank_ways).
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/mbarrier.hpp"
#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/schedule/pointwise_plan.hpp"
#include "ckgen/warp/mma_nvidia.hpp"

namespace ckgen {

// What a pointwise launch reads: rows of the source (x / dy: G * R elements a row) and of the
// destination (y / dx: G * Nn).
struct PointwiseArgs {
  const void* src;
  const void* w;
  void* dst;
  int64_t rows;  // N * spatial
  int G, R, Nn;
  int tiles;  // ceil(rows / BM)
};

#if defined(CKGEN_HAS_TMA)
namespace pointwise {

// One warp's MT m16 tiles of rows against group g's filter, into the output rows (shared).
// kTransB: B is stored [r][n] (backward_data), else [n][r] (forward). Strides in elements.
template <DataType D, int MT, bool kTransB>
CKGEN_DEVICE CKGEN_FORCEINLINE void warp_rows(const uint16_t* a, int lda, const uint16_t* wg, int ldw,
                                              uint16_t* out, int ldo, int R, int Nn, int lane) {
  for (int n0 = 0; n0 < Nn; n0 += kPointwiseChunk) {
    float acc[MT][8][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const int pairs = min(4, (Nn - n0 + 15) / 16);  // n8 tile pairs of this chunk
    int k0 = 0;
    for (; k0 + 16 <= R; k0 += 16) {
      uint32_t af[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i)
        nvmma::ldsm_x4(af[i], nvmma::smem_addr(a + (i * 16 + lane % 16) * lda + k0 + lane / 16 * 8));
#pragma unroll
      for (int jp = 0; jp < 4; ++jp) {
        if (jp >= pairs) break;
        const int n = n0 + jp * 16;
        uint32_t b[4];  // b0 b1 of n tile 2 jp, b0 b1 of n tile 2 jp + 1
        const int q = lane / 8, l8 = lane % 8;
        if constexpr (kTransB)
          nvmma::ldsm_x4_t(b, nvmma::smem_addr(wg + (k0 + (q % 2) * 8 + l8) * ldw + n + (q / 2) * 8));
        else
          nvmma::ldsm_x4(b, nvmma::smem_addr(wg + (n + (q / 2) * 8 + l8) * ldw + k0 + (q % 2) * 8));
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          nvmma::mma_m16n8k16<D>(acc[i][2 * jp], af[i], b[0], b[1]);
          nvmma::mma_m16n8k16<D>(acc[i][2 * jp + 1], af[i], b[2], b[3]);
        }
      }
    }
    if (k0 < R) {  // the last 8 of the reduction
      uint32_t af[MT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i)
        nvmma::ldsm_x2(af[i], nvmma::smem_addr(a + (i * 16 + lane % 16) * lda + k0));
#pragma unroll
      for (int jp = 0; jp < 4; ++jp) {
        if (jp >= pairs) break;
        const int n = n0 + jp * 16;
        uint32_t b[2];
        const int q = (lane / 8) % 2, l8 = lane % 8;
        if constexpr (kTransB)
          nvmma::ldsm_x2_t(b, nvmma::smem_addr(wg + (k0 + l8) * ldw + n + q * 8));
        else
          nvmma::ldsm_x2(b, nvmma::smem_addr(wg + (n + q * 8 + l8) * ldw + k0));
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          nvmma::mma_m16n8k8<D>(acc[i][2 * jp], af[i], b[0]);
          nvmma::mma_m16n8k8<D>(acc[i][2 * jp + 1], af[i], b[1]);
        }
      }
    }
    // Lane (g, t) holds rows g and g + 8, columns 2t and 2t + 1 of each n8 tile.
    const int r = lane / 4, c = (lane % 4) * 2;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int n = n0 + j * 8;
      if (n >= Nn) break;
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        uint16_t* o = out + (i * 16 + r) * ldo + n + c;
        *reinterpret_cast<uint32_t*>(o) = pack_pair<D>(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<uint32_t*>(o + 8 * ldo) = pack_pair<D>(acc[i][j][2], acc[i][j][3]);
      }
    }
  }
}

template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void run(const PointwiseArgs& a) {
  constexpr int BM = Cfg::Tile::kM, kWarps = Cfg::Waves::kM;
  constexpr int MT = BM / kWarps / 16;
  constexpr bool kTransB = Cfg::kVariant == Variant::BackwardData;
  static_assert(kPointwiseStages == 2, "ckgen: the pointwise ring alternates two stages (it & 1)");
  extern __shared__ __align__(128) unsigned char smem[];
  const PointwiseLayout L = pointwise_layout(!kTransB, a.G, a.R, a.Nn, BM);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  const uint16_t* ws = reinterpret_cast<const uint16_t*>(smem + L.w);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  auto tile_rows = [&](int t) { return int(min(int64_t(BM), a.rows - int64_t(t) * BM)); };
  // thread 0: tile t's rows into stage s, its barrier told of their bytes and `extra` more
  auto load = [&](int t, int s, int64_t extra) {
    const int64_t bytes = tile_rows(t) * L.src_row_bytes;
    tma::expect_tx(&full[s], uint32_t(bytes + extra));
    tma::load_bulk(smem + L.src + s * L.src_stage,
                   static_cast<const unsigned char*>(a.src) + int64_t(t) * BM * L.src_row_bytes,
                   uint32_t(bytes), &full[s]);
  };
  if (tid == 0) {
    mbar::init(&full[0], 1);
    mbar::init(&full[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  chain_wait();  // global memory from here on (core/chain.hpp)
  const int t0 = blockIdx.x;
  if (tid == 0) {
    const int64_t w_bytes = L.w_rows * L.w_row_bytes;
    load(t0, 0, w_bytes);
    tma::load_bulk(smem + L.w, a.w, uint32_t(w_bytes), &full[0]);
    if (t0 + int(gridDim.x) < a.tiles) load(t0 + gridDim.x, 1, 0);
  }
  const int lda = a.G * a.R, ldo = a.G * a.Nn, ldw = int(L.w_row_bytes / 2);
  const int64_t w_group = int64_t(kTransB ? a.R : a.Nn) * ldw;  // a group's filter rows
  int it = 0;
  for (int t = t0; t < a.tiles; t += gridDim.x, ++it) {
    const int s = it & 1;
    mbar::wait(&full[s], (it >> 1) & 1);
    if (tid == 0 && it >= 2) asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
    __syncthreads();  // output buffer s free
    const uint16_t* src = reinterpret_cast<const uint16_t*>(smem + L.src + s * L.src_stage);
    uint16_t* out = reinterpret_cast<uint16_t*>(smem + L.dst + s * L.dst_stage);
    const int row0 = warp * (BM / kWarps);
    for (int g = 0; g < a.G; ++g)
      warp_rows<Cfg::kDataType, MT, kTransB>(src + row0 * lda + g * a.R, lda, ws + g * w_group, ldw,
                                             out + row0 * ldo + g * a.Nn, ldo, a.R, a.Nn, lane);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();  // output rows written, source stage s read
    if (tid == 0) {
      tma::store_bulk(static_cast<unsigned char*>(a.dst) + int64_t(t) * BM * L.dst_row_bytes, out,
                      uint32_t(tile_rows(t) * L.dst_row_bytes));
      const int next = t + 2 * int(gridDim.x);
      if (next < a.tiles) load(next, s, 0);
    }
  }
  if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

}  // namespace pointwise
#endif

template <class Cfg>
CKGEN_GLOBAL void CKGEN_LAUNCH_BOUNDS_MIN_BLOCKS(Cfg::Waves::kM * 32, 1)
    pointwise_conv_kernel(const CKGEN_GRID_CONSTANT PointwiseArgs a) {
#if defined(CKGEN_HAS_TMA)
  pointwise::run<Cfg>(a);
#endif
}

}  // namespace ckgen
