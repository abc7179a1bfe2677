// Split-K finish (implicit-GEMM split-K and the direct backward_weight):
// dst[i] = convert(sum over splits of ws[s * stride + i]).
#pragma once

#include <cstdint>

#include "ckgen/config.hpp"
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

}  // namespace ckgen
