// Specialization::Window on a backward_weight wavelet_tma instance: the weight gradient of
// 64-channel groups (C = K = 64) at stride 1 for 3x3 filters, the input read once a window.
//
//   window: a unit is a window of Tile M / 8 output rows x 8 output columns of one image (the
//           windows of pipeline/tma_window.hpp). The load warp copies the window's dy (one 4D
//           tiled box of dy {G*K, Q, P, N}: Tile M positions x 64 output channels, rows past the
//           image zero-filled, so they add nothing) and its input patch ((rows + 2 d_h) x (8 +
//           2 d_w) pixels x 64 channels, one 4D tiled box of x from (ow0 - pl_w, oh0 - pl_h),
//           padding zero-filled) into one stage of a kStages ring.
//   math:   three warpgroups, one a filter row fy, each accumulating dw[k][fy][0..2][c] (64 x 192)
//           over the block's windows: per k16 step (two output rows of the window) one
//           m64n192k16 with A = dy's 16 positions (M-major: 64 output channels a 128-byte row) and
//           B = the patch pixels under them for the row's three taps (N-major: the taps' 64-channel
//           blocks start d_w pixels apart, LBO = d_w x 128 bytes; the step's second 8 positions
//           lie one patch row below the first, SBO = patch width x 128 bytes). Every warpgroup
//           reads every stage; a stage is released once the three have finished its MMAs (the
//           next window's MMAs are issued before waiting for the last one's).
//   sum:    the blocks of a group split its windows (detail::tma_window_weight_grid) and form
//           clusters of 2..8: each block leaves its 64 x 576 fp32 partial filter in its shared
//           memory, and after a cluster barrier block r sums its 1 / c of the filter over the
//           cluster through distributed shared memory and adds it into a
//           zeroed fp32 copy of dw with 16-byte reductions (one cluster's sums where there were
//           c blocks'); splitk_finish converts it (clear, kernel and conversion chained:
//           core/chain.hpp). A block outside a cluster sums its own the same way.
// The input is copied ~1.3 times (the patch's halo) and dy once, where backward_weight's row form
// (pipeline/tma_ws.hpp, TmaTraits::kRows) copies both once a filter row.
#pragma once

#include "ckgen/pipeline/tma_window.hpp"
#include "ckgen/schedule/splitk_finish.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

template <class Cfg>
struct TmaWindowWeightTraits : TmaWindowCommonTraits<Cfg> {
  using Base = TmaWindowCommonTraits<Cfg>;
  using Base::PN;
  using Base::S;
  using Base::kRowBytes;
  static constexpr int kDyBytes = PN * kRowBytes;
  static constexpr int kTaps = 3;  // a filter row's taps: one warpgroup's N = 3 x 64
  static constexpr int kN = kTaps * 64;
  static constexpr int kMathThreads = 3 * 128;  // one warpgroup a filter row
  static constexpr int kThreads = kMathThreads + 32;
  static_assert(Cfg::kVariant == Variant::BackwardWeight, "ckgen: TmaWindowWeightTraits is backward_weight");
  static_assert(Cfg::WarpTile::kN == kN && !Cfg::kSwapAB,
                "ckgen: backward_weight window: warp tile (64, 192, 16) (a filter row's three taps), no swap_ab");
  static_assert(Cfg::Waves::kM == 12 && Cfg::kMathWaves == 12,
                "ckgen: backward_weight window needs waves (12, 1, 1): three math warpgroups, one load warp");
  static_assert(Cfg::kEpilogue == Epilogue::Default,
                "ckgen: backward_weight window adds its sums from registers (epilogue default)");
  static_assert(S >= 2 && S <= 4, "ckgen: backward_weight window takes 2 to 4 stages");
};

namespace detail {
// The partial filter a block leaves for its cluster: 64 rows of 576 fp32 sums, rows 584 floats
// apart (a half-warp's 8-byte writes of four rows fall in distinct banks).
inline constexpr int kTmaWindowPartLd = 3 * 192 + 8;
inline constexpr int kTmaWindowPartBytes = 64 * kTmaWindowPartLd * 4;
// Shared memory of a backward_weight window launch: `stages` stages of a window's dy (pixels rows
// of 128 bytes) and its pw x ph patch, or the partial filter after the main loop, whichever is
// larger; a full / empty barrier pair a stage, the alignment slack.
inline constexpr int tma_window_weight_smem_bytes(int pw, int ph, int stages, int pixels) {
  const int ring = stages * (pixels * 128 + tma_window_patch_bytes(pw, ph));
  return (ring > kTmaWindowPartBytes ? ring : kTmaWindowPartBytes) + 16 * stages + 1024;
}
}  // namespace detail

struct TmaWindowWeightArgs {
  CUtensorMap x, dy;  // x {G*C, W, H, N}, box 64 x pw x ph; dy {G*K, Q, P, N}, box 64 x 8 x TH
  float* ws;          // fp32 sums of dw (G, K, 3, 3, C), zeroed before the launch
  TmaWindowGeometry win;
  int stage_bytes, stage_tx;  // ring stage stride; bytes a stage's copies land
  int cluster;                // blocks a cluster (1: each block adds its own sums)
  int ring_bytes;             // where the barriers start
};

template <class Cfg>
CKGEN_GLOBAL void __launch_bounds__(TmaWindowWeightTraits<Cfg>::kThreads, 1)
    tma_window_weight_kernel(const CKGEN_GRID_CONSTANT TmaWindowWeightArgs p) {
  using Tr = TmaWindowWeightTraits<Cfg>;
  extern __shared__ __attribute__((aligned(1024))) unsigned char wwin_smem_raw[];
#if defined(CKGEN_HAS_TMA) && defined(CKGEN_HAS_WGMMA)
  const uint32_t raw_addr = mbar::addr(wwin_smem_raw);
  unsigned char* ring = wwin_smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + p.ring_bytes);
  uint64_t* empty = full + Tr::S;
  const int tid = threadIdx.x;
  const int slot = int(blockIdx.x) / p.win.bpg, sub = int(blockIdx.x) % p.win.bpg;
  if (tid == Tr::kMathThreads) {  // the copies' issuer: the maps fetched while the previous kernel ends
    tma::prefetch_map(&p.x);
    tma::prefetch_map(&p.dy);
  }
  if (tid == 0) {
    for (int b = 0; b < Tr::S; ++b) {
      mbar::init(full + b, 1);
      mbar::init(empty + b, Tr::kMathThreads / 32);  // every math warp reads every stage
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  chain_wait();  // the clear of the sums
  // A cluster whose blocks have no window of their group skips the sums (every block of a cluster
  // takes the same branch: bpg is a multiple of the cluster, block sub's rank is sub % cluster).
  const bool summing = sub - sub % p.cluster < p.win.tiles_group;
  if (tid >= Tr::kMathThreads) {  // the load warp: one thread issues every copy
    const bool issuer = tid == Tr::kMathThreads;
    int li = 0;
    for (int g = slot; g < p.win.G; g += p.win.group_stride) {
      if (issuer)
        for (int tile = sub; tile < p.win.tiles_group; tile += p.win.bpg, ++li) {
          const int b = li % Tr::S;
          if (li >= Tr::S) mbar::wait(empty + b, uint32_t((li / Tr::S - 1) & 1));
          int n, oh0, ow0;
          p.win.origin(tile, Tr::TH, n, oh0, ow0);
          unsigned char* st = ring + b * p.stage_bytes;
          tma::expect_tx(full + b, uint32_t(p.stage_tx));
          tma::load_tile_4d(st, &p.dy, full + b, g * 64, ow0, oh0, n);
          tma::load_tile_4d(st + Tr::kDyBytes, &p.x, full + b, g * 64, ow0 - p.win.pl_w, oh0 - p.win.pl_h, n);
        }
      if (summing) {  // the math warps' two cluster barriers: the ring holds the partial filter between them
        __syncwarp();
        tma::cluster_sync();
        tma::cluster_sync_relaxed();
        if (issuer) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // before the next copies
      }
    }
    if (issuer) chain_release();
    return;
  }

  // Math warpgroup fy: filter row fy's taps over every window of the block.
  using Op = wgmma_detail::Op<Tr::kN, Tr::kBF16, 1, 1>;
  const int fy = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  float acc[Tr::kN / 2];
  auto fence_acc = [&] {
#pragma unroll
    for (int e = 0; e < Tr::kN / 2; ++e) asm volatile("" : "+f"(acc[e])::"memory");
  };
  const uint32_t ra = mbar::addr(ring);
  const uint32_t sbo = uint32_t(p.win.pw) * Tr::kRowBytes, lbo = uint32_t(p.win.d_w) * Tr::kRowBytes;
  const uint32_t row0 = uint32_t(Tr::kDyBytes) + uint32_t(fy * p.win.d_h) * sbo;  // the patch row under window row 0
  int li = 0;
  for (int g = slot; g < p.win.G; g += p.win.group_stride) {
#pragma unroll
    for (int e = 0; e < Tr::kN / 2; ++e) acc[e] = 0.f;
    fence_acc();
    int held = -1;  // the stage whose MMAs may still be in flight
    for (int tile = sub; tile < p.win.tiles_group; tile += p.win.bpg, ++li) {
      const int b = li % Tr::S;
      mbar::wait(full + b, uint32_t((li / Tr::S) & 1));
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      const uint32_t st = ra + uint32_t(b * p.stage_bytes);
#pragma unroll
      for (int kk = 0; kk < Tr::TH / 2; ++kk)  // output rows 2 kk, 2 kk + 1 of the window
        Op::run(acc, tma::sw128_desc_mn(st + uint32_t(kk * 2048), uint32_t(Tr::kDyBytes)),
                tma::sw128_desc_mn(st + row0 + uint32_t(2 * kk) * sbo, lbo, sbo));
      // The last window's MMAs done, its stage released, this window's left in flight.
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      fence_acc();
      if (held >= 0 && lane == 0) mbar::arrive(empty + held);
      held = b;
    }
    // Unconditional (nothing in flight without a window): a wait under a branch ptxas cannot
    // prove uniform makes it serialize every MMA of the loop behind the one before (C7518).
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc();
    if (held >= 0 && lane == 0) mbar::arrive(empty + held);
    if (!summing) continue;
    // Every math warp done with the ring, the partial filter into it (zeros from a block without
    // windows), cluster barrier; block `rank` sums its 1 / c of the filter over the cluster
    // (ranks in order: the same sums every run) into the workspace, 16 bytes a lane along dw's
    // rows; a last barrier keeps every block's shared memory alive until all have read it (and
    // the ring free until then). A block outside a cluster is a cluster of one.
    asm volatile("bar.sync 1, %0;\n" ::"r"(Tr::kMathThreads) : "memory");
    float* part = reinterpret_cast<float*>(ring);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < Tr::kN / 8; ++j)
        *reinterpret_cast<float2*>(part + (warp * 16 + (lane >> 2) + h * 8) * detail::kTmaWindowPartLd +
                                   fy * Tr::kN + j * 8 + (lane & 3) * 2) =
            make_float2(acc[j * 4 + h * 2], acc[j * 4 + h * 2 + 1]);
    __syncwarp();
    tma::cluster_sync();
    const int c = p.cluster, rank = int(tma::cluster_rank());
    constexpr int kChunks = 3 * Tr::kN / 4;  // 16-byte chunks of a row
    const int c0 = rank * 64 * kChunks / c, c1 = (rank + 1) * 64 * kChunks / c;
    for (int idx = c0 + tid; idx < c1; idx += Tr::kMathThreads) {
      const int lr = idx / kChunks, lc = (idx % kChunks) * 4;
      const uint32_t addr = ra + uint32_t(lr * detail::kTmaWindowPartLd + lc) * 4u;
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int q0 = 0; q0 < 8; q0 += 4) {  // four blocks' chunks loaded before any is added
        float4 v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (q0 + q < c) v[q] = tma::load_remote4(addr, uint32_t(q0 + q));
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (q0 + q < c) {
            sum.x += v[q].x;
            sum.y += v[q].y;
            sum.z += v[q].z;
            sum.w += v[q].w;
          }
      }
      tma::red_add4(p.ws + (int64_t(g) * 64 + lr) * (3 * Tr::kN), lc, 3 * Tr::kN, sum.x, sum.y, sum.z, sum.w);
    }
    __syncwarp();
    tma::cluster_sync_relaxed();
  }
#else
  (void)p;
  (void)wwin_smem_raw;
#endif
}

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
