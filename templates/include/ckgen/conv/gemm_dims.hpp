// The implicit GEMM of a convolution problem per variant: rows, columns, reduction and batch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Per-group GEMM sizes of a problem for a variant (the implicit-GEMM mapping; backward_data
// counts the largest stride class and `classes` sub-problems).
struct GemmDims {
  int64_t M = 1, N = 1, K = 1, batch = 1;  // batch: G x stride classes
};
inline GemmDims gemm_dims(Variant v, const ConvProblem& p) {
  GemmDims d;
  const int64_t zyx = p.filter_spatial();
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (v == Variant::Forward) {
    d.M = p.N * p.out_spatial();
    d.N = p.K;
    d.K = zyx * p.C;
    d.batch = p.G;
  } else if (v == Variant::BackwardData) {
    d.M = p.N;
    d.K = p.K;
    int64_t classes = 1;
    for (int i = 0; i < 3; ++i) {
      const int64_t fstep = p.stride[i] / std::gcd(p.stride[i], p.dilation[i]);
      d.M *= cdiv(p.in[i], p.stride[i]);  // class 0 is the largest
      d.K *= cdiv(p.filter[i], fstep);    // most taps of any class
      classes *= p.stride[i];
    }
    d.N = p.C;
    d.batch = p.G * classes;
  } else {
    d.M = p.K;
    d.N = zyx * p.C;
    d.K = p.N * p.out_spatial();
    d.batch = p.G;
  }
  return d;
}
// The GEMM a kernel's blocks tile: with groups_to_merge gm > 1 (forward / backward_data) a block
// runs gm groups as one block-diagonal GEMM whose N and K are gm times the group's (conv/conv_maps.hpp
// merged views, kernel/conv_kernel.hpp gemm_dims: gm times the useful MACs), over G / gm group blocks.
inline GemmDims tiled_gemm_dims(Variant v, const ConvProblem& p, int gm) {
  GemmDims d = gemm_dims(v, p);
  if (gm > 1) {
    d.N *= gm;
    d.K *= gm;
    d.batch = std::max<int64_t>(1, d.batch / gm);
  }
  return d;
}

}  // namespace ckgen
