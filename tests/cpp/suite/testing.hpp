// GoogleTest suites for one variant, registered at run time (::testing::RegisterTest):
//
//   <variant>_coverage    every problem of shapes/coverage.csv      x datatype x instance
//   <variant>_tests       every problem of shapes/tests.csv         x datatype x instance
//                         (backward_weight split-K: x k_batch 0, 1, 3, 64 where supported;
//                         forward / backward_data instances whose k_batch is not 1: x 0, 1, 3;
//                         StreamK: x streamk_blocks 0 (auto), 1, 3, 7)
//                         test name: <problem>__<datatype>__<instance>[__kb<k_batch>|__sk<blocks>]
//                         reference: CPU fp64 up to 2 GFLOP, else the GPU fp32 kernel
//   backward_weight_streamk  every problem of shapes/streamk.csv x StreamK instance x grid
//                         (streamk_case_grids: automatic, all data-parallel, odd splits, all
//                         StreamK, StreamK next to data-parallel waves); name
//                         <problem>__<instance>__sk<blocks>
//   <variant>_support     <problem>__<datatype> FAILS when no instance supports a problem;
//                         no_instances__<datatype> FAILS when a datatype has no instance
//   <variant>_negative    is_supported must refuse (with a reason): ndim mismatch (and a 1D / 2D
//                         instance a 3D problem whose depth folds into the batch); vector > 1
//                         instance vs C = K = 3 (not wavelet_tma forward / backward_weight: their
//                         im2col copy and padded dy);
//                         StreamK: k_batch != 0, streamk_blocks < 0;
//                         split-K backward_weight: streamk_blocks != 0; backward_weight's row
//                         form (stride1): cluster reduction, width stride 2, C = 96, a filter
//                         width other than tile N / 64, a dilated width past the stage's halo
//                         windows: C = 32, K = 128, stride 2, a 9x9 filter (forward), a 5x5
//                         filter and more groups than compute units (backward_weight)
//   <variant>_reference   GPU fp32 reference vs CPU fp64 reference on tests.csv
//   <variant>_im2col_wide  (forward, backward_weight) every 2D wavelet_tma instance on a C=3
//                         7x7 stride-2 problem with 240-pixel output lines (the im2col copy's
//                         blocks take 64 pixels of a line: 3 full and one partial per line,
//                         which tests.csv's short lines never reach); GPU reference
//   <variant>_sweep       chunk_NN: seeded random valid problems (CKGEN_SWEEP_COUNT in all,
//                         default 2000), each by a random supporting instance (and k_batch)
//                         against the GPU reference. Seed: CKGEN_SWEEP_SEED, default the clock;
//                         printed, with every failing problem as profiler options.
//   streamk_host          (backward_weight) StreamK plan / schedule / workspace arithmetic
//                         (streamk_checks.hpp) and gpu_cases_cover_the_schedule (the
//                         backward_weight_streamk cases reach every section of the schedule for
//                         each reduction x persistence), run without a GPU too
//   harness_host          host-only checks of the harness itself (run without a GPU too):
//                         hand-computed CPU reference, adjoint identities, host emulation of
//                         the GPU reference, fp16/bf16 conversions, shapes files parse.
//
// Without a GPU every GPU test calls GTEST_SKIP() << "no GPU: ...".
// Inputs: fresh random values per test (seed from CKGEN_TEST_SEED, default the clock; failing
// tests print it). Shapes directory: CKGEN_SHAPES_DIR (compile definition; the environment
// variable of the same name overrides).
//
// Entry points:
//   void ckgen::host::register_tests(ckgen::Variant v);
//   int  ckgen::host::test_main(ckgen::Variant v, int argc, char** argv);  // init, register, run
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/host/init.hpp"
#include "ckgen/host/reference.hpp"
#include "ckgen/host/runner.hpp"
#include "ckgen/host/shapes.hpp"
#include "streamk_checks.hpp"
#include "ckgen/host/tolerance.hpp"
#include "ckgen/kernel/kernel_base.hpp"

#ifndef CKGEN_SHAPES_DIR
#define CKGEN_SHAPES_DIR "shapes"
#endif

namespace ckgen::host {

// Skips without a GPU; fails at once when an earlier test broke the GPU context (a sticky
// error such as an illegal address makes every later GPU call fail in this process).
#define CKGEN_REQUIRE_GPU()                                                          \
  do {                                                                               \
    std::string ckgen_why_;                                                          \
    if (!::ckgen::host::gpu_available(&ckgen_why_))                                  \
      GTEST_SKIP() << "no GPU: " << ckgen_why_;                                      \
    if (!::ckgen::host::testing_detail::broken_context().empty())                    \
      FAIL() << "not run: " << ::ckgen::host::testing_detail::broken_context()       \
             << " (run the tests in separate processes, e.g. ctest, to isolate them)"; \
  } while (0)

namespace testing_detail {

// Set once a test leaves the GPU context unusable.
inline std::string& broken_context() {
  static std::string s;
  return s;
}

// After a GPU failure: records whether the context is now unusable.
inline void note_gpu_failure() {
  const gpuError_t e = gpuDeviceSynchronize();
  if (e != gpuSuccess && broken_context().empty()) {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    broken_context() = "the GPU context was broken (" + gpu_error_string(e) + ") by " +
                       (t ? std::string(t->test_suite_name()) + "." + t->name() : "an earlier test");
  }
}

class BodyTest : public ::testing::Test {
 public:
  explicit BodyTest(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};

inline void add_test(const std::string& suite, const std::string& name,
                     std::function<void()> body) {
  ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [body]() -> BodyTest* { return new BodyTest(body); });
}

// Test-name-safe: [A-Za-z0-9_] only.
inline std::string sanitize(const std::string& s) {
  std::string o;
  for (char ch : s) o += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
  return o;
}

inline uint64_t env_u64(const char* name, uint64_t def, bool* given = nullptr) {
  const char* e = std::getenv(name);
  int64_t v;
  if (e && parse_int64(e, v) && v >= 0) {
    if (given) *given = true;
    return uint64_t(v);
  }
  if (given) *given = false;
  return def;
}

inline uint64_t clock_seed() {
  return uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ull;
}

// Per-process base seed of the inputs.
inline uint64_t test_seed() {
  static const uint64_t s = env_u64("CKGEN_TEST_SEED", clock_seed());
  return s;
}

inline std::string shapes_dir() {
  const char* e = std::getenv("CKGEN_SHAPES_DIR");
  return e && *e ? e : CKGEN_SHAPES_DIR;
}

// One stream + workbench per process, created on first use (after the GPU check).
inline Workbench& workbench(Variant v) {
  static std::unique_ptr<Stream> stream;
  static std::unique_ptr<Workbench> wb[3];
  if (!stream) stream = std::make_unique<Stream>();
  auto& w = wb[int(v)];
  if (!w) w = std::make_unique<Workbench>(v, stream->get());
  return *w;
}

inline std::vector<const KernelBase*> instances_of(Variant v) {
  std::vector<const KernelBase*> out;
  for (const auto& k : registry().all())
    if (k->key().variant == v) out.push_back(k.get());
  return out;
}

inline RefKind auto_reference(const ConvProblem& p) {
  return p.flops() <= kCpuReferenceMaxFlops ? RefKind::Cpu : RefKind::Gpu;
}

// Profiler options that select the same run options.
inline std::string run_options_args(Variant v, const RunOptions& o) {
  std::string s;
  if (v == Variant::BackwardWeight || o.k_batch != 0) s += " --k-batch " + std::to_string(o.k_batch);
  if (o.streamk_blocks != 0) s += " --streamk-blocks " + std::to_string(o.streamk_blocks);
  if (o.split_reduce != SplitReduce::Auto) s += std::string(" --split-reduce ") + to_string(o.split_reduce);
  return s;
}

inline bool is_streamk(const KernelBase& k) { return k.key().reduction != Reduction::SplitK; }

// A wavelet_tma instance whose two math warpgroups take turns on units (KernelKey::ping_pong, the
// kernel's TmaTraits::kPingPong): it has no cluster reduction (register_negative_tests checks the
// refusal).
inline bool ping_pong(const KernelBase& k) { return k.key().ping_pong; }
// backward_weight's row form (tma_row_form): its splits add into the workspace only (no cluster
// reduction; register_negative_tests checks its refusals).
inline bool row_form(const KernelBase& k) { return tma_row_form(k.key()); }

// The runs with an explicit RunOptions::split_reduce, besides the k_batch list, for wavelet_tma
// backward_weight instances: the cluster reduction at its smallest and largest cluster (2, 8) and
// chosen per problem (0), and the workspace at 3 (the automatic choice may price either lower;
// ping-pong instances: the workspace only).
inline std::vector<RunOptions> split_reduce_runs(Variant v, const KernelBase& k) {
  if (v != Variant::BackwardWeight || k.key().pipeline != Pipeline::WaveletTma) return {};
  std::vector<RunOptions> out;
  for (auto [r, kb] : {std::pair{SplitReduce::Cluster, 0}, std::pair{SplitReduce::Cluster, 2},
                       std::pair{SplitReduce::Cluster, 8}, std::pair{SplitReduce::Workspace, 3}}) {
    if (r == SplitReduce::Cluster && (ping_pong(k) || row_form(k))) continue;
    RunOptions o;
    o.k_batch = kb;
    o.split_reduce = r;
    out.push_back(o);
  }
  return out;
}
inline std::string split_reduce_suffix(const RunOptions& o) {
  return o.split_reduce == SplitReduce::Auto ? "" : std::string("_") + to_string(o.split_reduce);
}

// Whether RunOptions::k_batch reaches an instance: every backward_weight one, and forward /
// backward_data instances whose k_batch is not 1 (those with k_batch 1 never split).
inline bool takes_k_batch(Variant v, const KernelBase& k) {
  return v == Variant::BackwardWeight || k.key().k_batch != 1;
}

// The StreamK grids every StreamK instance runs each test problem with: automatic, one block
// (everything data-parallel), and small odd grids (several blocks per tile: linear chains and
// tree levels, uneven q / q + 1 splits).
inline const std::vector<int>& streamk_test_blocks() {
  static const std::vector<int> v = {0, 1, 3, 7};
  return v;
}

inline std::string repro(Variant v, DataType dt, const ConvProblem& p, const std::string& inst,
                         const RunOptions& o, uint64_t seed) {
  std::ostringstream os;
  os << "reproduce: ckgen_profiler_" << to_string(v) << " " << problem_args(p) << " --datatype "
     << to_string(dt) << " --kernels " << inst << run_options_args(v, o);
  os << "   (test inputs: CKGEN_TEST_SEED=" << test_seed() << ", case seed " << seed << ")";
  return os.str();
}

// Runs instance k on problem p against the reference and reports through gtest.
inline void run_case(Variant v, DataType dt, const ConvProblem& p, const KernelBase& k,
                     const RunOptions& o, RefKind ref, uint64_t seed) {
  CKGEN_REQUIRE_GPU();
  const std::string why = k.is_supported(p, o);
  ASSERT_TRUE(why.empty()) << k.name() << " no longer supports the problem: " << why;
  try {
    Workbench& wb = workbench(v);
    wb.setup(dt, p, InitMode::Random, seed);
    wb.compute_reference(ref);
    const VerifyOutcome r = wb.verify(k, o);
    if (!r.ran) note_gpu_failure();
    EXPECT_TRUE(r.ran && r.ok) << k.name() << " on " << problem_summary(p) << " ("
                               << to_string(dt) << ", k_batch " << o.k_batch
                               << ", streamk_blocks " << o.streamk_blocks << ", "
                               << to_string(ref) << " reference): " << r.summary(v, p) << "\n"
                               << repro(v, dt, p, k.name(), o, seed);
  } catch (const std::exception& e) {
    note_gpu_failure();
    FAIL() << "GPU error: " << e.what() << "\n" << repro(v, dt, p, k.name(), o, seed);
  }
}

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
          FAIL() << msg;
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
    if (vec > 1 && nd >= 1 && nd <= 3 && !im2col) {
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

// --------------------------------------------------------------------------- StreamK cases
// backward_weight_streamk: every problem of shapes/streamk.csv x every StreamK instance of its
// ndim (the instance's datatype) x the grids of streamk_case_grids, against the reference
// (fresh random inputs, poisoned output: run_case). The problems are chosen for the schedule:
// several groups, stride 2 with asymmetric pads, one output tile, a large GemmK (784 / 1568 k
// iterations), many tiles (whole data-parallel waves next to a StreamK section), 1D and 3D.
// streamk_host.gpu_cases_cover_the_schedule checks (without a GPU) that the registered cases
// reach every section of the schedule for each reduction x persistence.

// The plan a StreamK instance makes for p at a forced grid (kernel/conv_kernel.hpp's streamk_plan from the
// key; streamk_host.instances_size_their_workspace_from_the_plan ties the two together).
inline StreamKPlan streamk_plan_of(const KernelKey& key, const ConvProblem& p, int blocks) {
  const int64_t M = p.K, N = p.filter_spatial() * p.C, K = p.N * p.out_spatial();
  const int64_t tiles = p.G * ((M + key.tile_m - 1) / key.tile_m) * ((N + key.tile_n - 1) / key.tile_n);
  const int64_t iters = std::max<int64_t>(1, (K + key.tile_k - 1) / key.tile_k);
  return make_streamk_plan(tiles, iters, blocks, key.persistent);
}

// Grids of a StreamK case with `tiles` output tiles: automatic (0); one block and B = tiles
// (every tile data-parallel); 3 and 7 (odd q / q + 1 splits); tiles + 1 (every tile StreamK);
// the largest B <= tiles / 3 that leaves a remainder (a StreamK section next to two or more
// whole data-parallel waves: persistent blocks stride over dp_rounds >= 2).
inline std::vector<int> streamk_case_grids(int64_t tiles) {
  std::vector<int> g = {0, 1, 3, 7};
  auto add = [&g](int64_t b) {
    if (b >= 1 && b <= (int64_t(1) << 20) && std::find(g.begin(), g.end(), int(b)) == g.end())
      g.push_back(int(b));
  };
  add(tiles);
  add(tiles + 1);
  for (int64_t b = tiles / 3; b >= 2; --b)
    if (tiles % b != 0) {
      add(b);
      break;
    }
  return g;
}

// A registered GPU case at a forced grid (the coverage check reads these).
struct StreamKCase {
  std::string test;  // suite.name
  Reduction reduction;
  bool persistent;
  ConvProblem problem;
  StreamKPlan plan;
};

inline std::vector<StreamKCase>& streamk_cases() {
  static std::vector<StreamKCase> v;
  return v;
}

inline void register_streamk_tests(const std::vector<NamedProblem>& problems) {
  const Variant v = Variant::BackwardWeight;
  const std::string suite = std::string(to_string(v)) + "_streamk";
  uint64_t counter = 2000000;
  for (const NamedProblem& np : problems) {
    for (const KernelBase* k : instances_of(v)) {
      const KernelKey& key = k->key();
      if (!is_streamk(*k) || key.ndim != np.problem.ndim) continue;
      const StreamKPlan auto_plan = streamk_plan_of(key, np.problem, 1);
      for (int blocks : streamk_case_grids(auto_plan.tiles)) {
        RunOptions o;
        o.streamk_blocks = blocks;
        const std::string why = k->is_supported(np.problem, o);
        const std::string name = sanitize(np.name) + "__" + k->name() + "__sk" + std::to_string(blocks);
        if (!why.empty()) {  // the problems are chosen for every StreamK instance
          add_test(suite, name, [why] {
            CKGEN_REQUIRE_GPU();  // without one, shared memory limits are guesses
            FAIL() << "refused: " << why;
          });
          continue;
        }
        const ConvProblem p = np.problem;
        const DataType dt = key.datatype;
        const uint64_t seed = hash2(test_seed(), ++counter);
        add_test(suite, name, [v, dt, p, k, o, seed] {
          run_case(v, dt, p, *k, o, auto_reference(p), seed);
        });
        if (blocks > 0)
          streamk_cases().push_back({suite + "." + name, key.reduction, key.persistent, p,
                                     streamk_plan_of(key, p, blocks)});
      }
    }
  }
}

// What the GPU cases must reach, per reduction x persistence present in the binary.
inline void register_streamk_coverage_test() {
  add_test("streamk_host", "gpu_cases_cover_the_schedule", [] {
    struct Need {
      const char* what;
      bool (*met)(const StreamKCase&);
    };
    static const Need needs[] = {
        {"several groups with a StreamK section",
         [](const StreamKCase& c) { return c.problem.G > 1 && c.plan.sk_tiles > 0; }},
        {"stride > 1 with a StreamK section",
         [](const StreamKCase& c) {
           return c.plan.sk_tiles > 0 && std::max({c.problem.stride[0], c.problem.stride[1], c.problem.stride[2]}) > 1;
         }},
        {"pure data-parallel (several tiles, no StreamK section)",
         [](const StreamKCase& c) { return c.plan.tiles > 1 && c.plan.sk_tiles == 0; }},
        {"one output tile shared by >= 3 StreamK blocks",
         [](const StreamKCase& c) { return c.plan.tiles == 1 && c.plan.sk_blocks >= 3; }},
        {"large GemmK (>= 512 k iterations per tile) split over StreamK blocks",
         [](const StreamKCase& c) { return c.plan.iters >= 512 && c.plan.sk_blocks >= 2; }},
        {"a StreamK section next to >= 2 whole data-parallel waves",
         [](const StreamKCase& c) { return c.plan.sk_tiles > 0 && c.plan.dp_tiles >= 2 * c.plan.blocks; }},
        {"a tile with >= 4 contributors (tree depth >= 2)",
         [](const StreamKCase& c) {
           for (int64_t t = 0; t < c.plan.sk_tiles; ++t)
             if (streamk_sim::contributors(c.plan, t) >= 4) return true;
           return false;
         }},
    };
    std::set<std::pair<Reduction, bool>> modes;
    for (const KernelBase* k : instances_of(Variant::BackwardWeight))
      if (is_streamk(*k)) modes.insert({k->key().reduction, k->key().persistent});
    for (const auto& [r, persistent] : modes)
      for (const Need& n : needs) {
        bool met = false;
        for (const StreamKCase& c : streamk_cases())
          met = met || (c.reduction == r && c.persistent == persistent && n.met(c));
        EXPECT_TRUE(met) << to_string(r) << (persistent ? " persistent" : "")
                         << ": no backward_weight_streamk case reaches: " << n.what;
      }
  });
}

// --------------------------------------------------------------------------- random sweep
class SweepRng {
 public:
  explicit SweepRng(uint64_t seed) : s_(seed) {}
  uint64_t next() { return mix64(s_++); }
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return lo + int64_t(next() % uint64_t(hi - lo + 1));
  }
  template <typename T>
  T pick(const std::vector<T>& v) { return v[size_t(uniform(0, int64_t(v.size()) - 1))]; }
  bool chance(int percent) { return uniform(0, 99) < percent; }

 private:
  uint64_t s_;
};

// A random valid problem of ndim dimensions (small: fine for the GPU reference).
inline ConvProblem random_problem(SweepRng& rng, int ndim) {
  for (;;) {
    // depthwise (C = K = 1): half of them G a multiple of 8 so the 16-byte direct instances
    // (pipeline/depthwise.hpp) draw them too; small groups (C = K = 2, 4 or 8, ResNeXt-style) for the
    // direct small-group instances, G * C mostly a multiple of 8
    // 64-channel groups at stride 1 (kind 30..35) for the windows (pipeline/tma_window.hpp,
    // pipeline/tma_window_weight.hpp), half of them with a 3x3 filter (the backward_weight windows')
    const int kind = int(rng.uniform(0, 99));
    const bool depthwise = kind < 20, small_groups = kind >= 20 && kind < 30, wide = kind >= 30 && kind < 36;
    const int64_t cg = small_groups ? rng.pick<int64_t>({2, 4, 4, 8}) : 1;
    const int64_t G = small_groups     ? (rng.chance(75) ? (8 / cg) * rng.uniform(1, 8)
                                                          : rng.uniform(1, 24))
                      : !depthwise     ? rng.pick<int64_t>({1, 1, 1, 2, 3, 4, 8, 32})
                      : rng.chance(50) ? 8 * rng.uniform(1, 16)
                                        : rng.uniform(2, 64);
    auto channels = [&]() -> int64_t {
      if (wide) return 64;
      if (depthwise || small_groups) return cg;
      if (rng.chance(50)) return 8 * rng.uniform(1, 8);
      return rng.uniform(1, 40);
    };
    const int64_t C = channels(), K = channels();
    const bool square3 = wide && ndim == 2 && rng.chance(50);
    const int64_t N = rng.uniform(1, 3);
    const int64_t max_in = ndim == 1 ? 48 : ndim == 2 ? 16 : 7;
    std::vector<int64_t> in, f, s, d, pl, pr;
    for (int i = 0; i < ndim; ++i) {
      in.push_back(rng.uniform(1, max_in));
      f.push_back(square3 ? 3 : rng.pick<int64_t>({1, 1, 2, 3, 3, 3, 4, 5}));
      s.push_back(wide ? 1 : rng.pick<int64_t>({1, 1, 1, 2, 2, 3}));
      d.push_back(rng.pick<int64_t>({1, 1, 1, 1, 2, 3}));
      const int64_t eff = (f.back() - 1) * d.back() + 1;
      const int64_t pmax = std::min<int64_t>(3, eff - 1);
      pl.push_back(rng.uniform(0, pmax));
      pr.push_back(rng.uniform(0, pmax));
    }
    try {
      ConvProblem p = make_problem(ndim, G, N, C, K, in, f, s, d, pl, pr);
      if (p.flops() > 4e7) continue;
      return p;
    } catch (const ShapeError&) {
      continue;  // filter does not fit: draw again
    }
  }
}

inline uint64_t sweep_base_seed() {
  static const uint64_t s = env_u64("CKGEN_SWEEP_SEED", clock_seed());
  return s;
}

inline void run_sweep_chunk(Variant v, int chunk, int count) {
  CKGEN_REQUIRE_GPU();
  const uint64_t base = sweep_base_seed();
  const std::string vname = to_string(v);
  std::cout << "[sweep] " << vname << " chunk " << chunk << ": CKGEN_SWEEP_SEED=" << base << ", "
            << count << " problems" << std::endl;
  const auto insts = instances_of(v);
  std::vector<DataType> dts;
  for (DataType dt : kAllDataTypes)
    for (const KernelBase* k : insts)
      if (k->key().datatype == dt) {
        dts.push_back(dt);
        break;
      }
  ASSERT_FALSE(dts.empty()) << "no " << vname << " instances registered";
  SweepRng rng(hash2(base, uint64_t(chunk)));
  int failures = 0, refusals = 0;
  for (int i = 0; i < count; ++i) {
    const DataType dt = rng.pick(dts);
    std::vector<int> ndims;
    for (const KernelBase* k : insts)
      if (k->key().datatype == dt && std::find(ndims.begin(), ndims.end(), k->key().ndim) == ndims.end())
        ndims.push_back(k->key().ndim);
    std::sort(ndims.begin(), ndims.end());
    ConvProblem p;
    std::vector<std::pair<const KernelBase*, RunOptions>> cands;
    for (int attempt = 0; attempt < 200 && cands.empty(); ++attempt) {
      p = random_problem(rng, rng.pick(ndims));
      const int kb = rng.pick<int>({0, 0, 1, 2, 3, 5, 8, 64});
      for (const KernelBase* k : insts) {
        if (k->key().datatype != dt) continue;
        RunOptions o;
        // StreamK instances take the same draw as their grid (0 = automatic)
        (is_streamk(*k) ? o.streamk_blocks : o.k_batch) = kb;
        if (k->is_supported(p, o).empty()) cands.push_back({k, o});
      }
      if (cands.empty()) ++refusals;
    }
    ASSERT_FALSE(cands.empty()) << "200 random " << to_string(dt)
                                << " problems in a row found no supporting instance";
    const auto [k, o] = rng.pick(cands);
    const uint64_t seed = rng.next();
    std::string err;
    VerifyOutcome r;
    try {
      Workbench& wb = workbench(v);
      wb.setup(dt, p, InitMode::Random, seed);
      wb.compute_reference(RefKind::Gpu);
      r = wb.verify(*k, o);
      if (!r.ran) err = r.error;
    } catch (const std::exception& e) {
      err = e.what();
    }
    if (!err.empty()) note_gpu_failure();
    if (!err.empty() || !r.ok) {
      ++failures;
      ADD_FAILURE() << "[sweep] " << vname << " chunk " << chunk << " #" << i
                    << " (CKGEN_SWEEP_SEED=" << base << "): " << k->name() << " "
                    << to_string(dt) << " k_batch " << o.k_batch << " streamk_blocks "
                    << o.streamk_blocks << " on " << problem_summary(p) << ": "
                    << (err.empty() ? r.summary(v, p) : "GPU error: " + err) << "\n"
                    << "reproduce: ckgen_profiler_" << vname << " " << problem_args(p)
                    << " --datatype " << to_string(dt) << " --kernels " << k->name()
                    << run_options_args(v, o)
                    << "\n   or: CKGEN_SWEEP_SEED=" << base
                    << " --gtest_filter=" << vname << "_sweep.chunk_" << chunk;
      if (!err.empty() || failures >= 10) {
        FAIL() << "stopping this chunk after " << failures << " failure(s)";
      }
    }
  }
  std::cout << "[sweep] chunk " << chunk << ": " << count << " problems, " << failures
            << " failure(s), " << refusals << " draw(s) no instance supported" << std::endl;
}

inline void register_sweep_tests(Variant v) {
  const int total = int(env_u64("CKGEN_SWEEP_COUNT", 2000));
  const int chunks = 20;
  const std::string suite = std::string(to_string(v)) + "_sweep";
  for (int c = 0; c < chunks; ++c) {
    const int n = total / chunks + (c < total % chunks ? 1 : 0);
    if (n == 0) continue;
    char name[32];
    std::snprintf(name, sizeof name, "chunk_%02d", c);
    add_test(suite, name, [v, c, n] { run_sweep_chunk(v, c, n); });
  }
}

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
    // GPU cases are chosen with) at forced grids (no device query).
    const ConvProblem p = make_problem(2, 2, 4, 64, 72, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1});
    for (const KernelBase* k : instances_of(Variant::BackwardWeight)) {
      if (!is_streamk(*k) || k->key().ndim != 2) continue;
      const KernelKey& key = k->key();
      for (int blocks : {1, 3, 7, 64}) {
        RunOptions o;
        o.streamk_blocks = blocks;
        const StreamKPlan s = streamk_plan_of(key, p, blocks);
        EXPECT_EQ(k->workspace_bytes(p, o),
                  std::size_t(streamk_workspace_bytes(s, key.tile_m, key.tile_n)))
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

// Registers every suite of variant v (call after ::testing::InitGoogleTest, before
// RUN_ALL_TESTS). Needs no GPU: only is_supported is called here.
inline void register_tests(Variant v) {
  using namespace testing_detail;
  const std::string vname = to_string(v);
  auto load = [&](const std::string& file, std::vector<NamedProblem>& out) {
    try {
      out = load_shapes_csv(shapes_dir() + "/" + file);
      return true;
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      add_test(vname + "_support", "shapes_file_" + sanitize(file), [msg] { FAIL() << msg; });
      return false;
    }
  };
  std::vector<NamedProblem> coverage, tests, streamk;
  load("coverage.csv", coverage);
  load("tests.csv", tests);
  if (v == Variant::BackwardWeight) load("streamk.csv", streamk);

  const auto insts = instances_of(v);
  for (DataType dt : kAllDataTypes) {
    bool any = false;
    for (const KernelBase* k : insts) any = any || k->key().datatype == dt;
    if (!any) {
      const std::string msg = "no " + vname + " " + to_string(dt) + " instance is registered";
      add_test(vname + "_support", std::string("no_instances__") + to_string(dt), [msg] {
        CKGEN_REQUIRE_GPU();
        FAIL() << msg;
      });
    }
  }
  register_problem_tests(v, vname + "_coverage", coverage, {0});
  register_problem_tests(v, vname + "_tests", tests,
                         v == Variant::BackwardWeight ? std::vector<int>{0, 1, 3, 64}
                                                      : std::vector<int>{0, 1, 3},
                         streamk_test_blocks());
  register_negative_tests(v);
  register_im2col_wide_tests(v);
  register_reference_tests(v, tests);
  register_sweep_tests(v);
  if (v == Variant::BackwardWeight) {
    register_streamk_tests(streamk);
    register_streamk_host_tests();
    register_streamk_coverage_test();
  }
  register_host_tests();
}

inline int test_main(Variant v, int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  register_tests(v);
  return RUN_ALL_TESTS();
}

}  // namespace ckgen::host
