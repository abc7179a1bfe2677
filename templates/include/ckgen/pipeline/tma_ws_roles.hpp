// Roles and long steps of the TMA warp-specialized kernel (pipeline/tma_ws.hpp) as forced-inline
// functions: the barriers' set-up, the load warp's role (one thread issues every copy), a math
// warpgroup's main loop over one unit's k tiles, and the cluster reduction and the split CShuffle
// reduction of the epilogue. The kernel keeps the shared-memory layout, the lambdas over its
// arguments (decode, corner, load_x, the epilogue's row / column maps), passed through, and the
// CShuffle store loop.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>
#include <type_traits>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/epilogue/tma_ws_epilogue.hpp"
#include "ckgen/pipeline/tma_traits.hpp"
#include "ckgen/pipeline/tma_ws_maps.hpp"
#include "ckgen/pipeline/tma_ws_steps.hpp"
#include "ckgen/warp/mma_wgmma.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA) && defined(CKGEN_HAS_TMA)

namespace tma_ws {

// mma_unit's on_stage when a unit issues nothing more.
struct NoStage {
  CKGEN_DEVICE CKGEN_FORCEINLINE void operator()(uint32_t) const {}
};

// The ring's barriers (full: the stage's copies landed, empty: the math warps are done with it)
// and stride1's patch barriers, set up by thread 0 and made visible to the async proxy.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void init_barriers(const int tid, uint64_t* full, uint64_t* empty,
                                                  uint64_t* pfull, uint64_t* pempty) {
  using Tr = TmaTraits<Cfg>;
  if (tid == 0) {
    for (int s = 0; s < Tr::S; ++s) {
      mbar::init(full + s, 1);
      mbar::init(empty + s, Tr::kTileWarps);
    }
    if constexpr (Tr::kPatch)
      for (int b = 0; b < Tr::kPatchBuffers; ++b) {
        mbar::init(pfull + b, 1);
        mbar::init(pempty + b, Tr::kTileWarps);
      }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
}

// The launch's tensor maps into the copy engine's descriptor cache, by the thread that issues
// the copies, first thing in the kernel: they are its parameters, not the previous kernel's
// output, so their fetch overlaps that kernel's end (chain_wait follows).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void prefetch_maps(const TmaConvArgs& p) {
  tma::prefetch_map(&p.a);
  tma::prefetch_map(&p.b);
  if constexpr (TmaTraits<Cfg>::kMask) tma::prefetch_map(&p.ym);
}

// The load warp: thread kMathThreads walks the block's units b, b + grid, ... and issues, per k
// tile, the copies of the A and B tiles into the ring (stride1: of the B tiles, and the chunks'
// patches ahead of them); the whole warp then meets the math warps' cluster barriers.
template <class Cfg, bool kPlainX, class Decode, class CornerFn, class LoadX>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_role(const TmaConvArgs& p, const int tid, const int num_units,
                                              unsigned char* base, unsigned char* smem, uint64_t* full,
                                              uint64_t* empty, uint64_t* pfull, uint64_t* pempty,
                                              Decode& decode, CornerFn& corner, LoadX& load_x) {
  using Tr = TmaTraits<Cfg>;
  if (tid == Tr::kMathThreads) {
    int t = 0, pc = 0, bc = 0;  // k tiles, (stride1) patches issued, chunks of the B stream
    // stride1's patch cursor: the next (unit, chunk) to stage, up to two chunks ahead of the B
    // stream (the two buffers), across units; issue_patch(block) stages it when its buffer
    // is free (block: waits for that), so a patch's copy overlaps the previous chunk's taps.
    int pu = blockIdx.x, pcc = 0, pcc1 = 0, pj0 = 0, pimg = 0, pg = 0;
    auto cursor_unit = [&](int unit) {
      const Unit v = decode(unit);
      int col;
      p.by_wp.divmod(v.m0, pj0, col);
      pcc = v.kt0 / p.ftaps;
      pcc1 = v.kt1 / p.ftaps;
      pimg = v.img;
      pg = v.g;
    };
    if (Tr::kPatch && pu < num_units) cursor_unit(pu);
    auto issue_patch = [&](bool block) {
      tma_ws::issue_patch<Cfg>(p, block, num_units, base, pfull, pempty, pu, pc, pcc, pcc1, pj0, pimg, pg,
                               cursor_unit);
    };
    for (int unit = blockIdx.x; unit < num_units; unit += gridDim.x) {
      const Unit u = decode(unit);
      if constexpr (Tr::kRows) {
        // A: dy's row_len positions x 64 output channels; B: x's row_len + (X - 1) * d_w input
        // pixels of the same segment at filter row fy (u.tap), 64 input channels. Out-of-range
        // positions and padding are zero-filled by the engine.
        const int ach = u.g * p.M + u.m0, bch = u.g * p.C + u.n0;
        const int dh = u.tap * p.d_h - p.pl_h;
        for (int kt = u.kt0; kt < u.kt1; ++kt, ++t)
          tma_ws::load_row_tile<Cfg>(p, kt, t, smem, full, empty, ach, bch, dh);
      } else if constexpr (Tr::kWeightGrad) {
        // A: dy rows of 64 pixels x 64 output channels, B: x at the unit's tap (or, packed, its
        // columns' taps); live B blocks (tma_ws::weight_boxes).
        const int live = p.pack ? min(Tr::BN / 64, (p.K - u.n0) / 64) : Tr::BN / 64;
        const uint32_t stage_tx = uint32_t(Tr::kABytes + live * Tr::kBlockBytes);
        int bch[Tr::BN / 64], bfz[Tr::BN / 64], bfy[Tr::BN / 64], bfx[Tr::BN / 64];
        tma_ws::weight_boxes<Cfg>(p, u, bch, bfz, bfy, bfx);
        for (int kt = u.kt0; kt < u.kt1; ++kt, ++t)
          tma_ws::load_weight_tile<Cfg, kPlainX>(p, u, kt, t, smem, full, empty, corner, load_x, live,
                                                 stage_tx, bch, bfz, bfy, bfx);
      } else if constexpr (Tr::kPatch) {
        // Per chunk the chunk's taps' B tiles; the chunk's patch was issued by the patch
        // cursor (below), at the latest here, at its first tap.
        const int cbase = u.g * p.C, nrow = u.g * p.K + u.n0;
        int cc = u.kt0 / p.ftaps, tap = 0, fy = 0, fx = 0;
        for (int kt = u.kt0; kt < u.kt1; ++kt, ++t) {
          if (tap == 0)
            while (pc <= bc) issue_patch(true);
          const int s = t % Tr::S;
          if (t >= Tr::S) {  // waiting for the slot, stage the next patch once its buffer frees
            const uint32_t ph = uint32_t((t / Tr::S - 1) & 1);
            while (!mbar::test(empty + s, ph)) issue_patch(false);
          }
          tma_ws::load_patch_tile<Cfg>(p, u, s, smem, full, cbase, nrow, cc, fy, fx);
          if (++fx == p.X) {
            fx = 0;
            ++fy;
          }
          if (++tap == p.ftaps) {
            tap = fy = fx = 0;
            ++cc;
            ++bc;
          }
        }
      } else {
        tma_ws::load_fwd<Cfg>(p, u, t, smem, full, empty, corner, load_x);
      }
    }
    // Every copy of the block issued: the next launch of the call (a split's conversion) may
    // be scheduled; its blocks then wait in chain_wait for the last tiles only.
    chain_release();
  }
  tma_ws::load_warp_cluster_syncs<Cfg>(p);
}

// kMaskRegs: mma_unit's loop with the A fragments masked in registers (load_masked_a). The wgmma
// of a k tile read its fragments until they complete, so two sets of registers alternate: k
// tiles in pairs, each tile's wgmma issued on one set, committed, and the wait for all but the
// last group (the other set's tile) followed by a fence that holds the other set live until
// then, so the next tile's loads go to registers no wgmma still reads.
template <class Cfg, class Acc, class Fence, class U>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_unit_masked(const TmaConvArgs& p, Acc& acc, Fence& fence_acc, const U& u,
                                                    int& t, uint64_t* full, uint64_t* empty, const uint32_t ring,
                                                    const int wg, const int lane) {
  using Tr = TmaTraits<Cfg>;
  using Frag = uint32_t[Tr::RepM][4][4];
  Frag f0 = {}, f1 = {};
  auto hold = [](Frag& f) {
#pragma unroll
    for (int i = 0; i < Tr::RepM; ++i)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(f[i][kk][e])::"memory");
  };
  auto step = [&](Frag& f, Frag& other, const int kt) {
    const int s = t % Tr::S;
    mbar::wait(full + s, uint32_t((t / Tr::S) & 1));
    const uint32_t stage = ring + s * Tr::kStageBytes;
    tma_ws::load_masked_a<Cfg>(p, stage + wg * Tr::RepM * Tr::kBlockBytes, Tr::kABytes + Tr::kBBytes, f, lane);
    fence_acc();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    tma_ws::mma_stage_regs<Cfg>(acc, f, stage + Tr::kABytes);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    hold(other);
    fence_acc();
    tma_ws::release_stage<Cfg>(empty, nullptr, t, 0, 1, kt > u.kt0 && lane == 0);
    ++t;
  };
  int kt = u.kt0;
  for (; kt + 1 < u.kt1; kt += 2) {
    step(f0, f1, kt);
    step(f1, f0, kt + 1);
  }
  if (kt < u.kt1) step(f0, f1, kt);
}

// A math warpgroup's main loop over unit u's k tiles (ring slots from t on): wait for the stage
// (stride1: and, at a chunk's first tap, its patch), the wgmma instructions, then release the
// previous stage; t and (stride1) pc, tap, fy, fx step on. on_stage(a0) issues more wgmma on
// each stage into its commit group (a0: this warpgroup's A tile; the bias_grad sums).
template <class Op, class Cfg, class Acc, class Fence, class U, class OnStage>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_unit(const TmaConvArgs& p, Acc& acc, Fence& fence_acc, const U& u, int& t,
                                             int& pc, int& tap, int& fy, int& fx, uint64_t* full,
                                             uint64_t* empty, uint64_t* pfull, uint64_t* pempty,
                                             const uint32_t ring, const uint32_t patches, const int a_row,
                                             const int wg, const int lane, OnStage& on_stage) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kMaskRegs) {
    (void)pc, (void)tap, (void)fy, (void)fx, (void)pfull, (void)pempty, (void)patches, (void)a_row, (void)on_stage;
    tma_ws::mma_unit_masked<Cfg>(p, acc, fence_acc, u, t, full, empty, ring, wg, lane);
  } else {
    for (int kt = u.kt0; kt < u.kt1; ++kt, ++t) {
      const int s = t % Tr::S;
      mbar::wait(full + s, uint32_t((t / Tr::S) & 1));
      if constexpr (Tr::kPatch)
        if (tap == 0) mbar::wait(pfull + pc % Tr::kPatchBuffers, uint32_t((pc / Tr::kPatchBuffers) & 1));
      if constexpr (Tr::kMask) {
        // The gradient mask in shared memory, once per copy of dy: stride1, the whole patch at a
        // chunk's first tap (every math thread; the taps then read any rows of it); swap_ab, this
        // warpgroup's rows of the stage's A tile (named barrier 4 + the warpgroup).
        const int tid = int(threadIdx.x);
        if constexpr (Tr::kPatch) {
          if (tap == 0) {
            const uint32_t pb = patches + (pc % Tr::kPatchBuffers) * p.patch_stride;
            tma_ws::mask_rows<Cfg>(p, pb, pb + p.patch_stride / 2, p.patch_box, tid, Tr::kMathThreads, 1);
          }
        } else {
          const uint32_t a = ring + s * Tr::kStageBytes + wg * Tr::RepM * Tr::kBlockBytes;
          tma_ws::mask_rows<Cfg>(p, a, a + Tr::kABytes + Tr::kBBytes, Tr::RepM * Tr::kBlockBytes, tid % 128,
                                 128, 4 + tid / 128);
        }
      }
      fence_acc();
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      // A: the stage's tile, or (stride1) the tap's rows of the chunk's patch: any start row of
      // the 128-byte swizzled patch (the swizzle follows the shared-memory address bits)
      const uint32_t a0 = Tr::kPatch ? patches + (pc % Tr::kPatchBuffers) * p.patch_stride +
                                           uint32_t(a_row + fy * p.d_h * p.wp + fx * p.d_w) * Tr::kRowBytes
                                     : ring + s * Tr::kStageBytes + wg * Tr::RepM * Tr::kBlockBytes;
      const uint32_t b0 = ring + s * Tr::kRingStage + (Tr::kPatch ? 0 : Tr::kABytes);
      tma_ws::mma_stage<Op, Cfg>(p, acc, ring, s, a0, b0);
      if constexpr (!std::is_same_v<OnStage, NoStage>) on_stage(a0);
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      fence_acc();
      tma_ws::release_stage<Cfg>(empty, pempty, t, pc, tap, kt > u.kt0 && lane == 0);
      if constexpr (Tr::kPatch) {
        if (++fx == p.X) {
          fx = 0;
          ++fy;
        }
        if (++tap == p.ftaps) {
          tap = fy = fx = 0;
          ++pc;
        }
      }
    }
  }
}

// Cluster reduction (one unit per block): every math warp done with the ring, the fp32 partial
// tile into it, cluster barrier; block `rank` of the cluster sums rows [rank * BM / c,
// (rank + 1) * BM / c) over the c partial tiles (ranks in order: the same sums every run) and
// stores them as 16-byte vectors; a last barrier keeps every block's shared memory alive until all
// have read it.
template <class Cfg, class Acc, class RowBase, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void cluster_reduce(const TmaConvArgs& p, Acc& acc,
                                                   typename TmaTraits<Cfg>::Raw* y, unsigned char* smem,
                                                   const uint32_t ring, const int m0, const int wg,
                                                   const int warp, const int lane, const int tid,
                                                   RowBase& row_base, GCol& gcol) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  asm volatile("bar.sync 1, %0;\n" ::"r"(Tr::kMathThreads) : "memory");
  float* part = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < Tr::RepM; ++i) {
    const int r0 = (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < Tr::BN / 8; ++j)
        *reinterpret_cast<float2*>(part + (r0 + h * 8) * Tr::kPartLd + j * 8 + (lane & 3) * 2) =
            make_float2(acc[i][j * 4 + h * 2], acc[i][j * 4 + h * 2 + 1]);
  }
  __syncwarp();
  tma::cluster_sync();
  const int c = p.cluster;
  const int rank = int(tma::cluster_rank());
  const int lr0 = rank * Tr::BM / c, lr1 = (rank + 1) * Tr::BM / c;
  const bool vec = (p.K % 8) == 0;
  constexpr int kChunks = Tr::BN / 8;
  for (int idx = tid; idx < (lr1 - lr0) * kChunks; idx += Tr::kMathThreads) {
    const int lr = lr0 + idx / kChunks, lc = (idx % kChunks) * 8;
    const uint32_t addr = ring + uint32_t(lr * Tr::kPartLd + lc) * 4u;
    float sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int q = 0; q < 8; ++q)
      if (q < c) tma::add_remote8(sum, addr, uint32_t(q));
    const int row = m0 + lr, col = gcol(lc);
    if (row < p.M && col < p.K) {
      Raw* dst = y + row_base(row) + col;
      if (vec && col + 8 <= p.K) {
        uint32_t w[4];
#pragma unroll
        for (int e = 0; e < 4; ++e)
          w[e] = pack_pair<Cfg::kDataType>(sum[2 * e], sum[2 * e + 1]);
        *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
        for (int e = 0; e < 8 && col + e < p.K; ++e) dst[e] = float_to_raw<Cfg::kDataType>(sum[e]);
      }
    }
  }
  __syncwarp();
  tma::cluster_sync_relaxed();
}

// Split, CShuffle: fp32 reductions into the workspace (splitk_finish converts) through the warp's
// slab: 8 rows x 32 columns a round (row pitch 36 floats: conflict-free 8-byte writes and 16-byte
// reads), read back as 8 lanes x 16 bytes a row, so that each red.v4 instruction covers 4 rows x
// 128 bytes (whole lines; red_add4 for unaligned rows).
template <class Cfg, class Acc, class RowOk, class RowBase, class GCol>
CKGEN_DEVICE CKGEN_FORCEINLINE void red_split_staged(const TmaConvArgs& p, Acc& acc, unsigned char* slabs,
                                                     const int m0, const int wg, const int warp,
                                                     const int lane, const int tid, RowOk& row_ok,
                                                     RowBase& row_base, GCol& gcol) {
  using Tr = TmaTraits<Cfg>;
  constexpr int kPitch = 36;
  static_assert(8 * kPitch * 4 <= Tr::kSlabBytes, "ckgen: the fp32 round fits the cshuffle slab");
  float* slab = reinterpret_cast<float*>(slabs + (tid / 32) * Tr::kSlabBytes);
  const int lr = lane >> 3, lc = (lane & 7) * 4;  // this lane's read: slab row lr (+4), 4 columns
#pragma unroll
  for (int i = 0; i < Tr::RepM; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int rbase = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + h * 8;
      float* dst[2];
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int row = rbase + rr * 4 + lr;
        dst[rr] = row_ok(row) ? p.ws + row_base(row) : nullptr;
      }
      tma_ws::red_rounds<Cfg, kPitch>(p, acc, slab, dst, i, h, lane, lr, lc, gcol);
    }
  }
}

}  // namespace tma_ws

#endif  // CKGEN_NVIDIA && CKGEN_HAS_TMA

}  // namespace ckgen
