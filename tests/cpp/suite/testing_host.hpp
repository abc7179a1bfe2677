// The host-only suites (testing.hpp): streamk_host and harness_host, run without a GPU too.
#pragma once

#include "ckgen/kernel/mask_copy_kernel.hpp"
#include "testing_common.hpp"
#include "testing_streamk.hpp"
#include "testing_sweep.hpp"

namespace ckgen::host {
namespace testing_detail {

// --------------------------------------------------------------------------- host-only checks
// StreamK plan arithmetic (schedule/streamk_plan.hpp): hand-computed grids, workspaces and flag layout,
// the schedule simulation over a range of shapes, injected faults that it must catch
// (streamk_checks.hpp; tests/test_streamk_host.py runs the same checks with g++).
inline void register_streamk_host_tests() {
  const std::string suite = "streamk_host";
  add_test(suite, "grid_workspace_and_flags_hand_computed", [] {
    EXPECT_EQ(check_streamk_hand_computed(), "");
  });
  add_test(suite, "schedule_linear", [] {
    EXPECT_EQ(check_streamk_schedules(Reduction::StreamKLinear), "");
  });
  add_test(suite, "schedule_tree", [] {
    EXPECT_EQ(check_streamk_schedules(Reduction::StreamKTree), "");
  });
  add_test(suite, "injected_faults_are_caught", [] {
    EXPECT_EQ(check_streamk_faults_caught(), "");
  });
  add_test(suite, "instances_size_their_workspace_from_the_plan", [] {
    // Every StreamK instance: workspace_bytes == the formula on streamk_plan_of (the plan the
    // GPU cases are chosen with) at forced grids (no device query); a mask-copy face's workspace
    // holds the masked copy of dy first (kernel/mask_copy.hpp).
    const ConvProblem p = make_problem(2, 2, 4, 64, 72, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1});
    for (const KernelBase* k : instances_of(Variant::BackwardWeight)) {
      if (!is_streamk(*k) || k->key().ndim != 2) continue;
      const KernelKey& key = k->key();
      for (int blocks : {1, 3, 7, 64}) {
        RunOptions o;
        o.streamk_blocks = blocks;
        const StreamKPlan s = streamk_plan_of(key, p, blocks);
        const std::size_t copy = key.mask_copy ? detail::mask_copy_bytes(p, key.datatype) : 0;
        EXPECT_EQ(k->workspace_bytes(p, o),
                  copy + std::size_t(streamk_workspace_bytes(s, key.tile_m, key.tile_n)))
            << k->name() << " blocks " << blocks;
      }
    }
  });
}

inline void register_host_tests() {
  const std::string suite = "harness_host";
  add_test(suite, "cpu_reference_hand_computed", [] {
    // 1D: x = [1,2,3,4], w = [1,2,3], stride 2, pad 1/0 -> Wo = 2.
    const ConvProblem p = make_problem(1, 1, 1, 1, 1, {4}, {3}, {2}, {1}, {1}, {0});
    ASSERT_EQ(p.out[2], 2);
    const std::vector<double> x = {1, 2, 3, 4}, w = {1, 2, 3}, dy = {1, 1};
    EXPECT_EQ(reference_cpu(Variant::Forward, p, x, w, {}), (std::vector<double>{8, 20}));
    EXPECT_EQ(reference_cpu(Variant::BackwardData, p, {}, w, dy),
              (std::vector<double>{2, 4, 2, 3}));
    EXPECT_EQ(reference_cpu(Variant::BackwardWeight, p, x, {}, dy),
              (std::vector<double>{2, 4, 6}));
    // 2D, G=2, C=1, K=1, 2x2 input, 2x2 filter, dilation 1, pad 0 -> 1x1 output per group.
    const ConvProblem q = make_problem(2, 2, 1, 1, 1, {2, 2}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0});
    // x layout N,H,W,G,C: (h,w,g)
    const std::vector<double> qx = {1, 10, 2, 20, 3, 30, 4, 40};
    const std::vector<double> qw = {1, 1, 1, 1, 1, 0, 0, 1};  // g0: ones, g1: identity-ish
    EXPECT_EQ(reference_cpu(Variant::Forward, q, qx, qw, {}), (std::vector<double>{10, 50}));
  });
  add_test(suite, "cpu_reference_adjoint_identities", [] {
    // <fwd(x,w), dy> == <x, bwd_data(dy,w)> == <w, bwd_weight(dy,x)> for a problem using every
    // feature (3D, groups, stride, dilation, asymmetric pads).
    const ConvProblem p =
        make_problem(3, 3, 2, 5, 4, {5, 6, 7}, {2, 3, 2}, {2, 1, 3}, {1, 2, 1}, {1, 0, 1}, {0, 2, 1});
    SweepRng rng(42);
    auto rnd = [&](int64_t n) {
      std::vector<double> v(static_cast<size_t>(n));
      for (auto& e : v) e = double(rng.uniform(-1000, 1000)) / 256.0;
      return v;
    };
    const auto x = rnd(p.input_elems()), w = rnd(p.weight_elems()), dy = rnd(p.output_elems());
    auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
      double s = 0;
      for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
      return s;
    };
    const double a = dot(reference_cpu(Variant::Forward, p, x, w, {}), dy);
    const double b = dot(x, reference_cpu(Variant::BackwardData, p, {}, w, dy));
    const double c = dot(w, reference_cpu(Variant::BackwardWeight, p, x, {}, dy));
    EXPECT_NEAR(a, b, 1e-9 * std::fabs(a) + 1e-9);
    EXPECT_NEAR(a, c, 1e-9 * std::fabs(a) + 1e-9);
    EXPECT_NE(a, 0.0);
  });
  add_test(suite, "gpu_reference_logic_matches_cpu", [] {
    std::vector<NamedProblem> probs;
    try {
      probs = load_shapes_csv(shapes_dir() + "/tests.csv");
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
    uint64_t seed = 7;
    for (const NamedProblem& np : probs) {
      const ConvProblem& p = np.problem;
      for (Variant v : kAllVariants) {
        std::vector<uint16_t> x(static_cast<size_t>(p.input_elems())),
            w(static_cast<size_t>(p.weight_elems())),
            y(static_cast<size_t>(p.output_elems()));
        fill_host(x.data(), p.input_elems(), DataType::BF16, InitMode::Random, ++seed);
        fill_host(w.data(), p.weight_elems(), DataType::BF16, InitMode::Random, ++seed);
        fill_host(y.data(), p.output_elems(), DataType::BF16, InitMode::Random, ++seed);
        auto to_d = [](const std::vector<uint16_t>& b) {
          std::vector<double> d(b.size());
          for (size_t i = 0; i < b.size(); ++i) d[i] = bf16_bits_to_float(b[i]);
          return d;
        };
        const auto ref = reference_cpu(v, p, to_d(x), to_d(w), to_d(y));
        const auto emu = reference_gpu_emulated(v, DataType::BF16, p, x.data(), w.data(), y.data());
        std::vector<float> e32(emu.begin(), emu.end());
        const Tolerance tol =
            calculate_rtol_atol(23, 23, 23, reduction_length(v, p), 1, max_abs(ref), true);
        const CompareResult r = compare_result(ref, e32.data(), DataType::FP32, tol);
        EXPECT_TRUE(r.ok) << to_string(v) << " " << np.name << ": " << r.summary(v, p);
      }
    }
  });
  add_test(suite, "fp16_bf16_conversions", [] {
    // Every fp16 / bf16 value round-trips; rounding is to nearest even.
    for (uint32_t b = 0; b < 65536; ++b) {
      const float h = half_bits_to_float(uint16_t(b));
      if (h == h) {
        ASSERT_EQ(float_to_half_bits(h), uint16_t(b)) << "fp16 bits " << b;
      }
      const float f = bf16_bits_to_float(uint16_t(b));
      if (f == f) {
        ASSERT_EQ(float_to_bf16_bits(f), uint16_t(b)) << "bf16 bits " << b;
      }
    }
    EXPECT_EQ(float_to_half_bits(1.0f + 1.0f / 2048), 0x3c00);  // tie -> even
    EXPECT_EQ(float_to_half_bits(1.0f + 3.0f / 2048), 0x3c02);  // tie -> even (up)
    EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);
    EXPECT_EQ(float_to_half_bits(65519.0f), 0x7bff);
    EXPECT_EQ(float_to_half_bits(2.98023223876953125e-8f), 0x0000);  // 2^-25 tie -> 0
    EXPECT_EQ(float_to_half_bits(4.0e-8f), 0x0001);
    EXPECT_EQ(float_to_bf16_bits(1.0f + 1.0f / 256), 0x3f80);
    EXPECT_EQ(float_to_bf16_bits(1.0f + 3.0f / 256), 0x3f82);
  });
  add_test(suite, "random_fill_never_zero", [] {
    for (InitMode m : {InitMode::Random, InitMode::Int, InitMode::Positive}) {
      std::vector<uint16_t> b(4096);
      fill_host(b.data(), int64_t(b.size()), DataType::FP16, m, 123);
      int zeros = 0;
      double sum_abs = 0;
      for (size_t i = 0; i < b.size(); ++i) {
        const double v = half_bits_to_float(b[i]);
        zeros += v == 0;
        sum_abs += std::fabs(v);
        EXPECT_LE(std::fabs(v), 3.0);
      }
      EXPECT_EQ(zeros, 0) << to_string(m);
      EXPECT_GT(sum_abs, 100.0) << to_string(m);
    }
  });
  add_test(suite, "backward_fused_reference_hand_computed", [] {
    // 1D, G=1, K=2, one image of 2 pixels: dy and the saved y in N,W,G,K order.
    const ConvProblem p = make_problem(1, 1, 1, 1, 2, {2}, {1}, {1}, {1}, {0}, {0});
    const std::vector<double> dy = {1, -2, 3, 4}, y = {0.5, -1, 7, 0};
    KernelKey k{};
    auto masked = [&](Activation a) {
      k.activation = a;
      const std::vector<unsigned char> m = masked_dy(k, DataType::FP32, dy, y, 0.25f);
      std::vector<double> out;
      for (int64_t i = 0; i < 4; ++i) out.push_back(load_host(m.data(), i, DataType::FP32));
      return out;
    };
    EXPECT_EQ(masked(Activation::DRelu), (std::vector<double>{1, 0, 3, 0}));
    EXPECT_EQ(masked(Activation::DRelu6), (std::vector<double>{1, 0, 0, 0}));
    EXPECT_EQ(masked(Activation::DLeakyRelu), (std::vector<double>{1, -0.5, 3, 1}));
    EXPECT_EQ(masked(Activation::Identity), dy);
    EXPECT_EQ(bias_grad_reference(p, dy), (std::vector<double>{4, 2}));
    EXPECT_EQ(bias_grad_reference(p, dy, true), (std::vector<double>{4, 6}));
    k.channel_op = ChannelOp::BiasGrad;
    k.activation = Activation::DLeakyRelu;
    EXPECT_TRUE(is_fused(k) && is_backward_fused(k));
    EXPECT_EQ(fusion_spelling(k), "bias_grad_dleaky_relu");
  });
  add_test(suite, "shapes_files_parse", [] {
    for (const char* f : {"coverage.csv", "tests.csv", "retinanet_r50fpn_n2.csv", "streamk.csv"}) {
      try {
        const auto v = load_shapes_csv(shapes_dir() + "/" + f);
        EXPECT_FALSE(v.empty()) << f;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  });
}

}  // namespace testing_detail
}  // namespace ckgen::host
