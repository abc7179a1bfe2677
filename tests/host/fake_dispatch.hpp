// What the host-only dispatcher checks (neighbour_ranking.cpp, twins.cpp, selection_cache.cpp) and
// the fake C API registry (fake_library.cpp: fake_key) share: fake instances that stand in for
// compiled kernels (only their keys and is_supported() matter to select()), their keys, 2D
// problems, tuning database files and the check that prints "ok <check>", or "FAIL <check>: ..."
// and exits 1.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ckgen/dispatch/dispatcher.hpp"

namespace ckgen_test {

using namespace ckgen;

// Supports every problem (c_mult 0), or those of its ndim whose C is a multiple of c_mult (else
// the reason).
struct FakeKernel : KernelBase {
  KernelKey k;
  int c_mult;
  explicit FakeKernel(KernelKey key, int cm = 0) : k(std::move(key)), c_mult(cm) {}
  const KernelKey& key() const override { return k; }
  std::string is_supported(const ConvProblem& p, const RunOptions&) const override {
    if (c_mult == 0) return "";
    if (p.ndim != k.ndim) return "ndim mismatch";
    return p.C % c_mult == 0 ? "" : "vector width " + std::to_string(c_mult) + " needs C to be a multiple";
  }
  std::size_t workspace_bytes(const ConvProblem&, const RunOptions&) const override { return 0; }
  gpuError_t run(const ConvProblem&, const ConvTensors&, void*, gpuStream_t, const RunOptions&) const override {
    return gpuSuccess;
  }
};

// A 2D fp16 multistage sm_90a key of tile tm x tn x tk (waves 2x2x1, warp tile 16x8x16, 3 stages,
// vectors of 8, k_batch 1, one stage).
inline KernelKey fake_key(const std::string& name, Variant v, int tm, int tn, int tk) {
  KernelKey k{};
  k.name = name;
  k.variant = v;
  k.datatype = k.out_datatype = DataType::FP16;
  k.ndim = 2;
  k.tile_m = tm, k.tile_n = tn, k.tile_k = tk;
  k.wave_m = 2, k.wave_n = 2, k.wave_k = 1;
  k.warp_m = 16, k.warp_n = 8, k.warp_k = 16;
  k.pipeline = Pipeline::Multistage;
  k.stages = 3;
  k.vec_a = k.vec_b = k.vec_c = 8;
  k.groups_to_merge = 1;
  k.k_batch = 1;
  k.stage = Stage::One;
  k.arch = "sm_90a";
  return k;
}

// A 2D problem: hw x hw input, f x f filter with "same" padding (f / 2 on each side).
inline ConvProblem conv(int64_t N, int64_t C, int64_t K, int64_t hw, int64_t f = 3) {
  ConvProblem p;
  p.ndim = 2;
  p.N = N, p.C = C, p.K = K;
  p.in[1] = p.in[2] = hw;
  p.filter[1] = p.filter[2] = f;
  p.pad_l[1] = p.pad_l[2] = p.pad_r[1] = p.pad_r[2] = f / 2;
  p.compute_output();
  return p;
}

// fake_key with the variant's usual k_batch (backward_weight 0: the instance chooses) and stage.
inline KernelKey key(const std::string& name, Variant v, int tm, int tn, int tk, Stage st = Stage::One) {
  KernelKey k = fake_key(name, v, tm, tn, tk);
  k.k_batch = v == Variant::BackwardWeight ? 0 : 1;
  k.stage = st;
  return k;
}

// Tuning databases for the dispatcher checks: a 2D problem, an entry (fp16) and the file.
inline std::string problem_json(const ConvProblem& p) {
  std::ostringstream os;
  os << "{\"ndim\": 2, \"G\": " << p.G << ", \"N\": " << p.N << ", \"C\": " << p.C << ", \"K\": " << p.K
     << ", \"in\": [1, " << p.in[1] << ", " << p.in[2] << "], \"filter\": [1, " << p.filter[1] << ", "
     << p.filter[2] << "], \"stride\": [1, 1, 1], \"dilation\": [1, 1, 1], \"pad_l\": [0, " << p.pad_l[1] << ", "
     << p.pad_l[2] << "], \"pad_r\": [0, " << p.pad_r[1] << ", " << p.pad_r[2] << "]}";
  return os.str();
}

struct Timed {
  std::string kernel;
  int k_batch;
  double ms;
};
inline std::string entry_json(const char* variant, const std::string& shape, const ConvProblem& p,
                              const std::vector<Timed>& ts) {
  std::ostringstream os;
  os << "{\"variant\": \"" << variant << "\", \"datatype\": \"fp16\", \"shape\": \"" << shape
     << "\", \"problem\": " << problem_json(p) << ", \"ranking\": [";
  for (size_t i = 0; i < ts.size(); ++i)
    os << (i ? ", " : "") << "{\"kernel\": \"" << ts[i].kernel << "\", \"k_batch\": " << ts[i].k_batch
       << ", \"ms\": " << ts[i].ms << "}";
  os << "]}";
  return os.str();
}
inline void write_db(const std::string& path, const std::vector<std::string>& entries) {
  std::ofstream f(path);
  f << "{\"ckgen_tuning_db\": 1, \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) f << (i ? ", " : "") << entries[i];
  f << "]}\n";
}

inline void check(bool ok, const char* what, const std::string& detail = "") {
  if (ok) {
    std::printf("ok %s\n", what);
  } else {
    std::printf("FAIL %s: %s\n", what, detail.c_str());
    std::exit(1);
  }
}

}  // namespace ckgen_test
