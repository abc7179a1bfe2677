// Split-K finish (implicit-GEMM split-K, the direct backward_weight and wavelet_tma):
// dst[i] = convert(sum over splits of ws[s * stride + i]); launch_splitk_finish is the one launch
// every kernel family uses.
#pragma once

#include <cstdint>

#include "ckgen/config.hpp"
#include "ckgen/kernel_base.hpp"
#include "ckgen/portability.hpp"

namespace ckgen {

template <DataType D>
CKGEN_GLOBAL void splitk_finish_kernel(const float* __restrict__ ws, int splits, int64_t stride,
                                       typename DataTypeTraits<D>::raw* __restrict__ dst,
                                       int64_t n) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    float s = 0.f;
    for (int k = 0; k < splits; ++k) s += ws[k * stride + i];
    dst[i] = float_to_raw<D>(s);
  }
}

// Converts the n sums of `splits` fp32 slices (`stride` elements apart; 1 slice for one-stage
// reductions) into dst: 256 threads per block, at most 8 blocks per compute unit (grid-stride).
template <DataType D>
gpuError_t launch_splitk_finish(const float* ws, int splits, int64_t stride,
                                typename DataTypeTraits<D>::raw* dst, int64_t n, gpuStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = detail::grid_stride_blocks(n, kThreads, 8);
  splitk_finish_kernel<D><<<unsigned(blocks), kThreads, 0, stream>>>(ws, splits, stride, dst, n);
  return gpuGetLastError();
}

}  // namespace ckgen
