// The host side of fused epilogues (epilogue/fusion.hpp) for the tests and the profiler: the
// operands a fused instance reads (random per-channel vectors and residual, fixed beta and
// alpha) and the reference, which applies the operations in fp64 to the unfused convolution's
// reference. Also the bytes a fusion saves: the read and write of the output that a separate
// elementwise kernel (bias, activation, residual add) would add.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/core/kernel_key.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen::host {

// The scalars the tests and the profiler run fused instances with (not the defaults, so that a
// kernel reading the wrong one fails).
inline constexpr float kTestResidualBeta = 0.5f;
inline constexpr float kTestLeakySlope = 0.1f;

inline bool is_fused(const KernelKey& k) {
  return EpilogueOps{k.channel_op, k.activation, k.residual}.fused();
}

// "bias_relu_residual"-style spelling of a key's fusion (ckgen/model/vocab.py fusion_spelling).
inline std::string fusion_spelling(const KernelKey& k) {
  std::string s;
  auto add = [&](const char* w) { s += (s.empty() ? "" : "_") + std::string(w); };
  if (k.channel_op != ChannelOp::Identity) add(to_string(k.channel_op));
  if (k.activation != Activation::Identity) add(to_string(k.activation));
  if (k.residual) add("residual");
  return s.empty() ? "none" : s;
}

inline double activate_ref(Activation a, double x, double alpha) {
  switch (a) {
    case Activation::Relu:
      return x > 0 ? x : 0;
    case Activation::Relu6:
      return x > 0 ? (x < 6 ? x : 6) : 0;
    case Activation::LeakyRelu:
      return x > 0 ? x : alpha * x;
    case Activation::Silu:
      return x / (1 + std::exp(-x));
    case Activation::GeluTanh:
      return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::Identity:
      break;
  }
  return x;
}

// y (the output in NDHWGK order) <- act(op(y) + beta * residual), channel c = i mod (G*K).
inline void apply_fused_reference(const KernelKey& k, const ConvProblem& p, std::vector<double>& y,
                                  const std::vector<double>& bias, const std::vector<double>& scale,
                                  const std::vector<double>& residual, double beta, double alpha) {
  const int64_t gk = p.G * p.K;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const std::size_t c = std::size_t(int64_t(i) % gk);
    double x = y[i];
    if (k.channel_op == ChannelOp::Bias) x += bias[c];
    if (k.channel_op == ChannelOp::ScaleShift) x = x * scale[c] + bias[c];
    if (k.residual) x += beta * residual[i];
    y[i] = activate_ref(k.activation, x, alpha);
  }
}

// Bytes a fused instance saves against the unfused convolution followed by one elementwise kernel
// of the same operations: that kernel's read and write of the output (both read the residual).
inline double fusion_saved_bytes(const KernelKey& k, const ConvProblem& p, std::size_t elem_bytes) {
  return is_fused(k) ? 2.0 * double(p.output_elems()) * double(elem_bytes) : 0.0;
}

}  // namespace ckgen::host
