// Probe of a forward form for 64-channel groups at stride 1 ("window"): a block keeps its group's
// whole filter (Y * X taps x 64 x 64, K-major) resident in shared memory; a tile is a window of
// TH output rows x 8 output columns of one image; the load warp copies the window's input patch
// ((TH + 2) x 10 pixels x 64 channels, one 4D tiled box, padding zero-filled by the engine) and
// every tap reads its B operand from the patch (8-pixel groups (TH rows) 10 pixel rows apart:
// descriptor SBO = 1280 bytes). The math warpgroup computes the transposed tile (64 output
// channels on the instruction's M, the 8 * TH pixels on its N) and stores it through a staging
// buffer (stmatrix .trans) with one 4D tiled store (clipped at the image's edge by the engine).
// Two math warpgroups take turns on the block's tiles; one load warp.
//
// Build + run: bench/dev/window_call.sh (device). Prints PASS/FAIL and the median time per call.
// (Its P = 3 cases share patch buffers between the two warpgroups, which the library form refuses:
// see TmaWindowTraits in templates/include/ckgen/pipeline_tma_window.hpp.)
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ckgen/pipeline_tma.hpp"

using namespace ckgen;

template <int N, bool BF16>
struct WinOp {
  __device__ __forceinline__ static void run(float (&d)[N / 2], uint64_t da, uint64_t db) {
    wgmma_detail::Op<N, BF16, 0, 0>::run(d, da, db);
  }
};
#include "window_ops.inc"

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(3);                                                               \
    }                                                                             \
  } while (0)

struct WinArgs {
  CUtensorMap x, w, y;
  int N, H, W, G, taps, X;
  int tiles_w, tiles_h, tiles_img, tiles_group;
  int bpg, group_stride;  // blocks a group, group slots
};

// SBO variant of the K-major 128B-swizzle descriptor: 8-row groups sbo bytes apart.
__host__ __device__ constexpr uint64_t sw128_desc_sbo(uint32_t a, uint32_t sbo) {
  return uint64_t((a & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
         (uint64_t(1) << 62);
}

template <int TH, bool BF16, int P>
struct WinTr {
  static constexpr int TW = 8, PW = TW + 2, PH = TH + 2, PN = TW * TH;
  static constexpr int kTapBytes = 64 * 128;
  static constexpr int kPatchBytes = ((PW * PH * 128) + 1023) / 1024 * 1024;
  static constexpr int kStageOut = PN * 128;
  static constexpr int kTaps = 9;
  static constexpr int kW = kTaps * kTapBytes;
  static constexpr int kSmem = kW + P * kPatchBytes + 2 * kStageOut + 64 + 1024;
  static constexpr int kThreads = 2 * 128 + 32;
};

__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

template <int TH, bool BF16, int P>
__global__ void __launch_bounds__(WinTr<TH, BF16, P>::kThreads, 1) window_fwd(const __grid_constant__ WinArgs p) {
  using Tr = WinTr<TH, BF16, P>;
  extern __shared__ __attribute__((aligned(1024))) unsigned char smem_raw[];
#if defined(CKGEN_HAS_TMA) && defined(CKGEN_HAS_WGMMA)
  const uint32_t raw_addr = mbar::addr(smem_raw);
  unsigned char* base = smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u);
  unsigned char* wsm = base;
  unsigned char* patches = base + Tr::kW;
  unsigned char* stage = patches + P * Tr::kPatchBytes;
  uint64_t* bars = reinterpret_cast<uint64_t*>(stage + 2 * Tr::kStageOut);
  uint64_t* wfull = bars;
  uint64_t* wempty = bars + 1;
  uint64_t* pfull = bars + 2;
  uint64_t* pempty = pfull + P;
  const int tid = threadIdx.x;
  const int slot = blockIdx.x / p.bpg, sub = blockIdx.x % p.bpg;
  if (tid == 0) {
    mbar::init(wfull, 1);
    mbar::init(wempty, 8);
    for (int b = 0; b < P; ++b) {
      mbar::init(pfull + b, 1);
      mbar::init(pempty + b, 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  auto tile_xy = [&](int tile, int& n, int& oh0, int& ow0) {
    n = tile / p.tiles_img;
    const int r = tile % p.tiles_img;
    oh0 = (r / p.tiles_w) * TH;
    ow0 = (r % p.tiles_w) * Tr::TW;
  };
  if (tid >= 256) {
    if (tid == 256) {
      tma::prefetch_map(&p.x);
      tma::prefetch_map(&p.w);
      int li = 0, gi = 0;
      for (int g = slot; g < p.G; g += p.group_stride, ++gi) {
        if (gi > 0) mbar::wait(wempty, uint32_t((gi - 1) & 1));
        tma::expect_tx(wfull, uint32_t(Tr::kW));
        for (int tap = 0; tap < Tr::kTaps; ++tap)
          tma::load_tile_3d(wsm + tap * Tr::kTapBytes, &p.w, wfull, 0, tap, g * 64);
        for (int tile = sub; tile < p.tiles_group; tile += p.bpg, ++li) {
          const int b = li % P;
          if (li >= P) mbar::wait(pempty + b, uint32_t((li / P - 1) & 1));
          int n, oh0, ow0;
          tile_xy(tile, n, oh0, ow0);
          tma::expect_tx(pfull + b, uint32_t(Tr::PW * Tr::PH * 128));
          tma::load_tile_4d(patches + b * Tr::kPatchBytes, &p.x, pfull + b, g * 64, ow0 - 1, oh0 - 1, n);
        }
      }
    }
    return;
  }
  const int c = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  float acc[Tr::PN / 2];
  auto fence_acc = [&] {
#pragma unroll
    for (int e = 0; e < Tr::PN / 2; ++e) asm volatile("" : "+f"(acc[e])::"memory");
  };
  const uint32_t wa = mbar::addr(wsm), pa = mbar::addr(patches);
  const uint32_t so = mbar::addr(stage) + c * Tr::kStageOut;
  int li = 0, gi = 0;
  bool stored = false;
  for (int g = slot; g < p.G; g += p.group_stride, ++gi) {
    mbar::wait(wfull, uint32_t(gi & 1));
    for (int tile = sub; tile < p.tiles_group; tile += p.bpg, ++li) {
      if ((li & 1) != c) continue;
      const int b = li % P;
      mbar::wait(pfull + b, uint32_t((li / P) & 1));
#pragma unroll
      for (int e = 0; e < Tr::PN / 2; ++e) acc[e] = 0.f;
      fence_acc();
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      const uint32_t pb = pa + b * Tr::kPatchBytes;
#pragma unroll
      for (int tap = 0; tap < 9; ++tap) {
        const int fy = tap / 3, fx = tap % 3;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          WinOp<Tr::PN, BF16>::run(acc, tma::sw128_desc(wa + tap * Tr::kTapBytes + kk * 32),
                                   sw128_desc_sbo(pb + uint32_t(fy * Tr::PW + fx) * 128 + kk * 32, Tr::PW * 128));
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      fence_acc();
      if (lane == 0) mbar::arrive(pempty + b);
      // epilogue: the staging buffer free (the last store from it has read it)
      if (tid % 128 == 0 && stored) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
#pragma unroll
      for (int j = 0; j < Tr::PN / 8; j += 2) {
        uint32_t r[4];
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int jj = j + m / 2, h = m % 2;
          const float v0 = acc[jj * 4 + h * 2], v1 = acc[jj * 4 + h * 2 + 1];
          if constexpr (BF16) {
            __nv_bfloat162 t = __floats2bfloat162_rn(v0, v1);
            r[m] = *reinterpret_cast<uint32_t*>(&t);
          } else {
            __half2 t = __floats2half2_rn(v0, v1);
            r[m] = *reinterpret_cast<uint32_t*>(&t);
          }
        }
        const int m = lane / 8, row = lane % 8;
        const int pix = (j + m / 2) * 8 + row, chunk = warp * 2 + (m % 2);
        const uint32_t addr = so + pix * 128 + ((chunk ^ (pix & 7)) << 4);
        asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]),
                     "r"(r[1]), "r"(r[2]), "r"(r[3])
                     : "memory");
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
      if (tid % 128 == 0) {
        int n, oh0, ow0;
        tile_xy(tile, n, oh0, ow0);
        tma_store_4d(&p.y, so, g * 64, ow0, oh0, n);
      }
      stored = true;
    }
    if (lane == 0) mbar::arrive(wempty);
  }
  if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#else
  (void)p;
  (void)smem_raw;
#endif
}

// Reference: fp32 sums, one thread an output element.
template <class T>
__global__ void ref_fwd(const T* x, const T* w, float* y, int N, int H, int W, int G) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t total = int64_t(N) * H * W * G * 64;
  if (i >= total) return;
  const int k = i % 64, g = (i / 64) % G;
  const int64_t pix = i / (64 * G);
  const int ow = pix % W, oh = (pix / W) % H, n = pix / (int64_t(W) * H);
  float s = 0.f;
  for (int fy = 0; fy < 3; ++fy)
    for (int fx = 0; fx < 3; ++fx) {
      const int ih = oh + fy - 1, iw = ow + fx - 1;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const T* xp = x + ((int64_t(n) * H + ih) * W + iw) * G * 64 + g * 64;
      const T* wp = w + ((int64_t(g) * 64 + k) * 9 + fy * 3 + fx) * 64;
      for (int cc = 0; cc < 64; ++cc) s += float(xp[cc]) * float(wp[cc]);
    }
  y[i] = s;
}

using EncFn = detail::EncodeTiledFn;
static bool enc(CUtensorMap* m, bool bf, void* ptr, int rank, const cuuint64_t* dims, const cuuint32_t* box) {
  static const auto f = detail::driver_entry<EncFn>("cuTensorMapEncodeTiled");
  cuuint64_t strides[4] = {dims[0] * 2, 0, 0, 0};
  for (int i = 1; i + 1 < rank; ++i) strides[i] = strides[i - 1] * dims[i];
  const cuuint32_t es[5] = {1, 1, 1, 1, 1};
  return f(m, bf ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, cuuint32_t(rank), ptr, dims,
           strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
           CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int TH, bool BF16, int P>
static void run_case(int N, int H, int W, int G, int sms) {
  using Tr = WinTr<TH, BF16, P>;
  using T = std::conditional_t<BF16, __nv_bfloat16, __half>;
  const int64_t nx = int64_t(N) * H * W * G * 64, nw = int64_t(G) * 64 * 9 * 64;
  std::vector<T> hx(nx), hw(nw);
  std::mt19937 rng(1234 + TH + 7 * G + H);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : hx) v = T(u(rng));
  for (auto& v : hw) v = T(u(rng));
  T *dx, *dw, *dy;
  float* dr;
  CHECK(cudaMalloc(&dx, nx * 2));
  CHECK(cudaMalloc(&dw, nw * 2));
  CHECK(cudaMalloc(&dy, nx * 2));
  CHECK(cudaMalloc(&dr, nx * 4));
  CHECK(cudaMemcpy(dx, hx.data(), nx * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dw, hw.data(), nw * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dy, 0xFF, nx * 2));  // poison: NaN
  WinArgs a{};
  {
    const cuuint64_t d[4] = {cuuint64_t(G) * 64, cuuint64_t(W), cuuint64_t(H), cuuint64_t(N)};
    const cuuint32_t bx[4] = {64, Tr::PW, Tr::PH, 1};
    const cuuint32_t by[4] = {64, Tr::TW, TH, 1};
    const cuuint64_t dwd[3] = {64, 9, cuuint64_t(G) * 64};
    const cuuint32_t bw[3] = {64, 1, 64};
    if (!enc(&a.x, BF16, dx, 4, d, bx) || !enc(&a.y, BF16, dy, 4, d, by) || !enc(&a.w, BF16, dw, 3, dwd, bw)) {
      std::printf("encode failed\n");
      std::exit(3);
    }
  }
  a.N = N, a.H = H, a.W = W, a.G = G, a.taps = 9, a.X = 3;
  a.tiles_w = (W + Tr::TW - 1) / Tr::TW;
  a.tiles_h = (H + TH - 1) / TH;
  a.tiles_img = a.tiles_w * a.tiles_h;
  a.tiles_group = a.tiles_img * N;
  a.bpg = std::max(1, sms / G);
  a.group_stride = std::min(G, std::max(1, sms / a.bpg));
  const int grid = a.bpg * a.group_stride;
  auto k = window_fwd<TH, BF16, P>;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmem));
  k<<<grid, Tr::kThreads, Tr::kSmem>>>(a);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  ref_fwd<T><<<(nx + 255) / 256, 256>>>(dx, dw, dr, N, H, W, G);
  CHECK(cudaDeviceSynchronize());
  std::vector<T> hy(nx);
  std::vector<float> hr(nx);
  CHECK(cudaMemcpy(hy.data(), dy, nx * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hr.data(), dr, nx * 4, cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  double worst = 0;
  const double tol = BF16 ? 0.06 : 0.01;
  for (int64_t i = 0; i < nx; ++i) {
    const double v = float(hy[i]), r = hr[i];
    const double e = std::fabs(v - r) / (1.0 + std::fabs(r));
    if (!(e <= tol)) {
      if (bad < 5) std::printf("  mismatch at %lld: got %g want %g\n", (long long)i, v, r);
      ++bad;
    }
    if (e > worst || std::isnan(v)) worst = std::isnan(v) ? 1e30 : std::max(worst, e);
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 20; ++i) k<<<grid, Tr::kThreads, Tr::kSmem>>>(a);
  std::vector<float> ts;
  for (int r = 0; r < 9; ++r) {
    CHECK(cudaEventRecord(e0));
    for (int i = 0; i < 100; ++i) k<<<grid, Tr::kThreads, Tr::kSmem>>>(a);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 10.f);  // us per call
  }
  std::sort(ts.begin(), ts.end());
  const double flops = 2.0 * nx * 64 * 9;
  std::printf("%s N%d %dx%d G%d TH%d P%d grid %d smem %d: %s (worst rel err %.3g, %lld bad) %.2f us %.0f TFLOPS\n",
              BF16 ? "bf16" : "fp16", N, H, W, G, TH, P, grid, Tr::kSmem, bad ? "FAIL" : "PASS", worst, (long long)bad,
              ts[4], flops / ts[4] * 1e-6);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  cudaFree(dr);
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs\n", prop.name, sms);
  run_case<20, false, 3>(2, 100, 100, 4, sms);  // grouped_3x3_g4_c64_100
  run_case<20, true, 3>(2, 100, 100, 4, sms);
  run_case<16, false, 3>(2, 100, 100, 4, sms);
  run_case<24, false, 3>(2, 100, 100, 4, sms);
  run_case<20, false, 2>(2, 100, 100, 4, sms);
  run_case<16, false, 3>(1, 37, 45, 3, sms);  // odd sizes, G not dividing the SMs
  run_case<20, false, 3>(2, 56, 56, 40, sms);
  run_case<16, false, 3>(1, 20, 20, 200, sms);  // more groups than slots: weight reloads
  return 0;
}
