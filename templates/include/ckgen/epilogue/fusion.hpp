// The fused epilogue of forward instances (the backward gradient masks are at the end): every
// output element, after accumulation and before the conversion to the output type, becomes
//   y = act(op(acc) + beta * residual)
//   op:  acc (ChannelOp::Identity), acc + bias[c] (Bias), acc * scale[c] + bias[c] (ScaleShift)
//   act: identity, relu, relu6 (clamp to [0, 6]), leaky_relu (slope alpha), silu, gelu_tanh
// in fp32 (wavelet_tma's cshuffle residual rounds, epilogue/tma_ws_epilogue.hpp: op(acc) in fp32,
// rounded to the output type, then the residual add and identity / relu / relu6 in the output
// type's paired arithmetic, as the unfused ops round), with c = g * K + k the output channel
// (per-channel vectors: G*K floats) and the residual a tensor of the output's shape, layout and
// type (Cfg::kOutDataType: the inputs', or the problem's conversion). An instance's parts come
// from its epilogue tag (epilogue::Fused<Op, Act, Residual>, core/epilogue_ops.hpp); unfused
// instances take epilogue::Plain, whose apply() is never instantiated, so their code does not
// change.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

namespace fusion {

CKGEN_DEVICE CKGEN_FORCEINLINE float fast_exp(float x) {
#if defined(CKGEN_NVIDIA)
  return __expf(x);
#else
  return __builtin_expf(x);
#endif
}

template <Activation A>
CKGEN_DEVICE CKGEN_FORCEINLINE float activate(float x, float alpha) {
  if constexpr (A == Activation::Relu) {
    return x > 0.f ? x : 0.f;
  } else if constexpr (A == Activation::Relu6) {
    return x > 0.f ? (x < 6.f ? x : 6.f) : 0.f;
  } else if constexpr (A == Activation::LeakyRelu) {
    return x > 0.f ? x : alpha * x;
  } else if constexpr (A == Activation::Silu) {
    return x / (1.f + fast_exp(-x));
  } else if constexpr (A == Activation::GeluTanh) {
    // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3)
    const float u2 = 1.5957691216057308f * (x + 0.044715f * x * x * x);
    return x / (1.f + fast_exp(-u2));
  } else {
    (void)alpha;
    return x;
  }
}

// The channel op on W outputs v[0..W) given their channels' bias b[q] and scale s[q] (read only
// when the op needs them).
template <class Cfg, int W>
CKGEN_DEVICE CKGEN_FORCEINLINE void channel_op(float* v, const float* b, const float* s) {
#pragma unroll
  for (int q = 0; q < W; ++q) {
    if constexpr (Cfg::kChannelOp == ChannelOp::Bias) v[q] += b[q];
    if constexpr (Cfg::kChannelOp == ChannelOp::ScaleShift) v[q] = fmaf(v[q], s[q], b[q]);
  }
}

// The residual add (r[q], only with kResidual) and the activation on W outputs whose channel op
// is applied.
template <class Cfg, int W>
CKGEN_DEVICE CKGEN_FORCEINLINE void residual_act(const EpilogueArgs& e, float* v, const float* r) {
#pragma unroll
  for (int q = 0; q < W; ++q) {
    float x = v[q];
    if constexpr (Cfg::kResidual) x = fmaf(e.beta, r[q], x);
    v[q] = activate<Cfg::kActivation>(x, e.alpha);
  }
}

// Every operation on W outputs v[0..W): channel op, residual add, activation.
template <class Cfg, int W>
CKGEN_DEVICE CKGEN_FORCEINLINE void apply_values(const EpilogueArgs& e, float* v, const float* b,
                                                 const float* s, const float* r) {
  channel_op<Cfg, W>(v, b, s);
  residual_act<Cfg, W>(e, v, r);
}

#if defined(CKGEN_NVIDIA)
// NVIDIA's paired 16-bit type of D, a pair's word viewed as it and back, and a float in both
// halves.
template <DataType D>
using Pair16 = std::conditional_t<D == DataType::BF16, __nv_bfloat162, __half2>;
template <DataType D>
CKGEN_DEVICE CKGEN_FORCEINLINE Pair16<D> as_pair16(const uint32_t u) {
  return *reinterpret_cast<const Pair16<D>*>(&u);
}
template <DataType D>
CKGEN_DEVICE CKGEN_FORCEINLINE uint32_t pair16_bits(const Pair16<D> v) {
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <DataType D>
CKGEN_DEVICE CKGEN_FORCEINLINE Pair16<D> splat_pair16(const float x) {
  if constexpr (D == DataType::BF16)
    return __float2bfloat162_rn(x);
  else
    return __float2half2_rn(x);
}
#endif

// Whether apply_pack2 applies activation A in the conversion to 16 bits (NVIDIA device code).
template <Activation A>
inline constexpr bool kActInConversion =
#if defined(CKGEN_NVIDIA) && CKGEN_DEVICE_PASS
    A == Activation::Relu || A == Activation::Relu6;
#else
    false;
#endif

// Two outputs of one row (f0: the lower column) with their channels' bias b and scale s, through
// the channel op and the activation (no residual), converted to 16-bit type D as one word, f0 in
// the low half. On NVIDIA devices relu and relu6 ride on the conversion (cvt's .relu clamp, relu6's
// upper bound as one paired min): round-to-nearest is monotonic and 0 and 6 are exact, so the
// values are those of the activation in fp32 followed by the conversion, in fewer instructions
// (but for a NaN, which stays NaN here, as PyTorch's relu keeps it).
template <class Cfg, DataType D>
CKGEN_DEVICE CKGEN_FORCEINLINE uint32_t apply_pack2(const EpilogueArgs& e, float (&f)[2], const float* b,
                                                    const float* s) {
  static_assert(D != DataType::FP32, "ckgen: apply_pack2 packs 16-bit outputs");
  static_assert(!Cfg::kResidual, "ckgen: apply_pack2 takes no residual");
  constexpr Activation A = Cfg::kActivation;
  channel_op<Cfg, 2>(f, b, s);
  uint32_t w;
  if constexpr (kActInConversion<A>) {
#if defined(CKGEN_NVIDIA) && CKGEN_DEVICE_PASS
    if constexpr (D == DataType::BF16)
      asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(f[1]), "f"(f[0]));
    else
      asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(f[1]), "f"(f[0]));
    if constexpr (A == Activation::Relu6) w = pair16_bits<D>(__hmin2_nan(as_pair16<D>(w), splat_pair16<D>(6.f)));
#endif
  } else {
#pragma unroll
    for (int q = 0; q < 2; ++q) f[q] = activate<A>(f[q], e.alpha);
    w = pack_pair<D>(f[0], f[1]);
  }
  return w;
}

// Whether the channel op reads the bias / scale vectors.
template <class Cfg>
inline constexpr bool kReadsBias =
    Cfg::kChannelOp == ChannelOp::Bias || Cfg::kChannelOp == ChannelOp::ScaleShift;
template <class Cfg>
inline constexpr bool kReadsScale = Cfg::kChannelOp == ChannelOp::ScaleShift;

// The bias and scale of W consecutive channels, read once where a thread's channels stay the same
// over many stores (the direct paths): a load beside the stores would be repeated for each, as
// the output may alias the vectors. ok: the channels exist (else zeros, never stored).
template <class Cfg, int W>
struct ChannelVals {
  float b[W], s[W];
  CKGEN_DEVICE CKGEN_FORCEINLINE void load(const EpilogueArgs& e, int64_t c, bool ok = true) {
#pragma unroll
    for (int q = 0; q < W; ++q) {
      b[q] = s[q] = 0.f;
      if constexpr (kReadsBias<Cfg>) b[q] = ok ? e.bias[c + q] : 0.f;
      if constexpr (kReadsScale<Cfg>) s[q] = ok ? e.scale[c + q] : 0.f;
    }
  }
};

// W consecutive outputs v[0..W) whose channels' bias and scale are ch, at element offset `off` of
// the output (the residual's offset too), rewritten in place.
template <class Cfg, int W>
CKGEN_DEVICE CKGEN_FORCEINLINE void apply(const EpilogueArgs& e, float* v, const ChannelVals<Cfg, W>& ch,
                                          int64_t off) {
  using Raw = typename DataTypeTraits<Cfg::kOutDataType>::raw;  // the residual is in the output's type
  float r[W];
  if constexpr (Cfg::kResidual) {
    const Raw* res = static_cast<const Raw*>(e.residual) + off;
    if constexpr (W > 1 && W * sizeof(Raw) <= 16 && (W & (W - 1)) == 0) {
      const Vec<Raw, W> rv = *reinterpret_cast<const Vec<Raw, W>*>(res);
#pragma unroll
      for (int q = 0; q < W; ++q) r[q] = raw_to_float<Cfg::kOutDataType>(rv.v[q]);
    } else {
#pragma unroll
      for (int q = 0; q < W; ++q) r[q] = raw_to_float<Cfg::kOutDataType>(res[q]);
    }
  }
  apply_values<Cfg, W>(e, v, ch.b, ch.s, r);
}

// W consecutive outputs v[0..W) of channels c..c+W-1, at element offset `off` of the output.
template <class Cfg, int W>
CKGEN_DEVICE CKGEN_FORCEINLINE void apply(const EpilogueArgs& e, float* v, int64_t c, int64_t off) {
  ChannelVals<Cfg, W> ch;
  ch.load(e, c);
  apply<Cfg, W>(e, v, ch, off);
}

// Backward gradient masks (Activation::DRelu, DRelu6, DLeakyRelu): dy scaled by the gradient
// of the forward activation at its saved output y: 1 where y > 0 (relu6: 0 < y < 6), else 0
// (leaky_relu: alpha). Applied by the loaders as dy is staged (block/tile_loader.hpp), by
// wavelet_tma's math warps and by the masked copies of dy (kernel/mask_copy.hpp).
template <Activation A, DataType D>
CKGEN_HOST_DEVICE CKGEN_FORCEINLINE typename DataTypeTraits<D>::raw grad_mask(
    typename DataTypeTraits<D>::raw dy, typename DataTypeTraits<D>::raw y, float alpha) {
  using Raw = typename DataTypeTraits<D>::raw;
  const float yf = raw_to_float<D>(y);
  if constexpr (A == Activation::DRelu) {
    return yf > 0.f ? dy : Raw(0);
  } else if constexpr (A == Activation::DRelu6) {
    return yf > 0.f && yf < 6.f ? dy : Raw(0);
  } else {
    static_assert(A == Activation::DLeakyRelu, "ckgen: not a gradient mask");
    // dy x 1 or x alpha, one multiply either way (no branch: wavelet_tma's wgmma stay pipelined)
    return float_to_raw<D>((yf > 0.f ? 1.f : alpha) * raw_to_float<D>(dy));
  }
}

}  // namespace fusion

}  // namespace ckgen
