// The forward activations in fp64, the reference of epilogue/fusion.hpp's activate: the fused
// reference of the tests and the profiler (host/fused_reference.hpp) and the host check of the
// epilogue's arithmetic (tests/host/fusion_ops.cpp). Needs no GPU runtime.
#pragma once

#include <cmath>

#include "ckgen/core/vocab.hpp"

namespace ckgen::host {

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
    default:  // Identity; the backward gradient masks are not activations (grad_mask_ref)
      break;
  }
  return x;
}

}  // namespace ckgen::host
