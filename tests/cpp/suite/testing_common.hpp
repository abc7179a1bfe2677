// The GoogleTest suite's shared helpers (testing.hpp): the GPU check, test registration, seeds,
// the shapes directory, the per-process workbench and run_case (one instance on one problem
// against the reference).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <tuple>
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

// The registered instances of variant v. The mask-copy faces (kernel/mask_copy.hpp: three for
// every plain backward instance, the same copy ahead of it) are taken once per pipeline, datatype,
// ndim and mask.
inline std::vector<const KernelBase*> instances_of(Variant v) {
  std::vector<const KernelBase*> out;
  std::set<std::tuple<int, int, int, int>> faces;
  for (const auto& k : registry().all()) {
    const KernelKey& key = k->key();
    if (key.variant != v) continue;
    if (key.mask_copy &&
        !faces.emplace(int(key.pipeline), int(key.datatype), key.ndim, int(key.activation)).second)
      continue;
    out.push_back(k.get());
  }
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
}  // namespace testing_detail
}  // namespace ckgen::host
