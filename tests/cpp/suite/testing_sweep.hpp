// The random sweep (testing.hpp): <variant>_sweep.
#pragma once

#include "testing_common.hpp"

namespace ckgen::host {
namespace testing_detail {

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
    // (pipeline/depthwise.hpp) draw them too; small groups (C = K = 2, 4, 8, 16 or 32,
    // ResNeXt-style) for the direct small-group instances, G * C mostly a multiple of 8
    // 64-channel groups at stride 1 (kind 30..35) for the windows (pipeline/tma_window.hpp,
    // pipeline/tma_window_weight.hpp), half of them with a 3x3 filter (the backward_weight windows')
    // 1x1 filters at unit strides without padding (kind 36..43) for the pointwise instances
    // (pipeline/pointwise.hpp), channels mostly multiples of 8, up to a few hundred pixels
    const int kind = int(rng.uniform(0, 99));
    const bool depthwise = kind < 20, small_groups = kind >= 20 && kind < 30, wide = kind >= 30 && kind < 36;
    const bool pointwise = kind >= 36 && kind < 44;
    const int64_t cg = small_groups ? rng.pick<int64_t>({2, 4, 4, 8, 16, 32}) : 1;
    const int64_t G = small_groups     ? (rng.chance(75) ? std::max<int64_t>(1, 8 / cg) * rng.uniform(1, 8)
                                                          : rng.uniform(1, 24))
                      : !depthwise     ? rng.pick<int64_t>({1, 1, 1, 2, 3, 4, 8, 32})
                      : rng.chance(50) ? 8 * rng.uniform(1, 16)
                                        : rng.uniform(2, 64);
    auto channels = [&]() -> int64_t {
      if (wide) return 64;
      if (pointwise) return rng.chance(80) ? 8 * rng.uniform(1, 24) : rng.uniform(1, 40);
      if (depthwise || small_groups) return cg;
      if (rng.chance(50)) return 8 * rng.uniform(1, 8);
      return rng.uniform(1, 40);
    };
    const int64_t C = channels();
    // a quarter of the depthwise draws with a channel multiplier (K = 2 or 3 a group)
    const int64_t K = depthwise && rng.chance(25) ? rng.pick<int64_t>({2, 3}) : channels();
    const bool square3 = wide && ndim == 2 && rng.chance(50);
    const int64_t N = rng.uniform(1, 3);
    const int64_t max_in = ndim == 1 ? 48 : ndim == 2 ? 16 : 7;
    std::vector<int64_t> in, f, s, d, pl, pr;
    for (int i = 0; i < ndim; ++i) {
      in.push_back(rng.uniform(1, max_in));
      // depthwise draws wide filters too (the direct kernel's row windows, up to 11 taps a row)
      f.push_back(square3     ? 3
                  : pointwise ? 1
                  : depthwise ? rng.pick<int64_t>({1, 2, 3, 3, 4, 5, 5, 7, 9, 11})
                              : rng.pick<int64_t>({1, 1, 2, 3, 3, 3, 4, 5}));
      s.push_back(wide || pointwise ? 1 : rng.pick<int64_t>({1, 1, 1, 2, 2, 3}));
      d.push_back(rng.pick<int64_t>({1, 1, 1, 1, 2, 3}));
      const int64_t eff = (f.back() - 1) * d.back() + 1;
      const int64_t pmax = pointwise ? 0 : std::min<int64_t>(3, eff - 1);
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

}  // namespace testing_detail
}  // namespace ckgen::host
