// GoogleTest suites for one variant, registered at run time (::testing::RegisterTest):
//
//   <variant>_coverage    every problem of shapes/coverage.csv      x datatype x instance
//   <variant>_tests       every problem of shapes/tests.csv         x datatype x instance
//                         (backward_weight split-K: x k_batch 0, 1, 3, 64 where supported;
//                         forward / backward_data instances whose k_batch is not 1: x 0, 1, 3;
//                         StreamK: x streamk_blocks 0 (auto), 1, 3, 7)
//                         test name: <problem>__<datatype>__<instance>[__kb<k_batch>|__sk<blocks>]
//                         (fused instances: against the unfused reference with the fused
//                         operations applied on the host, host/fused_reference.hpp)
//                         reference: CPU fp64 up to 2 GFLOP, else the GPU fp32 kernel
//   backward_weight_streamk  every problem of shapes/streamk.csv x StreamK instance x grid
//                         (streamk_case_grids: automatic, all data-parallel, odd splits, all
//                         StreamK, StreamK next to data-parallel waves); name
//                         <problem>__<instance>__sk<blocks>
//   <variant>_support     <problem>__<datatype> FAILS when no instance supports a problem;
//                         no_instances__<datatype> FAILS when a datatype has no instance
//                         (skips in a filtered build)
//   <variant>_negative    run() refuses a fused instance's missing operands and an operand given
//                         to an unfused instance (forward: a bias, backward: a saved y; no GPU
//                         needed);
//                         is_supported must refuse (with a reason): ndim mismatch (and a 1D / 2D
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

#include "testing_cases.hpp"
#include "testing_common.hpp"
#include "testing_host.hpp"
#include "testing_streamk.hpp"
#include "testing_sweep.hpp"

namespace ckgen::host {

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
#ifdef CKGEN_FILTERED_BUILD
        GTEST_SKIP() << "a filtered build (generate --kernels / --datatype / --ndim) need not hold every "
                        "datatype: "
                     << msg;
#else
        FAIL() << msg;
#endif
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
