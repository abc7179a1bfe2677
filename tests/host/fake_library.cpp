// A registry of fake instances (forward plain and fused, backward with gradient masks and
// bias_grad) for the C API host-only
// (tests/test_fused_capi.py links it with dispatch/ckgen_dispatch.cpp: into tests/host/capi_fused.cpp
// and into a libckgen_dispatch.so that ckgen.Registry loads). No GPU: run() records its operands.
#include <memory>
#include <string>

#include "ckgen/kernel/kernel_base.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen;

namespace {

ConvTensors g_last;
int g_runs = 0;

struct FakeKernel : KernelBase {
  KernelKey k;
  explicit FakeKernel(KernelKey key) : k(std::move(key)) {}
  const KernelKey& key() const override { return k; }
  std::string is_supported(const ConvProblem& p, const RunOptions&) const override {
    if (p.ndim != k.ndim) return "ndim mismatch";
    return p.C % 8 == 0 && p.K % 8 == 0 ? "" : "vector width 8 needs C and K to be multiples of 8";
  }
  std::size_t workspace_bytes(const ConvProblem&, const RunOptions&) const override { return 0; }
  gpuError_t run(const ConvProblem&, const ConvTensors& t, void*, gpuStream_t, const RunOptions&) const override {
    g_last = t;
    ++g_runs;
    return gpuSuccess;
  }
};

// tile 128x128 (plain) or 64x64 (fused): the cost model would prefer neither by fusion.
std::unique_ptr<KernelBase> fake(const std::string& name, int tile, ChannelOp op, Activation act, bool res,
                                 Variant v = Variant::Forward, bool stats = false,
                                 DataType out = DataType::FP16) {
  KernelKey k = ckgen_test::fake_key(name, v, tile, tile, 32);
  k.channel_op = op;
  k.activation = act;
  k.residual = res;
  k.stats = stats;
  k.out_datatype = out;
  return std::make_unique<FakeKernel>(std::move(k));
}

}  // namespace

namespace ckgen {
Registry& registry() {
  static Registry r = [] {
    Registry x;
    x.add(fake("fwd_plain_t128", 128, ChannelOp::Identity, Activation::Identity, false));
    x.add(fake("fwd_bias_relu_t64", 64, ChannelOp::Bias, Activation::Relu, false));
    x.add(fake("fwd_plain_t64", 64, ChannelOp::Identity, Activation::Identity, false));
    x.add(fake("fwd_ss_silu_res_t64", 64, ChannelOp::ScaleShift, Activation::Silu, true));
    x.add(fake("fwd_bias_relu_t128", 128, ChannelOp::Bias, Activation::Relu, false));
    x.add(fake("fwd_bias_relu_stats_t64", 64, ChannelOp::Bias, Activation::Relu, false, Variant::Forward, true));
    x.add(fake("fwd_bias_relu_ofp32_t64", 64, ChannelOp::Bias, Activation::Relu, false, Variant::Forward, false,
               DataType::FP32));
    x.add(fake("bwd_data_drelu_t64", 64, ChannelOp::Identity, Activation::DRelu, false, Variant::BackwardData));
    x.add(fake("bwd_weight_bgrad_drelu_t64", 64, ChannelOp::BiasGrad, Activation::DRelu, false,
               Variant::BackwardWeight));
    return x;
  }();
  return r;
}
}  // namespace ckgen

// The last run's epilogue operands and the number of runs so far.
extern "C" __attribute__((visibility("default"))) int fake_last_run(const void** bias, const void** scale,
                                                                    const void** residual, float* beta,
                                                                    float* alpha) {
  *bias = g_last.ep.bias;
  *scale = g_last.ep.scale;
  *residual = g_last.ep.residual;
  *beta = g_last.ep.beta;
  *alpha = g_last.ep.alpha;
  return g_runs;
}

// The last run's backward operands (saved forward output y, db) and the number of runs so far.
extern "C" __attribute__((visibility("default"))) int fake_last_grad(const void** y, float** db) {
  *y = g_last.ep.y;
  *db = g_last.ep.db;
  return g_runs;
}

// The last run's stats output and the number of runs so far.
extern "C" __attribute__((visibility("default"))) int fake_last_stats(float** stats) {
  *stats = g_last.ep.stats;
  return g_runs;
}
