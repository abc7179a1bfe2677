// Checker and timer of the sm_90a TMA forward pipeline (Pipeline::WaveletTma,
// templates/include/ckgen/pipeline_tma.hpp), through the library's host face (make_kernel).
// Correctness: fresh random inputs (seed from the clock), output poisoned with NaN, compared
// element-wise against a naive fp32 GPU reference. Timing: median of 7 x 20 back-to-back launches.
// Build + run: bash bench/dev/tma_check.sh
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ckgen/kernel.hpp"

using namespace ckgen;

#define CHECK_GPU(x)                                                                          \
  do {                                                                                        \
    gpuError_t e_ = (x);                                                                      \
    if (e_ != gpuSuccess) {                                                                   \
      std::printf("GPU error %s at %s:%d\n", gpuGetErrorString(e_), __FILE__, __LINE__);      \
      std::exit(3);                                                                           \
    }                                                                                         \
  } while (0)

template <DataType D, int ND, int BM, int BN, int WM, int ST, Variant V = Variant::Forward,
          Epilogue E = Epilogue::Default>
struct TmaCfg {
  static constexpr const char* kName = "tma_check";
  static constexpr const char* kArch = "sm_90a";
  static constexpr Variant kVariant = V;
  static constexpr DataType kDataType = D;
  static constexpr int kNDim = ND;
  using Tile = TileShape<BM, BN, 64>;
  using Waves = WaveLayout<WM, 1, 1>;
  using WarpTile = ckgen::WarpTile<64, BN, 16>;
  static constexpr MathUnit kMathUnit = MathUnit::Wgmma;
  static constexpr int kWarpSize = 32;
  static constexpr Pipeline kPipeline = Pipeline::WaveletTma;
  static constexpr int kStages = ST;
  static constexpr Scheduler kScheduler = Scheduler::Intrawave;
  static constexpr int kLoadWaves = 1, kMathWaves = WM;
  static constexpr Epilogue kEpilogue = E;
  static constexpr bool kSwapAB = false;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 8;
  static constexpr Specialization kSpecialization = Specialization::Default;
  static constexpr int kGroupsToMerge = 1;
  static constexpr int kKBatch = V == Variant::BackwardWeight ? 0 : 1;  // 0: split per problem
  static constexpr Reduction kReduction = Reduction::SplitK;
  static constexpr bool kPersistent = false;
  static constexpr Stage kStage = Stage::One;
};

__device__ inline uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return uint32_t(x);
}
template <DataType D>
__global__ void fill_random(uint16_t* p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = float_to_raw<D>(float(hash32(seed * 0x9E3779B97F4A7C15ULL + i) & 0xFFFF) / 32768.f - 1.f);
}
__global__ void fill_u16(uint16_t* p, int64_t n, uint16_t v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = v;
}
// y[n, oh, ow, g, k] = sum_{fy, fx, c} x[n, ih, iw, g, c] * w[g, k, fy, fx, c]  (2D; 1D has H = 1)
template <DataType D>
__global__ void ref_forward(const uint16_t* x, const uint16_t* w, float* y, int N, int G, int C,
                            int K, int H, int W, int P, int Q, int R, int S, int sh, int sw,
                            int ph, int pw, int dh, int dw) {
  const int64_t total = int64_t(N) * P * Q * G * K;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < total; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = o;
    const int k = t % K; t /= K;
    const int g = t % G; t /= G;
    const int ow = t % Q; t /= Q;
    const int oh = t % P; t /= P;
    const int n = int(t);
    float acc = 0.f;
    for (int fy = 0; fy < R; ++fy) {
      const int ih = oh * sh - ph + fy * dh;
      if (ih < 0 || ih >= H) continue;
      for (int fx = 0; fx < S; ++fx) {
        const int iw = ow * sw - pw + fx * dw;
        if (iw < 0 || iw >= W) continue;
        const uint16_t* xp = x + ((int64_t(n) * H + ih) * W + iw) * G * C + int64_t(g) * C;
        const uint16_t* wp = w + ((int64_t(g) * K + k) * R * S + fy * S + fx) * C;
        for (int c = 0; c < C; ++c) acc += raw_to_float<D>(xp[c]) * raw_to_float<D>(wp[c]);
      }
    }
    y[o] = acc;
  }
}

// dx[n, ih, iw, g, c] = sum_{fy, fx, k} dy[n, oh, ow, g, k] * w[g, k, fy, fx, c] over the (oh, ow)
// with oh * sh - ph + fy * dh = ih (and likewise for w).
template <DataType D>
__global__ void ref_backward_data(const uint16_t* dy, const uint16_t* w, float* dx, int N, int G,
                                  int C, int K, int H, int W, int P, int Q, int R, int S, int sh,
                                  int sw, int ph, int pw, int dh, int dw) {
  const int64_t total = int64_t(N) * H * W * G * C;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < total; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = o;
    const int c = t % C; t /= C;
    const int g = t % G; t /= G;
    const int iw = t % W; t /= W;
    const int ih = t % H; t /= H;
    const int n = int(t);
    float acc = 0.f;
    for (int fy = 0; fy < R; ++fy) {
      const int ohs = ih + ph - fy * dh;
      if (ohs < 0 || ohs % sh) continue;
      const int oh = ohs / sh;
      if (oh >= P) continue;
      for (int fx = 0; fx < S; ++fx) {
        const int ows = iw + pw - fx * dw;
        if (ows < 0 || ows % sw) continue;
        const int ow = ows / sw;
        if (ow >= Q) continue;
        const uint16_t* yp = dy + ((int64_t(n) * P + oh) * Q + ow) * G * K + int64_t(g) * K;
        for (int k = 0; k < K; ++k)
          acc += raw_to_float<D>(yp[k]) *
                 raw_to_float<D>(w[((int64_t(g) * K + k) * R * S + fy * S + fx) * C + c]);
      }
    }
    dx[o] = acc;
  }
}

// dw[g, k, fy, fx, c] = sum_{n, oh, ow} dy[n, oh, ow, g, k] * x[n, ih, iw, g, c].
template <DataType D>
__global__ void ref_backward_weight(const uint16_t* x, const uint16_t* dy, float* dw, int N, int G,
                                    int C, int K, int H, int W, int P, int Q, int R, int S, int sh,
                                    int sw, int ph, int pw, int dh, int dw_) {
  const int64_t total = int64_t(G) * K * R * S * C;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < total; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = o;
    const int c = t % C; t /= C;
    const int fx = t % S; t /= S;
    const int fy = t % R; t /= R;
    const int k = t % K; t /= K;
    const int g = int(t);
    float acc = 0.f;
    for (int n = 0; n < N; ++n)
      for (int oh = 0; oh < P; ++oh) {
        const int ih = oh * sh - ph + fy * dh;
        if (ih < 0 || ih >= H) continue;
        for (int ow = 0; ow < Q; ++ow) {
          const int iw = ow * sw - pw + fx * dw_;
          if (iw < 0 || iw >= W) continue;
          acc += raw_to_float<D>(dy[((int64_t(n) * P + oh) * Q + ow) * G * K + int64_t(g) * K + k]) *
                 raw_to_float<D>(x[((int64_t(n) * H + ih) * W + iw) * G * C + int64_t(g) * C + c]);
        }
      }
    dw[o] = acc;
  }
}

struct Shape {
  const char* name;
  int nd, G, N, C, K, H, W, R, S, sh, sw, plh, plw, prh, prw, dh, dw;
};

static ConvProblem to_problem(const Shape& s) {
  ConvProblem p;
  p.ndim = s.nd;
  p.G = s.G; p.N = s.N; p.C = s.C; p.K = s.K;
  p.in[1] = s.H; p.in[2] = s.W;
  p.filter[1] = s.R; p.filter[2] = s.S;
  p.stride[1] = s.sh; p.stride[2] = s.sw;
  p.dilation[1] = s.dh; p.dilation[2] = s.dw;
  p.pad_l[1] = s.plh; p.pad_l[2] = s.plw;
  p.pad_r[1] = s.prh; p.pad_r[2] = s.prw;
  p.compute_output();
  return p;
}

int g_pass = 0, g_fail = 0;

// Runs kernel `k` on shape `s`: checks it against the reference; times it when `time` is set.
template <DataType D, Variant V>
static void run_case(const KernelBase& k, const char* label, const Shape& s, bool time) {
  const ConvProblem p = to_problem(s);
  if (std::string why = k.is_supported(p); !why.empty()) {
    std::printf("SKIP  %-14s %-28s refused: %s\n", label, s.name, why.c_str());
    return;
  }
  constexpr bool kFwd = V == Variant::Forward, kBwdW = V == Variant::BackwardWeight;
  // x and w: the two tensors read (forward: x, w; backward_data: dy, w; backward_weight: x, dy);
  // y: the one written (y, dx, dw).
  const int64_t nsrc = kFwd || kBwdW ? p.input_elems() : p.output_elems();
  const int64_t nw = kBwdW ? p.output_elems() : p.weight_elems();
  const int64_t ny = kFwd ? p.output_elems() : kBwdW ? p.weight_elems() : p.input_elems();
  uint16_t *x, *w, *y;
  float* ref;
  void* ws = nullptr;
  CHECK_GPU(cudaMalloc(&x, nsrc * 2));
  CHECK_GPU(cudaMalloc(&w, nw * 2));
  CHECK_GPU(cudaMalloc(&y, ny * 2));
  CHECK_GPU(cudaMalloc(&ref, ny * 4));
  if (const size_t b = k.workspace_bytes(p)) CHECK_GPU(cudaMalloc(&ws, b));
  const uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  fill_random<D><<<1024, 256>>>(x, nsrc, seed);
  fill_random<D><<<1024, 256>>>(w, nw, seed + 1);
  fill_u16<<<1024, 256>>>(y, ny, 0xFFFF);  // NaN in fp16 and bf16
  if constexpr (kBwdW)
    ref_backward_weight<D><<<4096, 256>>>(x, w, ref, int(p.N), int(p.G), int(p.C), int(p.K),
                                          int(p.in[1]), int(p.in[2]), int(p.out[1]), int(p.out[2]),
                                          int(p.filter[1]), int(p.filter[2]), int(p.stride[1]),
                                          int(p.stride[2]), int(p.pad_l[1]), int(p.pad_l[2]),
                                          int(p.dilation[1]), int(p.dilation[2]));
  else if constexpr (kFwd)
    ref_forward<D><<<4096, 256>>>(x, w, ref, int(p.N), int(p.G), int(p.C), int(p.K), int(p.in[1]),
                                  int(p.in[2]), int(p.out[1]), int(p.out[2]), int(p.filter[1]),
                                  int(p.filter[2]), int(p.stride[1]), int(p.stride[2]),
                                  int(p.pad_l[1]), int(p.pad_l[2]), int(p.dilation[1]),
                                  int(p.dilation[2]));
  else
    ref_backward_data<D><<<4096, 256>>>(x, w, ref, int(p.N), int(p.G), int(p.C), int(p.K),
                                        int(p.in[1]), int(p.in[2]), int(p.out[1]), int(p.out[2]),
                                        int(p.filter[1]), int(p.filter[2]), int(p.stride[1]),
                                        int(p.stride[2]), int(p.pad_l[1]), int(p.pad_l[2]),
                                        int(p.dilation[1]), int(p.dilation[2]));
  CHECK_GPU(cudaGetLastError());
  const ConvTensors t = kFwd ? ConvTensors{x, w, y} : kBwdW ? ConvTensors{x, y, w} : ConvTensors{y, w, x};
  CHECK_GPU(k.run(p, t, ws, 0));
  CHECK_GPU(cudaDeviceSynchronize());
  std::vector<uint16_t> hy(ny);
  std::vector<float> hr(ny);
  CHECK_GPU(cudaMemcpy(hy.data(), y, ny * 2, cudaMemcpyDeviceToHost));
  CHECK_GPU(cudaMemcpy(hr.data(), ref, ny * 4, cudaMemcpyDeviceToHost));
  double ss = 0;
  for (float v : hr) ss += double(v) * v;
  const double rms = std::sqrt(ss / double(ny));
  const double rtol = D == DataType::BF16 ? 1e-2 : 2e-3, atol = (D == DataType::BF16 ? 2e-2 : 4e-3) * rms;
  int64_t bad = 0, first = -1;
  double max_err = 0, se = 0;
  for (int64_t i = 0; i < ny; ++i) {
    const double g = raw_to_float<D>(hy[i]);
    const double e = std::fabs(g - hr[i]);
    se += (g - hr[i]) * (g - hr[i]);
    if (!(e <= rtol * std::fabs(hr[i]) + atol)) {
      if (first < 0) first = i;
      ++bad;
    }
    if (e > max_err || std::isnan(e)) max_err = e;
  }
  const double rel = std::sqrt(se / std::max(ss, 1e-30));
  if (bad == 0) {
    ++g_pass;
    std::printf("PASS  %-14s %-28s rel_l2=%.2e max_err=%.3g (rms %.3g)", label, s.name, rel, max_err, rms);
  } else {
    ++g_fail;
    std::printf("FAIL  %-14s %-28s bad=%lld/%lld first@%lld got=%g ref=%g rel_l2=%.2e", label, s.name,
                (long long)bad, (long long)ny, (long long)first,
                (double)raw_to_float<D>(hy[first]), (double)hr[first], rel);
  }
  if (time && bad == 0) {
    cudaEvent_t e0, e1;
    CHECK_GPU(cudaEventCreate(&e0));
    CHECK_GPU(cudaEventCreate(&e1));
    for (int i = 0; i < 5; ++i) CHECK_GPU(k.run(p, t, ws, 0));
    std::vector<float> ms;
    for (int rep = 0; rep < 7; ++rep) {
      CHECK_GPU(cudaEventRecord(e0));
      for (int i = 0; i < 20; ++i) k.run(p, t, ws, 0);
      CHECK_GPU(cudaEventRecord(e1));
      CHECK_GPU(cudaEventSynchronize(e1));
      float v;
      CHECK_GPU(cudaEventElapsedTime(&v, e0, e1));
      ms.push_back(v / 20);
    }
    std::sort(ms.begin(), ms.end());
    const double us = ms[3] * 1e3;
    std::printf("  time=%.2f us  %.1f TFLOPS", us, p.flops() / (us * 1e-6) / 1e12);
    CHECK_GPU(cudaEventDestroy(e0));
    CHECK_GPU(cudaEventDestroy(e1));
  }
  std::printf("\n");
  CHECK_GPU(cudaFree(x));
  CHECK_GPU(cudaFree(w));
  CHECK_GPU(cudaFree(y));
  CHECK_GPU(cudaFree(ref));
  if (ws) CHECK_GPU(cudaFree(ws));
}

// name, nd, G, N, C, K, H, W, R, S, sh, sw, plh, plw, prh, prw, dh, dw
static const Shape kCorrect2d[] = {
    {"3x3_64_64_20", 2, 1, 2, 64, 64, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"3x3s2_128_96_25", 2, 1, 2, 128, 96, 25, 25, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"1x1_256_72_13_n3", 2, 1, 3, 256, 72, 13, 13, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"1x1s2_64_256_28", 2, 1, 2, 64, 256, 28, 28, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
    {"7x7s2_8_64_32", 2, 1, 2, 8, 64, 32, 32, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1},
    {"g2_3x3_64_64_14", 2, 2, 2, 64, 64, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"1x3_96_64_17x19", 2, 1, 2, 96, 64, 17, 19, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1},
    {"3x1_96_64_17x19", 2, 1, 2, 96, 64, 17, 19, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1},
    {"3x3_asym_pad_64_40", 2, 1, 2, 64, 40, 15, 16, 3, 3, 1, 2, 2, 0, 0, 1, 1, 1},
    {"3x3d2_64_64_18", 2, 1, 2, 64, 64, 18, 18, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
    {"3x3_64_35_odd_k", 2, 1, 2, 64, 35, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"3x3_200_300_9", 2, 1, 3, 200, 300, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"c3_refused", 2, 1, 2, 3, 64, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
};
static const Shape kCorrect1d[] = {
    {"1d_k3_64_128_L500", 1, 1, 2, 64, 128, 1, 500, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1},
    {"1d_k5s2_128_64_L333", 1, 1, 3, 128, 64, 1, 333, 1, 5, 1, 2, 0, 2, 0, 2, 1, 1},
};
static const Shape kPerf2d[] = {
    {"head_cls_3x3_256_2376_100", 2, 1, 2, 256, 2376, 100, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"head_cls_3x3_256_2376_50", 2, 1, 2, 256, 2376, 50, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"head_3x3_256_256_100", 2, 1, 2, 256, 256, 100, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"head_3x3_256_256_50", 2, 1, 2, 256, 256, 50, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"r50_l1_3x3_64_64", 2, 1, 2, 64, 64, 200, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"r50_l3_1x1_512_256", 2, 1, 2, 512, 256, 100, 100, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"r50_l4_1x1_1024_512", 2, 1, 2, 1024, 512, 50, 50, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"r50_l2_ds_1x1s2_256_512", 2, 1, 2, 256, 512, 200, 200, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
    {"r50_l4_3x3s2_512_512", 2, 1, 2, 512, 512, 50, 50, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"grouped_3x3_g4_c64_100", 2, 4, 2, 64, 64, 100, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"head_box_3x3_256_36_100", 2, 1, 2, 256, 36, 100, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"r50_l2_1x1_512_128", 2, 1, 2, 512, 128, 100, 100, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"r50_l3_1x1_256_1024", 2, 1, 2, 256, 1024, 50, 50, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"r50_l1_1x1_64_256", 2, 1, 2, 64, 256, 200, 200, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
};

template <class Cfg>
static void suite(const char* label, bool correct, bool perf) {
  const auto k = make_kernel<Cfg>();
  constexpr DataType D = Cfg::kDataType;
  constexpr Variant V = Cfg::kVariant;
  if (Cfg::kNDim == 2) {
    if (correct)
      for (const Shape& s : kCorrect2d) run_case<D, V>(*k, label, s, false);
    if (perf)
      for (const Shape& s : kPerf2d) run_case<D, V>(*k, label, s, true);
  } else {
    for (const Shape& s : kCorrect1d) run_case<D, V>(*k, label, s, false);
  }
}

int main() {
  constexpr DataType H = DataType::FP16, B = DataType::BF16;
  constexpr Variant BD = Variant::BackwardData;
  // The default set's rings (configs/forward/default.yaml, configs/backward_data/default.yaml).
  suite<TmaCfg<H, 2, 256, 128, 8, 4>>("t256x128 s4", true, true);
  suite<TmaCfg<H, 2, 128, 128, 8, 6>>("t128x128 s6", false, true);
  suite<TmaCfg<H, 2, 128, 128, 8, 3>>("t128x128 s3", true, true);
  suite<TmaCfg<H, 2, 128, 64, 8, 8>>("t128x64 s8", false, true);
  suite<TmaCfg<H, 2, 128, 64, 8, 4>>("t128x64 s4", true, true);
  suite<TmaCfg<H, 2, 64, 128, 4, 4>>("t64x128 s4", true, true);
  suite<TmaCfg<H, 2, 64, 64, 4, 4>>("t64x64 s4", true, true);
  suite<TmaCfg<B, 2, 128, 128, 8, 3>>("bf16 t128x128", true, false);
  suite<TmaCfg<H, 1, 128, 128, 8, 3>>("1d t128x128", true, false);
  suite<TmaCfg<B, 1, 64, 64, 4, 4>>("bf16 1d t64x64", true, false);
  suite<TmaCfg<H, 2, 128, 128, 8, 3, BD>>("bd t128x128 s3", true, true);
  suite<TmaCfg<H, 2, 128, 64, 8, 4, BD>>("bd t128x64 s4", true, true);
  suite<TmaCfg<B, 2, 64, 64, 4, 4, BD>>("bd bf16 t64x64", true, false);
  suite<TmaCfg<H, 1, 64, 128, 4, 4, BD>>("bd 1d t64x128", true, false);
  // The cshuffle epilogue (16-byte stores from a per-warp shared-memory slab) on the same rings.
  constexpr Epilogue CS = Epilogue::CShuffle;
  constexpr Variant F = Variant::Forward;
  suite<TmaCfg<H, 2, 256, 128, 8, 4, F, CS>>("cs t256x128 s4", true, true);
  suite<TmaCfg<H, 2, 128, 128, 8, 3, F, CS>>("cs t128x128 s3", true, true);
  suite<TmaCfg<H, 2, 128, 64, 8, 4, F, CS>>("cs t128x64 s4", true, true);
  suite<TmaCfg<H, 2, 128, 64, 8, 8, F, CS>>("cs t128x64 s8", false, true);
  suite<TmaCfg<H, 2, 64, 128, 4, 4, F, CS>>("cs t64x128 s4", true, true);
  suite<TmaCfg<H, 2, 64, 64, 4, 4, F, CS>>("cs t64x64 s4", true, true);
  suite<TmaCfg<B, 1, 64, 64, 4, 4, F, CS>>("cs bf16 1d t64x64", true, false);
  suite<TmaCfg<H, 2, 128, 128, 8, 3, BD, CS>>("cs bd t128x128 s3", true, true);
  suite<TmaCfg<B, 2, 64, 64, 4, 4, BD, CS>>("cs bd bf16 t64x64", true, true);
  suite<TmaCfg<H, 2, 256, 128, 8, 4, BD, CS>>("cs bd t256x128 s4", true, true);
  suite<TmaCfg<H, 2, 64, 128, 4, 4, BD, CS>>("cs bd t64x128 s4", true, true);
  // backward_weight: M-major dy, N-major x, split reduction with fp32 atomics.
  constexpr Variant BW = Variant::BackwardWeight;
  suite<TmaCfg<H, 2, 128, 128, 8, 4, BW>>("bw t128x128 s4", true, true);
  suite<TmaCfg<H, 2, 128, 64, 8, 4, BW, CS>>("cs bw t128x64 s4", true, true);
  suite<TmaCfg<B, 2, 64, 128, 4, 4, BW, CS>>("cs bw bf16 t64x128", true, true);
  suite<TmaCfg<H, 1, 128, 128, 8, 4, BW, CS>>("cs bw 1d t128x128", true, false);
  std::printf("SUMMARY: %d passed, %d failed\n", g_pass, g_fail);
  return g_fail == 0 ? 0 : 1;
}
