// The problem suites (testing.hpp): <variant>_coverage / _tests / _support, _im2col_wide,
// _negative and _reference.
#pragma once

#include "testing_common.hpp"

namespace ckgen::host {
namespace testing_detail {

// Registers <suite>: problem x datatype x supporting instance (x k_batch for split-K, x
// streamk_blocks for StreamK instances); plus the support
// failures into <variant>_support.
inline void register_problem_tests(Variant v, const std::string& suite,
                                   const std::vector<NamedProblem>& problems,
                                   const std::vector<int>& k_batches,
                                   const std::vector<int>& streamk_blocks = {0}) {
  const std::string vname = to_string(v);
  const auto insts = instances_of(v);
  uint64_t counter = 0;
  for (const NamedProblem& np : problems) {
    for (DataType dt : kAllDataTypes) {
      bool any_instance = false, any_supported = false;
      std::string reasons;
      for (const KernelBase* k : insts) {
        if (k->key().datatype != dt) continue;
        any_instance = true;
        const bool sk = is_streamk(*k);
        const bool splits = takes_k_batch(v, *k);  // else one run, no suffix
        std::vector<RunOptions> runs;
        for (int n : sk ? streamk_blocks : splits ? k_batches : std::vector<int>{0}) {
          RunOptions o;
          (sk ? o.streamk_blocks : o.k_batch) = n;
          runs.push_back(o);
        }
        for (const RunOptions& o : split_reduce_runs(v, *k)) runs.push_back(o);
        for (const RunOptions& o : runs) {
          const int n = sk ? o.streamk_blocks : o.k_batch;
          const std::string why = k->is_supported(np.problem, o);
          const bool plain = n == 0 && o.split_reduce == SplitReduce::Auto;
          if (!why.empty()) {
            if (plain) reasons += "\n  " + k->name() + ": " + why;
            continue;
          }
          if (plain) any_supported = true;
          std::string name = sanitize(np.name) + "__" + to_string(dt) + "__" + k->name();
          if (v == Variant::BackwardWeight || (splits && k_batches.size() > 1))
            name += (sk ? "__sk" : "__kb") + std::to_string(n) + split_reduce_suffix(o);
          const ConvProblem p = np.problem;
          const uint64_t seed = hash2(test_seed(), ++counter);
          add_test(suite, name, [v, dt, p, k, o, seed] {
            run_case(v, dt, p, *k, o, auto_reference(p), seed);
          });
        }
      }
      if (any_instance && !any_supported) {
        const std::string msg = "no " + vname + " " + to_string(dt) + " instance supports " +
                                np.name + " (" + np.origin + "): " + problem_summary(np.problem) +
                                reasons;
        add_test(vname + "_support", sanitize(np.name) + "__" + to_string(dt), [msg] {
          CKGEN_REQUIRE_GPU();
#ifdef CKGEN_FILTERED_BUILD
          GTEST_SKIP() << "a filtered build (generate --kernels / --datatype / --ndim) need not "
                          "serve every problem: "
                       << msg;
#else
          FAIL() << msg;
#endif
        });
      }
    }
  }
}

// wavelet_tma's explicit im2col path (C % 8 != 0, one group) on output lines of 240 pixels
// (N=2, 480 x 480, 7x7 stride 2): every 2D wavelet_tma instance of the variant must run it
// (k_batch 0, and 3 where it splits); stride1 and window instances refuse its stride 2.
inline void register_im2col_wide_tests(Variant v) {
  if (v == Variant::BackwardData) return;
  const ConvProblem p = make_problem(2, 1, 2, 3, 24, {480, 480}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3});
  const std::string suite = std::string(to_string(v)) + "_im2col_wide";
  uint64_t counter = 0;
  for (const KernelBase* k : instances_of(v)) {
    if (k->key().pipeline != Pipeline::WaveletTma || k->key().ndim != 2 ||
        k->key().specialization != Specialization::Default)
      continue;
    std::vector<RunOptions> runs;
    for (int kb : takes_k_batch(v, *k) ? std::vector<int>{0, 3} : std::vector<int>{0}) {
      RunOptions o;
      o.k_batch = kb;
      runs.push_back(o);
    }
    for (const RunOptions& o : split_reduce_runs(v, *k)) runs.push_back(o);
    for (const RunOptions& o : runs) {
      const DataType dt = k->key().datatype;
      const uint64_t seed = hash2(test_seed(), ++counter);
      add_test(suite, k->name() + "__kb" + std::to_string(o.k_batch) + split_reduce_suffix(o), [v, dt, p, k, o, seed] {
        run_case(v, dt, p, *k, o, RefKind::Gpu, seed);
      });
    }
  }
}

// A small valid problem of the given ndim with C = c, K = k.
inline ConvProblem small_problem(int ndim, int64_t c, int64_t k) {
  std::vector<int64_t> in(size_t(ndim), 5), f(size_t(ndim), 3), one(size_t(ndim), 1);
  return make_problem(ndim, 1, 1, c, k, in, f, one, one, one, one);
}

inline void register_negative_tests(Variant v) {
  const std::string suite = std::string(to_string(v)) + "_negative";
  for (const KernelBase* k : instances_of(v)) {
    const int nd = k->key().ndim;
    for (int other = 1; other <= 3; ++other) {
      if (other == nd) continue;
      const ConvProblem p = small_problem(other, 8, 8);
      add_test(suite, "ndim" + std::to_string(other) + "_refused__" + k->name(), [k, p] {
        CKGEN_REQUIRE_GPU();
        const std::string why = k->is_supported(p, RunOptions{});
        EXPECT_FALSE(why.empty()) << k->name() << " (" << k->key().ndim
                                  << "D) accepts a " << p.ndim << "D problem";
      });
    }
    if (nd != 3) {  // a 3D problem whose depth folds into the batch: 3D instances only
      const ConvProblem p = make_problem(3, 1, 1, 8, 8, {2, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1},
                                         {0, 1, 1}, {0, 1, 1});
      add_test(suite, "ndim3_foldable_refused__" + k->name(), [k, p] {
        CKGEN_REQUIRE_GPU();
        const std::string why = k->is_supported(p, RunOptions{});
        EXPECT_FALSE(why.empty()) << k->name() << " (" << k->key().ndim << "D) accepts a foldable 3D problem";
      });
    }
    const KernelKey& key = k->key();
    // A fused instance's run() refuses missing operands, and one that reads none (unfused, or a
    // conversion alone) given operands, before any device call: these run without a GPU.
    {
      ConvTensors t;
      if (epilogue_ops(key).reads_operands()) {
        add_test(suite, "fused_operands_missing_refused__" + k->name(), [k, t] {
          EXPECT_NE(k->run(small_problem(k->key().ndim, 8, 8), t, nullptr, nullptr), gpuSuccess)
              << k->name() << " ran without its fused operands";
        });
      } else {
        static const float kDummy[4] = {};
        const bool fwd = v == Variant::Forward;  // backward: a saved forward output for a mask
        if (fwd) t.ep.bias = kDummy; else t.ep.y = kDummy;
        add_test(suite, std::string(fwd ? "unfused_given_bias" : "unfused_given_y") + "_refused__" + k->name(),
                 [k, t] {
                   EXPECT_NE(k->run(small_problem(k->key().ndim, 8, 8), t, nullptr, nullptr), gpuSuccess)
                       << k->name() << " ran with an operand it does not read";
                 });
      }
    }
    // Refused before any device query: these run without a GPU.
    const ConvProblem small = small_problem(nd, 8, 8);
    auto refuses = [suite, k, small](const std::string& what, RunOptions o, const char* expect) {
      add_test(suite, what + "_refused__" + k->name(), [k, small, o, expect] {
        const std::string why = k->is_supported(small, o);
        EXPECT_FALSE(why.empty()) << k->name() << " accepts k_batch " << o.k_batch << ", streamk_blocks "
                                  << o.streamk_blocks << ", split_reduce " << to_string(o.split_reduce);
        EXPECT_NE(why.find(expect), std::string::npos) << "reason: " << why;
      });
    };
    // A problem the instance must refuse, the reason naming `expect` (limits checked before any
    // device query: the row form's, the windows').
    auto refuses_problem = [suite, k](const std::string& what, const ConvProblem& p, const char* expect) {
      add_test(suite, what + "_refused__" + k->name(), [k, p, expect] {
        const std::string why = k->is_supported(p, RunOptions{});
        EXPECT_NE(why.find(expect), std::string::npos)
            << k->name() << " on " << problem_summary(p) << ": " << (why.empty() ? "accepted" : why);
      });
    };
    RunOptions o;
    if (v == Variant::BackwardWeight) {
      if (key.reduction != Reduction::SplitK) {
        o.k_batch = 3;
        refuses("streamk_k_batch3", o, "StreamK sizes its own split");
        o = RunOptions{};
        o.streamk_blocks = -1;
        refuses("streamk_blocks_negative", o, "streamk_blocks must be >= 0");
      } else {
        o.streamk_blocks = 5;
        refuses("splitk_streamk_blocks5", o, "streamk_blocks is for StreamK instances");
      }
      o = RunOptions{};
      o.split_reduce = SplitReduce::Cluster;
      if (key.pipeline == Pipeline::WaveletTma) {
        o.k_batch = 9;
        refuses("cluster_k_batch9", o, "split_reduce cluster");
        if (ping_pong(*k)) {
          o.k_batch = 2;
          refuses("ping_pong_cluster", o, "ping-pong instance (two warpgroups taking turns on units) has no cluster");
        }
        if (row_form(*k)) {
          o.k_batch = 2;
          refuses("rows_cluster", o, "stride1 adds its splits through the workspace");
          // The row form's limits on the problem (pipeline/tma_ws.hpp, rows_refusal): a row of 100
          // pixels, 64 output channels; refused before any device query.
          const int64_t X = key.tile_n / 64;
          auto row = [nd](int64_t c, int64_t x, int64_t s_w, int64_t d_w) {
            std::vector<int64_t> in{100}, f{x}, s{s_w}, d{d_w}, pad{1};
            if (nd == 2) {
              in.insert(in.begin(), 6);
              f.insert(f.begin(), 3);
              s.insert(s.begin(), 1);
              d.insert(d.begin(), 1);
              pad.insert(pad.begin(), 1);
            }
            return make_problem(nd, 1, 2, c, 64, in, f, s, d, pad, pad);
          };
          if (nd <= 2) {
            refuses_problem("rows_stride_w2", row(64, X, 2, 1), "needs width stride 1");
            refuses_problem("rows_c96", row(96, X, 1, 1), "to be a multiple of 64");
            refuses_problem("rows_filter_width", row(64, X + 2, 1, 1), "got filter width");
            refuses_problem("rows_dilated_reach", row(64, X, 1, 40), "past a row segment");
          }
        }
      } else {
        refuses("split_reduce_cluster", o, "split_reduce cluster is for wavelet_tma backward_weight");
      }
    } else {
      // forward / backward_data instances have one reduction scheme.
      o.split_reduce = SplitReduce::Workspace;
      refuses("split_reduce_workspace", o, "split_reduce workspace is for wavelet_tma backward_weight");
    }
    if (tma_window_form(key)) {
      // The window forms' limits (pipeline/tma_window.hpp, pipeline/tma_window_weight.hpp):
      // 64-channel groups, stride 1; forward: a filter whose taps fit shared memory beside the
      // patches (9x9: 648 KB); backward_weight: 3x3 filters (one warpgroup a filter row).
      auto win = [](int64_t c, int64_t kk, int64_t s, int64_t f) {
        return make_problem(2, 2, 1, c, kk, {12, 20}, {f, f}, {s, s}, {1, 1}, {f / 2, f / 2}, {f / 2, f / 2});
      };
      refuses_problem("window_c32", win(32, 64, 1, 3), "needs C = K = 64");
      refuses_problem("window_k128", win(64, 128, 1, 3), "needs C = K = 64");
      refuses_problem("window_stride2", win(64, 64, 2, 3), "needs stride 1");
      if (v == Variant::BackwardWeight) {
        refuses_problem("window_filter5", win(64, 64, 1, 5), "needs a 3x3 filter");
        refuses_problem("window_groups",
                        make_problem(2, 1000, 1, 64, 64, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
                        "than compute units");
      } else
        refuses_problem("window_filter9", win(64, 64, 1, 9), "bytes of shared memory");
    }
    const int vec = std::max({key.vec_a, key.vec_b, key.vec_c});
    // (wavelet_tma forward and backward_weight run C % 8 != 0 through an explicit im2col copy
    // and backward_weight pads K: they accept C = 3, K = 3)
    const bool im2col = key.pipeline == Pipeline::WaveletTma && v != Variant::BackwardData;
    // (a channel-padding face exists to accept them)
    if (vec > 1 && nd >= 1 && nd <= 3 && !im2col && key.channel_pad == 0) {
      const ConvProblem p = small_problem(nd, 3, 3);
      add_test(suite, "vector" + std::to_string(vec) + "_refuses_c3_k3__" + k->name(), [k, p, vec] {
        CKGEN_REQUIRE_GPU();
        const std::string why = k->is_supported(p, RunOptions{});
        EXPECT_FALSE(why.empty()) << k->name() << " (vector " << vec
                                  << ") accepts C=3, K=3: " << problem_summary(p);
      });
    }
  }
}

inline void register_reference_tests(Variant v, const std::vector<NamedProblem>& problems) {
  const std::string suite = std::string(to_string(v)) + "_reference";
  uint64_t counter = 1000000;
  for (const NamedProblem& np : problems) {
    const ConvProblem p = np.problem;
    const uint64_t seed = hash2(test_seed(), ++counter);
    add_test(suite, "gpu_vs_cpu__" + sanitize(np.name), [v, p, seed] {
      CKGEN_REQUIRE_GPU();
      try {
        Workbench& wb = workbench(v);
        wb.setup(DataType::FP16, p, InitMode::Random, seed);
        wb.compute_reference(RefKind::Gpu);
        const std::vector<double> gpu = wb.reference();
        wb.compute_reference(RefKind::Cpu);
        const std::vector<double>& cpu = wb.reference();
        std::vector<float> g32(gpu.begin(), gpu.end());
        const Tolerance tol = calculate_rtol_atol(23, 23, 23, reduction_length(v, p), 1,
                                                  wb.ref_max_abs(), true);
        const CompareResult r = compare_result(cpu, g32.data(), DataType::FP32, tol);
        EXPECT_TRUE(r.ok) << "GPU reference vs CPU reference: " << r.summary(v, p) << " on "
                          << problem_summary(p);
      } catch (const std::exception& e) {
        note_gpu_failure();
        FAIL() << "GPU error: " << e.what();
      }
    });
  }
}

}  // namespace testing_detail
}  // namespace ckgen::host
