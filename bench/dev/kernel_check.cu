// Standalone checker of the ckgen kernel library (templates/include/ckgen): instantiates a few
// configs per variant / datatype, runs them on fresh random inputs with poisoned outputs and
// compares against a naive fp64 host reference. Prints one PASS/FAIL line per case.
//
// Build + run: bench/dev/kernel_check.sh   (or see the nvcc line there)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ckgen/kernel.hpp"

#ifndef CK_PART
#define CK_PART 3
#endif

using namespace ckgen;

#define CHECK_GPU(x)                                                                  \
  do {                                                                                \
    gpuError_t e_ = (x);                                                              \
    if (e_ != gpuSuccess) {                                                           \
      std::printf("GPU error %s at %s:%d\n", gpuGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(3);                                                                   \
    }                                                                                 \
  } while (0)

template <Variant V, DataType D, int ND, class TileT, class WavesT, int VA, int VB, int VC,
          Specialization S = Specialization::Default, Stage ST = Stage::One, int KB = 0,
          Pipeline P = Pipeline::Basic, int STAGES = 1, int TAG = 0>
struct Cfg {  // TAG only makes types distinct between translation units
  static constexpr const char* kName = "check";
  static constexpr const char* kArch = "sm_90a";
  static constexpr Variant kVariant = V;
  static constexpr DataType kDataType = D;
  static constexpr int kNDim = ND;
  using Tile = TileT;
  using Waves = WavesT;
  using WarpTile = std::conditional_t<D == DataType::FP32, ckgen::WarpTile<16, 8, 8>,
                                      ckgen::WarpTile<16, 8, 16>>;
  static constexpr MathUnit kMathUnit = D == DataType::FP32 ? MathUnit::Fma : MathUnit::MmaSync;
  static constexpr int kWarpSize = 32;
  static constexpr Pipeline kPipeline = P;
  static constexpr int kStages = STAGES;
  static constexpr Scheduler kScheduler = Scheduler::Intrawave;
  static constexpr int kLoadWaves = 0, kMathWaves = 0;
  static constexpr Epilogue kEpilogue = Epilogue::Default;
  static constexpr int kVecA = VA, kVecB = VB, kVecC = VC;
  static constexpr Specialization kSpecialization = S;
  static constexpr int kGroupsToMerge = 1;
  static constexpr int kKBatch = KB;
  static constexpr Reduction kReduction = Reduction::SplitK;
  static constexpr bool kPersistent = false;
  static constexpr Stage kStage = ST;
};

// ---------------------------------------------------------------------------------------------
static ConvProblem mk(int nd, int64_t G, int64_t N, int64_t C, int64_t K, std::vector<int64_t> in,
                      std::vector<int64_t> fil, std::vector<int64_t> s, std::vector<int64_t> d,
                      std::vector<int64_t> pl, std::vector<int64_t> pr) {
  ConvProblem p;
  p.ndim = nd;
  p.G = G;
  p.N = N;
  p.C = C;
  p.K = K;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    p.in[j] = in[i];
    p.filter[j] = fil[i];
    p.stride[j] = s[i];
    p.dilation[j] = d[i];
    p.pad_l[j] = pl[i];
    p.pad_r[j] = pr[i];
  }
  p.compute_output();
  return p;
}

static std::string describe(const ConvProblem& p) {
  char b[512];
  std::snprintf(b, sizeof b,
                "%dD G%ld N%ld C%ld K%ld in(%ld,%ld,%ld) f(%ld,%ld,%ld) s(%ld,%ld,%ld) "
                "d(%ld,%ld,%ld) pl(%ld,%ld,%ld) pr(%ld,%ld,%ld)",
                p.ndim, (long)p.G, (long)p.N, (long)p.C, (long)p.K, (long)p.in[0], (long)p.in[1],
                (long)p.in[2], (long)p.filter[0], (long)p.filter[1], (long)p.filter[2],
                (long)p.stride[0], (long)p.stride[1], (long)p.stride[2], (long)p.dilation[0],
                (long)p.dilation[1], (long)p.dilation[2], (long)p.pad_l[0], (long)p.pad_l[1],
                (long)p.pad_l[2], (long)p.pad_r[0], (long)p.pad_r[1], (long)p.pad_r[2]);
  return b;
}

// Reference: returns (ref, sum|terms|) for the written tensor.
static void reference(Variant v, const ConvProblem& p, const std::vector<float>& x,
                      const std::vector<float>& w, const std::vector<float>& y,
                      std::vector<double>& ref, std::vector<double>& mag) {
  const int64_t G = p.G, N = p.N, C = p.C, K = p.K;
  const int64_t* In = p.in;
  const int64_t* Out = p.out;
  const int64_t* F = p.filter;
  auto xi = [&](int64_t n, int64_t d, int64_t h, int64_t ww, int64_t g, int64_t c) {
    return (((n * In[0] + d) * In[1] + h) * In[2] + ww) * G * C + g * C + c;
  };
  auto yi = [&](int64_t n, int64_t d, int64_t h, int64_t ww, int64_t g, int64_t k) {
    return (((n * Out[0] + d) * Out[1] + h) * Out[2] + ww) * G * K + g * K + k;
  };
  auto wi = [&](int64_t g, int64_t k, int64_t z, int64_t yy, int64_t xx, int64_t c) {
    return ((((g * K + k) * F[0] + z) * F[1] + yy) * F[2] + xx) * C + c;
  };
  const size_t n_out = v == Variant::Forward ? y.size() : v == Variant::BackwardData ? x.size() : w.size();
  ref.assign(n_out, 0.0);
  mag.assign(n_out, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t od = 0; od < Out[0]; ++od)
      for (int64_t oh = 0; oh < Out[1]; ++oh)
        for (int64_t ow = 0; ow < Out[2]; ++ow)
          for (int64_t z = 0; z < F[0]; ++z)
            for (int64_t fy = 0; fy < F[1]; ++fy)
              for (int64_t fx = 0; fx < F[2]; ++fx) {
                const int64_t id = od * p.stride[0] - p.pad_l[0] + z * p.dilation[0];
                const int64_t ih = oh * p.stride[1] - p.pad_l[1] + fy * p.dilation[1];
                const int64_t iw = ow * p.stride[2] - p.pad_l[2] + fx * p.dilation[2];
                if (id < 0 || id >= In[0] || ih < 0 || ih >= In[1] || iw < 0 || iw >= In[2]) continue;
                for (int64_t g = 0; g < G; ++g)
                  for (int64_t k = 0; k < K; ++k)
                    for (int64_t c = 0; c < C; ++c) {
                      const int64_t ix = xi(n, id, ih, iw, g, c), iy = yi(n, od, oh, ow, g, k),
                                    iwt = wi(g, k, z, fy, fx, c);
                      int64_t o;
                      double t;
                      if (v == Variant::Forward) {
                        o = iy;
                        t = double(x[ix]) * w[iwt];
                      } else if (v == Variant::BackwardData) {
                        o = ix;
                        t = double(y[iy]) * w[iwt];
                      } else {
                        o = iwt;
                        t = double(y[iy]) * x[ix];
                      }
                      ref[o] += t;
                      mag[o] += std::fabs(t);
                    }
              }
}

template <DataType D>
static std::vector<typename DataTypeTraits<D>::raw> to_raw(const std::vector<float>& f) {
  std::vector<typename DataTypeTraits<D>::raw> r(f.size());
  for (size_t i = 0; i < f.size(); ++i) r[i] = float_to_raw<D>(f[i]);
  return r;
}

// Built as 4 translation units (CK_PART 0..2: one variant each, 3: main) so they compile in
// parallel; the counters live in part 3.
extern int g_pass, g_fail, g_refused;
static std::mt19937 rng(12345 + CK_PART);

template <DataType D>
static std::vector<float> rand_tensor(int64_t n) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& e : v) e = raw_to_float<D>(float_to_raw<D>(dist(rng)));  // exactly representable
  return v;
}

template <class C>
static void check(const char* label, const ConvProblem& p, int k_batch = 0, bool expect_ok = true) {
  using Tr = ConfigTraits<C>;
  using Raw = typename Tr::Raw;
  constexpr DataType D = C::kDataType;
  auto kern = make_kernel<C>();
  RunOptions opts;
  opts.k_batch = k_batch;
  const std::string why = kern->is_supported(p, opts);
  if (!why.empty()) {
    if (expect_ok) {
      std::printf("FAIL  %-34s %s  refused unexpectedly: %s\n", label, describe(p).c_str(), why.c_str());
      ++g_fail;
    } else {
      std::printf("OK    %-34s %s  refused as expected: %s\n", label, describe(p).c_str(), why.c_str());
      ++g_refused;
    }
    return;
  }
  if (!expect_ok) {
    std::printf("FAIL  %-34s %s  accepted but should be refused\n", label, describe(p).c_str());
    ++g_fail;
    return;
  }
  std::vector<float> x = rand_tensor<D>(p.input_elems()), w = rand_tensor<D>(p.weight_elems()),
                     y = rand_tensor<D>(p.output_elems());
  auto xr = to_raw<D>(x), wr = to_raw<D>(w), yr = to_raw<D>(y);
  Raw *dx, *dw, *dy;
  CHECK_GPU(gpuMalloc((void**)&dx, xr.size() * sizeof(Raw)));
  CHECK_GPU(gpuMalloc((void**)&dw, wr.size() * sizeof(Raw)));
  CHECK_GPU(gpuMalloc((void**)&dy, yr.size() * sizeof(Raw)));
  CHECK_GPU(gpuMemcpy(dx, xr.data(), xr.size() * sizeof(Raw), gpuMemcpyHostToDevice));
  CHECK_GPU(gpuMemcpy(dw, wr.data(), wr.size() * sizeof(Raw), gpuMemcpyHostToDevice));
  CHECK_GPU(gpuMemcpy(dy, yr.data(), yr.size() * sizeof(Raw), gpuMemcpyHostToDevice));
  const Variant v = C::kVariant;
  Raw* dst = v == Variant::Forward ? dy : v == Variant::BackwardData ? dx : dw;
  const size_t n_dst = v == Variant::Forward ? yr.size() : v == Variant::BackwardData ? xr.size() : wr.size();
  CHECK_GPU(gpuMemset(dst, 0xFF, n_dst * sizeof(Raw)));  // poison (NaN)
  const size_t ws_bytes = kern->workspace_bytes(p, opts);
  void* ws = nullptr;
  if (ws_bytes) {
    CHECK_GPU(gpuMalloc(&ws, ws_bytes));
    CHECK_GPU(gpuMemset(ws, 0xFF, ws_bytes));
  }
  ConvTensors t{dx, dw, dy};
  CHECK_GPU(kern->run(p, t, ws, nullptr, opts));
  CHECK_GPU(gpuDeviceSynchronize());
  std::vector<Raw> got(n_dst);
  CHECK_GPU(gpuMemcpy(got.data(), dst, n_dst * sizeof(Raw), gpuMemcpyDeviceToHost));
  std::vector<double> ref, mag;
  reference(v, p, x, w, y, ref, mag);
  const double rtol = D == DataType::FP16 ? 1.0 / 1024 : D == DataType::BF16 ? 1.0 / 128 : 1e-5;
  const double atol = 2e-5;
  double max_err = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < n_dst; ++i) {
    const double g = raw_to_float<D>(got[i]);
    const double err = std::fabs(g - ref[i]);
    const double tol = rtol * std::fabs(ref[i]) + atol * (mag[i] + 1.0);
    if (!(err <= tol)) {
      if (!bad) first_bad = i;
      ++bad;
    }
    if (err > max_err || std::isnan(err)) max_err = std::isnan(err) ? INFINITY : err;
  }
  const int kb = v == Variant::BackwardWeight ? (int)(ws_bytes ? 0 : 1) : 1;
  (void)kb;
  if (bad) {
    std::printf("FAIL  %-34s %s kb=%d  bad=%zu/%zu first@%zu got=%g ref=%g max_err=%g\n", label,
                describe(p).c_str(), k_batch, bad, n_dst, first_bad,
                (double)raw_to_float<D>(got[first_bad]), ref[first_bad], max_err);
    ++g_fail;
  } else {
    std::printf("PASS  %-34s %s kb=%d ws=%zu  n=%zu max_err=%.3g\n", label, describe(p).c_str(),
                k_batch, ws_bytes, n_dst, max_err);
    ++g_pass;
  }
  CHECK_GPU(gpuFree(dx));
  CHECK_GPU(gpuFree(dw));
  CHECK_GPU(gpuFree(dy));
  if (ws) CHECK_GPU(gpuFree(ws));
}

// ---------------------------------------------------------------------------------------------
using T128 = TileShape<128, 128, 32>;
using T64 = TileShape<64, 64, 32>;
using T64x128 = TileShape<64, 128, 64>;
using T32 = TileShape<32, 32, 16>;
using W22 = WaveLayout<2, 2, 1>;
using W14 = WaveLayout<1, 4, 1>;
using W21 = WaveLayout<2, 1, 1>;

// Problems (2D unless noted).
static std::vector<ConvProblem> problems2d() {
  return {
      mk(2, 2, 2, 16, 24, {14, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 3, 32, 64, {17, 19}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 1}),
      mk(2, 2, 2, 8, 40, {15, 16}, {3, 3}, {2, 2}, {2, 2}, {2, 1}, {1, 2}),   // s2 d2 asym
      mk(2, 1, 2, 16, 16, {13, 14}, {3, 2}, {3, 3}, {2, 2}, {2, 0}, {1, 3}),  // s3 d2 asym
      mk(2, 1, 1, 64, 128, {9, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}),   // 1x1
      mk(2, 3, 1, 24, 8, {11, 10}, {5, 5}, {1, 2}, {1, 1}, {2, 2}, {2, 2}),
  };
}
static std::vector<ConvProblem> problems2d_odd() {
  return {
      mk(2, 1, 2, 3, 36, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),   // C=3 K=36
      mk(2, 2, 2, 5, 7, {12, 9}, {3, 3}, {2, 3}, {2, 1}, {1, 2}, {2, 0}),     // odd, s2/3 d2
      mk(2, 2, 1, 3, 36, {10, 10}, {3, 3}, {3, 2}, {2, 2}, {0, 3}, {2, 1}),
  };
}
static std::vector<ConvProblem> problems1d() {
  return {
      mk(1, 2, 3, 8, 16, {37}, {3}, {2}, {2}, {2}, {1}),
      mk(1, 1, 2, 3, 36, {29}, {5}, {3}, {2}, {3}, {1}),
      mk(1, 1, 2, 16, 24, {40}, {1}, {1}, {1}, {0}, {0}),
  };
}
static std::vector<ConvProblem> problems3d() {
  return {
      mk(3, 2, 1, 8, 8, {6, 7, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}),
      mk(3, 1, 2, 4, 12, {7, 6, 8}, {3, 2, 3}, {2, 2, 3}, {2, 1, 2}, {2, 1, 1}, {1, 0, 2}),
      mk(3, 1, 1, 3, 36, {5, 6, 7}, {2, 3, 3}, {2, 3, 2}, {1, 2, 2}, {0, 2, 1}, {1, 1, 0}),
  };
}

template <Variant V, DataType D>
static void suite(const char* vname) {
  constexpr bool f32 = D == DataType::FP32;
  constexpr int V8 = f32 ? 4 : 8;  // widest vector (16 bytes)
  char label[128];
  const char* dn = to_string(D);
  auto L = [&](const char* what) {
    std::snprintf(label, sizeof label, "%s/%s/%s", vname, dn, what);
    return label;
  };
  for (auto& p : problems2d()) {
    check<Cfg<V, D, 2, T128, W22, V8, V8, V8>>(L("2d_t128_vec"), p, 0,
                                               V == Variant::Forward ? (p.C % V8 == 0 && p.K % V8 == 0)
                                               : V == Variant::BackwardData ? (p.K % V8 == 0 && p.C % V8 == 0)
                                               : (p.K % V8 == 0 && p.C % V8 == 0));
    check<Cfg<V, D, 2, T64, W22, 2, 2, 2>>(L("2d_t64_vec2"), p);
    check<Cfg<V, D, 2, T64x128, W14, 1, 1, 1>>(L("2d_t64x128_w14_vec1"), p);
  }
  // multistage (cp.async) pipeline
  for (auto& p : problems2d())
    check<Cfg<V, D, 2, T128, W22, V8, V8, V8, Specialization::Default, Stage::One, 0,
              Pipeline::Multistage, 3>>(L("2d_t128_vec_ms3"), p);
  for (auto& p : problems2d_odd())
    check<Cfg<V, D, 2, T64, W22, 1, 1, 1, Specialization::Default, Stage::One, 0,
              Pipeline::Multistage, 2>>(L("2d_t64_vec1_ms2"), p);
  for (auto& p : problems3d())
    check<Cfg<V, D, 3, T64x128, W14, 1, 1, 1, Specialization::Default, Stage::One, 0,
              Pipeline::Multistage, 4>>(L("3d_t64x128_vec1_ms4"), p);
  if constexpr (V == Variant::Forward && D == DataType::FP16) {
    using T256 = TileShape<128, 256, 64>;
    using W24 = WaveLayout<2, 4, 1>;
    for (auto& p : problems2d())  // 165 KB of shared memory (opt-in attribute path)
      check<Cfg<V, D, 2, T256, W24, 8, 8, 8, Specialization::Default, Stage::One, 0,
                Pipeline::Multistage, 3>>(L("2d_t128x256x64_ms3"), p);
  }
  for (auto& p : problems2d_odd()) {
    check<Cfg<V, D, 2, T64, W22, 1, 1, 1>>(L("2d_t64_vec1"), p);
    check<Cfg<V, D, 2, T32, W21, 1, 1, 1>>(L("2d_t32_vec1"), p);
    check<Cfg<V, D, 2, T64, W22, 4, 4, 4>>(L("2d_t64_vec4_refuse"), p, 0, false);
  }
  for (auto& p : problems1d()) check<Cfg<V, D, 1, T64, W22, 1, 1, 1>>(L("1d_t64_vec1"), p);
  for (auto& p : problems3d()) check<Cfg<V, D, 3, T64, W22, 1, 1, 1>>(L("3d_t64_vec1"), p);
  check<Cfg<V, D, 3, T64, W22, 4, 4, 4>>(L("3d_t64_vec4"), problems3d()[0]);
  // wrong ndim must be refused
  check<Cfg<V, D, 3, T64, W22, 1, 1, 1>>(L("3d_inst_2d_problem"), problems2d()[0], 0, false);
  // specializations
  const ConvProblem p11 = mk(2, 2, 2, 32, 48, {9, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0});
  const ConvProblem p11s2 = mk(2, 2, 2, 32, 48, {9, 10}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0});
  check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Filter1x1Stride1Pad0>>(L("2d_1x1s1"), p11);
  check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Filter1x1Stride1Pad0>>(L("2d_1x1s1_refuse"), p11s2, 0, false);
  check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Filter1x1Pad0>>(L("2d_1x1p0"), p11s2);
  check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Filter1x1Pad0>>(L("2d_1x1p0_refuse"), problems2d()[0], 0, false);
  if constexpr (V == Variant::BackwardWeight) {
    const ConvProblem pw = mk(2, 2, 4, 16, 32, {20, 18}, {3, 3}, {2, 1}, {1, 2}, {1, 2}, {0, 1});
    for (int kb : {1, 3, 64}) {
      check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Default, Stage::One>>(L("2d_splitk_stage1"), pw, kb);
      check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Default, Stage::Two>>(L("2d_splitk_stage2"), pw, kb);
      check<Cfg<V, D, 2, T64, W22, 1, 1, 1, Specialization::Default, Stage::Two>>(L("2d_splitk_stage2_vec1"), problems2d_odd()[1], kb);
    }
    check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Default, Stage::One>>(L("2d_splitk_auto"), pw, 0);
    for (int kb : {1, 3, 64})
      check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Default, Stage::Two, 0,
                Pipeline::Multistage, 3>>(L("2d_splitk_stage2_ms3"), pw, kb);
    check<Cfg<V, D, 2, T64, W22, V8, V8, V8, Specialization::Default, Stage::Two, 5>>(L("2d_splitk_cfg5"), pw, 0);
    check<Cfg<V, D, 2, T64, W22, V8, V8, V8>>(L("2d_splitk_65_refuse"), pw, 65, false);
  }
}

// Timing of a few instances on one RetinaNet-like shape (events around back-to-back launches).
template <class C>
static void perf(const char* label, const ConvProblem& p, int k_batch = 0) {
  using Raw = typename ConfigTraits<C>::Raw;
  auto kern = make_kernel<C>();
  RunOptions opts;
  opts.k_batch = k_batch;
  const std::string why = kern->is_supported(p, opts);
  if (!why.empty()) {
    std::printf("PERF  %-40s refused: %s\n", label, why.c_str());
    return;
  }
  Raw *dx, *dw, *dy;
  CHECK_GPU(gpuMalloc((void**)&dx, p.input_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMalloc((void**)&dw, p.weight_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMalloc((void**)&dy, p.output_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMemset(dx, 0x11, p.input_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMemset(dw, 0x11, p.weight_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMemset(dy, 0x11, p.output_elems() * sizeof(Raw)));
  const size_t ws_bytes = kern->workspace_bytes(p, opts);
  void* ws = nullptr;
  if (ws_bytes) CHECK_GPU(gpuMalloc(&ws, ws_bytes));
  ConvTensors t{dx, dw, dy};
  for (int i = 0; i < 5; ++i) CHECK_GPU(kern->run(p, t, ws, nullptr, opts));
  gpuEvent_t a, b;
  CHECK_GPU(gpuEventCreate(&a));
  CHECK_GPU(gpuEventCreate(&b));
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    const int iters = 20;
    CHECK_GPU(gpuEventRecord(a, nullptr));
    for (int i = 0; i < iters; ++i) CHECK_GPU(kern->run(p, t, ws, nullptr, opts));
    CHECK_GPU(gpuEventRecord(b, nullptr));
    CHECK_GPU(gpuEventSynchronize(b));
    float ms = 0;
    CHECK_GPU(gpuEventElapsedTime(&ms, a, b));
    best = std::min(best, ms / iters);
  }
  std::printf("PERF  %-40s %s  %.4f ms  %.1f TFLOPS  ws=%zu\n", label, describe(p).c_str(), best,
              p.flops() / (best * 1e-3) / 1e12, ws_bytes);
  CHECK_GPU(gpuFree(dx));
  CHECK_GPU(gpuFree(dw));
  CHECK_GPU(gpuFree(dy));
  if (ws) CHECK_GPU(gpuFree(ws));
}

#if CK_PART == 0
void run_forward() {
  suite<Variant::Forward, DataType::FP16>("fwd");
  suite<Variant::Forward, DataType::BF16>("fwd");
  suite<Variant::Forward, DataType::FP32>("fwd");
}
#elif CK_PART == 1
void run_backward_data() {
  suite<Variant::BackwardData, DataType::FP16>("bwd_data");
  suite<Variant::BackwardData, DataType::BF16>("bwd_data");
  suite<Variant::BackwardData, DataType::FP32>("bwd_data");
}
#elif CK_PART == 2
void run_backward_weight() {
  suite<Variant::BackwardWeight, DataType::FP16>("bwd_weight");
  suite<Variant::BackwardWeight, DataType::BF16>("bwd_weight");
  suite<Variant::BackwardWeight, DataType::FP32>("bwd_weight");
}
#elif CK_PART == 4
template <Variant V>
static void perf_variant(const char* vn) {
  constexpr DataType D = DataType::FP16;
  using Sp = Specialization;
  using MS = std::integral_constant<Pipeline, Pipeline::Multistage>;
  (void)sizeof(MS);
  const ConvProblem shapes[] = {
      mk(2, 1, 2, 256, 256, {100, 100}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 2, 256, 2376, {50, 50}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 2, 256, 256, {13, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 2, 512, 256, {50, 50}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}),
  };
  char l[128];
  for (const auto& p : shapes) {
    std::snprintf(l, sizeof l, "%s t128x128x32 basic", vn);
    perf<Cfg<V, D, 2, TileShape<128, 128, 32>, W22, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Basic, 1, 1>>(l, p);
    std::snprintf(l, sizeof l, "%s t128x128x32 ms3", vn);
    perf<Cfg<V, D, 2, TileShape<128, 128, 32>, W22, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Multistage, 3, 1>>(l, p);
    std::snprintf(l, sizeof l, "%s t128x128x64 ms4", vn);
    perf<Cfg<V, D, 2, TileShape<128, 128, 64>, W22, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Multistage, 4, 1>>(l, p);
    std::snprintf(l, sizeof l, "%s t128x256x64 w2x4 ms3", vn);
    perf<Cfg<V, D, 2, TileShape<128, 256, 64>, WaveLayout<2, 4, 1>, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Multistage, 3, 1>>(l, p);
    std::snprintf(l, sizeof l, "%s t256x128x32 w4x2 ms3", vn);
    perf<Cfg<V, D, 2, TileShape<256, 128, 32>, WaveLayout<4, 2, 1>, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Multistage, 3, 1>>(l, p);
    std::snprintf(l, sizeof l, "%s t64x64x32 ms3", vn);
    perf<Cfg<V, D, 2, TileShape<64, 64, 32>, W22, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Multistage, 3, 1>>(l, p);
    if constexpr (V == Variant::BackwardWeight) {
      std::snprintf(l, sizeof l, "%s t128x128x32 ms3 stage2", vn);
      perf<Cfg<V, D, 2, TileShape<128, 128, 32>, W22, 8, 8, 8, Sp::Default, Stage::Two, 0, Pipeline::Multistage, 3, 1>>(l, p);
    }
  }
}
void run_perf() {
  perf_variant<Variant::Forward>("fwd");
  perf_variant<Variant::BackwardData>("bwd_data");
  perf_variant<Variant::BackwardWeight>("bwd_weight");
}
#elif CK_PART == 5
// Wavelet (warp-specialized) pipeline: load warps + math warps (mma.sync, or wgmma on sm_90a).
template <Variant V, DataType D, int ND, class TileT, class WavesT, int VA, int VB, int VC,
          int LOADW, int STAGES, MathUnit MU, int WN_ = 8, bool SWAP = false,
          Stage ST = Stage::One, Specialization S = Specialization::Default>
struct WCfg {  // SWAP: unused (was the M/N-major descriptor experiment; run 1 settled it)
  static constexpr const char* kName = "check_wavelet";
  static constexpr const char* kArch = "sm_90a";
  static constexpr Variant kVariant = V;
  static constexpr DataType kDataType = D;
  static constexpr int kNDim = ND;
  using Tile = TileT;
  using Waves = WavesT;
  using WarpTile = std::conditional_t<MU == MathUnit::Wgmma, ckgen::WarpTile<64, WN_, 16>,
                                      ckgen::WarpTile<16, 8, 16>>;
  static constexpr MathUnit kMathUnit = MU;
  static constexpr int kWarpSize = 32;
  static constexpr Pipeline kPipeline = Pipeline::Wavelet;
  static constexpr int kStages = STAGES;
  static constexpr Scheduler kScheduler = Scheduler::Intrawave;
  static constexpr int kLoadWaves = LOADW, kMathWaves = WavesT::kM * WavesT::kN;
  static constexpr Epilogue kEpilogue = Epilogue::Default;
  static constexpr int kVecA = VA, kVecB = VB, kVecC = VC;
  static constexpr Specialization kSpecialization = S;
  static constexpr int kGroupsToMerge = 1;
  static constexpr int kKBatch = 0;
  static constexpr Reduction kReduction = Reduction::SplitK;
  static constexpr bool kPersistent = false;
  static constexpr Stage kStage = ST;
};
constexpr MathUnit kMS = MathUnit::MmaSync, kWG = MathUnit::Wgmma;

template <Variant V, DataType D>
static void wsuite(const char* vname) {
  char label[128];
  const char* dn = to_string(D);
  auto L = [&](const char* what) {
    std::snprintf(label, sizeof label, "%s/%s/%s", vname, dn, what);
    return label;
  };
  auto vec_ok = [](const ConvProblem& p) { return p.C % 8 == 0 && p.K % 8 == 0; };
  using W22 = WaveLayout<2, 2, 1>;
  using W21 = WaveLayout<2, 1, 1>;
  using W41 = WaveLayout<4, 1, 1>;
  // (4,4) mma.sync math warps, 16-byte vectors (cp.async + cp.async.mbarrier.arrive)
  for (auto& p : problems2d())
    check<WCfg<V, D, 2, TileShape<128, 128, 32>, W22, 8, 8, 8, 4, 3, kMS>>(L("wl44_mma_t128_v8_s3"), p, 0, vec_ok(p));
  // (4,2) mma.sync, vec 1 (synchronous copies + plain arrive), odd channels
  for (auto& p : problems2d_odd())
    check<WCfg<V, D, 2, TileShape<64, 64, 32>, W21, 1, 1, 1, 4, 2, kMS>>(L("wl42_mma_t64_v1_s2"), p);
  for (auto& p : problems1d())
    check<WCfg<V, D, 1, TileShape<64, 64, 32>, W21, 1, 1, 1, 4, 4, kMS>>(L("1d_wl42_mma_t64_v1_s4"), p);
  for (auto& p : problems3d())
    check<WCfg<V, D, 3, TileShape<64, 64, 32>, W22, 2, 2, 2, 4, 3, kMS>>(L("3d_wl44_mma_t64_v2_s3"), p, 0, p.C % 2 == 0 && p.K % 2 == 0);
  // wgmma math warpgroup (4,4)
  for (auto& p : problems2d()) {
    check<WCfg<V, D, 2, TileShape<128, 128, 64>, W41, 8, 8, 8, 4, 4, kWG, 128>>(L("wl44_wgmma_t128x128x64_n128_s4"), p, 0, vec_ok(p));
    check<WCfg<V, D, 2, TileShape<64, 128, 32>, W41, 8, 8, 8, 4, 3, kWG, 64>>(L("wl44_wgmma_t64x128x32_n64_s3"), p, 0, vec_ok(p));
  }
  for (auto& p : problems2d_odd())
    check<WCfg<V, D, 2, TileShape<64, 64, 32>, W41, 1, 1, 1, 4, 3, kWG, 64>>(L("wl44_wgmma_t64_v1_s3"), p);
  for (auto& p : problems1d())
    check<WCfg<V, D, 1, TileShape<64, 64, 32>, W41, 1, 1, 1, 4, 2, kWG, 64>>(L("1d_wl44_wgmma_t64_v1_s2"), p);
  for (auto& p : problems3d())
    check<WCfg<V, D, 3, TileShape<64, 256, 32>, W41, 2, 2, 2, 4, 3, kWG, 256>>(L("3d_wl44_wgmma_t64x256_v2_s3"), p, 0, p.C % 2 == 0 && p.K % 2 == 0);
  // two math warpgroups (Waves 4x2: warpgroups side by side along N), 4 or 8 load warps
  using W42 = WaveLayout<4, 2, 1>;
  for (auto& p : problems2d()) {
    check<WCfg<V, D, 2, TileShape<128, 256, 64>, W42, 8, 8, 8, 4, 3, kWG, 128>>(L("wl48_wgmma_t128x256x64_w4x2_s3"), p, 0, vec_ok(p));
    check<WCfg<V, D, 2, TileShape<128, 256, 64>, W42, 8, 8, 8, 8, 3, kWG, 128>>(L("wl88_wgmma_t128x256x64_w4x2_s3"), p, 0, vec_ok(p));
    check<WCfg<V, D, 2, TileShape<128, 128, 64>, W41, 8, 8, 8, 8, 4, kWG, 128>>(L("wl84_wgmma_t128x128x64_s4"), p, 0, vec_ok(p));
  }
  // the default-set instances in 1D / 3D (16-byte vectors where C, K allow; else refused)
  for (auto& p : problems1d()) {
    check<WCfg<V, D, 1, TileShape<128, 128, 64>, W41, 8, 8, 8, 4, 4, kWG, 128>>(L("1d_wl44_wgmma_t128x128x64_s4"), p, 0, vec_ok(p));
    check<WCfg<V, D, 1, TileShape<128, 128, 32>, W22, 8, 8, 8, 4, 3, kMS>>(L("1d_wl44_mma_t128_s3"), p, 0, vec_ok(p));
    check<WCfg<V, D, 1, TileShape<64, 64, 32>, W21, 8, 8, 8, 4, 3, kMS>>(L("1d_wl42_mma_t64_v8_s3"), p, 0, vec_ok(p));
  }
  for (auto& p : problems3d()) {
    check<WCfg<V, D, 3, TileShape<128, 128, 64>, W41, 8, 8, 8, 4, 4, kWG, 128>>(L("3d_wl44_wgmma_t128x128x64_s4"), p, 0, vec_ok(p));
    check<WCfg<V, D, 3, TileShape<128, 128, 32>, W22, 8, 8, 8, 4, 3, kMS>>(L("3d_wl44_mma_t128_s3"), p, 0, vec_ok(p));
    check<WCfg<V, D, 3, TileShape<64, 64, 32>, W21, 8, 8, 8, 4, 3, kMS>>(L("3d_wl42_mma_t64_v8_s3"), p, 0, vec_ok(p));
    check<WCfg<V, D, 3, TileShape<64, 64, 32>, W21, 1, 1, 1, 4, 3, kMS>>(L("3d_wl42_mma_t64_v1_s3"), p);
  }
  for (auto& p : problems2d())
    check<WCfg<V, D, 2, TileShape<64, 64, 32>, W21, 8, 8, 8, 4, 3, kMS>>(L("wl42_mma_t64_v8_s3"), p, 0, vec_ok(p));
  if constexpr (V == Variant::BackwardWeight) {
    const ConvProblem pw = mk(2, 2, 4, 16, 32, {20, 18}, {3, 3}, {2, 1}, {1, 2}, {1, 2}, {0, 1});
    for (int kb : {1, 3, 64}) {
      check<WCfg<V, D, 2, TileShape<64, 64, 32>, W41, 8, 8, 8, 4, 3, kWG, 64, false, Stage::Two>>(L("wl_wgmma_splitk_stage2"), pw, kb);
      check<WCfg<V, D, 2, TileShape<64, 64, 32>, W22, 8, 8, 8, 4, 3, kMS, 8, false, Stage::One>>(L("wl_mma_splitk_stage1"), pw, kb);
    }
  }
  // 1x1 specialization
  const ConvProblem p11 = mk(2, 2, 2, 32, 48, {9, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0});
  check<WCfg<V, D, 2, TileShape<64, 64, 32>, W41, 8, 8, 8, 4, 3, kWG, 64, false, Stage::One,
             Specialization::Filter1x1Stride1Pad0>>(L("wl_wgmma_1x1s1"), p11);
}

template <Variant V>
static void wperf(const char* vn) {
  constexpr DataType D = DataType::FP16;
  using Sp = Specialization;
  using W41 = WaveLayout<4, 1, 1>;
  using W22 = WaveLayout<2, 2, 1>;
  const ConvProblem shapes[] = {
      mk(2, 1, 2, 256, 256, {100, 100}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 2, 256, 2376, {50, 50}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 2, 256, 256, {13, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 1, 2, 512, 256, {50, 50}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}),
  };
  char l[128];
  for (const auto& p : shapes) {
    std::snprintf(l, sizeof l, "%s t128x128x64 ms4 (reference)", vn);
    perf<Cfg<V, D, 2, TileShape<128, 128, 64>, W22, 8, 8, 8, Sp::Default, Stage::One, 0, Pipeline::Multistage, 4, 5>>(l, p);
    std::snprintf(l, sizeof l, "%s wl44 mma t128x128x32 s4", vn);
    perf<WCfg<V, D, 2, TileShape<128, 128, 32>, W22, 8, 8, 8, 4, 4, kMS>>(l, p);
    std::snprintf(l, sizeof l, "%s wl44 wgmma t128x128x64 n128 s4", vn);
    perf<WCfg<V, D, 2, TileShape<128, 128, 64>, W41, 8, 8, 8, 4, 4, kWG, 128>>(l, p);
    std::snprintf(l, sizeof l, "%s wl84 wgmma t128x128x64 s4", vn);
    perf<WCfg<V, D, 2, TileShape<128, 128, 64>, W41, 8, 8, 8, 8, 4, kWG, 128>>(l, p);
    std::snprintf(l, sizeof l, "%s wl48 wgmma t128x256x64 w4x2 s3", vn);
    perf<WCfg<V, D, 2, TileShape<128, 256, 64>, WaveLayout<4, 2, 1>, 8, 8, 8, 4, 3, kWG, 128>>(l, p);
    std::snprintf(l, sizeof l, "%s wl88 wgmma t128x256x64 w4x2 s3", vn);
    perf<WCfg<V, D, 2, TileShape<128, 256, 64>, WaveLayout<4, 2, 1>, 8, 8, 8, 8, 3, kWG, 128>>(l, p);
    std::snprintf(l, sizeof l, "%s wl48 mma t128x256x32 w2x4 s4", vn);
    perf<WCfg<V, D, 2, TileShape<128, 256, 32>, WaveLayout<2, 4, 1>, 8, 8, 8, 4, 4, kMS>>(l, p);
    std::snprintf(l, sizeof l, "%s wl42 mma t64x64x32 s3", vn);
    perf<WCfg<V, D, 2, TileShape<64, 64, 32>, WaveLayout<2, 1, 1>, 8, 8, 8, 4, 3, kMS>>(l, p);
  }
}

void run_wavelet() {
  wsuite<Variant::Forward, DataType::FP16>("fwd");
  wsuite<Variant::Forward, DataType::BF16>("fwd");
  wsuite<Variant::BackwardData, DataType::FP16>("bwd_data");
  wsuite<Variant::BackwardData, DataType::BF16>("bwd_data");
  wsuite<Variant::BackwardWeight, DataType::FP16>("bwd_weight");
  wsuite<Variant::BackwardWeight, DataType::BF16>("bwd_weight");
}
void run_wavelet_perf() {
  wperf<Variant::Forward>("fwd");
  wperf<Variant::BackwardData>("bwd_data");
  wperf<Variant::BackwardWeight>("bwd_weight");
}
#else
int g_pass = 0, g_fail = 0, g_refused = 0;
void run_perf();
void run_wavelet();
void run_wavelet_perf();
void run_forward();
void run_backward_data();
void run_backward_weight();
int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  int ndev = 0;
  CHECK_GPU(gpuGetDeviceCount(&ndev));
  gpuDeviceProp prop;
  CHECK_GPU(gpuGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (only.empty() || only == "forward") run_forward();
  if (only.empty() || only == "backward_data") run_backward_data();
  if (only.empty() || only == "backward_weight") run_backward_weight();
  if (only.empty() || only == "perf") run_perf();
  if (only.empty() || only == "wavelet") run_wavelet();
  if (only.empty() || only == "wavelet" || only == "wavelet_perf") run_wavelet_perf();
  std::printf("SUMMARY: %d passed, %d failed, %d refused-as-expected\n", g_pass, g_fail, g_refused);
  return g_fail ? 1 : 0;
}
#endif
