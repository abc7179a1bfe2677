// The StreamK suites (testing.hpp): backward_weight_streamk and its coverage check.
#pragma once

#include "testing_common.hpp"

namespace ckgen::host {
namespace testing_detail {

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
    std::string unreached;
    for (const auto& [r, persistent] : modes)
      for (const Need& n : needs) {
        bool met = false;
        for (const StreamKCase& c : streamk_cases())
          met = met || (c.reduction == r && c.persistent == persistent && n.met(c));
        if (met) continue;
        const std::string what = std::string(to_string(r)) + (persistent ? " persistent" : "") +
                                 ": no backward_weight_streamk case reaches: " + n.what;
#ifdef CKGEN_FILTERED_BUILD
        unreached += (unreached.empty() ? "" : "; ") + what;
#else
        ADD_FAILURE() << what;
#endif
      }
    if (!unreached.empty())
      GTEST_SKIP() << "filtered build: its instances do not reach every StreamK schedule the "
                      "whole tests set covers ("
                   << unreached << ")";
  });
}

}  // namespace testing_detail
}  // namespace ckgen::host
