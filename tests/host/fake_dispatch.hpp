// What the host-only dispatcher checks (neighbour_ranking.cpp, selection_cache.cpp) and the fake C
// API registry (fake_library.cpp: fake_key) share: fake
// instances that stand in for compiled kernels (only their keys and is_supported() matter to
// select()), their keys, 2D problems and the check that prints "ok <check>", or
// "FAIL <check>: ..." and exits 1.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

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
  k.datatype = DataType::FP16;
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

inline void check(bool ok, const char* what, const std::string& detail = "") {
  if (ok) {
    std::printf("ok %s\n", what);
  } else {
    std::printf("FAIL %s: %s\n", what, detail.c_str());
    std::exit(1);
  }
}

}  // namespace ckgen_test
