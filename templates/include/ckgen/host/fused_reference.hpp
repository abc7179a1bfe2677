// The host side of fused epilogues (epilogue/fusion.hpp) for the tests and the profiler: the
// operands a fused instance reads (random per-channel vectors and residual, fixed beta and
// alpha) and the reference, which applies the operations in fp64 to the unfused convolution's
// reference. Also the bytes a fusion saves: the read and write of the output that a separate
// elementwise kernel (bias, activation, residual add) would add. The backward fusions' operands
// and reference are at the end.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/core/kernel_key.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"
#include "ckgen/host/activation_ref.hpp"
#include "ckgen/host/common.hpp"

namespace ckgen::host {

// The scalars the tests and the profiler run fused instances with (not the defaults, so that a
// kernel reading the wrong one fails).
inline constexpr float kTestResidualBeta = 0.5f;
inline constexpr float kTestLeakySlope = 0.1f;

inline bool is_fused(const KernelKey& k) { return epilogue_ops(k).fused(); }

// "bias_relu_residual"-style spelling of a key's fusion (ckgen/model/vocab.py fusion_spelling).
inline std::string fusion_spelling(const KernelKey& k) {
  std::string s;
  auto add = [&](const char* w) { s += (s.empty() ? "" : "_") + std::string(w); };
  if (k.channel_op != ChannelOp::Identity) add(to_string(k.channel_op));
  if (k.activation != Activation::Identity) add(to_string(k.activation));
  if (k.residual) add("residual");
  if (k.stats) add("stats");
  if (k.out_datatype != k.datatype) add((std::string("to_") + to_string(k.out_datatype)).c_str());
  return s.empty() ? "none" : s;
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

// Backward fusions (a gradient mask on dy, bias_grad): the reference runs the unfused
// operations, dy times the mask (each product rounded to the datatype, as the kernel stages
// it), then the convolution of the masked dy; db is the per-channel sum of the masked dy.
inline bool is_backward_fused(const KernelKey& k) {
  return is_grad_mask(k.activation) || is_backward_op(k.channel_op);
}

// The gradient mask of activation a at the saved forward output y.
inline float grad_mask_ref(Activation a, float y, float alpha) {
  switch (a) {
    case Activation::DRelu: return y > 0.f ? 1.f : 0.f;
    case Activation::DRelu6: return y > 0.f && y < 6.f ? 1.f : 0.f;
    case Activation::DLeakyRelu: return y > 0.f ? 1.f : alpha;
    default: return 1.f;
  }
}

// dy (NDHWGK) times the mask of y for key k (unchanged without one), rounded to dt: the bytes
// of a tensor of dt.
inline std::vector<unsigned char> masked_dy(const KernelKey& k, DataType dt, const std::vector<double>& dy,
                                            const std::vector<double>& y, float alpha) {
  std::vector<unsigned char> out(dy.size() * dtype_bytes(dt));
  for (std::size_t i = 0; i < dy.size(); ++i) {
    const float m = grad_mask_ref(k.activation, float(y[i]), alpha);
    store_host(out.data(), int64_t(i), dt, m == 1.f ? float(dy[i]) : m * float(dy[i]));
  }
  return out;
}

// Per channel c = i mod (G*K) of a tensor in NDHWGK order, the sum of f(v[i]) over the images and
// pixels, appended to `sums`.
template <class F>
void append_channel_sums(const ConvProblem& p, const std::vector<double>& v, F f, std::vector<double>& sums) {
  const int64_t gk = p.G * p.K;
  const std::size_t at = sums.size();
  sums.resize(at + std::size_t(gk), 0.0);
  for (std::size_t i = 0; i < v.size(); ++i) sums[at + std::size_t(int64_t(i) % gk)] += f(v[i]);
}

// db[c] = sum of dy over the images and output pixels; `abs` sums |dy| instead (the scale of db's
// rounding error).
inline std::vector<double> bias_grad_reference(const ConvProblem& p, const std::vector<double>& dy, bool abs = false) {
  std::vector<double> db;
  append_channel_sums(p, dy, [abs](double x) { return abs ? std::fabs(x) : x; }, db);
  return db;
}

// stats: per channel c, the sum of the written output (its values as stored) at c and the sum of
// its squares at G*K + c; `abs` gives their scales instead (sums of |y|, and the sums of squares
// again), against which the fp32 sums' rounding is judged.
inline std::vector<double> stats_reference(const ConvProblem& p, const std::vector<double>& y, bool abs = false) {
  std::vector<double> s;
  append_channel_sums(p, y, [abs](double x) { return abs ? std::fabs(x) : x; }, s);
  append_channel_sums(p, y, [](double x) { return x * x; }, s);
  return s;
}

// Bytes a fused instance saves against the unfused convolution with separate elementwise
// kernels. Forward: one kernel of the same operations (and the conversion to the output's
// datatype), the convolution's write of its result and that kernel's read of it (both read the
// residual and write the output); stats: the statistics pass's read of the output. Backward: the
// mask kernel's write of the masked dy and the convolution's read of it (both read dy and y);
// bias_grad: the reduction kernel's read of dy.
inline double fusion_saved_bytes(const KernelKey& k, const ConvProblem& p, std::size_t elem_bytes) {
  if (!is_fused(k)) return 0.0;
  const double out = double(p.output_elems()) * double(elem_bytes);
  if (!is_backward_fused(k)) {
    const bool elementwise = k.channel_op != ChannelOp::Identity || k.activation != Activation::Identity ||
                             k.residual || k.out_datatype != k.datatype;
    const double written = double(p.output_elems()) * double(dtype_bytes(k.out_datatype));
    return (elementwise ? 2.0 * out : 0.0) + (k.stats ? written : 0.0);
  }
  return (is_grad_mask(k.activation) ? 2.0 * out : 0.0) + (k.channel_op == ChannelOp::BiasGrad ? out : 0.0);
}

}  // namespace ckgen::host
