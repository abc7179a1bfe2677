// The forward epilogue's arithmetic (epilogue/fusion.hpp) on the host: for every channel op,
// activation and residual, fusion::apply on W outputs (its channel vectors read per call, and
// read once into fusion::ChannelVals as the direct paths do) equals the definition written out
// here, y = act(op(acc) + beta * residual), with op(acc) = acc, acc + b[c] or acc * s[c] + b[c]
// and act the fused reference's (host/activation_ref.hpp);
// ChannelVals with `ok` false reads nothing and gives zeros.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/host/activation_ref.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen;
using namespace ckgen_test;

namespace {

template <ChannelOp Op, Activation Act, bool Res>
struct Cfg : epilogue::Fused<Op, Act, Res> {
  static constexpr DataType kOutDataType = DataType::FP32;
};

// The largest difference of apply (both forms) from the definition over random values.
template <ChannelOp Op, Activation Act, bool Res>
double worst() {
  using C = Cfg<Op, Act, Res>;
  constexpr int W = 4, kChans = 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  std::vector<float> bias(kChans), scale(kChans), res(64);
  for (float& v : bias) v = u(rng);
  for (float& v : scale) v = u(rng);
  for (float& v : res) v = u(rng);
  EpilogueArgs e;
  e.bias = bias.data();
  e.scale = scale.data();
  e.residual = Res ? res.data() : nullptr;
  e.beta = 0.75f;
  e.alpha = 0.1f;
  double w = 0;
  for (int c = 0; c + W <= kChans; c += W)
    for (int off = 0; off + W <= 64; off += 8) {
      float v[W], v2[W];
      for (int q = 0; q < W; ++q) v[q] = v2[q] = u(rng);
      double want[W];
      for (int q = 0; q < W; ++q) {
        double x = v[q];
        if (Op == ChannelOp::Bias) x += bias[size_t(c + q)];
        if (Op == ChannelOp::ScaleShift) x = x * scale[size_t(c + q)] + bias[size_t(c + q)];
        if (Res) x += double(e.beta) * res[size_t(off + q)];
        want[q] = host::activate_ref(Act, x, e.alpha);
      }
      fusion::apply<C, W>(e, v, c, off);
      fusion::ChannelVals<C, W> ch;
      ch.load(e, c);
      fusion::apply<C, W>(e, v2, ch, off);
      for (int q = 0; q < W; ++q) {
        const double tol = 1e-5 * (1 + std::fabs(want[q]));
        w = std::max(w, std::fabs(v[q] - want[q]) / tol);
        w = std::max(w, std::fabs(v2[q] - want[q]) / tol);
      }
    }
  return w;
}

template <ChannelOp Op, bool Res>
void check_op(const char* op) {
  const Activation acts[] = {Activation::Identity,  Activation::Relu, Activation::Relu6,
                             Activation::LeakyRelu, Activation::Silu, Activation::GeluTanh};
  const double r[] = {worst<Op, Activation::Identity, Res>(), worst<Op, Activation::Relu, Res>(),
                      worst<Op, Activation::Relu6, Res>(),    worst<Op, Activation::LeakyRelu, Res>(),
                      worst<Op, Activation::Silu, Res>(),     worst<Op, Activation::GeluTanh, Res>()};
  for (int i = 0; i < 6; ++i) {
    const std::string what = std::string("apply equals the definition: ") + op + " " + to_string(acts[i]) +
                             (Res ? " residual" : "");
    // silu / gelu use the fast exponential: a looser bound
    const double bound = acts[i] == Activation::Silu || acts[i] == Activation::GeluTanh ? 20.0 : 1.0;
    check(r[i] <= bound, what.c_str(), std::to_string(r[i]));
  }
}

}  // namespace

int main() {
  check_op<ChannelOp::Identity, false>("identity");
  check_op<ChannelOp::Bias, false>("bias");
  check_op<ChannelOp::ScaleShift, false>("scale_shift");
  check_op<ChannelOp::Bias, true>("bias");
  check_op<ChannelOp::ScaleShift, true>("scale_shift");

  using C = Cfg<ChannelOp::ScaleShift, Activation::Identity, false>;
  EpilogueArgs e;  // null vectors: a load that is not ok must not touch them
  fusion::ChannelVals<C, 2> ch;
  ch.load(e, 0, false);
  check(ch.b[0] == 0.f && ch.b[1] == 0.f && ch.s[0] == 0.f && ch.s[1] == 0.f,
        "ChannelVals: channels that do not exist read as zeros");
  std::printf("all passed\n");
  return 0;
}
