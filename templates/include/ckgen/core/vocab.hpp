// Rendered from ckgen/model/vocab.py by `python -m ckgen.model.vocab`; do not edit by hand.
#pragma once

namespace ckgen {

enum class Variant { Forward, BackwardData, BackwardWeight };
inline constexpr const char* to_string(Variant v) {
  switch (v) {
    case Variant::Forward: return "forward";
    case Variant::BackwardData: return "backward_data";
    case Variant::BackwardWeight: return "backward_weight";
  }
  return "?";
}

enum class DataType { FP16, BF16, FP32 };
inline constexpr const char* to_string(DataType v) {
  switch (v) {
    case DataType::FP16: return "fp16";
    case DataType::BF16: return "bf16";
    case DataType::FP32: return "fp32";
  }
  return "?";
}

enum class Pipeline { Basic, Multistage, Wavelet, WaveletTma, Direct, Pointwise };
inline constexpr const char* to_string(Pipeline v) {
  switch (v) {
    case Pipeline::Basic: return "basic";
    case Pipeline::Multistage: return "multistage";
    case Pipeline::Wavelet: return "wavelet";
    case Pipeline::WaveletTma: return "wavelet_tma";
    case Pipeline::Direct: return "direct";
    case Pipeline::Pointwise: return "pointwise";
  }
  return "?";
}

enum class Scheduler { Intrawave, Interwave };
inline constexpr const char* to_string(Scheduler v) {
  switch (v) {
    case Scheduler::Intrawave: return "intrawave";
    case Scheduler::Interwave: return "interwave";
  }
  return "?";
}

enum class Epilogue { Default, CShuffle };
inline constexpr const char* to_string(Epilogue v) {
  switch (v) {
    case Epilogue::Default: return "default";
    case Epilogue::CShuffle: return "cshuffle";
  }
  return "?";
}

enum class ChannelOp { Identity, Bias, ScaleShift, BiasGrad };
inline constexpr const char* to_string(ChannelOp v) {
  switch (v) {
    case ChannelOp::Identity: return "none";
    case ChannelOp::Bias: return "bias";
    case ChannelOp::ScaleShift: return "scale_shift";
    case ChannelOp::BiasGrad: return "bias_grad";
  }
  return "?";
}

enum class Activation { Identity, Relu, Relu6, LeakyRelu, Silu, GeluTanh, DRelu, DRelu6, DLeakyRelu };
inline constexpr const char* to_string(Activation v) {
  switch (v) {
    case Activation::Identity: return "none";
    case Activation::Relu: return "relu";
    case Activation::Relu6: return "relu6";
    case Activation::LeakyRelu: return "leaky_relu";
    case Activation::Silu: return "silu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::DRelu: return "drelu";
    case Activation::DRelu6: return "drelu6";
    case Activation::DLeakyRelu: return "dleaky_relu";
  }
  return "?";
}

enum class Specialization { Default, Filter1x1Pad0, Filter1x1Stride1Pad0, Stride1, Window };
inline constexpr const char* to_string(Specialization v) {
  switch (v) {
    case Specialization::Default: return "default";
    case Specialization::Filter1x1Pad0: return "filter1x1_pad0";
    case Specialization::Filter1x1Stride1Pad0: return "filter1x1_stride1_pad0";
    case Specialization::Stride1: return "stride1";
    case Specialization::Window: return "window";
  }
  return "?";
}

enum class Reduction { SplitK, StreamKLinear, StreamKTree };
inline constexpr const char* to_string(Reduction v) {
  switch (v) {
    case Reduction::SplitK: return "splitk";
    case Reduction::StreamKLinear: return "streamk_linear";
    case Reduction::StreamKTree: return "streamk_tree";
  }
  return "?";
}

enum class Stage { One, Two };
inline constexpr const char* to_string(Stage v) {
  switch (v) {
    case Stage::One: return "one";
    case Stage::Two: return "two";
  }
  return "?";
}

enum class MathUnit { MmaSync, Wgmma, Mfma, Wmma, Fma };
inline constexpr const char* to_string(MathUnit v) {
  switch (v) {
    case MathUnit::MmaSync: return "mma_sync";
    case MathUnit::Wgmma: return "wgmma";
    case MathUnit::Mfma: return "mfma";
    case MathUnit::Wmma: return "wmma";
    case MathUnit::Fma: return "fma";
  }
  return "?";
}

enum class Platform { Nvidia, Amd };
inline constexpr const char* to_string(Platform v) {
  switch (v) {
    case Platform::Nvidia: return "nvidia";
    case Platform::Amd: return "amd";
  }
  return "?";
}

inline constexpr bool is_grad_mask(Activation v) { return v == Activation::DRelu || v == Activation::DRelu6 || v == Activation::DLeakyRelu; }
inline constexpr bool is_backward_op(ChannelOp v) { return v == ChannelOp::BiasGrad; }

// An activation's token in instance names (Activation.short, model/naming.py).
inline constexpr const char* name_token(Activation v) {
  switch (v) {
    case Activation::Identity: return "none";
    case Activation::Relu: return "relu";
    case Activation::Relu6: return "relu6";
    case Activation::LeakyRelu: return "lrelu";
    case Activation::Silu: return "silu";
    case Activation::GeluTanh: return "gelutanh";
    case Activation::DRelu: return "drelu";
    case Activation::DRelu6: return "drelu6";
    case Activation::DLeakyRelu: return "dlrelu";
  }
  return "?";
}

// The bytes of one element (DATATYPE_BYTES).
inline constexpr int elem_bytes(DataType v) {
  switch (v) {
    case DataType::FP16: return 2;
    case DataType::BF16: return 2;
    case DataType::FP32: return 4;
  }
  return 0;
}

}  // namespace ckgen
