// The fused epilogue's words as the host and the device share them (epilogue/fusion.hpp applies
// them): the run-time operands, the operations as a run-time value (a selection's request, an
// instance's key) and the epilogue tags' compile-time part.
#pragma once

#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Run-time operands of a fused epilogue (all null for an unfused call).
struct EpilogueArgs {
  const float* bias = nullptr;     // G*K: Bias, or ScaleShift's shift
  const float* scale = nullptr;    // G*K: ScaleShift
  const void* residual = nullptr;  // the output's shape, layout and datatype
  float beta = 1.f;                // residual scale
  float alpha = 0.01f;             // LeakyRelu's negative slope
};

// The operations of a fused epilogue as a run-time value: what a selection asks for and what an
// instance's key provides (epilogue_ops(const KernelKey&), kernel/kernel_base.hpp).
struct EpilogueOps {
  ChannelOp channel_op = ChannelOp::Identity;
  Activation activation = Activation::Identity;
  bool residual = false;
  bool fused() const { return code() != 0; }
  int code() const { return int(channel_op) * 16 + int(activation) * 2 + (residual ? 1 : 0); }
  friend bool operator==(const EpilogueOps& a, const EpilogueOps& b) { return a.code() == b.code(); }
  friend bool operator!=(const EpilogueOps& a, const EpilogueOps& b) { return a.code() != b.code(); }
};

namespace epilogue {
// The operations of a fused epilogue, as the epilogue tags (kernel/conv_kernel.hpp) carry them.
template <ChannelOp Op, Activation Act, bool Residual>
struct Fused {
  static constexpr ChannelOp kChannelOp = Op;
  static constexpr Activation kActivation = Act;
  static constexpr bool kResidual = Residual;
  static constexpr bool kFused = Op != ChannelOp::Identity || Act != Activation::Identity || Residual;
};
using Plain = Fused<ChannelOp::Identity, Activation::Identity, false>;
}  // namespace epilogue

}  // namespace ckgen
