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

// Converts the n sums of `splits` fp32 slices (`stride` elements apart; 1 slice for one-stage
// reductions) into dst: 256 threads per block, at most 8 blocks per compute unit (grid-stride).
template <DataType D>
gpuError_t launch_splitk_finish(const float* ws, int splits, int64_t stride,
                                typename DataTypeTraits<D>::raw* dst, int64_t n, gpuStream_t stream,
                                bool after_kernel = false) {
  constexpr int kThreads = 256;
  const int64_t blocks = detail::grid_stride_blocks(n, kThreads, 8);
#if defined(CKGEN_NVIDIA)
  return launch_chained(splitk_finish_kernel<D>, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, after_kernel,
                        nullptr, ws, splits, stride, dst, n);
#else
  (void)after_kernel;
  splitk_finish_kernel<D><<<unsigned(blocks), kThreads, 0, stream>>>(ws, splits, stride, dst, n);
  return gpuGetLastError();
#endif
}

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
#endif

}  // namespace ckgen
