// The masked copy of dy: dst = dy x the gradient of a mask (drelu, drelu6, dleaky_relu) at the
// saved forward output y, one launch (templates only: wavelet_tma's instances include it for their
// own copy, kernel/tma_kernel.hpp; the registry's mask-copy faces, kernel/mask_copy.hpp).
#pragma once

#include <cstdint>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

namespace detail {

inline constexpr int kMaskCopyThreads = 256;
inline constexpr std::size_t kMaskCopyAlign = 256;

// dst = dy x the gradient of activation A at y, element by element over n elements; 16-byte
// vectors where n and the three pointers allow them (vec), kUnroll of them a thread in flight.
template <Activation A, DataType D>
CKGEN_GLOBAL void mask_copy_kernel(const typename DataTypeTraits<D>::raw* __restrict__ dy,
                                   const typename DataTypeTraits<D>::raw* __restrict__ y,
                                   typename DataTypeTraits<D>::raw* __restrict__ dst, int64_t n, float alpha,
                                   bool vec) {
#if CKGEN_GPU_COMPILER
  using Raw = typename DataTypeTraits<D>::raw;
  constexpr int V = int(16 / sizeof(Raw)), kUnroll = 4;
  chain_wait();
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t i0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    using VecT = Vec<Raw, V>;  // 16 bytes
    const int64_t vecs = n / V;
    for (int64_t i = i0; i < vecs; i += kUnroll * step) {
      VecT a[kUnroll], b[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * step < vecs) {
          a[u] = reinterpret_cast<const VecT*>(dy)[i + u * step];
          b[u] = reinterpret_cast<const VecT*>(y)[i + u * step];
        }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * step < vecs) {
#pragma unroll
          for (int j = 0; j < V; ++j) a[u].v[j] = fusion::grad_mask<A, D>(a[u].v[j], b[u].v[j], alpha);
          reinterpret_cast<VecT*>(dst)[i + u * step] = a[u];
        }
    }
  } else {
    for (int64_t i = i0; i < n; i += step) dst[i] = fusion::grad_mask<A, D>(dy[i], y[i], alpha);
  }
#else
  (void)dy, (void)y, (void)dst, (void)n, (void)alpha, (void)vec;
#endif
}

// The launch of mask_copy_kernel on `stream` (host-only builds, the dispatcher's host tests: the
// same product on the host).
template <Activation A, DataType D>
gpuError_t mask_copy(const void* dy, const void* y, void* dst, int64_t n, float alpha, gpuStream_t stream) {
  using Raw = typename DataTypeTraits<D>::raw;
  const Raw* a = static_cast<const Raw*>(dy);
  const Raw* b = static_cast<const Raw*>(y);
  Raw* c = static_cast<Raw*>(dst);
#if CKGEN_GPU_COMPILER
  constexpr int64_t V = int64_t(16 / sizeof(Raw));
  auto a16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  const bool vec = n % V == 0 && a16(dy) && a16(y) && a16(dst);
  const unsigned blocks = unsigned(grid_stride_blocks(vec ? n / V : n, kMaskCopyThreads, 8));
  return launch_kernel(mask_copy_kernel<A, D>, dim3(blocks), dim3(kMaskCopyThreads), 0, stream, false, a, b, c, n,
                       alpha, vec);
#else
  (void)stream;
  for (int64_t i = 0; i < n; ++i) c[i] = fusion::grad_mask<A, D>(a[i], b[i], alpha);
  return gpuSuccess;
#endif
}

// The bytes of dy (the forward's output's shape) of p, rounded up to kMaskCopyAlign.
inline std::size_t mask_copy_bytes(const ConvProblem& p, DataType d) {
  const std::size_t b = std::size_t(p.output_elems()) * std::size_t(elem_bytes(d));
  return (b + kMaskCopyAlign - 1) / kMaskCopyAlign * kMaskCopyAlign;
}

// A masked request run unmasked: copy(dy, y, dst, n, alpha) writes dy's masked copy at the
// workspace's start, then run(tensors, workspace) reads it, without epilogue operands and with
// the workspace after the copy (mask_copy_bytes).
template <class Copy, class Run>
gpuError_t run_premasked(const ConvProblem& p, DataType d, const ConvTensors& t, void* workspace, Copy&& copy,
                         Run&& run) {
  if (workspace == nullptr) return gpu_invalid_value();
  if (gpuError_t e = copy(t.out, t.ep.y, workspace, p.output_elems(), t.ep.alpha); e != gpuSuccess)
    return e;
  ConvTensors u = t;
  u.out = workspace;
  u.ep = EpilogueArgs{};
  return run(u, static_cast<unsigned char*>(workspace) + mask_copy_bytes(p, d));
}

}  // namespace detail

}  // namespace ckgen
