// Split-K finish (implicit-GEMM split-K, the direct backward_weight and wavelet_tma):
// dst[i] = convert(sum over splits of ws[s * stride + i]); launch_splitk_finish is the one launch
// every kernel family uses.
#pragma once

#include <cstdint>

#include "ckgen/chain.hpp"
#include "ckgen/config.hpp"
#include "ckgen/kernel_base.hpp"
#include "ckgen/portability.hpp"

namespace ckgen {

inline constexpr int kFinishThreads = 256;
inline constexpr int kFinishLanes = 8;  // slice lanes per element of the lanes kernel

// The signalled finish's handshake (NVIDIA; elsewhere no-ops, never launched that way). A block
// that has stored its slice of a group's sums counts itself once all its threads are past their
// stores (a barrier, then one thread's fence and atomic: the release pattern of a grid barrier);
// a block of the finish polls the counters of the groups [lo, hi] touch with acquire loads until
// `splits` have arrived, fences, and lets the block go.
CKGEN_DEVICE CKGEN_FORCEINLINE void slices_signal(unsigned* done) {
#if defined(CKGEN_NVIDIA)
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(done, 1u);
  }
#else
  (void)done;
#endif
}
CKGEN_DEVICE CKGEN_FORCEINLINE void slices_wait(const unsigned* done, int64_t tile_elems, int64_t lo, int64_t hi,
                                                int splits) {
#if defined(CKGEN_NVIDIA)
  if (threadIdx.x == 0) {
    for (int64_t t = lo / tile_elems; t <= hi / tile_elems; ++t) {
      for (;;) {
        unsigned v;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(done + t) : "memory");
        if (v >= unsigned(splits)) break;
        __nanosleep(64);
      }
    }
    __threadfence();
  }
  __syncthreads();
#else
  (void)done, (void)tile_elems, (void)lo, (void)hi, (void)splits;
#endif
}

// One thread per element, grid-stride.
template <DataType D>
CKGEN_GLOBAL void splitk_finish_kernel(const float* __restrict__ ws, int splits, int64_t stride,
                                       typename DataTypeTraits<D>::raw* __restrict__ dst,
                                       int64_t n) {
  chain_wait();  // launched after the kernel that adds the sums (launch_chained)
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    float s = 0.f;
    for (int k = 0; k < splits; ++k) s += ws[k * stride + i];
    dst[i] = float_to_raw<D>(s);
  }
}

// L = kFinishLanes slice lanes per element: the block's warps are rows of 32 consecutive
// elements x L lanes (warp w: element row w % (8 / L), slices w / (8 / L), + L, ...), so a thread
// issues about splits / L independent loads and each warp load reads 128 contiguous bytes; the
// lanes' sums meet in shared memory in a fixed order.
//
// Signalled (done != nullptr, NVIDIA): the slices' writers count themselves per group of
// tile_elems consecutive elements in done[] after a fence (slices_signal), and a block waits
// there for the `splits` slices of the elements it sums instead of for the whole writing grid
// (chain_wait); it still calls chain_wait before it exits, so its completion implies the
// writer's, as a chained launch's does.
template <DataType D>
CKGEN_GLOBAL void splitk_finish_lanes_kernel(const float* __restrict__ ws, int splits, int64_t stride,
                                             typename DataTypeTraits<D>::raw* __restrict__ dst,
                                             int64_t n, const unsigned* done, int64_t tile_elems) {
  constexpr int L = kFinishLanes;
  constexpr int kRows = kFinishThreads / 32 / L;  // element rows of 32 a block
  __shared__ float part[L][kRows][32];
  if (done == nullptr) chain_wait();
  chain_release();
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int er = warp % kRows, sl = warp / kRows;
  const int64_t step = int64_t(gridDim.x) * kRows * 32;
  for (int64_t b = int64_t(blockIdx.x) * kRows * 32; b < n; b += step) {  // uniform in the block
    if (done != nullptr) slices_wait(done, tile_elems, b, (b + kRows * 32 < n ? b + kRows * 32 : n) - 1, splits);
    const int64_t i = b + er * 32 + lane;
    float s = 0.f;
    if (i < n) {
#pragma unroll 8
      for (int k = sl; k < splits; k += L) s += ws[k * stride + i];
    }
    part[sl][er][lane] = s;
    __syncthreads();
    if (sl == 0 && i < n) {
      float t = part[0][er][lane];
#pragma unroll
      for (int q = 1; q < L; ++q) t += part[q][er][lane];
      dst[i] = float_to_raw<D>(t);
    }
    __syncthreads();
  }
  if (done != nullptr) chain_wait();
}

// Whether the conversion takes kFinishLanes lanes per element: where one thread per element would
// leave fewer than 32 blocks each summing 64 or more slices (depthwise backward_weight's direct
// splits); else one thread per element. Measured on an
// H200 (bench/NOTES.md, "Split conversion: slice lanes and early placement"): 8 lanes took 1.3 us
// off 2,304 elements x 66 slices and 0.4 us off 4,608 x 132, and added 0.3 us at 18,432 x 66 and
// 0.2-0.6 us at 4,608 x 33.
inline bool splitk_finish_lanes(int splits, int64_t n) {
  return splits >= 64 && n < 32 * int64_t(kFinishThreads);
}

// Converts the n sums of `splits` fp32 slices (`stride` elements apart; 1 slice for one-stage
// reductions) into dst: kFinishThreads threads per block, at most 8 blocks per compute unit
// (grid-stride), splitk_finish_lanes lanes per element.
template <DataType D>
gpuError_t launch_splitk_finish(const float* ws, int splits, int64_t stride,
                                typename DataTypeTraits<D>::raw* dst, int64_t n, gpuStream_t stream,
                                bool after_kernel = false) {
  const bool lanes = splitk_finish_lanes(splits, n);
  const int64_t blocks = detail::grid_stride_blocks(n * (lanes ? kFinishLanes : 1), kFinishThreads, 8);
  const dim3 grid{unsigned(blocks)};
#if defined(CKGEN_NVIDIA)
  if (lanes) {
    auto* kernel = &splitk_finish_lanes_kernel<D>;
    return launch_chained(kernel, grid, dim3(kFinishThreads), 0, stream, after_kernel, nullptr, ws, splits, stride, dst,
                          n, static_cast<const unsigned*>(nullptr), int64_t(1));
  }
  auto* kernel = &splitk_finish_kernel<D>;
  return launch_chained(kernel, grid, dim3(kFinishThreads), 0, stream, after_kernel, nullptr, ws, splits, stride, dst, n);
#else
  (void)after_kernel;
  if (lanes)
    splitk_finish_lanes_kernel<D><<<grid, kFinishThreads, 0, stream>>>(ws, splits, stride, dst, n, nullptr, 1);
  else
    splitk_finish_kernel<D><<<grid, kFinishThreads, 0, stream>>>(ws, splits, stride, dst, n);
  return gpuGetLastError();
#endif
}

#if defined(CKGEN_NVIDIA)
// The signalled finish (NVIDIA, launched chained after the writer): the lanes kernel waiting on
// done[] (one counter per tile_elems consecutive elements, zeroed before the writer counts,
// slices_signal) instead of on the writer's completion.
template <DataType D>
gpuError_t launch_splitk_finish_signalled(const float* ws, int splits, int64_t stride,
                                          typename DataTypeTraits<D>::raw* dst, int64_t n, const unsigned* done,
                                          int64_t tile_elems, gpuStream_t stream) {
  const int64_t blocks = detail::grid_stride_blocks(n * kFinishLanes, kFinishThreads, 8);
  auto* kernel = &splitk_finish_lanes_kernel<D>;
  return launch_chained(kernel, dim3(unsigned(blocks)), dim3(kFinishThreads), 0, stream, true, nullptr, ws, splits,
                        stride, dst, n, done, tile_elems);
}
#endif

#if defined(CKGEN_NVIDIA)
// The clear of a split's n fp32 sums as a kernel (a memset is not a kernel, so the launch after
// it cannot be chained to it): 16-byte stores when n % 4 == 0 and ws is 16-byte aligned.
template <class F>
CKGEN_GLOBAL void clear_sums_kernel(F* __restrict__ ws, int64_t n) {
  chain_wait();
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t vecs = n % 4 == 0 && reinterpret_cast<uintptr_t>(ws) % 16 == 0 ? n / 4 : 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vecs; i += step)
    reinterpret_cast<float4*>(ws)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int64_t i = vecs * 4 + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) ws[i] = F(0);
}
inline gpuError_t launch_clear_sums(float* ws, int64_t n, gpuStream_t stream, bool after_kernel) {
  constexpr int kThreads = 256;
  const int64_t blocks = detail::grid_stride_blocks((n + 3) / 4, kThreads, 8);
  return launch_chained(clear_sums_kernel<float>, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, after_kernel, nullptr,
                        ws, n);
}
// The signalled finish's counters (launch_splitk_finish_signalled), the first launch of its call.
inline gpuError_t launch_clear_counters(unsigned* done, int64_t n, gpuStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = detail::grid_stride_blocks((n + 3) / 4, kThreads, 8);
  return launch_chained(clear_sums_kernel<unsigned>, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, false, nullptr,
                        done, n);
}
#endif

}  // namespace ckgen
