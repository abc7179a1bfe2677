// PTX wrappers of the tensor-memory-access engine (bulk tensor copies into shared memory),
// thread-block clusters (barriers, distributed shared memory), vector reductions into global
// fp32 and the wgmma shared-memory descriptors of 128-byte swizzled tiles.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/mbarrier.hpp"

#if defined(CKGEN_NVIDIA)
#include <cuda.h>
#endif

namespace ckgen {

#if defined(CKGEN_NVIDIA)

namespace tma {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define CKGEN_HAS_TMA 1
CKGEN_DEVICE inline void expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mbar::addr(bar)),
               "r"(bytes)
               : "memory");
}
// A contiguous run of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global into
// shared memory, completing on `bar` (no tensor map).
CKGEN_DEVICE inline void load_bulk(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          mbar::addr(dst)),
      "l"(src), "r"(bytes), "r"(mbar::addr(bar))
      : "memory");
}
// The reverse, from shared into global memory, committed as one bulk async-group (wait for it with
// cp.async.bulk.wait_group[.read]).
CKGEN_DEVICE inline void store_bulk(void* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
               "r"(mbar::addr(src)), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
CKGEN_DEVICE inline void load_im2col_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c,
                                        int w, int h, int n, uint16_t off_w, uint16_t off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(mbar::addr(bar)),
      "h"(off_w), "h"(off_h)
      : "memory");
}
// The 5D form (3D problems, TmaConvArgs::deep): corner (c, w, h, d, n), offsets (w, h, d).
CKGEN_DEVICE inline void load_im2col_5d(void* dst, const CUtensorMap* map, uint64_t* bar, int c,
                                        int w, int h, int d, int n, uint16_t off_w, uint16_t off_h,
                                        uint16_t off_d) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "r"(mbar::addr(bar)),
      "h"(off_w), "h"(off_h), "h"(off_d)
      : "memory");
}
CKGEN_DEVICE inline void load_tile_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                      int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(mbar::addr(bar))
      : "memory");
}
CKGEN_DEVICE inline void load_tile_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                      int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(mbar::addr(bar))
      : "memory");
}
CKGEN_DEVICE inline void load_tile_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                      int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(mbar::addr(bar))
      : "memory");
}
// Thread-block clusters: every live thread of the cluster arrives and waits; called by whole
// warps. cluster_sync publishes the thread's earlier writes to the cluster (release / acquire);
// cluster_sync_relaxed only orders (the last barrier: the reads it protects have returned).
CKGEN_DEVICE inline void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
CKGEN_DEVICE inline void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
CKGEN_DEVICE inline uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The 4 floats at shared address addr (16-byte aligned) of cluster block `rank`.
CKGEN_DEVICE inline float4 load_remote4(uint32_t addr, uint32_t rank) {
  uint32_t ra;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(ra) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(ra)
               : "memory");
  return v;
}
// 8 floats at shared address `addr` of cluster block `rank`, added into s. (Loading every
// block's floats before adding is no faster and costs registers: large tiles spill.)
CKGEN_DEVICE inline void add_remote8(float* s, uint32_t addr, uint32_t rank) {
  const float4 a = load_remote4(addr, rank), b = load_remote4(addr + 16, rank);
  s[0] += a.x;
  s[1] += a.y;
  s[2] += a.z;
  s[3] += a.w;
  s[4] += b.x;
  s[5] += b.y;
  s[6] += b.z;
  s[7] += b.w;
}
// Adds v0..v3 into the fp32 sums of row `dst` at columns col..col+3 (col % 4 == 0, columns from K
// on skipped): one 16-byte red where the row is 16-byte aligned and K % 4 == 0, else two 8-byte
// reds (K even).
CKGEN_DEVICE CKGEN_FORCEINLINE void red_add4(float* dst, int col, int K, float v0, float v1, float v2, float v3) {
  if (((reinterpret_cast<uintptr_t>(dst) & 15u) | (uintptr_t(K) & 3u)) == 0) {
    if (col < K)
      asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst + col), "f"(v0),
                   "f"(v1), "f"(v2), "f"(v3)
                   : "memory");
    return;
  }
  if (col < K)
    asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst + col), "f"(v0), "f"(v1) : "memory");
  if (col + 2 < K)
    asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst + col + 2), "f"(v2), "f"(v3)
                 : "memory");
}
// Adds row h (0: lane / 4, 1: lane / 4 + 8) of a warp's m64nN accumulator fragment into the fp32
// sums of row dst, 16 bytes a lane: lanes 2q and 2q + 1 of a quad hold columns 4q..4q+1 /
// 4q+2..4q+3 (q = 0, 1) of 8-column groups j and j + 1; they trade halves (one shuffle a float),
// so that the even lane holds 4 consecutive columns of group j and the odd one 4 of group j + 1:
// one 16-byte red where there were two 8-byte ones (red_add4 for unaligned rows). col maps a
// fragment column to the row's column; every lane runs the shuffles, live ones add.
template <int N, class Col>
CKGEN_DEVICE CKGEN_FORCEINLINE void red_fragment_row(const float* acc, int h, float* dst, int K, bool live, Col col) {
  const int lane = int(threadIdx.x % 32);
  const bool odd = (lane & 1) != 0;
  const int qc = (lane & 2) * 2;  // the pair's first column in a group: 0 or 4
#pragma unroll
  for (int j = 0; j < N / 8; j += 2) {
    const float a0 = acc[j * 4 + h * 2], a1 = acc[j * 4 + h * 2 + 1];
    const float b0 = acc[j * 4 + 4 + h * 2], b1 = acc[j * 4 + 4 + h * 2 + 1];
    // even lane: sends b, keeps a; odd lane: sends a, keeps b
    const float r0v = __shfl_xor_sync(0xffffffffu, odd ? a0 : b0, 1);
    const float r1v = __shfl_xor_sync(0xffffffffu, odd ? a1 : b1, 1);
    if (live)
      red_add4(dst, col((j + (odd ? 1 : 0)) * 8 + qc), K, odd ? r0v : a0, odd ? r1v : a1, odd ? b0 : r0v,
               odd ? b1 : r1v);
  }
}
CKGEN_DEVICE inline void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
#endif
// wgmma descriptor of a K-major operand tile in the 128-byte swizzle layout: rows of 128 bytes,
// 8-row groups 1024 bytes apart (SBO), LBO unused (1), layout type 1 = 128B swizzle. The k16
// step inside a row advances the start address by 32 bytes.
CKGEN_HOST_DEVICE constexpr uint64_t sw128_desc(uint32_t smem_addr) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
// The same for an N-major operand (tnsp 1) stored as 64-column blocks of 128-byte k-rows: a row
// holds 64 consecutive n, 8-row groups are sbo bytes apart along k (1024: one swizzle atom after
// the other), 64-column blocks block_bytes apart along n (LBO). The k16 step advances 16 rows
// (2048 bytes) when the groups are one atom apart.
CKGEN_HOST_DEVICE constexpr uint64_t sw128_desc_mn(uint32_t smem_addr, uint32_t block_bytes, uint32_t sbo = 1024) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t((block_bytes >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
}
}  // namespace tma

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
