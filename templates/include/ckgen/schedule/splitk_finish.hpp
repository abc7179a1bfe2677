// Split-K finish (implicit-GEMM split-K, the direct backward_weight and wavelet_tma):
// dst[i] = convert(sum over splits of ws[s * stride + i]); launch_splitk_finish is the one launch
// every kernel family uses. launch_splitk_finish_fused: a fused forward instance's finish, which
// applies the epilogue's operations to each one-slice sum before the conversion (to the output's
// datatype, Cfg::kOutDataType).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/epilogue/fusion.hpp"

namespace ckgen {

inline constexpr int kFinishThreads = 256;
inline constexpr int kFinishLanes = 8;  // slice lanes per element of the lanes kernel

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
template <DataType D>
CKGEN_GLOBAL void splitk_finish_lanes_kernel(const float* __restrict__ ws, int splits, int64_t stride,
                                             typename DataTypeTraits<D>::raw* __restrict__ dst,
                                             int64_t n) {
  constexpr int L = kFinishLanes;
  constexpr int kRows = kFinishThreads / 32 / L;  // element rows of 32 a block
  __shared__ float part[L][kRows][32];
  chain_wait();
  chain_release();
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int er = warp % kRows, sl = warp / kRows;
  const int64_t step = int64_t(gridDim.x) * kRows * 32;
  for (int64_t b = int64_t(blockIdx.x) * kRows * 32; b < n; b += step) {  // uniform in the block
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
}

// Whether the conversion takes kFinishLanes lanes per element: where one thread per element would
// leave fewer than 32 blocks each summing 64 or more slices (depthwise backward_weight's direct
// splits); else one thread per element. (Lanes pay off only where few elements have many
// slices; elsewhere their shuffles cost more than they save.)
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
  auto kernel = lanes ? splitk_finish_lanes_kernel<D> : splitk_finish_kernel<D>;
  return launch_kernel(kernel, dim3(unsigned(blocks)), dim3(kFinishThreads), 0, stream, after_kernel, ws, splits,
                       stride, dst, n);
}

#if defined(CKGEN_NVIDIA)
// A fused forward instance's finish (wavelet_tma) of one fp32 slice (the dense output: channel
// i % gk): 4 elements a thread when gk % 4 == 0 and the pointers allow 16-byte sums and 8-byte
// stores and residual loads, else one.
template <class Cfg>
CKGEN_GLOBAL void splitk_finish_fused_kernel(const float* __restrict__ ws,
                                             typename DataTypeTraits<Cfg::kOutDataType>::raw* __restrict__ dst,
                                             int64_t n, int64_t gk, EpilogueArgs e) {
  using Raw = typename DataTypeTraits<Cfg::kOutDataType>::raw;
  chain_wait();
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const bool vec = n % 4 == 0 && gk % 4 == 0 && reinterpret_cast<uintptr_t>(ws) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % 8 == 0 &&
                   reinterpret_cast<uintptr_t>(e.residual) % 8 == 0;
  if (vec) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n / 4; i += step) {
      const float4 s = reinterpret_cast<const float4*>(ws)[i];
      float v[4] = {s.x, s.y, s.z, s.w};
      fusion::apply<Cfg, 4>(e, v, (4 * i) % gk, 4 * i);
      Vec<Raw, 4> out;
#pragma unroll
      for (int q = 0; q < 4; ++q) out.v[q] = float_to_raw<Cfg::kOutDataType>(v[q]);
      reinterpret_cast<Vec<Raw, 4>*>(dst)[i] = out;
    }
  } else {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
      float v = ws[i];
      fusion::apply<Cfg, 1>(e, &v, i % gk, i);
      dst[i] = float_to_raw<Cfg::kOutDataType>(v);
    }
  }
}

template <class Cfg>
gpuError_t launch_splitk_finish_fused(const float* ws, typename DataTypeTraits<Cfg::kOutDataType>::raw* dst,
                                      int64_t n, int64_t gk, const EpilogueArgs& e, gpuStream_t stream,
                                      bool after_kernel) {
  const int64_t blocks = detail::grid_stride_blocks((n + 3) / 4, kFinishThreads, 8);
  return launch_chained(splitk_finish_fused_kernel<Cfg>, dim3(unsigned(blocks)), dim3(kFinishThreads), 0,
                        stream, after_kernel, nullptr, ws, dst, n, gk, e);
}

// The clear of a split's n fp32 sums as a kernel (a memset is not a kernel, so the launch after
// it cannot be chained to it): 16-byte stores when n % 4 == 0 and ws is 16-byte aligned; and of
// n2 more floats at ws2 (bias_grad's db) in the same launch.
template <class F>
CKGEN_GLOBAL void clear_sums_kernel(F* __restrict__ ws, int64_t n, F* __restrict__ ws2, int64_t n2) {
  chain_wait();
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vecs = n % 4 == 0 && reinterpret_cast<uintptr_t>(ws) % 16 == 0 ? n / 4 : 0;
  for (int64_t i = first; i < vecs; i += step) reinterpret_cast<float4*>(ws)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int64_t i = vecs * 4 + first; i < n; i += step) ws[i] = F(0);
  for (int64_t i = first; i < n2; i += step) ws2[i] = F(0);
}
inline gpuError_t launch_clear_sums(float* ws, int64_t n, gpuStream_t stream, bool after_kernel,
                                    float* ws2 = nullptr, int64_t n2 = 0) {
  constexpr int kThreads = 256;
  const int64_t blocks = detail::grid_stride_blocks(std::max((n + 3) / 4, n2), kThreads, 8);
  return launch_chained(clear_sums_kernel<float>, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, after_kernel, nullptr,
                        ws, n, ws2, n2);
}
#endif

}  // namespace ckgen
