// Pipeline::WaveletTma: the implicit GEMMs on sm_90a, a wavelet pipeline whose load warp feeds
// the wgmma math warpgroups through the tensor-memory-access (TMA) engine.
//
// Roles (block = math warpgroups first, then one load warp):
//   load:  one thread walks the reduction and, per k tile, issues the bulk tensor copies of the
//          A and B tiles into a kStages-deep ring, completing on the stage's `full` mbarrier
//          (expect-tx = the tile's bytes; zero-filled boxes count in full):
//          forward (filter tap outer, 64-channel chunk inner):
//            A: im2col mode over x (NHWGC seen as {G*C, W, H, N}): BM output pixels of the
//               block, their input pixel for this tap; padding and the rows past the last
//               image are zero-filled by the engine (bounding box = the padded input, traversal
//               stride = the convolution stride, tap offset = filter position * dilation);
//            B: tiled mode over w (GKYXC seen as {C, Y*X, G*K}): the tap's 64-channel slice of
//               BN filters; channels past C are zero-filled, so a partial last chunk adds 0.
//          backward_data: the same over dy, and w as it lies: B is the tap's 64 output channels
//            (k, the reduction) x BN input channels (c, contiguous), BN / 64 copies of 64 x 64.
//          backward_weight (64-pixel chunks of the output): A = dy through a 2D tiled map, BM / 64
//            copies of 64 channels x 64 pixels; B = x through the im2col map at the tile's tap,
//            BN / 64 copies of 64 channels x the same 64 pixels.
//          Every tile lands 128-byte swizzled (one 64-element fp16/bf16 row per 128 bytes).
//   math:  each warpgroup owns RepM m64 slices of the block's rows; per k tile it waits `full`,
//          issues 4 x RepM wgmma m64nBNk16, commits, waits until only this tile's group is in
//          flight and releases the previous stage (`empty`). K-major operands use the 128B
//          swizzle descriptor, the M/N-major ones (backward_data B, backward_weight A and B)
//          tnsp 1 with 64-column blocks (sw128_desc_mn).
//          Epilogue (default): fp32 accumulators converted and stored straight from registers
//          (4-byte stores: a warp's store covers 8 rows x 16 bytes). Epilogue::CShuffle: each
//          warp stages its 16 rows x 32 columns through a private shared-memory slab (80-byte
//          rows, conflict-free writes) and stores 16-byte vectors, a warp's store covering
//          8 rows x 64 bytes (whole sectors): a quarter of the store requests. A split
//          reduction adds into the fp32 workspace with 16-byte reductions instead: through the
//          slab as 4 rows x 128 bytes a warp instruction (CShuffle), or 8 rows x 64 bytes after
//          a shuffle between lane pairs (default).
//   Persistent grid (#SMs x resident blocks): each block walks work units b, b + grid, ...
//   (unit = tile x split); the ring runs on across units, so the next unit's copies overlap the
//   last unit's epilogue.
// 1D / 2D / 3D problems: a 3D instance runs those whose depth is one tap (filter 1, stride 1, no
// depth padding) folded to 2D over N x D images (detail::fold_depth), the others through 5D
// im2col maps of x (TmaConvArgs::deep; backward_data: depth strides that divide the depth).
// No merged groups. forward: one launch. backward_data: one forward launch over dy per stride
// phase (schedule/tma_phases.hpp), each reading its flipped sub-filter's taps straight from w (a tap map)
// and writing through an output map that places its rows on every stride-th dx pixel; the
// phases run side by side on forked streams (detail::PhaseStreams).
// backward_weight: one launch (after a copy of dy with K padded to a multiple of 8 when K % 8 != 0
// in one group, as backward_data). Any variant may split its reduction (k_batch, Split below): the
// launches then add into a zeroed fp32 copy of the written tensor and splitk_finish converts it.
// backward_weight may instead run a tile's c = 2..8 splits as one thread-block cluster
// (SplitReduce::Cluster, one unit per block): each block leaves its fp32 partial tile in its
// ring, and after a cluster barrier block r sums rows [r*BM/c, (r+1)*BM/c) over the c tiles
// through distributed shared memory and stores them as 16-byte vectors (no workspace, no
// clear or convert launch, the same sums every run). backward_weight with bias_grad also sums
// dy per channel into db on the tensor cores (epilogue/tma_ws_bias_grad.hpp).
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/epilogue/tma_ws_bias_grad.hpp"
#include "ckgen/epilogue/tma_ws_epilogue.hpp"
#include "ckgen/pipeline/tma_traits.hpp"
#include "ckgen/pipeline/tma_ws_maps.hpp"
#include "ckgen/pipeline/tma_ws_roles.hpp"
#include "ckgen/pipeline/tma_ws_steps.hpp"
#include "ckgen/pipeline/wavelet.hpp"
#include "ckgen/schedule/splitk_finish.hpp"
#include "ckgen/warp/mma_wgmma.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

template <class Cfg, bool kPlainX>
CKGEN_GLOBAL void __launch_bounds__(TmaTraits<Cfg>::kThreads, Cfg::kMinBlocks)
    tma_conv_kernel(const CKGEN_GRID_CONSTANT TmaConvArgs p) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  extern __shared__ __attribute__((aligned(1024))) unsigned char tma_smem_raw[];
#if defined(CKGEN_HAS_TMA) && defined(CKGEN_HAS_WGMMA)
  const uint32_t raw_addr = mbar::addr(tma_smem_raw);
  unsigned char* base = tma_smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u);
  // stride1: the patches, then the ring (B tiles only), then the ring's and the patches' barriers
  unsigned char* smem = base + (Tr::kPatch ? Tr::kPatchBuffers * p.patch_stride : 0);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Tr::S * Tr::kRingStage);
  uint64_t* empty = full + Tr::S;
  uint64_t* pfull = empty + Tr::S;  // stride1's patch barriers
  uint64_t* pempty = pfull + Tr::kPatchBuffers;
  unsigned char* slabs =
      reinterpret_cast<unsigned char*>(empty + Tr::S + (Tr::kPatch ? 2 * Tr::kPatchBuffers : 0));
  const int tid = threadIdx.x;
  // Persistent: block b takes units b, b + gridDim.x, ... (tma_ws::decode_unit); the ring's k-tile
  // counter t runs on across units (the next unit's copies overlap the last one's epilogue).
  const int tiles_mn = p.tiles_m * p.tiles_n;
  const int num_units = tiles_mn * p.G * p.taps * p.k_split;
  using Unit = tma_ws::Unit;
  // Split `split`'s k tiles [kt0, kt1): its share of a tile's k_tiles.
  auto k_range = [&](int split, int& kt0, int& kt1) {
    kt0 = split * p.kt_per_split;
    kt1 = min(p.k_tiles, kt0 + p.kt_per_split);
  };
  auto decode = [&](int unit) { return tma_ws::decode_unit<Cfg>(p, unit, k_range); };

  if (tid == Tr::kMathThreads) tma_ws::prefetch_maps<Cfg>(p);
  tma_ws::init_barriers<Cfg>(tid, full, empty, pfull, pempty);
  // bias_grad's all-ones operand, after the slabs
  unsigned char* ones = slabs + Tr::kSlabsBytes;
  tma_ws::BiasGradSums<Cfg>::fill_ones(ones, tid);
  if constexpr (Tr::kBNMajor && !Tr::kWeightGrad) tma_ws::zero_b_rows<Cfg>(p, smem, tid);
  __syncthreads();
  // A launch chained to the call's previous kernel (the copy of dy, the clear of the sums:
  // core/chain.hpp) has set up its barriers while that kernel finished; global memory from here on
  // (p.late_wait: the inputs from here on, the sums after the main loop).
  if (!p.late_wait) chain_wait();

  using Corner = tma_ws::Corner;
  auto corner = [&](int pm) { return tma_ws::im2col_corner<Cfg>(p, pm); };
  auto load_x = [&](void* dst, const CUtensorMap* map, uint64_t* bar, int ch, const Corner& c, int fz, int fy,
                    int fx) { tma_ws::load_x<Cfg>(p, dst, map, bar, ch, c, fz, fy, fx); };

  if (tid >= Tr::kMathThreads) {  // the load warp: one thread issues every copy
    tma_ws::load_role<Cfg, kPlainX>(p, tid, num_units, base, smem, full, empty, pfull, pempty, decode, corner,
                                    load_x);
    return;
  }

  // Math warpgroups.
  using Op =
      wgmma_detail::Op<Tr::kAccN, Tr::kBF16, Tr::kSwap ? (Tr::kBNMajor ? 1 : 0) : (Tr::kAMMajor ? 1 : 0),
                       Tr::kSwap ? 0 : (Tr::kBNMajor ? 1 : 0)>;
  // wg: this warpgroup's slices of the tile; ping-pong: each warpgroup has the whole tile and
  // consumer c takes the block's units c, c + 2, ... (block units b + (c + 2i) * grid).
  const int wg = Tr::kPingPong ? 0 : tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int consumer = Tr::kPingPong ? tid / 128 : 0;
  float acc[Tr::kAccRows][Tr::kAccN / 2];
  auto fence_acc = [&] {
#pragma unroll
    for (int i = 0; i < Tr::kAccRows; ++i)
#pragma unroll
      for (int e = 0; e < Tr::kAccN / 2; ++e) asm volatile("" : "+f"(acc[i][e])::"memory");
  };
  const uint32_t ring = mbar::addr(smem);
  const uint32_t patches = mbar::addr(base);
  Raw* y = static_cast<Raw*>(p.y);  // the CShuffle copies' and the weight gradient's 16-bit view
  typename Tr::OutRaw* yo = static_cast<typename Tr::OutRaw*>(p.y);  // a forward's output type
  int t = 0, pc = 0;  // k tiles and (stride1) patches consumed
  // Ping-pong: a warpgroup steps its counter over the other's units (tma_ws::pingpong_wait).
  auto unit_k_tiles = [&](int unit) {
    int tile, split, kt0, kt1;
    p.by_k_split.divmod(unit, tile, split);
    k_range(split, kt0, kt1);
    return kt1 - kt0;
  };
  int unit = blockIdx.x;
  if (Tr::kPingPong && consumer == 1) {
    if (unit < num_units) t += unit_k_tiles(unit);
    unit += gridDim.x;
  }
  tma_ws::UnitStats<Cfg> stats;  // stats: this warp's channel sums over a run of its units
  stats.clear();
  for (; unit < num_units; unit += Tr::kConsumers * gridDim.x) {
    const Unit u = decode(unit);
    tma_ws::pingpong_wait<Cfg>(consumer, unit);
    const int g = u.g, m0 = u.m0, n0 = u.n0;
    // stride1: this warpgroup's first A row in the patch (tap 0), and the tap walk
    int a_row = 0, tap = 0, fy = 0, fx = 0;
    if constexpr (Tr::kPatch) {
      int j0, col;
      p.by_wp.divmod(m0, j0, col);
      a_row = col + wg * Tr::RepM * 64;
    }
#pragma unroll
    for (int i = 0; i < Tr::kAccRows; ++i)
#pragma unroll
      for (int e = 0; e < Tr::kAccN / 2; ++e) acc[i][e] = 0.f;
    // Epilogue (tma_ws_epilogue.hpp): row r, column c of the tile land at y[row_base(r) + gcol(c)].
    auto row_ok = [&](int row) -> bool { return tma_ws::row_ok<Cfg>(p, row); };
    auto row_base = [&](int row) -> int64_t { return tma_ws::row_base<Cfg>(p, g, u, row); };
    auto gcol = [&](int tc) -> int { return tma_ws::gcol<Cfg>(p, n0, tc); };
    tma_ws::UnitChannels<Cfg> ch;  // a fused epilogue's operands, read while the unit's MMAs run
    tma_ws::UnitResidual<Cfg> res;
    if constexpr (Tr::kStaged) {
      ch.load(p, g, gcol, lane);
      res.load(p, m0, wg, warp, lane, row_ok, row_base, gcol);
    }
    if constexpr (Cfg::kResidual) {  // this unit's residual (when it is the first) and the next's
      if (unit < Tr::kConsumers * int(gridDim.x)) tma_ws::prefetch_residual<Cfg>(p, u, wg, warp, lane);
      const int next = unit + Tr::kConsumers * gridDim.x;
      if (next < num_units) tma_ws::prefetch_residual<Cfg>(p, decode(next), wg, warp, lane);
    }
    tma_ws::BiasGradSums<Cfg> db;  // bias_grad: dy's channel sums from the A tiles
    if constexpr (tma_ws::BiasGradSums<Cfg>::kOn) {
      db.start(p, u);
      // A main loop per count of bias_grad steps, each to its last wgmma's completion (wgmma
      // under a branch, or a join of loops before their completion, are serialized).
      auto run_unit = [&](auto on_stage) {
        tma_ws::mma_unit<Op, Cfg>(p, acc, fence_acc, u, t, pc, tap, fy, fx, full, empty, pfull, pempty, ring,
                                  patches, a_row, wg, lane, on_stage);
        tma_ws::pingpong_arrive<Cfg>(consumer, unit, num_units);
        tma_ws::finish_unit<Cfg>(p, fence_acc, empty, pempty, t, pc, lane);
      };
      const uint32_t ones_addr = mbar::addr(ones);
      if (db.steps == 4)
        run_unit([&](uint32_t a0) { db.template issue<4>(a0, ones_addr); });
      else if (db.steps == 2)
        run_unit([&](uint32_t a0) { db.template issue<2>(a0, ones_addr); });
      else if (db.steps == 1)
        run_unit([&](uint32_t a0) { db.template issue<1>(a0, ones_addr); });
      else
        run_unit(tma_ws::NoStage{});
    } else {
      tma_ws::NoStage none;
      tma_ws::mma_unit<Op, Cfg>(p, acc, fence_acc, u, t, pc, tap, fy, fx, full, empty, pfull, pempty, ring,
                                patches, a_row, wg, lane, none);
      tma_ws::pingpong_arrive<Cfg>(consumer, unit, num_units);
      tma_ws::finish_unit<Cfg>(p, fence_acc, empty, pempty, t, pc, lane);
    }
    db.flush(p, g, m0, wg, warp, lane);
    if (Tr::kPingPong && unit + int(gridDim.x) < num_units)
      t += unit_k_tiles(unit + gridDim.x);  // the other's

    if constexpr (Tr::kSwap) {
      tma_ws::store_swap<Cfg>(p, acc, yo, m0, n0, wg, warp, lane, row_ok, row_base, g);  // swap_ab
    } else if (Tr::kWeightGrad && p.cluster > 1) {
      tma_ws::cluster_reduce<Cfg>(p, acc, y, smem, ring, m0, wg, warp, lane, tid, row_base, gcol);
    } else if (p.ws != nullptr) {
      if constexpr (Tr::kStaged) {
        tma_ws::red_split_staged<Cfg>(p, acc, slabs, m0, wg, warp, lane, tid, row_ok, row_base, gcol);
      } else {
        tma_ws::red_split<Cfg>(p, acc, m0, wg, warp, lane, row_ok, row_base, gcol);
      }
    } else if constexpr (tma_ws::UnitResidual<Cfg>::kRounds) {
      Raw* slab = reinterpret_cast<Raw*>(slabs + (tid / 32) * Tr::kSlabBytes);
      tma_ws::residual_rounds<Cfg>(p, acc, y, slab, m0, wg, warp, lane, ch, res, row_ok, row_base, gcol);
    } else if constexpr (Tr::kStaged) {
      Raw* slab = reinterpret_cast<Raw*>(slabs + (tid / 32) * Tr::kSlabBytes);
      const bool vec = (p.K % 8) == 0;  // 16-byte aligned rows of y
#pragma unroll
      for (int i = 0; i < Tr::RepM; ++i) {
        const int r0 = m0 + (wg * Tr::RepM + i) * 64 + warp * 16;
        int64_t base[2];  // this lane's two slab rows, lane/4 and lane/4 + 8
#pragma unroll
        for (int q = 0; q < 2; ++q) base[q] = row_base(r0 + (lane >> 2) + 8 * q);
#pragma unroll
        for (int c0 = 0; c0 < Tr::BN; c0 += Tr::kSlabCols) {
          tma_ws::stage_chunk<Cfg>(p, acc, slab, i, c0, lane, ch);
          __syncwarp();
          tma_ws::ChunkStats<Cfg> st;  // stats: this lane's columns of the chunk
          st.clear();
#pragma unroll
          for (int q = 0; q < 2; ++q) {  // 16 rows x 4 vectors of 8, two per lane
            const int v = lane + 32 * q, rr = v >> 2, col = gcol(c0 + (v & 3) * 8);
            const int row = r0 + rr;
            if (row_ok(row) && col < p.K) {
              const Raw* src = slab + rr * Tr::kSlabStride + (v & 3) * 8;
              Raw* dst = y + base[q] + col;  // base[q] is row r0 + rr's
              if (vec && col + 8 <= p.K) {
                const uint4 w = *reinterpret_cast<const uint4*>(src);
                *reinterpret_cast<uint4*>(dst) = w;
                st.add(w);
              } else if constexpr (tma_ws::ChunkStats<Cfg>::kOn) {
#pragma unroll
                for (int e = 0; e < 8; ++e)
                  if (col + e < p.K) {
                    dst[e] = src[e];
                    st.add(e, src[e]);
                  }
              } else {
                for (int e = 0; e < 8 && col + e < p.K; ++e) dst[e] = src[e];
              }
            }
          }
          __syncwarp();
          stats.take(c0 / 32, st, g, n0, lane);
        }
      }
    } else {
      tma_ws::store<Cfg>(p, acc, yo, m0, wg, warp, lane, row_ok, row_base, gcol, g);
    }
    if constexpr (tma_ws::UnitStats<Cfg>::kOn) {  // the warp's next unit: another group / columns?
      const int next = unit + Tr::kConsumers * gridDim.x;
      int next_g = -1, next_n0 = -1;
      if (next < num_units) {
        const Unit nu = decode(next);
        next_g = nu.g;
        next_n0 = nu.n0;
      }
      stats.flush_unless(p, next_g, next_n0, gcol, lane);
    }
  }
#else
  (void)p;
  (void)tma_smem_raw;
#endif
}

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
