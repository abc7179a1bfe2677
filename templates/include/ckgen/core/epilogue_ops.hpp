// The fused epilogue's words as the host and the device share them (epilogue/fusion.hpp applies
// them): the run-time operands, the operations as a run-time value (a selection's request, an
// instance's key) and the epilogue tags' compile-time part.
#pragma once

#include "ckgen/core/kernel_key.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Run-time operands of a fused epilogue (all null for an unfused call).
struct EpilogueArgs {
  const float* bias = nullptr;     // G*K: Bias, or ScaleShift's shift
  const float* scale = nullptr;    // G*K: ScaleShift
  const void* residual = nullptr;  // the output's shape, layout and datatype
  float beta = 1.f;                // residual scale
  float alpha = 0.01f;             // LeakyRelu's negative slope (and DLeakyRelu's)
  const void* y = nullptr;         // backward gradient masks: the saved forward output (dy's shape)
  float* db = nullptr;             // BiasGrad: G*K fp32 sums of dy, zeroed and written by run()
  float* stats = nullptr;          // stats: 2*G*K fp32, the sums of y per channel then of y*y,
                                   // zeroed and written by run()
};

// The operations of a fused epilogue as a run-time value: what a selection asks for and what an
// instance's key provides (epilogue_ops(const KernelKey&), kernel/kernel_base.hpp).
struct EpilogueOps {
  ChannelOp channel_op = ChannelOp::Identity;
  Activation activation = Activation::Identity;
  bool residual = false;
  bool stats = false;
  int out_datatype = 0;  // 0: the output in the inputs' datatype; else 1 + the DataType converted to
  bool fused() const { return code() != 0; }
  // Whether the operations read operands (a conversion alone, to_<datatype>, reads none).
  bool reads_operands() const {
    return channel_op != ChannelOp::Identity || residual || stats || is_grad_mask(activation);
  }
  int code() const {
    return out_datatype * 2048 + int(channel_op) * 128 + int(activation) * 4 + (residual ? 2 : 0) + (stats ? 1 : 0);
  }
  friend bool operator==(const EpilogueOps& a, const EpilogueOps& b) { return a.code() == b.code(); }
  friend bool operator!=(const EpilogueOps& a, const EpilogueOps& b) { return a.code() != b.code(); }
};

// Why a request for the operations `o` cannot be met by any instance of variant v ("" when it
// can): forward fuses the epilogue operations, backward_data a gradient mask, backward_weight a
// gradient mask and bias_grad (ckgen/space/rules/common.py check_fusion holds the full rule).
inline const char* epilogue_variant_refusal(Variant v, const EpilogueOps& o) {
  if (!o.fused()) return "";
  if (o.out_datatype != 0 && v != Variant::Forward) return "output datatype conversion (to_*) is a forward operation";
  const bool grad = is_grad_mask(o.activation) || is_backward_op(o.channel_op);
  if (v == Variant::Forward) return grad ? "gradient masks and bias_grad are backward operations" : "";
  if (o.stats) return "stats (the output's channel statistics) is a forward operation";
  if (o.residual || (o.activation != Activation::Identity && !is_grad_mask(o.activation)) ||
      (o.channel_op != ChannelOp::Identity && !is_backward_op(o.channel_op)))
    return "backward kernels fuse a gradient mask (and, backward_weight, bias_grad) only";
  if (v == Variant::BackwardData && o.channel_op == ChannelOp::BiasGrad)
    return "bias_grad is a backward_weight operation";
  return "";
}

// EpilogueOps::out_datatype of an output in `out` from inputs in `in`.
constexpr int out_datatype_code(DataType in, DataType out) { return in == out ? 0 : 1 + int(out); }

// The fused operations of an instance (none for a plain convolution).
inline EpilogueOps epilogue_ops(const KernelKey& k) {
  return {k.channel_op, k.activation, k.residual, k.stats, out_datatype_code(k.datatype, k.out_datatype)};
}

namespace epilogue {
// The operations of a fused epilogue, as the epilogue tags (kernel/conv_kernel.hpp) carry them.
template <ChannelOp Op, Activation Act, bool Residual, bool Stats = false>
struct Fused {
  static constexpr ChannelOp kChannelOp = Op;
  static constexpr Activation kActivation = Act;
  static constexpr bool kResidual = Residual;
  static constexpr bool kStats = Stats;  // the output's channel statistics (forward)
  static constexpr bool kFused = Op != ChannelOp::Identity || Act != Activation::Identity || Residual || Stats;
  // Backward: dy is multiplied by the gradient mask as it is loaded (kGradMask); backward_weight
  // also sums it per channel into db (kBiasGrad). The output epilogue then applies nothing.
  static constexpr bool kGradMask = is_grad_mask(Act);
  static constexpr bool kBiasGrad = Op == ChannelOp::BiasGrad;
  static constexpr bool kEpilogueOps = kFused && !kGradMask && !is_backward_op(Op);
};
using Plain = Fused<ChannelOp::Identity, Activation::Identity, false>;
}  // namespace epilogue

// An instance configuration with its gradient mask taken off (the rest as Cfg): the unmasked twin
// that wavelet_tma runs over a masked copy of dy (kernel/tma_kernel.hpp premask).
template <class Cfg>
struct WithoutGradMask : Cfg {
  static constexpr Activation kActivation = Activation::Identity;
  static constexpr bool kGradMask = false;
  static constexpr bool kFused = false;
  static constexpr bool kEpilogueOps = false;
};

}  // namespace ckgen
