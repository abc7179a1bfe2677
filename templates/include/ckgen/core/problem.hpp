// Grouped-convolution problem description, shared by host and device code.
//
// A problem is always held as 3D (D, H, W): 1D and 2D problems put size 1 into the leading
// spatial dimensions (filter 1, stride 1, dilation 1, pads 0), so every index map is written
// once. `ndim` remembers what the user asked for (layouts NWGC / NHWGC / NDHWGC).
//
// Tensor layouts (C and K are per-group counts; G groups):
//   input  x : N, Di, Hi, Wi, G, C   (NDHWGC)
//   weight w : G, K, Z, Y, X, C      (GKZYXC)
//   output y : N, Do, Ho, Wo, G, K   (NDHWGK)
#pragma once

#include <cstdint>
#include <string>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

struct ConvProblem {
  int ndim = 2;
  int64_t G = 1, N = 1, C = 1, K = 1;
  // Index 0 = D, 1 = H, 2 = W. Unused leading dims hold 1 (sizes) / 0 (pads).
  int64_t in[3] = {1, 1, 1};
  int64_t filter[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_l[3] = {0, 0, 0};
  int64_t pad_r[3] = {0, 0, 0};

  // Recomputes out[] from the other fields: Wo = (Wi + pl + pr - ((X-1)*d + 1)) / s + 1.
  CKGEN_HOST_DEVICE void compute_output() {
    for (int i = 0; i < 3; ++i) {
      const int64_t eff = (filter[i] - 1) * dilation[i] + 1;
      const int64_t span = in[i] + pad_l[i] + pad_r[i] - eff;
      out[i] = span < 0 ? 0 : span / stride[i] + 1;
    }
  }

  CKGEN_HOST_DEVICE int64_t in_spatial() const { return in[0] * in[1] * in[2]; }
  CKGEN_HOST_DEVICE int64_t out_spatial() const { return out[0] * out[1] * out[2]; }
  CKGEN_HOST_DEVICE int64_t filter_spatial() const { return filter[0] * filter[1] * filter[2]; }

  // Element counts of the three tensors (all groups).
  CKGEN_HOST_DEVICE int64_t input_elems() const { return N * in_spatial() * G * C; }
  CKGEN_HOST_DEVICE int64_t weight_elems() const { return G * K * filter_spatial() * C; }
  CKGEN_HOST_DEVICE int64_t output_elems() const { return N * out_spatial() * G * K; }

  // 2*G*N*K*C*prod(filter)*prod(output): the one FLOP formula for every variant.
  double flops() const {
    return 2.0 * double(G) * double(N) * double(K) * double(C) * double(filter_spatial()) *
           double(out_spatial());
  }

  // Empty when the problem is well formed, else the reason.
  std::string validate() const {
    if (ndim < 1 || ndim > 3) return "ndim must be 1, 2 or 3";
    if (G < 1 || N < 1 || C < 1 || K < 1) return "G, N, C and K must be positive";
    for (int i = 0; i < 3; ++i) {
      if (in[i] < 1 || filter[i] < 1) return "spatial sizes must be positive";
      if (stride[i] < 1 || dilation[i] < 1) return "strides and dilations must be positive";
      if (pad_l[i] < 0 || pad_r[i] < 0) return "pads must be non-negative";
      if (i < 3 - ndim && (in[i] != 1 || filter[i] != 1 || pad_l[i] != 0 || pad_r[i] != 0))
        return "unused leading spatial dims must be size 1 with no padding";
    }
    ConvProblem p = *this;
    p.compute_output();
    for (int i = 0; i < 3; ++i)
      if (p.out[i] < 1) return "the filter does not fit the padded input (empty output)";
    return {};
  }
};

// Element count of the tensor a variant writes: y, dx or dw (a split's fp32 workspace holds it).
inline int64_t written_elems(Variant v, const ConvProblem& p) {
  switch (v) {
    case Variant::Forward: return p.output_elems();
    case Variant::BackwardData: return p.input_elems();
    case Variant::BackwardWeight: return p.weight_elems();
  }
  return 0;
}

}  // namespace ckgen
