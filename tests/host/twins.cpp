// Host-only checks of the dispatcher's twins (dispatch/twins.hpp; tests/test_dispatch.py compiles
// this like neighbour_ranking.cpp): a fused request ranks its candidates as their plain twins, and
// a bf16 request reads a database of fp16 measurements. Prints "ok <check>" per passed check,
// "FAIL <check>: ..." and exits 1 on the first failure.
#include <cstdio>
#include <memory>
#include <string>

#include "ckgen/dispatch/dispatcher.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen;
using namespace ckgen_test;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const std::string db = dir + "/db.json";
  // --- fused requests rank as their plain twins ----------------------------------------------
  {
    // fwd_a / fwd_b plain and fused (bias_relu, and fwd_a's bias_relu_res): a fused request's
    // candidates are ranked with their plain twins' database entries, exactly as the plain request
    auto fused_key = [&](const std::string& plain, int tm, ChannelOp op, Activation act, bool res) {
      KernelKey k = key(plain, Variant::Forward, tm, 64, 32);
      k.name = plain + (op == ChannelOp::Bias ? "_bias" : "") + (act == Activation::Relu ? "_relu" : "") +
               (res ? "_res" : "");
      k.channel_op = op, k.activation = act, k.residual = res;
      return k;
    };
    Registry freg;
    freg.add(std::make_unique<FakeKernel>(key("fwd_a", Variant::Forward, 128, 64, 32)));
    freg.add(std::make_unique<FakeKernel>(key("fwd_b", Variant::Forward, 64, 64, 32)));
    freg.add(std::make_unique<FakeKernel>(fused_key("fwd_a", 128, ChannelOp::Bias, Activation::Relu, false)));
    freg.add(std::make_unique<FakeKernel>(fused_key("fwd_b", 64, ChannelOp::Bias, Activation::Relu, false)));
    freg.add(std::make_unique<FakeKernel>(fused_key("fwd_a", 128, ChannelOp::Bias, Activation::Relu, true)));
    Dispatcher fd(freg);
    const KernelKey& res_key = freg.all()[size_t(fd.index_of("fwd_a_bias_relu_res"))]->key();
    check(plain_twin_name(res_key) == "fwd_a" && plain_twin_name(freg.all()[0]->key()) == "fwd_a",
          "plain_twin_name drops the fused epilogue's tokens", plain_twin_name(res_key));
    KernelKey stats_key = fused_key("fwd_b", 64, ChannelOp::Bias, Activation::Relu, false);
    stats_key.name += "_stats";
    stats_key.stats = true;
    check(plain_twin_name(stats_key) == "fwd_b", "plain_twin_name drops stats too", plain_twin_name(stats_key));
    const EpilogueOps br{ChannelOp::Bias, Activation::Relu, false};
    const ConvProblem tuned = conv(2, 256, 256, 52), target = conv(2, 256, 256, 56);
    const Selection c = fd.by_cost(target, DataType::FP16, Variant::Forward);
    const std::string pref = c.kernel->name(), other = pref == "fwd_a" ? "fwd_b" : "fwd_a";
    const Selection cf = fd.by_cost(target, DataType::FP16, Variant::Forward, br);
    check(cf.kernel->name() == pref + "_bias_relu", "the cost model ranks fused twins as their plain ones",
          cf.kernel->name());
    // the cost model's favourite ran 3x its estimate on a nearby shape: both requests turn
    auto est = [&](const std::string& n, const ConvProblem& p) {
      return estimate_cost(freg.all()[size_t(fd.index_of(n))]->key(), p, 1, fd.arch()).us * 1e-3;
    };
    write_db(db, {entry_json("forward", "tuned", tuned, {{other, 0, est(other, tuned)}, {pref, 0, 3 * est(pref, tuned)}})});
    fd.load_tuning_db(db);
    Selection s = fd.select(target, DataType::FP16, Variant::Forward);
    Selection f = fd.select(target, DataType::FP16, Variant::Forward, br);
    check(s.kernel->name() == other && f.source == "tuning-db-nearest" && f.kernel->name() == other + "_bias_relu" &&
              f.why.find("plain twin " + other) != std::string::npos,
          "a fused request takes the neighbour ranking of its plain twins", f.kernel->name() + " | " + f.why);
    f = fd.select(tuned, DataType::FP16, Variant::Forward, br);
    check(f.source == "tuning-db-exact" && f.kernel->name() == other + "_bias_relu",
          "a fused request takes its plain twins' exact ranking", f.kernel->name() + " | " + f.why);
    // the exact ranking's winner has no twin with the operations: the next twin that has one
    const EpilogueOps brr{ChannelOp::Bias, Activation::Relu, true};
    write_db(db, {entry_json("forward", "tuned", tuned, {{"fwd_b", 0, 1.0}, {"fwd_a", 0, 2.0}})});
    fd.load_tuning_db(db);
    f = fd.select(tuned, DataType::FP16, Variant::Forward, brr);
    check(f.source == "tuning-db-exact" && f.kernel->name() == "fwd_a_bias_relu_res",
          "a ranked instance without a fused twin is passed over", f.kernel->name() + " | " + f.why);
    const std::vector<Dispatcher::CostCandidate> cs = fd.candidates(tuned, DataType::FP16, Variant::Forward, 4, br);
    check(cs.size() == 2 && freg.all()[size_t(cs[0].index)]->name() == "fwd_b_bias_relu" &&
              freg.all()[size_t(cs[1].index)]->name() == "fwd_a_bias_relu",
          "fused candidates follow the plain twins' ranking", std::to_string(cs.size()));
  }
  // --- a gradient mask's cost rides on the twins' measurements ---------------------------------
  {
    // bd_a's mask is a copy of dy (a mask-copy face), bd_b's in the kernel (wavelet_tma, dx's
    // channels in one column tile, a 1x1 filter: each dy tile read once); the database timed bd_a
    // 5 % faster than bd_b, less than the copy of dy costs
    KernelKey a = key("bd_a", Variant::BackwardData, 128, 128, 32);
    KernelKey b = key("bd_b", Variant::BackwardData, 128, 128, 64);
    b.pipeline = Pipeline::WaveletTma;
    KernelKey fa = a, fb = b;
    fa.name += "_drelu", fb.name += "_drelu";
    fa.activation = fb.activation = Activation::DRelu;
    fa.mask_copy = true;
    Registry mreg;
    for (const KernelKey& k : {a, b, fa, fb}) mreg.add(std::make_unique<FakeKernel>(k));
    Dispatcher md(mreg);
    const ConvProblem tuned = conv(32, 128, 256, 52, 1), target = conv(32, 128, 256, 56, 1);
    const EpilogueOps drelu{ChannelOp::Identity, Activation::DRelu, false, false, 0};
    const double copy_us = estimate_cost(fa, tuned, 1, md.arch()).us - estimate_cost(a, tuned, 1, md.arch()).us;
    const double y_us = estimate_cost(fb, tuned, 1, md.arch()).us - estimate_cost(b, tuned, 1, md.arch()).us;
    check(y_us > 0 && copy_us > 2 * y_us, "the model: y's tiles cost less than the copy of dy",
          std::to_string(y_us) + " / " + std::to_string(copy_us));
    write_db(db, {entry_json("backward_data", "tuned", tuned, {{"bd_a", 0, 0.0100}, {"bd_b", 0, 0.0105}})});
    md.load_tuning_db(db);
    Selection m = md.select(tuned, DataType::FP16, Variant::BackwardData);
    check(m.source == "tuning-db-exact" && m.kernel->name() == "bd_a", "plain: the ranking's first",
          m.kernel ? m.kernel->name() : m.why);
    m = md.select(tuned, DataType::FP16, Variant::BackwardData, drelu);
    check(m.source == "tuning-db-exact" && m.kernel->name() == "bd_b_drelu",
          "drelu, exact: the twins' times plus the mask's cost", m.kernel ? m.kernel->name() + " | " + m.why : m.why);
    m = md.select(target, DataType::FP16, Variant::BackwardData, drelu);
    check(m.source == "tuning-db-nearest" && m.kernel->name() == "bd_b_drelu" &&
              m.why.find("of its fused operations") != std::string::npos,
          "drelu, nearest: the same", m.kernel ? m.kernel->name() + " | " + m.why : m.why);
  }
  // --- bf16 requests read a database of fp16 measurements (sibling_datatype) ------------------
  {
    auto typed = [&](const std::string& name, int tm, DataType dt) {
      KernelKey k = key(name, Variant::Forward, tm, 64, 32);
      k.datatype = k.out_datatype = dt;
      return k;
    };
    Registry sreg;
    sreg.add(std::make_unique<FakeKernel>(typed("conv_bf16_a", 128, DataType::BF16)));
    sreg.add(std::make_unique<FakeKernel>(typed("conv_bf16_b", 64, DataType::BF16)));
    sreg.add(std::make_unique<FakeKernel>(typed("conv_fp16_a", 128, DataType::FP16)));
    Dispatcher sd(sreg);
    check(with_datatype("conv_fp16_a", DataType::FP16, DataType::BF16) == "conv_bf16_a" &&
              sibling_datatype(DataType::BF16) == DataType::FP16 && sibling_datatype(DataType::FP32) == DataType::FP32,
          "sibling datatypes and names");
    const ConvProblem tuned = conv(2, 256, 256, 52);
    // fp16 entries only: the bf16 request takes the ranking of its twins' fp16 names
    write_db(db, {entry_json("forward", "tuned", tuned, {{"conv_fp16_b", 0, 1.0}, {"conv_fp16_a", 0, 2.0}})});
    sd.load_tuning_db(db);
    Selection b = sd.select(tuned, DataType::BF16, Variant::Forward);
    check(b.source == "tuning-db-exact" && b.kernel->name() == "conv_bf16_b" &&
              b.why.find("fp16 measurements for bf16") != std::string::npos,
          "a bf16 request reads the fp16 entries", b.kernel ? b.kernel->name() + " | " + b.why : b.why);
    b = sd.select(conv(2, 256, 256, 56), DataType::BF16, Variant::Forward);
    check(b.source == "tuning-db-nearest" && b.why.find("fp16 measurements for bf16") != std::string::npos,
          "and ranks its neighbours by them", b.why);
    // an fp16 request keeps the fp16 names
    b = sd.select(tuned, DataType::FP16, Variant::Forward);
    check(b.source == "tuning-db-exact" && b.kernel->name() == "conv_fp16_a", "fp16 reads its own entries",
          b.kernel ? b.kernel->name() + " | " + b.why : b.why);
  }
  std::printf("all passed\n");
  return 0;
}
