// Checker + timer of the small-problem features of the kernel library: merged groups
// (kGroupsToMerge), split-K for forward / backward_data (kKBatch / RunOptions::k_batch),
// and the cshuffle epilogue. Same method as kernel_check.cu: fresh random inputs, poisoned
// outputs and workspace, fp64 host reference, one PASS/FAIL line per case. The perf part times
// fp16 instances on the small RetinaNet and the coverage shapes (events around back-to-back
// launches after warm-up, median of repeats) and prints the cuDNN time from the baseline CSV.
//
// Build + run: bench/dev/feature_check.sh [check|perf]
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
#define CK_PART 9
#endif

using namespace ckgen;

#define CHECK_GPU(x)                                                                      \
  do {                                                                                    \
    gpuError_t e_ = (x);                                                                  \
    if (e_ != gpuSuccess) {                                                               \
      std::printf("GPU error %s at %s:%d\n", gpuGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(3);                                                                       \
    }                                                                                     \
  } while (0)

template <Variant V, DataType D, int ND, class TileT, class WavesT, int VA, int VB, int VC,
          int GM = 1, Epilogue EPI = Epilogue::Default, int KB = 1, Stage ST = Stage::One,
          Pipeline P = Pipeline::Multistage, int STAGES = 3, int CA = -1>
struct FCfg {
  static constexpr int kCacheA = CA;  // -1: the view's default (see conv_maps.hpp)
  static constexpr const char* kName = "fcheck";
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
  static constexpr Epilogue kEpilogue = EPI;
  static constexpr int kVecA = VA, kVecB = VB, kVecC = VC;
  static constexpr Specialization kSpecialization = Specialization::Default;
  static constexpr int kGroupsToMerge = GM;
  static constexpr int kKBatch = KB;
  static constexpr Reduction kReduction = Reduction::SplitK;
  static constexpr bool kPersistent = false;
  static constexpr Stage kStage = ST;
};

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
// 2D, square, symmetric pads (the shapes CSV form).
static ConvProblem mk2(int64_t G, int64_t N, int64_t C, int64_t K, int64_t hw, int64_t f, int64_t s,
                       int64_t pad) {
  return mk(2, G, N, C, K, {hw, hw}, {f, f}, {s, s}, {1, 1}, {pad, pad}, {pad, pad});
}

static std::string describe(const ConvProblem& p) {
  char b[512];
  std::snprintf(b, sizeof b, "%dD G%ld N%ld C%ld K%ld in(%ld,%ld,%ld) f(%ld,%ld,%ld) s(%ld,%ld,%ld) d(%ld,%ld,%ld) pl(%ld,%ld,%ld) pr(%ld,%ld,%ld)",
                p.ndim, (long)p.G, (long)p.N, (long)p.C, (long)p.K, (long)p.in[0], (long)p.in[1],
                (long)p.in[2], (long)p.filter[0], (long)p.filter[1], (long)p.filter[2],
                (long)p.stride[0], (long)p.stride[1], (long)p.stride[2], (long)p.dilation[0],
                (long)p.dilation[1], (long)p.dilation[2], (long)p.pad_l[0], (long)p.pad_l[1],
                (long)p.pad_l[2], (long)p.pad_r[0], (long)p.pad_r[1], (long)p.pad_r[2]);
  return b;
}

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

extern int g_pass, g_fail, g_refused;
static std::mt19937 rng(777 + CK_PART);

template <DataType D>
static std::vector<float> rand_tensor(int64_t n) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& e : v) e = raw_to_float<D>(float_to_raw<D>(dist(rng)));
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
      std::printf("FAIL  %-36s %s  refused unexpectedly: %s\n", label, describe(p).c_str(), why.c_str());
      ++g_fail;
    } else {
      std::printf("OK    %-36s %s  refused as expected: %s\n", label, describe(p).c_str(), why.c_str());
      ++g_refused;
    }
    return;
  }
  if (!expect_ok) {
    std::printf("FAIL  %-36s %s  accepted but should be refused\n", label, describe(p).c_str());
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
  CHECK_GPU(gpuGetLastError());
  CHECK_GPU(gpuDeviceSynchronize());
  std::vector<Raw> got(n_dst);
  CHECK_GPU(gpuMemcpy(got.data(), dst, n_dst * sizeof(Raw), gpuMemcpyDeviceToHost));
  std::vector<double> ref, mag;
  reference(v, p, x, w, y, ref, mag);
  const double rtol = D == DataType::FP16 ? 1.0 / 1024 : D == DataType::BF16 ? 1.0 / 128 : 1e-5;
  const double atol = 2e-5;
  double max_err = 0, num = 0, den = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < n_dst; ++i) {
    const double g = raw_to_float<D>(got[i]);
    const double err = std::fabs(g - ref[i]);
    const double tol = rtol * std::fabs(ref[i]) + atol * (mag[i] + 1.0);
    if (!(err <= tol)) {
      if (!bad) first_bad = i;
      ++bad;
    }
    num += err * err;
    den += ref[i] * ref[i];
    if (err > max_err || std::isnan(err)) max_err = std::isnan(err) ? INFINITY : err;
  }
  const double rel = std::sqrt(num / (den > 0 ? den : 1));
  if (bad) {
    std::printf("FAIL  %-36s %s kb=%d  bad=%zu/%zu first@%zu got=%g ref=%g max_err=%g rel=%.3g\n", label,
                describe(p).c_str(), k_batch, bad, n_dst, first_bad,
                (double)raw_to_float<D>(got[first_bad]), ref[first_bad], max_err, rel);
    ++g_fail;
  } else {
    std::printf("PASS  %-36s %s kb=%d ws=%zu  n=%zu max_err=%.3g rel=%.3g\n", label, describe(p).c_str(),
                k_batch, ws_bytes, n_dst, max_err, rel);
    ++g_pass;
  }
  CHECK_GPU(gpuFree(dx));
  CHECK_GPU(gpuFree(dw));
  CHECK_GPU(gpuFree(dy));
  if (ws) CHECK_GPU(gpuFree(ws));
}

using W22 = WaveLayout<2, 2, 1>;
using W41 = WaveLayout<4, 1, 1>;
using T64 = TileShape<64, 64, 32>;
using T64x32 = TileShape<64, 32, 32>;
using T128x16 = TileShape<128, 16, 32>;
using T128x8 = TileShape<128, 8, 32>;
using T32x32 = TileShape<32, 32, 64>;
using T128 = TileShape<128, 128, 32>;
constexpr Epilogue kCS = Epilogue::CShuffle;
constexpr Epilogue kDef = Epilogue::Default;

// ---------------------------------------------------------------------------------------------
// Correctness: variant V, datatype D.
template <Variant V, DataType D>
static void suite(const char* vn) {
  constexpr bool f32 = D == DataType::FP32;
  constexpr int V8 = f32 ? 4 : 8;
  char label[128];
  const char* dn = to_string(D);
  auto L = [&](const char* what) {
    std::snprintf(label, sizeof label, "%s/%s/%s", vn, dn, what);
    return label;
  };
  constexpr bool kMergeOk = V != Variant::BackwardWeight;
  // --- merged groups (forward / backward_data) ---
  if constexpr (kMergeOk) {
    const ConvProblem dw = mk2(64, 2, 1, 1, 11, 3, 1, 1);                // depthwise
    const ConvProblem dws2 = mk2(64, 2, 1, 1, 12, 3, 2, 1);              // depthwise s2
    const ConvProblem rx4 = mk2(32, 2, 4, 4, 9, 3, 1, 1);                // ResNeXt c4
    const ConvProblem rx8 = mk2(32, 1, 8, 8, 10, 3, 1, 1);               // ResNeXt c8
    const ConvProblem odd = mk(2, 8, 2, 3, 5, {9, 8}, {3, 2}, {2, 1}, {2, 1}, {1, 0}, {2, 1});
    const ConvProblem dw1d = mk(1, 32, 2, 1, 1, {33}, {5}, {2}, {1}, {2}, {1});
    const ConvProblem g3d = mk(3, 16, 1, 2, 2, {5, 6, 5}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0, 1});
    const ConvProblem dwodd = mk2(48, 2, 1, 1, 7, 3, 1, 1);              // G % 32 != 0
    // depthwise-style: GM*C vectors of 8, B scalar
    check<FCfg<V, D, 2, T64x32, W22, V8, 1, V8, 32>>(L("gm32_t64x32_dw"), dw);
    check<FCfg<V, D, 2, T64x32, W22, V8, 1, V8, 32>>(L("gm32_t64x32_dws2"), dws2);
    check<FCfg<V, D, 2, T64x32, W22, V8, 1, V8, 32>>(L("gm32_t64x32_g48_refuse"), dwodd, 0, false);
    check<FCfg<V, D, 2, T128x8, W41, V8, 1, V8, 8>>(L("gm8_t128x8_dw"), dw);
    check<FCfg<V, D, 2, T128x8, W41, V8, 1, V8, 8>>(L("gm8_t128x8_dws2"), dws2);
    check<FCfg<V, D, 2, T128x16, W41, V8, 1, V8, 16, kCS>>(L("gm16_t128x16_dw_cs"), dw);
    check<FCfg<V, D, 2, T128x16, W41, V8, 1, V8, 16>>(L("gm16_t128x16_dws2"), dws2);
    // ResNeXt
    check<FCfg<V, D, 2, T64x32, W22, V8, 4, V8, 8>>(L("gm8_t64x32_rx4"), rx4);
    check<FCfg<V, D, 2, T128x16, W41, V8, 4, V8, 4, kCS>>(L("gm4_t128x16_rx4_cs"), rx4);
    check<FCfg<V, D, 2, T64x32, W22, V8, 4, V8, 8>>(L("gm8_t64x32_rx8"), rx8);
    check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 4>>(L("gm4_t64_rx8"), rx8);
    check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 4>>(L("gm4_t64_rx4_vec8_refuse"), rx4, 0, V8 != 8);
    // odd channel counts, scalar vectors, asym pads / stride / dilation
    check<FCfg<V, D, 2, T64x32, W22, 1, 1, 1, 4>>(L("gm4_t64x32_odd_vec1"), odd);
    check<FCfg<V, D, 2, T64x32, W22, 1, 1, 1, 2, kCS>>(L("gm2_t64x32_odd_vec1_cs"), odd);
    check<FCfg<V, D, 2, T64x32, W22, 1, 1, 1, 16>>(L("gm16_t64x32_odd_refuse"), odd, 0, false);
    check<FCfg<V, D, 1, T64x32, W22, V8, 1, V8, 8>>(L("gm8_1d_dw"), dw1d);
    check<FCfg<V, D, 3, T64x32, W22, 2, 2, 2, 4>>(L("gm4_3d_g16c2"), g3d);
    // merged + split-K
    check<FCfg<V, D, 2, T64x32, W22, V8, 1, V8, 32, kDef, 0>>(L("gm32_splitk_dw"), dw, 3);
    check<FCfg<V, D, 2, T64x32, W22, V8, 4, V8, 8, kCS, 0, Stage::Two>>(L("gm8_splitk2_rx4_cs"), rx4, 4);
  }
  // --- split-K (all variants; forward / backward_data new) ---
  {
    const ConvProblem a = mk(2, 2, 2, 16, 24, {14, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1});
    const ConvProblem b = mk(2, 1, 3, 32, 64, {17, 19}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 1});
    const ConvProblem c = mk(2, 2, 2, 8, 40, {15, 16}, {3, 3}, {2, 2}, {2, 2}, {2, 1}, {1, 2});
    const ConvProblem odd = mk(2, 2, 2, 5, 7, {12, 9}, {3, 3}, {2, 3}, {2, 1}, {1, 2}, {2, 0});
    const ConvProblem box = mk2(1, 2, 64, 36, 7, 3, 1, 1);  // K=36 head-like
    const ConvProblem p3 = mk(3, 1, 2, 4, 12, {7, 6, 8}, {3, 2, 3}, {2, 2, 3}, {2, 1, 2}, {2, 1, 1}, {1, 0, 2});
    for (int kb : {2, 5, 16}) {
      check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 1, kDef, 0>>(L("splitk1_t64"), a, kb);
      check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 1, kDef, 0, Stage::Two>>(L("splitk2_t64"), b, kb);
      check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 1, kCS, 0>>(L("splitk1_t64_cs"), c, kb);
      check<FCfg<V, D, 2, T32x32, W22, 1, 1, 1, 1, kDef, 0>>(L("splitk1_t32_vec1"), odd, kb);
      check<FCfg<V, D, 2, T32x32, W22, 4, 4, 4, 1, kDef, 0>>(L("splitk1_t32_vec4_box"), box, kb);
      check<FCfg<V, D, 3, T64, W22, 1, 1, 1, 1, kDef, 0, Stage::Two>>(L("splitk2_3d_vec1"), p3, kb);
    }
    check<FCfg<V, D, 2, T64, W22, 4, 4, 4, 1, kDef, 0>>(L("splitk_auto"), box, 0);
    check<FCfg<V, D, 2, T64, W22, 4, 4, 4, 1, kDef, 0, Stage::Two, Pipeline::Multistage, 3, 1>>(L("splitk2_auto_l1"), box, 0);
    check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 1, kDef, 6>>(L("splitk_cfg6"), a, 0);
    check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 1, kDef, 0>>(L("splitk_65_refuse"), a, 65, false);
  }
  // --- cshuffle epilogue ---
  {
    const ConvProblem a = mk(2, 2, 2, 16, 24, {14, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1});
    const ConvProblem b = mk(2, 1, 3, 32, 64, {17, 19}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 1});
    const ConvProblem odd = mk(2, 1, 2, 3, 36, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1});
    const ConvProblem p1d = mk(1, 1, 2, 3, 36, {29}, {5}, {3}, {2}, {3}, {1});
    const ConvProblem p3d = mk(3, 1, 1, 3, 36, {5, 6, 7}, {2, 3, 3}, {2, 3, 2}, {1, 2, 2}, {0, 2, 1}, {1, 1, 0});
    for (const auto& p : {a, b}) {
      check<FCfg<V, D, 2, T128, W22, V8, V8, V8, 1, kCS>>(L("cs_t128"), p);
      check<FCfg<V, D, 2, T64, W22, V8, V8, V8, 1, kCS>>(L("cs_t64"), p);
    }
    check<FCfg<V, D, 2, T64, W22, 1, 1, 1, 1, kCS>>(L("cs_t64_vec1_odd"), odd);
    check<FCfg<V, D, 1, T64x32, W22, 1, 1, 1, 1, kCS>>(L("cs_1d_vec1"), p1d);
    check<FCfg<V, D, 3, T64x32, W22, 1, 1, 1, 1, kCS>>(L("cs_3d_vec1"), p3d);
    check<FCfg<V, D, 2, T64, W22, 1, 1, 1, 1, kCS, 1, Stage::One, Pipeline::Basic, 1>>(L("cs_t64_basic_odd"), odd);
  }
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
}
#elif CK_PART == 3 || CK_PART == 4
// ---------------------------------------------------------------------------------------------
// Perf (fp16). One line per (shape, instance, k_batch): median us of 7 repeats of 50
// back-to-back launches after warm-up; cuDNN time from the baseline CSV passed on the command
// line (fp16 row). Inputs: random (never zeros).
struct Shape {
  const char* name;
  ConvProblem p;
};
static std::vector<Shape> perf_shapes() {
  return {
      {"head_3x3_256_256_13", mk2(1, 2, 256, 256, 13, 3, 1, 1)},
      {"head_3x3_256_256_7", mk2(1, 2, 256, 256, 7, 3, 1, 1)},
      {"head_box_3x3_256_36_25", mk2(1, 2, 256, 36, 25, 3, 1, 1)},
      {"head_box_3x3_256_36_13", mk2(1, 2, 256, 36, 13, 3, 1, 1)},
      {"head_box_3x3_256_36_7", mk2(1, 2, 256, 36, 7, 3, 1, 1)},
      {"head_box_3x3_256_36_50", mk2(1, 2, 256, 36, 50, 3, 1, 1)},
      {"fpn_p7_3x3s2_256_256", mk2(1, 2, 256, 256, 13, 3, 2, 1)},
      {"fpn_p6_3x3s2_256_256", mk2(1, 2, 256, 256, 25, 3, 2, 1)},
      {"head_3x3_256_256_25", mk2(1, 2, 256, 256, 25, 3, 1, 1)},
      {"head_cls_3x3_256_2376_7", mk2(1, 2, 256, 2376, 7, 3, 1, 1)},
      {"resnext_3x3_g32_c4_56", mk2(32, 8, 4, 4, 56, 3, 1, 1)},
      {"resnext_3x3_g32_c8_28", mk2(32, 8, 8, 8, 28, 3, 1, 1)},
      {"dw_3x3_g256_56", mk2(256, 8, 1, 1, 56, 3, 1, 1)},
      {"dw_3x3s2_g512_28", mk2(512, 8, 1, 1, 28, 3, 2, 1)},
      {"grouped_3x3_g4_c64_100", mk2(4, 2, 64, 64, 100, 3, 1, 1)},
  };
}

double cudnn_ms(const char* shape, const char* variant);  // from the baseline CSV (main part)

template <class C>
static void perf(const char* vn, const char* label, const Shape& s, int k_batch) {
  using Raw = typename ConfigTraits<C>::Raw;
  const ConvProblem& p = s.p;
  auto kern = make_kernel<C>();
  RunOptions opts;
  opts.k_batch = k_batch;
  if (!kern->is_supported(p, opts).empty()) return;
  Raw *dx, *dw, *dy;
  CHECK_GPU(gpuMalloc((void**)&dx, p.input_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMalloc((void**)&dw, p.weight_elems() * sizeof(Raw)));
  CHECK_GPU(gpuMalloc((void**)&dy, p.output_elems() * sizeof(Raw)));
  auto fill = [&](Raw* d, int64_t n) {
    auto v = to_raw<DataType::FP16>(rand_tensor<DataType::FP16>(std::min<int64_t>(n, 1 << 20)));
    for (int64_t o = 0; o < n; o += int64_t(v.size()))
      CHECK_GPU(gpuMemcpy(d + o, v.data(), std::min<int64_t>(int64_t(v.size()), n - o) * sizeof(Raw),
                          gpuMemcpyHostToDevice));
  };
  fill(dx, p.input_elems());
  fill(dw, p.weight_elems());
  fill(dy, p.output_elems());
  const size_t ws_bytes = kern->workspace_bytes(p, opts);
  void* ws = nullptr;
  if (ws_bytes) CHECK_GPU(gpuMalloc(&ws, ws_bytes));
  ConvTensors t{dx, dw, dy};
  for (int i = 0; i < 10; ++i) CHECK_GPU(kern->run(p, t, ws, nullptr, opts));
  CHECK_GPU(gpuDeviceSynchronize());
  gpuEvent_t a, b;
  CHECK_GPU(gpuEventCreate(&a));
  CHECK_GPU(gpuEventCreate(&b));
  std::vector<float> rep;
  for (int r = 0; r < 7; ++r) {
    const int iters = 50;
    CHECK_GPU(gpuEventRecord(a, nullptr));
    for (int i = 0; i < iters; ++i) CHECK_GPU(kern->run(p, t, ws, nullptr, opts));
    CHECK_GPU(gpuEventRecord(b, nullptr));
    CHECK_GPU(gpuEventSynchronize(b));
    float ms = 0;
    CHECK_GPU(gpuEventElapsedTime(&ms, a, b));
    rep.push_back(ms / iters);
  }
  std::sort(rep.begin(), rep.end());
  const double ms_b2b = rep[rep.size() / 2];
  // CUDA-graph replay of 20 calls (how the peer is timed): launch gaps shrink.
  cudaStream_t st;
  CHECK_GPU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_GPU(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 20; ++i) CHECK_GPU(kern->run(p, t, ws, st, opts));
  CHECK_GPU(cudaStreamEndCapture(st, &graph));
  CHECK_GPU(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) CHECK_GPU(cudaGraphLaunch(exec, st));
  CHECK_GPU(cudaStreamSynchronize(st));
  rep.clear();
  for (int r = 0; r < 9; ++r) {
    CHECK_GPU(gpuEventRecord(a, st));
    CHECK_GPU(cudaGraphLaunch(exec, st));
    CHECK_GPU(gpuEventRecord(b, st));
    CHECK_GPU(gpuEventSynchronize(b));
    float gms = 0;
    CHECK_GPU(gpuEventElapsedTime(&gms, a, b));
    rep.push_back(gms / 20);
  }
  std::sort(rep.begin(), rep.end());
  const double ms = rep[rep.size() / 2];
  CHECK_GPU(cudaGraphExecDestroy(exec));
  CHECK_GPU(cudaGraphDestroy(graph));
  CHECK_GPU(cudaStreamDestroy(st));
  const double cd = cudnn_ms(s.name, vn);
  std::printf("PERF  %-9s %-26s %-34s kb=%-2d %8.2f us  %6.1f TFLOPS  cudnn %6.2f us  x%.2f  b2b %8.2f us\n", vn,
              s.name, label, k_batch, ms * 1e3, p.flops() / (ms * 1e-3) / 1e12, cd * 1e3,
              cd > 0 ? cd / ms : 0.0, ms_b2b * 1e3);
  CHECK_GPU(gpuEventDestroy(a));
  CHECK_GPU(gpuEventDestroy(b));
  CHECK_GPU(gpuFree(dx));
  CHECK_GPU(gpuFree(dw));
  CHECK_GPU(gpuFree(dy));
  if (ws) CHECK_GPU(gpuFree(ws));
}

template <Variant V>
static void perf_variant(const char* vn) {
  constexpr DataType D = DataType::FP16;
  // vectors valid for every RetinaNet shape (K = 36 needs 4 on the K side)
  constexpr int VA = V == Variant::Forward ? 8 : 4;
  constexpr int VB = 8;
  constexpr int VC = V == Variant::Forward ? 4 : 8;
  using T64x64x64 = TileShape<64, 64, 64>;
  using T64x32x64 = TileShape<64, 32, 64>;
  for (const auto& s : perf_shapes()) {
    perf<FCfg<V, D, 2, T64, W22, VA, VB, VC>>(vn, "t64x64x32 ms3 (before)", s, 0);
    perf<FCfg<V, D, 2, T64, W22, 1, 1, 1, 1, kDef, 1, Stage::One, Pipeline::Basic, 1>>(vn, "t64x64x32 basic vec1 (before)", s, 0);
    perf<FCfg<V, D, 2, T64, W22, VA, VB, VC, 1, kCS>>(vn, "t64x64x32 ms3 cshuffle", s, 0);
    perf<FCfg<V, D, 2, T128, W22, VA, VB, VC, 1, kDef>>(vn, "t128x128x32 ms3", s, 0);
    perf<FCfg<V, D, 2, T128, W22, VA, VB, VC, 1, kCS>>(vn, "t128x128x32 ms3 cshuffle", s, 0);
    if (s.p.G == 1) {
      for (int kb : {0, 2, 4, 8, 16, 32}) {
        perf<FCfg<V, D, 2, T64, W22, VA, VB, VC, 1, kDef, 0>>(vn, "t64x64x32 ms3 splitk", s, kb);
        perf<FCfg<V, D, 2, T64x64x64, W22, VA, VB, VC, 1, kDef, 0, Stage::One, Pipeline::Multistage, 2>>(vn, "t64x64x64 ms2 splitk", s, kb);
        perf<FCfg<V, D, 2, T64x32x64, W22, VA, VB, VC, 1, kDef, 0>>(vn, "t64x32x64 ms3 splitk", s, kb);
        perf<FCfg<V, D, 2, T32x32, W22, VA, VB, VC, 1, kDef, 0>>(vn, "t32x32x64 ms3 splitk", s, kb);
        perf<FCfg<V, D, 2, T64, W22, VA, VB, VC, 1, kDef, 0, Stage::Two>>(vn, "t64x64x32 ms3 splitk2", s, kb);
        perf<FCfg<V, D, 2, T32x32, W22, VA, VB, VC, 1, kDef, 0, Stage::Two>>(vn, "t32x32x64 ms3 splitk2", s, kb);
        perf<FCfg<V, D, 2, T64x64x64, W22, VA, VB, VC, 1, kDef, 0, Stage::Two, Pipeline::Multistage, 2>>(vn, "t64x64x64 ms2 splitk2", s, kb);
        perf<FCfg<V, D, 2, T64, W22, VA, VB, VC, 1, kDef, 0, Stage::Two, Pipeline::Multistage, 3, 1>>(vn, "t64x64x32 ms3 splitk2 L1", s, kb);
      }
    } else {
      // merged groups (B scalar: C may be 1)
      perf<FCfg<V, D, 2, T128x8, W41, 8, 1, 8, 8>>(vn, "gm8 t128x8x32 ms3", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 16>>(vn, "gm16 t128x16x32 ms3", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 4>>(vn, "gm4 t128x16x32 ms3", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 2>>(vn, "gm2 t128x16x32 ms3", s, 0);
      perf<FCfg<V, D, 2, T64x32, W22, 8, 1, 8, 32>>(vn, "gm32 t64x32x32 ms3", s, 0);
      perf<FCfg<V, D, 2, T64x32, W22, 8, 1, 8, 8>>(vn, "gm8 t64x32x32 ms3", s, 0);
      perf<FCfg<V, D, 2, T64x32, W22, 8, 4, 8, 8, kCS>>(vn, "gm8 t64x32x32 ms3 vb4 cs", s, 0);
      perf<FCfg<V, D, 2, T64x32, W22, 8, 8, 8, 4>>(vn, "gm4 t64x32x32 ms3 vb8", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 16, kCS>>(vn, "gm16 t128x16x32 ms3 cs", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 16, kCS, 1, Stage::One, Pipeline::Multistage, 3, 0>>(vn, "gm16 t128x16x32 ms3 cs noL1", s, 0);
      perf<FCfg<V, D, 2, T64x32, W22, 8, 4, 8, 8, kCS, 1, Stage::One, Pipeline::Multistage, 3, 0>>(vn, "gm8 t64x32x32 ms3 vb4 cs noL1", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 8, kCS>>(vn, "gm8 t128x16x32 ms3 cs", s, 0);
      perf<FCfg<V, D, 2, T128x8, W41, 8, 1, 8, 8, kCS, 1, Stage::One, Pipeline::Multistage, 4>>(vn, "gm8 t128x8x32 ms4 cs", s, 0);
      perf<FCfg<V, D, 2, TileShape<256, 16, 32>, WaveLayout<8, 1, 1>, 8, 1, 8, 16, kCS>>(vn, "gm16 t256x16x32 w8x1 ms3 cs", s, 0);
      perf<FCfg<V, D, 2, T128x16, W41, 8, 1, 8, 16, kCS, 0>>(vn, "gm16 t128x16x32 ms3 cs splitk", s, 0);
      perf<FCfg<V, D, 2, T64, W22, 8, 8, 8, 1, kCS, 0, Stage::Two>>(vn, "t64x64x32 ms3 v8 cs splitk2 (g4)", s, 0);
      perf<FCfg<V, D, 2, T64, W22, 8, 8, 8>>(vn, "t64x64x32 ms3 v8 (g4 c64)", s, 0);
      perf<FCfg<V, D, 2, T128, W22, 8, 8, 8, 1, kCS>>(vn, "t128x128x32 ms3 v8 cs (g4 c64)", s, 0);
    }
  }
}
#if CK_PART == 3
void run_perf_fwd() { perf_variant<Variant::Forward>("forward"); }
#else
void run_perf_bwd_data() { perf_variant<Variant::BackwardData>("backward_data"); }
#endif
#else
int g_pass = 0, g_fail = 0, g_refused = 0;
void run_forward();
void run_backward_data();
void run_backward_weight();
void run_perf_fwd();
void run_perf_bwd_data();
static std::vector<std::string> g_csv;
double cudnn_ms(const char* shape, const char* variant) {
  const std::string key = std::string(shape) + "," + variant + ",fp16,";
  for (const auto& l : g_csv)
    if (l.rfind(key, 0) == 0) return std::atof(l.c_str() + key.size());
  return 0;
}
int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  if (argc > 2) {
    if (FILE* f = std::fopen(argv[2], "r")) {
      char buf[1024];
      while (std::fgets(buf, sizeof buf, f)) g_csv.emplace_back(buf);
      std::fclose(f);
    }
  }
  gpuDeviceProp prop;
  CHECK_GPU(gpuGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (only.empty() || only == "check") {
    run_forward();
    run_backward_data();
    run_backward_weight();
    std::printf("SUMMARY: %d passed, %d failed, %d refused-as-expected\n", g_pass, g_fail, g_refused);
  }
  if (only.empty() || only == "perf") {
    run_perf_fwd();
    run_perf_bwd_data();
  }
  return g_fail ? 1 : 0;
}
#endif
