// Split-K finish (implicit-GEMM split-K, the direct backward_weight and wavelet_tma):
// dst[i] = convert(sum over splits of ws[s * stride + i]); launch_splitk_finish is the one launch
// every kernel family uses.
#pragma once

#include <cstdint>

#include "ckgen/config.hpp"
#include "ckgen/kernel_base.hpp"
#include "ckgen/portability.hpp"

namespace ckgen {

// A block is kThreads = cols x lanes threads: lane l of column c sums slices l, l + lanes, ...
// of element base + c (four loads in flight), the lanes meet in shared memory and lane 0 writes
// the converted sum. Many slices over few elements (the direct backward_weight: 66 slices of
// 2,304 weights) then keep up to 8 loads per element in flight instead of one thread walking
// every slice in turn (5.3 us for that call on an H200, Nsight Compute).
inline constexpr int kSplitkFinishThreads = 256;

template <DataType D>
CKGEN_GLOBAL void CKGEN_LAUNCH_BOUNDS_MIN_BLOCKS(kSplitkFinishThreads, 1)
    splitk_finish_kernel(const float* __restrict__ ws, int splits, int64_t stride,
                         typename DataTypeTraits<D>::raw* __restrict__ dst, int64_t n, int lanes) {
  __shared__ float part[kSplitkFinishThreads];
  const int cols = kSplitkFinishThreads / lanes;
  const int c = int(threadIdx.x) % cols, l = int(threadIdx.x) / cols;
  for (int64_t base = int64_t(blockIdx.x) * cols; base < n; base += int64_t(gridDim.x) * cols) {
    const int64_t i = base + c;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    if (i < n) {
      int k = l;
      for (; k + 3 * lanes < splits; k += 4 * lanes) {
        s0 += ws[int64_t(k) * stride + i];
        s1 += ws[int64_t(k + lanes) * stride + i];
        s2 += ws[int64_t(k + 2 * lanes) * stride + i];
        s3 += ws[int64_t(k + 3 * lanes) * stride + i];
      }
      for (; k < splits; k += lanes) s0 += ws[int64_t(k) * stride + i];
    }
    part[threadIdx.x] = (s0 + s1) + (s2 + s3);
    __syncthreads();
    if (l == 0 && i < n) {
      float s = 0.f;
      for (int q = 0; q < lanes; ++q) s += part[q * cols + c];
      dst[i] = float_to_raw<D>(s);
    }
    __syncthreads();
  }
}

// Converts the n sums of `splits` fp32 slices (`stride` elements apart; 1 slice for one-stage
// reductions) into dst: lanes = the power of two <= min(splits, 8) per element, at most 8 blocks
// per compute unit (grid-stride).
template <DataType D>
gpuError_t launch_splitk_finish(const float* ws, int splits, int64_t stride,
                                typename DataTypeTraits<D>::raw* dst, int64_t n, gpuStream_t stream) {
  int lanes = 1;
  while (lanes < 8 && lanes * 2 <= splits) lanes *= 2;
  const int64_t blocks = detail::grid_stride_blocks(n * lanes, kSplitkFinishThreads, 8);
  splitk_finish_kernel<D><<<unsigned(blocks), kSplitkFinishThreads, 0, stream>>>(ws, splits, stride, dst, n, lanes);
  return gpuGetLastError();
}

}  // namespace ckgen
