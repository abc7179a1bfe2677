// Steps of the TMA warp-specialized kernel (pipeline/tma_ws.hpp) as forced-inline functions: the
// setup of backward_data's ring, a math warpgroup's wgmma instructions on one k tile, the load
// thread's copies of one k tile (row form, stride1, backward_weight), stride1's patch cursor and
// its walk over one forward / backward_data unit, and the ping-pong warpgroups' named barriers
// around a unit's main loop; the kernel's lambdas (corner, load_x, ...) are passed through. The
// k-tile loops of the row form, stride1 and backward_weight stay in the kernel's body: taken out,
// they change the generated code.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/block/tma_ptx.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/pipeline/tma_traits.hpp"
#include "ckgen/warp/mma_nvidia.hpp"
#include "ckgen/warp/mma_wgmma.hpp"
#include "ckgen/warp/mma_wgmma_rs.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA) && defined(CKGEN_HAS_TMA)

namespace tma_ws {

// backward_data's B boxes stop at row b_rows (TmaConvKernel::run_forward): the k rows past it,
// which the copies never write, are zero in every stage (0 x dy's padded channels).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void zero_b_rows(const TmaConvArgs& p, unsigned char* smem, const int tid) {
  using Tr = TmaTraits<Cfg>;
  if (p.b_rows < Tr::BK) {
    const int zrows = Tr::BK - p.b_rows, per_stage = (Tr::BN / 64) * zrows * 8;  // 16-byte chunks
    for (int i = tid; i < Tr::S * per_stage; i += Tr::kThreads) {
      const int st = i / per_stage, r = i % per_stage, nb = r / (zrows * 8), q = r % (zrows * 8);
      *reinterpret_cast<uint4*>(smem + st * Tr::kRingStage + (Tr::kPatch ? 0 : Tr::kABytes) +
                                nb * Tr::kBlockBytes + (p.b_rows + q / 8) * Tr::kRowBytes + (q % 8) * 16) =
          make_uint4(0, 0, 0, 0);
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // seen by the wgmma reads
  }
}

// One k tile of a math warpgroup: the wgmma instructions over the stage (A at a0, B at b0; the row
// form: stage s's x and dy pixels), between the kernel's fence and commit.
template <class Op, class Cfg, class Acc>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_stage(const TmaConvArgs& p, Acc& acc, const uint32_t& ring,
                                              const int& s, const uint32_t& a0, const uint32_t& b0) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kRows) {
    // The row form: row_len / 16 k steps of one m64n(BN)k16 over the stage's x pixels (B,
    // first) and dy's (A, kRowBlock bytes in). The B operand's 64-column blocks (tap fx's
    // channels) start fx * d_w pixel rows into the x pixels, so the descriptor's block
    // stride (LBO) is d_w rows: any 128-byte row works, the swizzle follows the address bits
    // (one wide instruction is faster than X m64n64k16 on the same operands).
    const uint32_t xs = ring + s * Tr::kStageBytes, dys = xs + Tr::kRowBlock;
    const int steps = p.row_len / 16;
#pragma unroll
    for (int kk = 0; kk < Tr::kRowPos / 16; ++kk)
      if (kk < steps)
        Op::run(acc[0], tma::sw128_desc_mn(dys + kk * 2048, Tr::kBlockBytes),
                tma::sw128_desc_mn(xs + uint32_t(kk * 16) * Tr::kRowBytes, uint32_t(p.d_w) * Tr::kRowBytes));
  } else {
#pragma unroll
    for (int kk = 0; kk < Tr::BK / 16; ++kk) {
      const uint64_t db =
          Tr::kBNMajor ? tma::sw128_desc_mn(b0 + kk * 2048, Tr::kBlockBytes) : tma::sw128_desc(b0 + kk * 32);
      if constexpr (Tr::kSwap) {  // weights as the instruction's A, the PN pixels as its B
        Op::run(acc[0], db, tma::sw128_desc(a0 + kk * 32));
      } else {
#pragma unroll
        for (int i = 0; i < Tr::RepM; ++i) {
          const uint32_t ai = a0 + i * Tr::kBlockBytes;
          Op::run(acc[i],
                  Tr::kAMMajor ? tma::sw128_desc_mn(ai + kk * 2048, Tr::kBlockBytes)
                               : tma::sw128_desc(ai + kk * 32),
                  db);
        }
      }
    }
  }
}

// A gradient mask (TmaTraits::kMask): dy's staged bytes [0, bytes) at shared address a times the
// activation's gradient at y's copy at y (the same layout and swizzle, so any byte offset pairs
// an element with its own y), in 16-byte vectors shared by the n threads (index i) that then meet
// at named barrier bar; the products are fenced to the async proxy first, which the wgmma reads
// them through. Zero-filled dy (padding, rows past the tensor) stays zero.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void mask_rows(const TmaConvArgs& p, const uint32_t a, const uint32_t y,
                                              const int bytes, const int i, const int n, const int bar) {
  using Raw = typename TmaTraits<Cfg>::Raw;
  constexpr int kV = 16 / int(sizeof(Raw));
#pragma unroll 4
  for (int off = i * 16; off < bytes; off += n * 16) {
    uint4* pa = static_cast<uint4*>(__cvta_shared_to_generic(a + uint32_t(off)));
    const uint4 yv = *static_cast<const uint4*>(__cvta_shared_to_generic(y + uint32_t(off)));
    uint4 av = *pa;
    Raw* ae = reinterpret_cast<Raw*>(&av);
    const Raw* ye = reinterpret_cast<const Raw*>(&yv);
#pragma unroll
    for (int e = 0; e < kV; ++e) ae[e] = fusion::grad_mask<Cfg::kActivation, Cfg::kDataType>(ae[e], ye[e], p.ep.alpha);
    *pa = av;
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "r"(n) : "memory");
}

// kMaskRegs: this thread's A fragments of one k tile (warpgroup rows from shared address a0,
// i.e. the stage's A tile at this warpgroup's slices) times the gradient of the activation at y's
// (yoff bytes on: the same layout and swizzle), in the register layout of OpRS: warp w's rows
// 16w..16w+15 of each m64 slice, the four k16 steps of the 128-byte rows. ldmatrix lane l reads
// row l % 16, 16-byte chunk 2 * kk + l / 16, which the 128-byte swizzle moves to chunk
// ^ (address bits 7..9).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_masked_a(const TmaConvArgs& p, const uint32_t a0, const uint32_t yoff,
                                                  uint32_t (&f)[TmaTraits<Cfg>::RepM][4][4], const int lane) {
  using Tr = TmaTraits<Cfg>;
  using Raw = typename Tr::Raw;
  const int row = ((int(threadIdx.x) % 128) / 32) * 16 + (lane & 15);
#pragma unroll
  for (int i = 0; i < Tr::RepM; ++i) {
    const uint32_t ra = a0 + uint32_t(i * Tr::kBlockBytes + row * Tr::kRowBytes);
    const uint32_t sw = (ra >> 7) & 7u;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t addr = ra + (((uint32_t(2 * kk) + uint32_t(lane >> 4)) ^ sw) << 4);
      uint32_t y[4];
      nvmma::ldsm_x4(f[i][kk], addr);
      nvmma::ldsm_x4(y, addr + yoff);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        Raw* x2 = reinterpret_cast<Raw*>(&f[i][kk][e]);
        const Raw* y2 = reinterpret_cast<const Raw*>(&y[e]);
#pragma unroll
        for (int h = 0; h < 2; ++h)
          x2[h] = fusion::grad_mask<Cfg::kActivation, Cfg::kDataType>(x2[h], y2[h], p.ep.alpha);
      }
    }
  }
}

// kMaskRegs: one k tile's wgmma with A from registers (load_masked_a) and B at b0.
template <class Cfg, class Acc>
CKGEN_DEVICE CKGEN_FORCEINLINE void mma_stage_regs(Acc& acc, const uint32_t (&f)[TmaTraits<Cfg>::RepM][4][4],
                                                   const uint32_t b0) {
  using Tr = TmaTraits<Cfg>;
  using OpA = wgmma_detail::OpRS<Tr::kAccN, Tr::kBF16, Tr::kBNMajor ? 1 : 0>;
#pragma unroll
  for (int kk = 0; kk < Tr::BK / 16; ++kk) {
    const uint64_t db =
        Tr::kBNMajor ? tma::sw128_desc_mn(b0 + kk * 2048, Tr::kBlockBytes) : tma::sw128_desc(b0 + kk * 32);
#pragma unroll
    for (int i = 0; i < Tr::RepM; ++i) OpA::run(acc[i], f[i][kk], db);
  }
}

// The row form's copies of k tile kt (ring slot t) = positions [seg * row_len, + row_len) of
// output row oh of image img: A = dy's positions x 64 output channels (channel ach), B = x's
// row_len + (X - 1) * d_w input pixels of the segment at filter row fy (dh = fy * d_h - pl_h), 64
// input channels (channel bch). Out-of-range positions and padding are zero-filled by the engine.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_row_tile(const TmaConvArgs& p, const int kt, const int t,
                                                  unsigned char* smem, uint64_t* full, uint64_t* empty,
                                                  const int ach, const int bch, const int dh) {
  using Tr = TmaTraits<Cfg>;
  const int s = t % Tr::S;
  if (t >= Tr::S) mbar::wait(empty + s, uint32_t((t / Tr::S - 1) & 1));
  unsigned char* sb = smem + s * Tr::kStageBytes;
  int row, seg, img, oh;
  p.by_segs.divmod(kt, row, seg);
  p.by_p.divmod(row, img, oh);
  const int q0 = seg * p.row_len;
  tma::expect_tx(full + s, uint32_t(p.stage_tx));
  tma::load_tile_4d(sb + Tr::kRowBlock, &p.a, full + s, ach, q0, oh, img);
  tma::load_tile_4d(sb, &p.b, full + s, bch, q0 - p.pl_w, oh * p.s_h + dh, img);
}

// stride1's B copies of one k tile into ring slot s: the tap (fy, fx)'s w tile of channel chunk
// cc (backward_data: BN / 64 blocks of 64 x 64).
template <class Cfg, class U>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_patch_tile(const TmaConvArgs& p, const U& u, const int& s,
                                                    unsigned char*& smem, uint64_t*& full, const int& cbase,
                                                    const int& nrow, const int& cc, const int& fy,
                                                    const int& fx) {
  using Tr = TmaTraits<Cfg>;
  unsigned char* sb = smem + s * Tr::kRingStage;
  tma::expect_tx(full + s, uint32_t(p.stage_tx));
  const int wtap = p.tap0 + fy * p.tap_dh + fx * p.tap_dw;
  if constexpr (Tr::kBNMajor) {
#pragma unroll
    for (int nb = 0; nb < Tr::BN / 64; ++nb)
      tma::load_tile_3d(sb + nb * Tr::kBlockBytes, &p.b, full + s, u.n0 + nb * 64, wtap, cbase + cc * Tr::BK);
  } else {
    tma::load_tile_3d(sb, &p.b, full + s, cc * Tr::BK, wtap, nrow);
  }
}

// stride1's patch cursor (pu: unit, pcc: chunk; pcc1: the unit's end, pj0 / pimg / pg: its first
// patch row, image and group) stages its patch into buffer pc % kPatchBuffers once the buffer is
// free (block: waits for that, else returns) and moves on; cursor_unit(unit) enters a unit.
template <class Cfg, class CursorUnit>
CKGEN_DEVICE CKGEN_FORCEINLINE void issue_patch(const TmaConvArgs& p, const bool block, const int& num_units,
                                                unsigned char*& base, uint64_t*& pfull, uint64_t*& pempty,
                                                int& pu, int& pc, int& pcc, int& pcc1, int& pj0, int& pimg,
                                                int& pg, CursorUnit& cursor_unit) {
  using Tr = TmaTraits<Cfg>;
  if (pu >= num_units) return;
  const int b = pc % Tr::kPatchBuffers;
  if (pc >= Tr::kPatchBuffers) {
    const uint32_t ph = uint32_t((pc / Tr::kPatchBuffers - 1) & 1);
    if (block)
      mbar::wait(pempty + b, ph);
    else if (!mbar::test(pempty + b, ph))
      return;
  }
  tma::expect_tx(pfull + b, uint32_t(Tr::kPatchCopies * p.patch_box));
  unsigned char* dst = base + b * p.patch_stride;
  tma::load_tile_4d(dst, &p.a, pfull + b, pg * p.C + pcc * Tr::BK, -p.pl_w, pj0 - p.pl_h, pimg);
  if constexpr (Tr::kMask)
    tma::load_tile_4d(dst + p.patch_stride / 2, &p.ym, pfull + b, pg * p.C + pcc * Tr::BK, -p.pl_w, pj0 - p.pl_h,
                      pimg);
  ++pc;
  if (++pcc == pcc1) {
    pu += gridDim.x;
    if (pu < num_units) cursor_unit(pu);
  }
}

// backward_weight's B blocks of a unit (not the row form): block nb reads channel bch[nb] at tap
// (bfz, bfy, bfx)[nb], the unit's tap or (p.pack) the tap of its columns. Packed, a last tile's
// blocks past K (= taps x C) are not copied at all: their columns of the product (stale shared
// memory) are never stored.
template <class Cfg, class U>
CKGEN_DEVICE CKGEN_FORCEINLINE void weight_boxes(const TmaConvArgs& p, const U& u,
                                                 int (&bch)[TmaTraits<Cfg>::BN / 64],
                                                 int (&bfz)[TmaTraits<Cfg>::BN / 64],
                                                 int (&bfy)[TmaTraits<Cfg>::BN / 64],
                                                 int (&bfx)[TmaTraits<Cfg>::BN / 64]) {
  using Tr = TmaTraits<Cfg>;
  constexpr bool kDeep = Cfg::kNDim == 3;
#pragma unroll
  for (int nb = 0; nb < Tr::BN / 64; ++nb) {
    int tap = u.tap, c = u.n0 + nb * 64;
    if (p.pack) p.by_c.divmod(min(c, p.K - 64), tap, c);
    int fyx = tap;
    bfz[nb] = 0;
    if constexpr (kDeep) p.by_yx.divmod(tap, bfz[nb], fyx);
    p.by_x.divmod(fyx, bfy[nb], bfx[nb]);
    bch[nb] = u.g * p.C + c;
  }
}

// The load thread's copies of backward_weight k tile kt (ring slot t): A = dy rows of 64 pixels x
// 64 output channels (BM / 64 boxes), B = x through the im2col map (plain x: tiled), the same 64
// pixels, 64 input channels per box (`live` boxes, see weight_boxes).
template <class Cfg, bool kPlainX, class U, class CornerFn, class LoadX>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_weight_tile(
    const TmaConvArgs& p, const U& u, const int& kt, int& t, unsigned char*& smem, uint64_t*& full,
    uint64_t*& empty, CornerFn& corner, LoadX& load_x, const int& live, const uint32_t& stage_tx,
    int (&bch)[TmaTraits<Cfg>::BN / 64], int (&bfz)[TmaTraits<Cfg>::BN / 64],
    int (&bfy)[TmaTraits<Cfg>::BN / 64], int (&bfx)[TmaTraits<Cfg>::BN / 64]) {
  using Tr = TmaTraits<Cfg>;
  const int s = t % Tr::S;
  if (t >= Tr::S) mbar::wait(empty + s, uint32_t((t / Tr::S - 1) & 1));
  unsigned char* sa = smem + s * Tr::kStageBytes;
  const int pm = kt * Tr::BK;
  const auto c = corner(pm);
  tma::expect_tx(full + s, stage_tx);
#pragma unroll
  for (int mb = 0; mb < Tr::BM / 64; ++mb)
    tma::load_tile_2d(sa + mb * Tr::kBlockBytes, &p.a, full + s, u.g * p.M + u.m0 + mb * 64, pm);
#pragma unroll
  for (int nb = 0; nb < Tr::BN / 64; ++nb) {
    if (nb >= live) break;
    unsigned char* dst = sa + Tr::kABytes + nb * Tr::kBlockBytes;
    if constexpr (kPlainX)
      tma::load_tile_2d(dst, &p.b, full + s, u.g * p.C + u.n0 + nb * 64, pm);
    else
      load_x(dst, &p.b, full + s, bch[nb], c, bfz[nb], bfy[nb], bfx[nb]);
  }
}

// The load thread over one forward / backward_data unit (not stride1): per k tile the im2col A tile
// of the tap's 64-channel chunk and the matching B tile of w; taps outer, chunks inner.
template <class Cfg, class U, class CornerFn, class LoadX>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_fwd(const TmaConvArgs& p, const U& u, int& t, unsigned char*& smem,
                                             uint64_t*& full, uint64_t*& empty, CornerFn& corner,
                                             LoadX& load_x) {
  using Tr = TmaTraits<Cfg>;
  constexpr bool kDeep = Cfg::kNDim == 3;
  const auto c0 = corner(u.m0);
  const int cbase = u.g * p.C, nrow = u.g * p.K + u.n0;
  int tap, cc, fz = 0, fyx, fy, fx;
  p.by_c_chunks.divmod(u.kt0, tap, cc);
  fyx = tap;
  if constexpr (kDeep) p.by_yx.divmod(tap, fz, fyx);
  p.by_x.divmod(fyx, fy, fx);
  for (int kt = u.kt0; kt < u.kt1; ++kt, ++t) {
    const int s = t % Tr::S;
    if (t >= Tr::S) mbar::wait(empty + s, uint32_t((t / Tr::S - 1) & 1));
    unsigned char* sa = smem + s * Tr::kStageBytes;
    tma::expect_tx(full + s, uint32_t(p.stage_tx));
    load_x(sa, &p.a, full + s, cbase + cc * Tr::BK, c0, fz, fy, fx);
    if constexpr (Tr::kMask)
      load_x(sa + Tr::kABytes + Tr::kBBytes, &p.ym, full + s, cbase + cc * Tr::BK, c0, fz, fy, fx);
    const int wtap = p.tap0 + fy * p.tap_dh + fx * p.tap_dw + (kDeep ? fz * p.tap_dd : 0);
    if constexpr (Tr::kBNMajor) {
#pragma unroll
      for (int nb = 0; nb < Tr::BN / 64; ++nb)
        tma::load_tile_3d(sa + Tr::kABytes + nb * Tr::kBlockBytes, &p.b, full + s, u.n0 + nb * 64, wtap,
                          cbase + cc * Tr::BK);
    } else {
      tma::load_tile_3d(sa + Tr::kABytes, &p.b, full + s, cc * Tr::BK, wtap, nrow);
    }
    if (++cc == p.c_chunks) {
      cc = 0;
      if (++fx == p.X) {
        fx = 0;
        if (++fy == p.Y && kDeep) {
          fy = 0;
          ++fz;
        }
      }
    }
  }
}

// Ping-pong: the ring holds every unit's k tiles in unit order; a warpgroup steps its counter over
// the other's units, and named barriers 2 / 3 order the two main loops (0 runs, then 1, then 0
// ...): a warpgroup starts waiting for its stages only once the other has waited for all earlier
// ones, so a stage's `full` parity is never read two phases early. Before a unit's main loop:
// wait for the other (consumer 0's first unit starts at once).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void pingpong_wait(const int consumer, const int unit) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kPingPong) {
    if (consumer == 1)
      asm volatile("bar.sync 2, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
    else if (unit != int(blockIdx.x))
      asm volatile("bar.sync 3, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
  }
}

// Ping-pong: every stage of this unit waited for, the other warpgroup may start its next unit.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void pingpong_arrive(const int consumer, const int unit,
                                                    const int num_units) {
  using Tr = TmaTraits<Cfg>;
  if constexpr (Tr::kPingPong) {
    if (unit + int(gridDim.x) < num_units) {
      if (consumer == 0)
        asm volatile("bar.arrive 2, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
      else
        asm volatile("bar.arrive 3, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
    }
  }
}

// The load warp, its role done: the math warps' two cluster barriers of a cluster reduction (the
// kernel's epilogue), met by the whole warp together: lanes parked in a cluster wait while lane 0
// still issues copies would hold back the copies.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_warp_cluster_syncs(const TmaConvArgs& p) {
  using Tr = TmaTraits<Cfg>;
  if (Tr::kWeightGrad && p.cluster > 1) {
    __syncwarp();
    tma::cluster_sync();
    tma::cluster_sync_relaxed();
  }
}

// After a k tile's wgmma instructions: the previous k tile's stage (and, stride1, after a chunk's
// last tap, its patch) released to the load thread by lane 0 of each warp (`go`).
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void release_stage(uint64_t* const empty, uint64_t* const pempty, const int t,
                                                  const int pc, const int tap, const bool go) {
  using Tr = TmaTraits<Cfg>;
  if (go) {
    mbar::arrive(empty + (t - 1) % Tr::S);
    // stride1: the last k tile was the previous chunk's last tap; its patch is read
    if (Tr::kPatch && tap == 0) mbar::arrive(pempty + (pc - 1) % Tr::kPatchBuffers);
  }
}

// A unit's main loop done: its wgmma groups complete, then (p.late_wait) the wait for the previous
// launch, and the unit's last stage and patch released.
template <class Cfg, class Fence>
CKGEN_DEVICE CKGEN_FORCEINLINE void finish_unit(const TmaConvArgs& p, Fence& fence_acc, uint64_t* const empty,
                                                uint64_t* const pempty, const int t, const int pc,
                                                const int lane) {
  using Tr = TmaTraits<Cfg>;
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  fence_acc();
  if (p.late_wait) chain_wait();  // the sums' clear (returns at once after the first unit)
  if (lane == 0) {
    mbar::arrive(empty + (t - 1) % Tr::S);                                // the unit's last stage
    if (Tr::kPatch) mbar::arrive(pempty + (pc - 1) % Tr::kPatchBuffers);  // and its last patch
  }
}

}  // namespace tma_ws

#endif  // CKGEN_NVIDIA && CKGEN_HAS_TMA

}  // namespace ckgen
