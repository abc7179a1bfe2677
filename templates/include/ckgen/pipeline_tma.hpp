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
// im2col maps of x (TmaConvArgs::deep; backward_data with depth stride 1).
// No merged groups. forward: one launch. backward_data: one forward launch over dy per stride
// phase (tma_phases.hpp), each reading its flipped sub-filter's taps straight from w (a tap map)
// and writing through an output map that places its rows on every stride-th dx pixel; the
// phases run side by side on forked streams (detail::PhaseStreams).
// backward_weight: one launch (after a copy of dy with K padded to a multiple of 8 when K % 8 != 0
// in one group, as backward_data). Any variant may split its reduction (k_batch, Split below): the
// launches then add into a zeroed fp32 copy of the written tensor and splitk_finish converts it.
// backward_weight may instead run a tile's c = 2..8 splits as one thread-block cluster
// (SplitReduce::Cluster, one unit per block): each block leaves its fp32 partial tile in its
// ring, and after a cluster barrier block r sums rows [r*BM/c, (r+1)*BM/c) over the c tiles
// through distributed shared memory and stores them as 16-byte vectors (no workspace, no
// clear or convert launch, the same sums every run).
#pragma once

#include "ckgen/portability.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>

#include "ckgen/chain.hpp"
#include "ckgen/config.hpp"
#include "ckgen/fast_div.hpp"
#include "ckgen/kernel_base.hpp"
#include "ckgen/mma_wgmma.hpp"
#include "ckgen/pipeline_wavelet.hpp"
#include "ckgen/splitk_finish.hpp"
#include "ckgen/tma_phases.hpp"
#include "ckgen/tma_staging.hpp"

#if defined(CKGEN_NVIDIA)
#include <cuda.h>
#endif

namespace ckgen {

#if defined(CKGEN_NVIDIA)

// What the device needs; the two tensor maps are encoded on the host per call.
// forward / backward_data: GEMM rows = output pixels, columns = output channels (K), reduction =
// taps x input channels. backward_weight: rows = output channels K (M), columns = input
// channels C of one tap (K here), reduction = output pixels; tiles run over G x taps.
// The geometry (C = input channels per group) comes from ConvGeometry2D.
struct TmaConvArgs : ConvGeometry2D {
  CUtensorMap a;  // im2col map of x (backward_weight: tiled map of dy)
  CUtensorMap b;  // tiled map of w (backward_weight: im2col map of x)
  void* y;        // the written tensor (backward_weight: dw)
  int M, K, GK;        // GEMM rows, columns (per group), G*K
  int c_chunks;        // 64-channel chunks per tap
  int tap0, tap_dh, tap_dw;  // filter tap (fy, fx) reads w's tap tap0 + fy * tap_dh + fx * tap_dw
  int k_tiles;         // reduction tiles: taps * c_chunks (backward_weight: 64-pixel chunks)
  int tiles_m, tiles_n;  // tiles along GEMM M and N (per group)
  int G, taps;         // groups; taps the tiles run over (backward_weight, else 1)
  int k_split, kt_per_split;  // splits of the reduction and k tiles per split (1, k_tiles: none)
  float* ws;           // split: fp32 sums in the written tensor's layout, else null
  int cluster;         // backward_weight: k_split blocks per cluster that add their partial
                       // tiles through distributed shared memory (1 = none); one unit a block
  int64_t ld_row;      // backward_weight: elements between dw rows (taps * C)
  int pack;            // backward_weight with C % 64 == 0 and several taps: the GEMM columns are
                       // dw's taps * C (K = taps * C, one tap-less tile grid), each 64-column
                       // block of a tile copied at its own tap (column n: tap n / C, channel n % C)
  // Output map: GEMM row (n, oh, ow) -> y pixel n*out_sn + oh*out_sh + ow*out_sw + out_base
  // (dense: the row itself; backward_data phases write every stride-th dx pixel).
  int64_t out_sn, out_sh, out_sw, out_base;
  int out_dense;
  int plain_x;  // backward_weight, 1x1 at stride 1 without padding: x read through a 2D tiled
                // map (G*C x pixels) instead of the im2col map (the kernel's kPlainX)
  // Specialization::Stride1 (forward launches at stride 1, TmaTraits::kPatch): GEMM row m of an
  // image is the position oh * wp + ow of its output rows padded to wp = Q + (X - 1) * d_w
  // pixels (ow >= Q: no pixel; M = P * wp); tiles_m = N * tiles_img. Per 64-channel chunk a
  // block stages patch_rows input rows of wp pixels from row m0 / wp - pl_h, column -pl_w (one
  // 4D tiled copy of patch_box bytes; the engine zero-fills the padding) into one of two
  // buffers patch_stride bytes apart, and tap (fy, fx) reads its A tile from position
  // m - (m0 / wp) * wp + fy * d_h * wp + fx * d_w of it. k tiles run tap-fastest (ftaps taps
  // per chunk), so a split covers whole chunks.
  int wp, patch_rows, patch_box, patch_stride, tiles_img, ftaps;
  // forward / backward_data: bytes a ring stage's copies land (forward's B box holds
  // min(BN, K rounded up to 8) filter rows: the tile's rows past them only feed output columns
  // past K, which are never stored, so they are not copied)
  int stage_tx;
  int b_rows;  // rows of a B box (backward_data: rows past it are zeroed once per launch)
  // Chained to a launch that only zeroed the split sums (the call's first): the math warps wait
  // for it before their first add into the sums instead of every thread at the start, so the
  // clear runs under the main loop.
  int late_wait;
  // 3D problems whose depth does not fold (a 3D instance's TmaConvKernel::view): x through a 5D
  // im2col map {G*C, W, H, D, N}; a GEMM row (img, oh, ow) has img = n * Do + od; the tap walk
  // runs over (fz, fy, fx) (Y * X taps per fz) and reads w's tap
  // tap0 + fz * tap_dd + fy * tap_dh + fx * tap_dw. deep 0: the 4D maps (Z = 1, fz = 0).
  int deep, Do, Y, s_d, pl_d, d_d, tap_dd;
  // backward_weight's row form (TmaTraits::kRows): k tile kt = (img, oh, seg) with seg fastest,
  // positions [seg * row_len, seg * row_len + row_len) of output row oh of image img; a = dy
  // {dy_row, Q, P, N}, b = x {G*C, W, H, N}, both tiled. tap = the filter row fy (taps = Y).
  int row_len, row_segs;
  // The divisors of the unit decode and the pixel maps as multiply-shift reciprocals (a run-time
  // integer division is a ~20-instruction dependent chain; the math warps decode every unit
  // between two units' MMA). Set by set_divisors() from the fields above.
  FastDiv by_k_split, by_tiles_mn, by_taps, by_tiles_n, by_pq, by_q, by_c_chunks, by_x, by_wp, by_tiles_img,
      by_do, by_yx, by_c, by_segs, by_p;
  void set_divisors() {
    by_segs.init(row_segs);
    by_p.init(P);
    by_c.init(C);
    by_do.init(Do);
    by_yx.init(int64_t(Y) * X);
    by_k_split.init(k_split);
    by_tiles_mn.init(int64_t(tiles_m) * tiles_n);
    by_taps.init(taps);
    by_tiles_n.init(tiles_n);
    by_pq.init(int64_t(P) * Q);
    by_q.init(Q);
    by_c_chunks.init(c_chunks);
    by_x.init(X);
    by_wp.init(wp);
    by_tiles_img.init(tiles_img);
  }
};

template <class Cfg>
struct TmaTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr int BM = Cfg::Tile::kM, BN = Cfg::Tile::kN, BK = Cfg::Tile::kK;
  static constexpr int kMathGroups = Cfg::Waves::kM / 4;  // warpgroups that share one tile
  static constexpr int RepM = BM / (64 * kMathGroups);
  // Ping-pong (math waves = 2 x waves M, one warpgroup a tile): two math warpgroups take turns
  // on the block's units, each with the whole tile; one's epilogue overlaps the other's MMA.
  static constexpr bool kPingPong = Cfg::kMathWaves == 2 * Cfg::Waves::kM;
  static constexpr int kConsumers = kPingPong ? 2 : 1;
  static constexpr int kTileWarps = Cfg::Waves::kM;  // the warps that consume one stage
  // swap_ab (Cfg::kSwapAB): each warpgroup computes the transposed tile, its 64 output channels
  // on the instruction's M and its PN pixels on the instruction's N (the weight tile is the
  // instruction's A, the pixel tile its B); one accumulator row of kAccN / 2 floats.
  static constexpr bool kSwap = Cfg::kSwapAB;
  static constexpr int PN = BM / kMathGroups;
  static constexpr int kAccRows = kSwap ? 1 : RepM;
  static constexpr int kAccN = kSwap ? PN : Cfg::Tile::kN;
  static constexpr int S = Cfg::kStages;
  static constexpr int kMathThreads = kConsumers * kMathGroups * 128;
  static constexpr int kThreads = kMathThreads + 32;  // + one load warp
  static constexpr int kRowBytes = 128;  // one swizzle row = BK elements
  static constexpr int kABytes = BM * kRowBytes, kBBytes = BN * kRowBytes;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr bool kStaged = Cfg::kEpilogue == Epilogue::CShuffle;
  // CShuffle slab per math warp: 16 rows x kSlabCols columns, rows kSlabStride elements apart.
  static constexpr int kSlabCols = 32, kSlabStride = 40;
  static constexpr int kSlabBytes = 16 * kSlabStride * int(sizeof(Raw));
  // Ring, 2 mbarriers per stage, slabs, slack to align the ring to the 1024-byte swizzle atom.
  static constexpr int kSmemBytes = detail::tma_smem_bytes(BM, BN, S, kMathThreads / 32,
                                                           int(sizeof(Raw)), kStaged);
  static_assert(kSmemBytes == S * kStageBytes + 2 * S * 8 +
                                  (kStaged ? (kMathThreads / 32) * kSlabBytes : 0) + 1024,
                "ckgen: TmaTraits' layout and detail::tma_smem_bytes disagree");
  static constexpr bool kBF16 = Cfg::kDataType == DataType::BF16;
  static constexpr bool kWeightGrad = Cfg::kVariant == Variant::BackwardWeight;
  // M/N-major operands are stored as 64-column blocks of BK 128-byte rows: backward_data's B
  // (w as it lies, c contiguous), backward_weight's A (dy, k contiguous) and B (x, c contiguous).
  static constexpr bool kAMMajor = kWeightGrad;
  static constexpr bool kBNMajor = Cfg::kVariant != Variant::Forward;
  static constexpr int kBlockBytes = BK * kRowBytes;  // 64 rows of 128 bytes
  // Specialization::Stride1: the ring holds B only; two staged input patches (run-time size,
  // TmaConvArgs::patch_stride each) lead the shared memory, two more mbarrier pairs follow the
  // ring's. kPatchFixedBytes: everything but the patches.
  static constexpr bool kPatch = Cfg::kSpecialization == Specialization::Stride1 && !kWeightGrad;
  // backward_weight, Specialization::Stride1 (the row form): a tile is one filter row fy's
  // X = BN / 64 taps x 64 input channels, a k tile a segment of row_len <= kRowPos positions of
  // one output row. A stage holds x's row_len + (X - 1) * d_w input pixels of the segment (one
  // 4D tiled copy, B region first) and dy's row_len pixels (A region, kRowBlock bytes in): every
  // tap reads its B operand from row fx * d_w of the same pixels, so x is copied once per
  // filter row instead of once per tap. The stage is the default one (BM + BN rows of 128 bytes).
  static constexpr bool kRows = kWeightGrad && Cfg::kSpecialization == Specialization::Stride1;
  static constexpr int kRowPos = detail::tma_row_positions(BN);
  static constexpr int kRowBlock = (BM + BN - kRowPos) * kRowBytes;
  static constexpr int kPatchBuffers = 2;
  static constexpr int kRingStage = kPatch ? kBBytes : kStageBytes;
  static constexpr int kPatchFixedBytes = S * kBBytes + 2 * (S + kPatchBuffers) * 8 +
                                          (kStaged ? (kMathThreads / 32) * kSlabBytes : 0) + 1024;
  // Cluster reduction: a block's fp32 partial tile in the ring (free once its one unit is
  // done), rows kPartLd floats apart (8 floats of padding: a half-warp's 8-byte stores of four
  // rows fall in distinct banks).
  static constexpr int kPartLd = BN + 8;
  static constexpr bool kClusterFits = BM * kPartLd * 4 <= S * kStageBytes && !kPingPong && !kRows;

  static_assert(Cfg::kKBatch >= 0 && Cfg::kStage == Stage::One,
                "ckgen: wavelet_tma splits its reduction with fp32 reductions (stage one)");
  static_assert(Cfg::kDataType == DataType::FP16 || Cfg::kDataType == DataType::BF16,
                "ckgen: wavelet_tma needs fp16 or bf16");
  static_assert(Cfg::kMathUnit == MathUnit::Wgmma, "ckgen: wavelet_tma needs wgmma");
  static_assert(BK * int(sizeof(Raw)) == kRowBytes, "ckgen: wavelet_tma needs Tile K = 64");
  static_assert(Cfg::Waves::kM % 4 == 0 && Cfg::Waves::kN == 1 && Cfg::Waves::kK == 1 &&
                    (kMathGroups == 1 || kMathGroups == 2),
                "ckgen: wavelet_tma needs Waves (4|8, 1, 1)");
  static_assert(Cfg::WarpTile::kM == 64 && Cfg::WarpTile::kN == kAccN && Cfg::WarpTile::kK == 16,
                "ckgen: wavelet_tma needs WarpTile (64, Tile N, 16) (swap_ab: (64, Tile M / warpgroups, 16))");
  static_assert(!kSwap || (BN == 64 && !kWeightGrad && !kStaged && (PN == 64 || PN == 128 || PN == 256)),
                "ckgen: swap_ab needs forward / backward_data, Tile N 64, Tile M / warpgroups 64, 128 or 256, "
                "epilogue default");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256,
                "ckgen: wavelet_tma needs Tile N 64, 128, 192 or 256");
  static_assert(kSwap || (BM % (64 * kMathGroups) == 0 && RepM >= 1 && RepM <= 3),
                "ckgen: wavelet_tma needs Tile M = 64, 128 or 192 per math warpgroup");
  static_assert(BM <= 256, "ckgen: an im2col box holds at most 256 pixels");
  static_assert(Cfg::kLoadWaves == 1 && (Cfg::kMathWaves == Cfg::Waves::kM ||
                                         (kPingPong && Cfg::Waves::kM == 4 && !kSwap && !kPatch)),
                "ckgen: wavelet_tma has one load warp (load waves 1) and math waves = waves M, or "
                "2 x 4 (ping-pong; no swap_ab, no stride1)");
  static_assert(S >= 2 && S <= 8, "ckgen: wavelet_tma needs 2..8 stages");
  static_assert(Cfg::kGroupsToMerge == 1 && Cfg::kReduction == Reduction::SplitK && !Cfg::kPersistent &&
                    (Cfg::kSpecialization == Specialization::Default || kPatch || kRows),
                "ckgen: wavelet_tma: no merged groups, split-K only, specialization default or stride1");
  static_assert(!kRows || (BM == 64 && !kPingPong && BN >= 128),
                "ckgen: backward_weight stride1 (the row form) needs Tile M 64, one math warpgroup, Tile N >= 128");
  static_assert(BN % kSlabCols == 0, "ckgen: wavelet_tma cshuffle stages 32-column slabs");
  static_assert(Cfg::kVecA == 8 && Cfg::kVecB == 8 && Cfg::kVecC == 8,
                "ckgen: wavelet_tma moves 16-byte rows (vector 8, 8, 8)");
  static_assert(Cfg::kNDim >= 1 && Cfg::kNDim <= 3,
                "ckgen: wavelet_tma is 1D / 2D / 3D");
};

namespace tma {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define CKGEN_HAS_TMA 1
CKGEN_DEVICE inline void expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mbar::addr(bar)),
               "r"(bytes)
               : "memory");
}
CKGEN_DEVICE inline void load_im2col_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c,
                                        int w, int h, int n, uint16_t off_w, uint16_t off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(mbar::addr(bar)),
      "h"(off_w), "h"(off_h)
      : "memory");
}
// The 5D form (3D problems, TmaConvArgs::deep): corner (c, w, h, d, n), offsets (w, h, d).
CKGEN_DEVICE inline void load_im2col_5d(void* dst, const CUtensorMap* map, uint64_t* bar, int c,
                                        int w, int h, int d, int n, uint16_t off_w, uint16_t off_h,
                                        uint16_t off_d) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "r"(mbar::addr(bar)),
      "h"(off_w), "h"(off_h), "h"(off_d)
      : "memory");
}
CKGEN_DEVICE inline void load_tile_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                      int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(mbar::addr(bar))
      : "memory");
}
CKGEN_DEVICE inline void load_tile_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                      int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(mbar::addr(bar))
      : "memory");
}
CKGEN_DEVICE inline void load_tile_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                      int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(mbar::addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(mbar::addr(bar))
      : "memory");
}
// Thread-block clusters: every live thread of the cluster arrives and waits; called by whole
// warps. cluster_sync publishes the thread's earlier writes to the cluster (release / acquire);
// cluster_sync_relaxed only orders (the last barrier: the reads it protects have returned).
CKGEN_DEVICE inline void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
CKGEN_DEVICE inline void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
CKGEN_DEVICE inline uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// 8 floats at shared address `addr` of cluster block `rank`, added into s. (Loading every
// block's floats before adding measured no faster and raised the kernel's registers: the
// 128x256 tile spilled.)
// The 4 floats at shared address addr (16-byte aligned) of cluster block `rank`.
CKGEN_DEVICE inline float4 load_remote4(uint32_t addr, uint32_t rank) {
  uint32_t ra;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(ra) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(ra)
               : "memory");
  return v;
}
CKGEN_DEVICE inline void add_remote8(float* s, uint32_t addr, uint32_t rank) {
  const float4 a = load_remote4(addr, rank), b = load_remote4(addr + 16, rank);
  s[0] += a.x;
  s[1] += a.y;
  s[2] += a.z;
  s[3] += a.w;
  s[4] += b.x;
  s[5] += b.y;
  s[6] += b.z;
  s[7] += b.w;
}
// Adds v0..v3 into the fp32 sums of row `dst` at columns col..col+3 (col % 4 == 0, columns from K
// on skipped): one 16-byte red where the row is 16-byte aligned and K % 4 == 0, else two 8-byte
// reds (K even).
CKGEN_DEVICE CKGEN_FORCEINLINE void red_add4(float* dst, int col, int K, float v0, float v1, float v2, float v3) {
  if (((reinterpret_cast<uintptr_t>(dst) & 15u) | (uintptr_t(K) & 3u)) == 0) {
    if (col < K)
      asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst + col), "f"(v0),
                   "f"(v1), "f"(v2), "f"(v3)
                   : "memory");
    return;
  }
  if (col < K)
    asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst + col), "f"(v0), "f"(v1) : "memory");
  if (col + 2 < K)
    asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst + col + 2), "f"(v2), "f"(v3)
                 : "memory");
}
// Adds row h (0: lane / 4, 1: lane / 4 + 8) of a warp's m64nN accumulator fragment into the fp32
// sums of row dst, 16 bytes a lane: lanes 2q and 2q + 1 of a quad hold columns 4q..4q+1 /
// 4q+2..4q+3 (q = 0, 1) of 8-column groups j and j + 1; they trade halves (one shuffle a float),
// so that the even lane holds 4 consecutive columns of group j and the odd one 4 of group j + 1:
// one 16-byte red where there were two 8-byte ones (red_add4 for unaligned rows). col maps a
// fragment column to the row's column; every lane runs the shuffles, live ones add.
template <int N, class Col>
CKGEN_DEVICE CKGEN_FORCEINLINE void red_fragment_row(const float* acc, int h, float* dst, int K, bool live, Col col) {
  const int lane = int(threadIdx.x % 32);
  const bool odd = (lane & 1) != 0;
  const int qc = (lane & 2) * 2;  // the pair's first column in a group: 0 or 4
#pragma unroll
  for (int j = 0; j < N / 8; j += 2) {
    const float a0 = acc[j * 4 + h * 2], a1 = acc[j * 4 + h * 2 + 1];
    const float b0 = acc[j * 4 + 4 + h * 2], b1 = acc[j * 4 + 4 + h * 2 + 1];
    // even lane: sends b, keeps a; odd lane: sends a, keeps b
    const float r0v = __shfl_xor_sync(0xffffffffu, odd ? a0 : b0, 1);
    const float r1v = __shfl_xor_sync(0xffffffffu, odd ? a1 : b1, 1);
    if (live)
      red_add4(dst, col((j + (odd ? 1 : 0)) * 8 + qc), K, odd ? r0v : a0, odd ? r1v : a1, odd ? b0 : r0v,
               odd ? b1 : r1v);
  }
}
CKGEN_DEVICE inline void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
#endif
// wgmma descriptor of a K-major operand tile in the 128-byte swizzle layout: rows of 128 bytes,
// 8-row groups 1024 bytes apart (SBO), LBO unused (1), layout type 1 = 128B swizzle. The k16
// step inside a row advances the start address by 32 bytes.
CKGEN_HOST_DEVICE constexpr uint64_t sw128_desc(uint32_t smem_addr) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
// The same for an N-major operand (tnsp 1) stored as 64-column blocks of 128-byte k-rows: a row
// holds 64 consecutive n, 8-row groups are sbo bytes apart along k (1024: one swizzle atom after
// the other), 64-column blocks block_bytes apart along n (LBO). The k16 step advances 16 rows
// (2048 bytes) when the groups are one atom apart.
CKGEN_HOST_DEVICE constexpr uint64_t sw128_desc_mn(uint32_t smem_addr, uint32_t block_bytes, uint32_t sbo = 1024) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t((block_bytes >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
}
}  // namespace tma

template <class Cfg, bool kPlainX>
CKGEN_GLOBAL void __launch_bounds__(TmaTraits<Cfg>::kThreads, 1)
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
  unsigned char* slabs = reinterpret_cast<unsigned char*>(empty + Tr::S + (Tr::kPatch ? 2 * Tr::kPatchBuffers : 0));
  const int tid = threadIdx.x;
  // Persistent: block b takes work units b, b + gridDim.x, ...; unit = (tile, split), split
  // fastest; tile = (g, tap, tm, tn), tn fastest (tap only for backward_weight). The ring's
  // k-tile counter t runs on across units, so the load warp fetches the next unit while the math
  // warpgroups store the last one.
  const int tiles_mn = p.tiles_m * p.tiles_n;
  const int num_units = tiles_mn * p.G * p.taps * p.k_split;
  struct Unit {
    int g, tap, m0, n0, kt0, kt1, img;  // img: stride1's image (m0 is then a row of it)
  };
  // Split `split`'s k tiles [kt0, kt1): its share of a tile's k_tiles.
  auto k_range = [&](int split, int& kt0, int& kt1) {
    kt0 = split * p.kt_per_split;
    kt1 = min(p.k_tiles, kt0 + p.kt_per_split);
  };
  auto decode = [&](int unit) {
    Unit u;
    int tile, split, gt, r, tm, tn;
    p.by_k_split.divmod(unit, tile, split);
    p.by_tiles_mn.divmod(tile, gt, r);
    p.by_taps.divmod(gt, u.g, u.tap);
    p.by_tiles_n.divmod(r, tm, tn);
    u.img = 0;
    if constexpr (Tr::kPatch) p.by_tiles_img.divmod(tm, u.img, tm);
    u.m0 = tm * Tr::BM;
    u.n0 = tn * (Tr::kRows ? 64 : Tr::BN);  // the row form: a 64-channel block of every tap
    k_range(split, u.kt0, u.kt1);
    return u;
  };

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
  if constexpr (Tr::kBNMajor && !Tr::kWeightGrad) {
    // backward_data's B boxes stop at row b_rows (TmaConvKernel::run_forward): the k rows past
    // it, which the copies never write, are zero in every stage (0 x dy's padded channels).
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
  __syncthreads();
  // A launch chained to the call's previous kernel (the copy of dy, the clear of the sums:
  // chain.hpp) has set up its barriers while that kernel finished; global memory from here on
  // (p.late_wait: the inputs from here on, the sums after the main loop).
  if (!p.late_wait) chain_wait();

  // x's im2col copies: the corner of GEMM row pm (its output pixel's first input pixel) and one
  // copy of 64 channels from channel ch at tap (fz, fy, fx); 3D instances on a problem whose
  // depth does not fold (p.deep) take the 5D map (row pm = (n * Do + od, oh, ow)).
  constexpr bool kDeep = Cfg::kNDim == 3;
  struct Corner {
    int w, h, d, n;
  };
  auto corner = [&](int pm) {
    Corner c;
    int img, rem, oh, ow;
    p.by_pq.divmod(pm, img, rem);
    p.by_q.divmod(rem, oh, ow);
    c.w = ow * p.s_w - p.pl_w;
    c.h = oh * p.s_h - p.pl_h;
    c.d = 0;
    c.n = img;
    if constexpr (kDeep)
      if (p.deep) {
        int od;
        p.by_do.divmod(img, c.n, od);
        c.d = od * p.s_d - p.pl_d;
      }
    return c;
  };
  auto load_x = [&](void* dst, const CUtensorMap* map, uint64_t* bar, int ch, const Corner& c, int fz, int fy,
                    int fx) {
    if constexpr (kDeep)
      if (p.deep) {
        tma::load_im2col_5d(dst, map, bar, ch, c.w, c.h, c.d, c.n, uint16_t(fx * p.d_w), uint16_t(fy * p.d_h),
                            uint16_t(fz * p.d_d));
        return;
      }
    (void)fz;
    tma::load_im2col_4d(dst, map, bar, ch, c.w, c.h, c.n, uint16_t(fx * p.d_w), uint16_t(fy * p.d_h));
  };

  if (tid >= Tr::kMathThreads) {  // the load warp: one thread issues every copy
    if (tid == Tr::kMathThreads) {
      tma::prefetch_map(&p.a);
      tma::prefetch_map(&p.b);
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
        if (pu >= num_units) return;
        const int b = pc % Tr::kPatchBuffers;
        if (pc >= Tr::kPatchBuffers) {
          const uint32_t ph = uint32_t((pc / Tr::kPatchBuffers - 1) & 1);
          if (block)
            mbar::wait(pempty + b, ph);
          else if (!mbar::test(pempty + b, ph))
            return;
        }
        tma::expect_tx(pfull + b, uint32_t(p.patch_box));
        tma::load_tile_4d(base + b * p.patch_stride, &p.a, pfull + b, pg * p.C + pcc * Tr::BK, -p.pl_w,
                          pj0 - p.pl_h, pimg);
        ++pc;
        if (++pcc == pcc1) {
          pu += gridDim.x;
          if (pu < num_units) cursor_unit(pu);
        }
      };
      for (int unit = blockIdx.x; unit < num_units; unit += gridDim.x) {
        const Unit u = decode(unit);
        if constexpr (Tr::kRows) {
          // A: dy's row_len positions x 64 output channels; B: x's row_len + (X - 1) * d_w input
          // pixels of the same segment at filter row fy (u.tap), 64 input channels. Out-of-range
          // positions and padding are zero-filled by the engine.
          const int ach = u.g * p.M + u.m0, bch = u.g * p.C + u.n0;
          const int dh = u.tap * p.d_h - p.pl_h;
          for (int kt = u.kt0; kt < u.kt1; ++kt, ++t) {
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
        } else if constexpr (Tr::kWeightGrad) {
          // A: dy rows of 64 pixels x 64 output channels (BM / 64 boxes); B: x through the im2col
          // map, the same 64 pixels at this tap, 64 input channels per box (BN / 64 boxes).
          // B block nb: channel bch and tap (bfz, bfy, bfx): the unit's tap, or (p.pack) the tap
          // of its columns. Packed, a last tile's blocks past K (= taps x C) are not copied at
          // all: their columns of the product (stale shared memory) are never stored.
          const int live = p.pack ? min(Tr::BN / 64, (p.K - u.n0) / 64) : Tr::BN / 64;
          const uint32_t stage_tx = uint32_t(Tr::kABytes + live * Tr::kBlockBytes);
          int bch[Tr::BN / 64], bfz[Tr::BN / 64], bfy[Tr::BN / 64], bfx[Tr::BN / 64];
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
          for (int kt = u.kt0; kt < u.kt1; ++kt, ++t) {
            const int s = t % Tr::S;
            if (t >= Tr::S) mbar::wait(empty + s, uint32_t((t / Tr::S - 1) & 1));
            unsigned char* sa = smem + s * Tr::kStageBytes;
            const int pm = kt * Tr::BK;
            const Corner c = corner(pm);
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
            unsigned char* sb = smem + s * Tr::kRingStage;
            tma::expect_tx(full + s, uint32_t(p.stage_tx));
            const int wtap = p.tap0 + fy * p.tap_dh + fx * p.tap_dw;
            if constexpr (Tr::kBNMajor) {
#pragma unroll
              for (int nb = 0; nb < Tr::BN / 64; ++nb)
                tma::load_tile_3d(sb + nb * Tr::kBlockBytes, &p.b, full + s, u.n0 + nb * 64, wtap,
                                  cbase + cc * Tr::BK);
            } else {
              tma::load_tile_3d(sb, &p.b, full + s, cc * Tr::BK, wtap, nrow);
            }
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
          const Corner c0 = corner(u.m0);
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
            const int wtap = p.tap0 + fy * p.tap_dh + fx * p.tap_dw + (kDeep ? fz * p.tap_dd : 0);
            if constexpr (Tr::kBNMajor) {
#pragma unroll
              for (int nb = 0; nb < Tr::BN / 64; ++nb)
                tma::load_tile_3d(sa + Tr::kABytes + nb * Tr::kBlockBytes, &p.b, full + s,
                                  u.n0 + nb * 64, wtap, cbase + cc * Tr::BK);
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
      }
      // Every copy of the block issued: the next launch of the call (a split's conversion) may
      // be scheduled; its blocks then wait in chain_wait for the last tiles only (a release at
      // the kernel's start measured the same).
      chain_release();
    }
    if (Tr::kWeightGrad && p.cluster > 1) {
      // The math warps' two cluster barriers (epilogue below), the whole warp together: lanes
      // parked in a cluster wait while lane 0 still issues copies would hold back the copies.
      __syncwarp();
      tma::cluster_sync();
      tma::cluster_sync_relaxed();
    }
    return;
  }

  // Math warpgroups.
  using Op = wgmma_detail::Op<Tr::kAccN, Tr::kBF16, Tr::kSwap ? (Tr::kBNMajor ? 1 : 0) : (Tr::kAMMajor ? 1 : 0),
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
  Raw* y = static_cast<Raw*>(p.y);
  int t = 0, pc = 0;  // k tiles and (stride1) patches consumed
  // Ping-pong: the ring holds every unit's k tiles in unit order; a warpgroup steps its counter
  // over the other's units, and named barriers 2 / 3 order the two main loops (0 runs, then 1,
  // then 0 ...): a warpgroup starts waiting for its stages only once the other has waited for
  // all earlier ones, so a stage's `full` parity is never read two phases early.
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
  for (; unit < num_units; unit += Tr::kConsumers * gridDim.x) {
    const Unit u = decode(unit);
    if constexpr (Tr::kPingPong) {  // the other warpgroup has waited for every stage before ours
      if (consumer == 1)
        asm volatile("bar.sync 2, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
      else if (unit != int(blockIdx.x))
        asm volatile("bar.sync 3, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
    }
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
    for (int kt = u.kt0; kt < u.kt1; ++kt, ++t) {
      const int s = t % Tr::S;
      mbar::wait(full + s, uint32_t((t / Tr::S) & 1));
      if constexpr (Tr::kPatch)
        if (tap == 0) mbar::wait(pfull + pc % Tr::kPatchBuffers, uint32_t((pc / Tr::kPatchBuffers) & 1));
      fence_acc();
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      // A: the stage's tile, or (stride1) the tap's rows of the chunk's patch: any start row of
      // the 128-byte swizzled patch (the swizzle follows the shared-memory address bits)
      const uint32_t a0 =
          Tr::kPatch ? patches + (pc % Tr::kPatchBuffers) * p.patch_stride +
                           uint32_t(a_row + fy * p.d_h * p.wp + fx * p.d_w) * Tr::kRowBytes
                     : ring + s * Tr::kStageBytes + wg * Tr::RepM * Tr::kBlockBytes;
      const uint32_t b0 = ring + s * Tr::kRingStage + (Tr::kPatch ? 0 : Tr::kABytes);
      if constexpr (Tr::kRows) {
        // The row form: row_len / 16 k steps of one m64n(BN)k16 over the stage's x pixels (B,
        // first) and dy's (A, kRowBlock bytes in). The B operand's 64-column blocks (tap fx's
        // channels) start fx * d_w pixel rows into the x pixels, so the descriptor's block
        // stride (LBO) is d_w rows: any 128-byte row works, the swizzle follows the address bits
        // (one instruction measured 2-7 % faster than X m64n64k16 on the same operands, H100).
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
          const uint64_t db = Tr::kBNMajor ? tma::sw128_desc_mn(b0 + kk * 2048, Tr::kBlockBytes)
                                           : tma::sw128_desc(b0 + kk * 32);
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
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      fence_acc();
      if (kt > u.kt0 && lane == 0) {
        mbar::arrive(empty + (t - 1) % Tr::S);
        // stride1: the last k tile was the previous chunk's last tap; its patch is read
        if (Tr::kPatch && tap == 0) mbar::arrive(pempty + (pc - 1) % Tr::kPatchBuffers);
      }
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
    if constexpr (Tr::kPingPong) {  // every stage of this unit waited for: the other may start
      if (unit + int(gridDim.x) < num_units) {
        if (consumer == 0)
          asm volatile("bar.arrive 2, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
        else
          asm volatile("bar.arrive 3, %0;\n" ::"n"(Tr::kMathThreads) : "memory");
      }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc();
    if (p.late_wait) chain_wait();  // the sums' clear (returns at once after the first unit)
    if (lane == 0) {
      mbar::arrive(empty + (t - 1) % Tr::S);  // the unit's last stage
      if (Tr::kPatch) mbar::arrive(pempty + (pc - 1) % Tr::kPatchBuffers);  // and its last patch
    }
    if (Tr::kPingPong && unit + int(gridDim.x) < num_units) t += unit_k_tiles(unit + gridDim.x);  // the other's

    // Epilogue: accumulator i of an m64 slice holds row warp*16 + lane/4 (+8 for i&2), column
    // 8*(i/4) + 2*(lane%4) + (i&1) (the m16n8 layout per n8 block). Row r, column c of the tile
    // land at element row_base(r) + c of y (or of the fp32 split workspace).
    // row_ok: the row is a pixel (stride1: a position ow < Q of an output row).
    auto row_ok = [&](int row) -> bool {
      if constexpr (Tr::kPatch) {
        int oh, ow;
        p.by_wp.divmod(row, oh, ow);
        return row < p.M && ow < p.Q;
      } else {
        return row < p.M;
      }
    };
    auto row_base = [&](int row) -> int64_t {
      if constexpr (Tr::kWeightGrad) {
        return (int64_t(g) * p.M + row) * p.ld_row + int64_t(u.tap) * p.K;
      } else if constexpr (Tr::kPatch) {  // dense output (stride1 takes no stride phases)
        int oh, ow;
        p.by_wp.divmod(row, oh, ow);
        return ((int64_t(u.img) * p.P + oh) * p.Q + ow) * p.GK + int64_t(g) * p.K;
      } else {
        int64_t pix = row;
        if (!p.out_dense) {
          int n, rem, oh, ow;
          p.by_pq.divmod(row, n, rem);
          p.by_q.divmod(rem, oh, ow);
          pix = int64_t(n) * p.out_sn + int64_t(oh) * p.out_sh + int64_t(ow) * p.out_sw +
                p.out_base;
        }
        return pix * p.GK + int64_t(g) * p.K;
      }
    };
    // The written column of tile column tc: n0 + tc, or (the row form) tap tc / 64's column of
    // channel n0 + tc % 64 (columns = dw's X * C of filter row u.tap).
    auto gcol = [&](int tc) -> int {
      if constexpr (Tr::kRows)
        return (tc >> 6) * p.C + n0 + (tc & 63);
      else
        return n0 + tc;
    };
    if constexpr (Tr::kSwap) {
      // swap_ab: accumulator 4j + 2h + q holds channel warp * 16 + lane / 4 + 8h of pixel
      // wg * PN + 8j + 2 (lane % 4) + q (the m16n8 layout of the transposed tile): 2-byte stores
      // (or 4-byte fp32 reductions into the split workspace), 8 channels x 4 pixels a warp.
#pragma unroll
      for (int j = 0; j < Tr::PN / 8; ++j) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int row = m0 + wg * Tr::PN + j * 8 + (lane & 3) * 2 + q;
          if (!row_ok(row)) continue;
          const int64_t rb = row_base(row);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int col = n0 + warp * 16 + (lane >> 2) + 8 * h;
            if (col >= p.K) continue;
            const float v = acc[0][j * 4 + h * 2 + q];
            if (p.ws != nullptr)
              asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;\n" ::"l"(p.ws + rb + col), "f"(v) : "memory");
            else
              y[rb + col] = float_to_raw<Cfg::kDataType>(v);
          }
        }
      }
    } else if (Tr::kWeightGrad && p.cluster > 1) {
      // Cluster reduction (one unit per block): every math warp done with the ring, the fp32
      // partial tile into it, cluster barrier; block `rank` of the cluster sums rows
      // [rank * BM / c, (rank + 1) * BM / c) over the c partial tiles (ranks in order: the same
      // sums every run) and stores them as 16-byte vectors; a last barrier keeps every block's
      // shared memory alive until all have read it.
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
              w[e] = uint32_t(float_to_raw<Cfg::kDataType>(sum[2 * e])) |
                     (uint32_t(float_to_raw<Cfg::kDataType>(sum[2 * e + 1])) << 16);
            *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
          } else {
            for (int e = 0; e < 8 && col + e < p.K; ++e) dst[e] = float_to_raw<Cfg::kDataType>(sum[e]);
          }
        }
      }
      __syncwarp();
      tma::cluster_sync_relaxed();
    } else if (p.ws != nullptr) {
      if constexpr (Tr::kStaged) {
        // split, cshuffle: fp32 reductions into the workspace (splitk_finish converts) through the
        // warp's slab: 8 rows x 32 columns a round (row pitch 36 floats: conflict-free 8-byte writes
        // and 16-byte reads), read back as 8 lanes x 16 bytes a row, so that each red.v4
        // instruction covers 4 rows x 128 bytes (whole lines; red_add4 for unaligned rows).
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
#pragma unroll
            for (int c0 = 0; c0 < Tr::BN; c0 += 32) {
              __syncwarp();
#pragma unroll
              for (int jj = 0; jj < 4; ++jj) {
                const int j = c0 / 8 + jj;
                *reinterpret_cast<float2*>(slab + (lane >> 2) * kPitch + jj * 8 + (lane & 3) * 2) =
                    make_float2(acc[i][j * 4 + h * 2], acc[i][j * 4 + h * 2 + 1]);
              }
              __syncwarp();
#pragma unroll
              for (int rr = 0; rr < 2; ++rr) {
                const float4 v = *reinterpret_cast<const float4*>(slab + (rr * 4 + lr) * kPitch + lc);
                if (dst[rr] != nullptr) tma::red_add4(dst[rr], gcol(c0 + lc), p.K, v.x, v.y, v.z, v.w);
              }
            }
          }
        }
      } else {
        // split: fp32 reductions into the workspace (splitk_finish converts), 16 bytes a lane
        // (tma::red_fragment_row).
#pragma unroll
        for (int i = 0; i < Tr::RepM; ++i) {
          const int r0 = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 2);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = r0 + h * 8;
            const bool live = row_ok(row);  // the same for both lanes of a pair (one row)
            tma::red_fragment_row<Tr::BN>(acc[i], h, p.ws + (live ? row_base(row) : 0), p.K, live, gcol);
          }
        }
      }
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
#pragma unroll
          for (int jj = 0; jj < Tr::kSlabCols / 8; ++jj) {
            const int j = c0 / 8 + jj;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const Raw v0 = float_to_raw<Cfg::kDataType>(acc[i][j * 4 + h * 2]);
              const Raw v1 = float_to_raw<Cfg::kDataType>(acc[i][j * 4 + h * 2 + 1]);
              *reinterpret_cast<uint32_t*>(slab + ((lane >> 2) + h * 8) * Tr::kSlabStride + jj * 8 +
                                           (lane & 3) * 2) = uint32_t(v0) | (uint32_t(v1) << 16);
            }
          }
          __syncwarp();
#pragma unroll
          for (int q = 0; q < 2; ++q) {  // 16 rows x 4 vectors of 8, two per lane
            const int v = lane + 32 * q, rr = v >> 2, col = gcol(c0 + (v & 3) * 8);
            const int row = r0 + rr;
            if (row_ok(row) && col < p.K) {
              const Raw* src = slab + rr * Tr::kSlabStride + (v & 3) * 8;
              Raw* dst = y + base[q] + col;  // base[q] is row r0 + rr's
              if (vec && col + 8 <= p.K) {
                *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
              } else {
                for (int e = 0; e < 8 && col + e < p.K; ++e) dst[e] = src[e];
              }
            }
          }
          __syncwarp();
        }
      }
    } else {
      const bool pairs = (p.K % 2) == 0;
#pragma unroll
      for (int i = 0; i < Tr::RepM; ++i) {
        const int r0 = m0 + (wg * Tr::RepM + i) * 64 + warp * 16 + (lane >> 2);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = r0 + h * 8;
          if (!row_ok(row)) continue;
          Raw* dst_row = y + row_base(row);
#pragma unroll
          for (int j = 0; j < Tr::BN / 8; ++j) {
            const int col = gcol(j * 8 + (lane & 3) * 2);
            if (col >= p.K) continue;
            Raw* dst = dst_row + col;
            const Raw v0 = float_to_raw<Cfg::kDataType>(acc[i][j * 4 + h * 2]);
            const Raw v1 = float_to_raw<Cfg::kDataType>(acc[i][j * 4 + h * 2 + 1]);
            if (pairs && col + 1 < p.K) {
              *reinterpret_cast<uint32_t*>(dst) = uint32_t(v0) | (uint32_t(v1) << 16);
            } else {
              dst[0] = v0;
              if (col + 1 < p.K) dst[1] = v1;
            }
          }
        }
      }
    }
  }
#else
  (void)p;
  (void)tma_smem_raw;
#endif
}

namespace detail {
using EncodeIm2colFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                    const cuuint64_t*, const cuuint64_t*, const int*, const int*,
                                    cuuint32_t, cuuint32_t, const cuuint32_t*,
                                    CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
// A driver entry point through the runtime (no link against the driver library).
template <class Fn>
Fn driver_entry(const char* name) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<Fn>(f);
}
// Whether every pointer is 16-byte aligned (a tensor map's global address must be).
inline bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* ptr : ptrs)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  return true;
}
// A dense tensor of rank 2..4 (dims innermost first, fp16 or bf16 elements) in tiled mode,
// 128-byte swizzled boxes.
inline bool encode_tiled16(CUtensorMap* map, bool bf16, const void* ptr, int rank, const cuuint64_t* dims,
                           const cuuint32_t* box) {
  static const auto enc = driver_entry<EncodeTiledFn>("cuTensorMapEncodeTiled");
  if (!enc) return false;
  cuuint64_t strides[3] = {dims[0] * 2, 0, 0};
  for (int i = 1; i + 1 < rank; ++i) strides[i] = strides[i - 1] * dims[i];
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  return enc(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, cuuint32_t(rank),
             const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Side streams that let backward_data's stride phases (disjoint dx pixels, or fp32 reductions
// into one workspace) run side by side: phase j > 0 runs on side stream (j - 1) % kSide, forked
// from and joined back into the caller's stream with events (stream capture follows the fork
// and the join). Created once per device on first use, kept for the process; null when the
// runtime refuses them (the phases then run one after another on the caller's stream).
struct PhaseStreams {
  static constexpr int kSide = 3;
  cudaStream_t side[kSide] = {};
  cudaEvent_t fork = nullptr, join[kSide] = {};
  bool ok = false;
};
inline PhaseStreams* phase_streams() {
  constexpr int kDevices = 64;
  static PhaseStreams per_device[kDevices];
  static std::once_flag once[kDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) return nullptr;
  PhaseStreams& ps = per_device[dev];
  std::call_once(once[dev], [&ps] {
    bool ok = cudaEventCreateWithFlags(&ps.fork, cudaEventDisableTiming) == cudaSuccess;
    for (int i = 0; i < PhaseStreams::kSide; ++i)
      ok = ok && cudaStreamCreateWithFlags(&ps.side[i], cudaStreamNonBlocking) == cudaSuccess &&
           cudaEventCreateWithFlags(&ps.join[i], cudaEventDisableTiming) == cudaSuccess;
    ps.ok = ok;
  });
  return ps.ok ? &ps : nullptr;
}
}  // namespace detail

template <class Cfg>
class TmaConvKernel final : public KernelBase {
 public:
  using Tr = TmaTraits<Cfg>;
  static constexpr int64_t kMax32 = (int64_t(1) << 31) - 1;

  TmaConvKernel() {
    key_ = config_key<Cfg>();
    key_.tile_m = Tr::BM;
    key_.tile_n = Tr::BN;
    key_.tile_k = Tr::BK;
    key_.wave_m = Cfg::Waves::kM;
    key_.wave_n = 1;
    key_.wave_k = 1;
    key_.ping_pong = Tr::kPingPong;
    key_.warp_m = 64;
    key_.warp_n = Tr::kAccN;
    key_.swap_ab = Tr::kSwap;
    key_.warp_k = 16;
    key_.vec_a = key_.vec_b = key_.vec_c = 8;
  }

  const KernelKey& key() const override { return key_; }

  using Phase = tma_phases::Phase;
  using Plan = tma_phases::Plan;
  static Plan plan(const ConvProblem& p) {
    if constexpr (Cfg::kVariant == Variant::Forward) {
      return tma_phases::forward_plan(gemm_view(p));
    } else {
      Plan pl = tma_phases::backward_data_plan(p);
      if (const int64_t kp = padded_k(p); kp > 0)
        for (Phase& ph : pl.phase) ph.q.C = kp;  // the launches read the padded copy of dy
      return pl;
    }
  }

  // 3D instances: a problem whose depth folds (detail::depth_fold_refusal) runs folded to 2D
  // (detail::fold_depth), any other as 3D through 5D im2col maps (TmaConvArgs::deep);
  // everything below sees this view (a 1D / 2D instance sees its problem as given).
  static ConvProblem view(const ConvProblem& p) {
    return Cfg::kNDim == 3 && detail::depth_fold_refusal(p).empty() ? detail::fold_depth(p) : p;
  }
  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if (std::string e = detail::common_refusal(p, Cfg::kNDim, [&] { return options_refusal(opts); });
        !e.empty())
      return e;
    return shape_refusal(view(p), opts);
  }
  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    return workspace_2d(view(p), opts);
  }
  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    return run_2d(view(p), t, workspace, stream, opts);
  }

 private:
  // The call's options, refused whatever problem they come with (common_refusal's order).
  std::string options_refusal(const RunOptions& opts) const {
    using detail::str;
    if (opts.streamk_blocks != 0)
      return "RunOptions::streamk_blocks is for StreamK instances (this one never uses StreamK)";
    if (kTakesKBatch && (opts.k_batch < 0 || opts.k_batch > kMaxSplits))
      return "k_batch " + str(opts.k_batch) + " out of range 0..64 (0 = chosen per problem)";
    if constexpr (!Tr::kWeightGrad) {
      return detail::split_reduce_refusal(opts.split_reduce);
    } else {
      if (opts.split_reduce != SplitReduce::Cluster) return {};
      if (Tr::kPingPong)
        return "split_reduce cluster: a ping-pong instance (two warpgroups taking turns on units) has no "
               "cluster reduction";
      if (Tr::kRows) return "split_reduce cluster: backward_weight stride1 adds its splits through the workspace";
      if (!Tr::kClusterFits)
        return "split_reduce cluster: this instance's ring (" + str(Tr::S) +
               " stages) cannot hold its fp32 tile";
      if (opts.k_batch > 8)
        return "split_reduce cluster takes k_batch 0..8 (a cluster holds at most 8 blocks), got " +
               str(opts.k_batch);
      if (opts.k_batch > 1 && cluster_slots()[opts.k_batch] == 0)
        return "split_reduce cluster: the device keeps no cluster of " + str(opts.k_batch) +
               " blocks of this instance resident";
    }
    return {};
  }
  // What the problem's view leaves out, once common_refusal has passed.
  std::string shape_refusal(const ConvProblem& p, const RunOptions& opts) const {
    using detail::str;
    if (p.ndim == 3) {  // unfolded: the 5D maps
      if (Tr::kPatch)
        return "specialization stride1 stages 2D input rows: a 3D problem needs depth filter 1, depth stride 1 "
               "and no depth padding (it then runs as 2D over N x D images)";
      if (im2col_width(p) > 0)
        return "wavelet_tma: a 3D problem whose depth does not fold needs C (" + str(p.C) +
               ") to be a multiple of 8 (the explicit im2col copy is 2D)";
    }
    if constexpr (Tr::kWeightGrad) {
      if ((p.K % 8 != 0 && padded_k(p) == 0) || (p.C % 8 != 0 && im2col_width(p) == 0))
        return "wavelet_tma backward_weight needs K (" + str(p.K) + ") and C (" + str(p.C) +
               ") to be multiples of 8, or one group (K padded; C with taps x C <= 512): 16-byte rows of x and dy";
      if (std::string e = im2col_staging_limits(p); !e.empty()) return e;
      if (std::string e = rows_refusal(p); !e.empty()) return e;
      const ConvProblem q = gemm_view(p);
      if (std::string e = im2col_limits(q); !e.empty()) return e;
      const int64_t tiles = weight_tiles(q);
      if (tiles * kMaxSplits > kMax32) return "too many tiles for a 32-bit work-unit index";
      return {};
    } else {
      if (std::string e = im2col_staging_limits(p); !e.empty()) return e;
      const Plan pl = plan(p);
      if (!pl.error.empty()) return pl.error;
      for (const Phase& ph : pl.phase) {
        if (std::string e = forward_supported(ph.q); !e.empty()) return e;
        if (std::string e = patch_refusal(p, ph); !e.empty()) return e;
        if (ph.q.K % 2 != 0 && phase_split(ph, 0, opts, 1).k_split > 1)
          return std::string("wavelet_tma: a split reduction needs an even ") +
                 (Cfg::kVariant == Variant::Forward ? "K" : "C") + " (" + str(ph.q.K) +
                 ", 8-byte fp32 reductions)";
      }
      return {};
    }
  }

  // What backward_weight's row form (TmaTraits::kRows) needs of a 2D view: width stride 1 (a
  // row segment's pixels are consecutive input pixels), 64-channel blocks, the instance's filter
  // width (tile N = X x 64) and the taps' reach within the stage's halo.
  static std::string rows_refusal(const ConvProblem& p) {
    if constexpr (!Tr::kRows) {
      (void)p;
      return {};
    } else {
      using detail::str;
      if (p.ndim == 3)
        return "backward_weight stride1 reads 2D input rows: a 3D problem needs depth filter 1, depth stride 1 "
               "and no depth padding (it then runs as 2D over N x D images)";
      if (p.stride[2] != 1) return "backward_weight stride1 needs width stride 1 (got " + str(p.stride[2]) + ")";
      if (p.C % 64 != 0)
        return "backward_weight stride1 needs C (" + str(p.C) + ") to be a multiple of 64 (64-channel blocks)";
      if (p.filter[2] * 64 != Tr::BN)
        return "backward_weight stride1: tile N " + str(Tr::BN) + " holds the 64-channel blocks of a filter " +
               str(Tr::BN / 64) + " wide, got filter width " + str(p.filter[2]);
      if ((p.filter[2] - 1) * p.dilation[2] > detail::tma_row_halo(Tr::BN))
        return "backward_weight stride1: the filter's dilated width reaches " +
               str((p.filter[2] - 1) * p.dilation[2]) + " pixels past a row segment; the stage holds " +
               str(detail::tma_row_halo(Tr::BN));
      if (detail::tma_row_k_tiles(p, Tr::BN) > kMax32) return "problem too large for 32-bit k tiles";
      return {};
    }
  }

  // A split reduction: fp32 sums in the written tensor's layout, converted by splitk_finish.
  std::size_t workspace_2d(const ConvProblem& p, const RunOptions& opts) const {
    if constexpr (Tr::kWeightGrad) {
      const ConvProblem q = gemm_view(p);
      return weight_sum_bytes(q, weight_split(q, opts)) + pad_bytes(p) + im2col_bytes(p);
    } else {
      const Plan pl = plan(p);
      if (pl.error.empty()) return split_bytes(pl, p, opts) + pad_bytes(p) + im2col_bytes(p);
    }
    return 0;
  }

  gpuError_t run_2d(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                    const RunOptions& opts) const {
    if constexpr (Tr::kWeightGrad) {
      return run_weight_grad(p, t, workspace, stream, opts);
    } else {
      // forward: one launch x -> y; backward_data: one launch dy -> dx per stride phase. With a
      // split, every launch adds into the zeroed fp32 workspace (which also covers the pixels no
      // phase writes) and one splitk_finish converts it.
      using Raw = typename Tr::Raw;
      constexpr bool kFwd = Cfg::kVariant == Variant::Forward;
      const void* src = kFwd ? t.in : t.out;
      const void* w = t.wei;
      void* dst = kFwd ? t.out : t.in;
      const Plan pl = plan(p);
      if (!pl.error.empty()) return cudaErrorInvalidValue;
      const int64_t n = written_elems(p);
      const std::size_t ws_bytes = split_bytes(pl, p, opts);  // the split sums lead the workspace
      if (ws_bytes > 0 && workspace == nullptr) return cudaErrorInvalidValue;
      float* ws = ws_bytes > 0 ? static_cast<float*>(workspace) : nullptr;
      const bool pad_clears = ws != nullptr && padded_k(p) > 0;  // dy's padding launch zeroes the sums
      if (gpuError_t e = pad_dy(p, src, workspace, ws_bytes, stream, pad_clears ? ws : nullptr, n); e != gpuSuccess)
        return e;
      bool chained = padded_k(p) > 0;  // the next launch follows one of ours (chain.hpp)
      if (const int64_t cp = im2col_width(p); cp > 0) {  // forward: the explicit im2col GEMM
        if (workspace == nullptr) return cudaErrorInvalidValue;
        Raw* col = reinterpret_cast<Raw*>(static_cast<unsigned char*>(workspace) + ws_bytes);
        Raw* wp = col + p.N * p.out_spatial() * cp;
        if (gpuError_t e = im2col(static_cast<const Raw*>(src), col, p, cp, stream); e != gpuSuccess) return e;
        if (gpuError_t e = pad_channels(static_cast<const Raw*>(w), wp, p.K, p.filter_spatial() * p.C, cp, stream,
                                        true);
            e != gpuSuccess)
          return e;
        src = col;
        w = wp;
        chained = true;
      }
      bool clear_first = false;  // the clear is the call's first launch (nothing else precedes)
      if (ws != nullptr) {
        if (!pad_clears) {
          clear_first = !chained;
          if (gpuError_t e = launch_clear_sums(ws, n, stream, chained); e != gpuSuccess) return e;
          chained = true;
        }
      } else if (pl.zero_first) {
        if (gpuError_t e = gpuMemsetAsync(dst, 0, std::size_t(n) * sizeof(Raw), stream); e != gpuSuccess)
          return e;
        chained = false;
      }
      // Several phases fork onto side streams: their launches follow events, not a kernel.
      chained = chained && pl.phase.size() == 1;
      // Several phases: forked onto the side streams after the clear, joined before the finish.
      detail::PhaseStreams* fj = pl.phase.size() > 1 ? detail::phase_streams() : nullptr;
      const int sides = fj ? int(std::min<std::size_t>(pl.phase.size() - 1, detail::PhaseStreams::kSide)) : 0;
      if (sides > 0) {
        if (gpuError_t e = cudaEventRecord(fj->fork, stream); e != gpuSuccess) return e;
        for (int i = 0; i < sides; ++i)
          if (gpuError_t e = cudaStreamWaitEvent(fj->side[i], fj->fork, 0); e != gpuSuccess) return e;
      }
      for (std::size_t j = 0; j < pl.phase.size(); ++j) {
        const gpuStream_t st = sides > 0 && j > 0 ? fj->side[(j - 1) % detail::PhaseStreams::kSide] : stream;
        if (gpuError_t e = run_forward(pl.phase[j], src, w, p.K, dst, ws,
                                       phase_split(pl.phase[j], n, opts, pl.phase.size()), st, chained,
                                       chained && clear_first);
            e != gpuSuccess)
          return e;
      }
      for (int i = 0; i < sides; ++i) {
        if (gpuError_t e = cudaEventRecord(fj->join[i], fj->side[i]); e != gpuSuccess) return e;
        if (gpuError_t e = cudaStreamWaitEvent(stream, fj->join[i], 0); e != gpuSuccess) return e;
      }
      if (ws == nullptr) return gpuSuccess;
      return launch_splitk_finish<Cfg::kDataType>(ws, 1, 0, static_cast<Raw*>(dst), n, stream, pl.phase.size() == 1);
    }
  }

 private:
  static constexpr int kMaxSplits = 64;
  // Whether RunOptions::k_batch reaches the kernel: backward_weight, or an instance whose
  // k_batch is not 1 (forward / backward_data with k_batch 1 never split and ignore it).
  static constexpr bool kTakesKBatch = Tr::kWeightGrad || Cfg::kKBatch != 1;

  // The elements a call writes (and its split workspace holds): y, dx or dw.
  static int64_t written_elems(const ConvProblem& p) { return ckgen::written_elems(Cfg::kVariant, p); }

  // A launch's split of its reduction: k_tiles reduction tiles over `tiles` output tiles.
  // RunOptions::k_batch where the instance takes it, else the instance's kKBatch, else (0)
  // detail::tma_reduction_choice over the resident block slots (`elems`: the written
  // elements, the fixed cost of a workspace split); at most k_tiles splits, none of them
  // empty. `cluster`: the splits of a tile meet in a cluster (backward_weight, weight_split).
  struct Split {
    int k_tiles, kt_per_split, k_split;
    bool cluster;
  };
  static Split split_of(int64_t k_tiles, int64_t tiles, int64_t elems, int kb,
                        const int64_t* cluster_slots = nullptr, SplitReduce mode = SplitReduce::Workspace,
                        int blocks_per_sm = 0) {
    Split s{};
    s.k_tiles = int(std::max<int64_t>(1, k_tiles));
    const int64_t slots = int64_t(detail::device_sm_count()) * (blocks_per_sm > 0 ? blocks_per_sm : resident_blocks());
    if (kb <= 0) {
      const detail::ReductionSplit c =
          detail::tma_reduction_choice(s.k_tiles, tiles, slots, cluster_slots, elems, kMaxSplits, mode);
      kb = c.splits;
      s.cluster = c.cluster;
    } else {
      s.cluster = detail::tma_split_in_cluster(s.k_tiles, tiles, slots, cluster_slots, elems, kb, mode);
    }
    kb = std::max(1, std::min(kb, s.k_tiles));
    s.kt_per_split = int(detail::ceil_div(s.k_tiles, kb));
    s.k_split = int(detail::ceil_div(s.k_tiles, s.kt_per_split));  // no empty split
    s.cluster = s.cluster && s.k_split > 1;
    return s;
  }
  static int requested_splits(const RunOptions& opts) {
    return kTakesKBatch && opts.k_batch > 0 ? opts.k_batch : Cfg::kKBatch;
  }
  // forward / backward_data: one launch's split (64-channel chunks x taps); `phases` launches
  // share the machine (backward_data's run side by side), so the rule sees their tiles that many
  // times. An odd K (the launch's output channels) is never split automatically: the reductions
  // add column pairs.
  static Split phase_split(const Phase& ph, int64_t elems, const RunOptions& opts, std::size_t phases) {
    const ConvProblem& q = ph.q;
    int kb = requested_splits(opts);
    if (kb == 0 && q.K % 2 != 0) kb = 1;
    if constexpr (Tr::kPatch) {  // whole chunks per split (a chunk's taps share its patch)
      const Patch pt = patch_of(q);
      const int64_t tiles = q.N * detail::ceil_div(int64_t(q.out[1]) * pt.wp, Tr::BM) *
                            detail::ceil_div(q.K, Tr::BN) * q.G;
      Split sp = split_of(detail::ceil_div(q.C, Tr::BK), tiles * int64_t(phases), elems, kb,
                          nullptr, SplitReduce::Workspace, patch_resident_blocks(pt.smem));
      sp.k_tiles *= int(q.filter_spatial());
      sp.kt_per_split *= int(q.filter_spatial());
      return sp;
    }
    const int64_t tiles =
        detail::ceil_div(q.N * q.out_spatial(), Tr::BM) * detail::ceil_div(q.K, Tr::BN) * q.G;
    return split_of(q.filter_spatial() * detail::ceil_div(q.C, Tr::BK), tiles * int64_t(phases), elems, kb);
  }
  // Specialization::Stride1: the patch a block stages per 64-channel chunk of the forward
  // launch q (TmaConvArgs): rows of wp pixels, enough rows for any tile's BM positions under
  // every tap, 1 KB-aligned buffers; smem = the block's dynamic shared memory.
  struct Patch {
    int wp, rows, box, stride;
    int smem;
  };
  static Patch patch_of(const ConvProblem& q) {
    Patch pt{};
    pt.wp = int(q.out[2] + (q.filter[2] - 1) * q.dilation[2]);
    const int64_t reach = (q.filter[1] - 1) * q.dilation[1] * pt.wp + (q.filter[2] - 1) * q.dilation[2];
    pt.rows = int((pt.wp - 1 + Tr::BM - 1 + reach) / pt.wp + 1);
    pt.box = pt.rows * pt.wp * Tr::kRowBytes;
    pt.stride = (pt.box + 1023) / 1024 * 1024;
    pt.smem = Tr::kPatchFixedBytes + Tr::kPatchBuffers * pt.stride;
    return pt;
  }
  static std::string patch_refusal(const ConvProblem& p, const Phase& ph) {
    if constexpr (!Tr::kPatch) {
      (void)p;
      (void)ph;
      return {};
    } else {
      using detail::str;
      for (int i = 0; i < 3; ++i)
        if (p.stride[i] != 1)
          return "specialization stride1 needs stride 1 (got " + str(p.stride[1]) + "x" + str(p.stride[2]) + ")";
      if (!ph.dense) return "specialization stride1 needs a stride-1 problem (one dense launch)";
      const Patch pt = patch_of(ph.q);
      if (pt.wp > 256)
        return "specialization stride1: an output row plus the filter's width spans " + str(pt.wp) +
               " pixels; the copy engine's box holds at most 256";
      if (pt.rows > 256) return "specialization stride1: the staged patch needs more than 256 rows";
      if (pt.smem > detail::device_smem_optin())
        return "specialization stride1: two staged patches of " + str(pt.rows) + " x " + str(pt.wp) +
               " pixels need " + str(pt.smem) + " bytes of shared memory; the device allows " +
               str(detail::device_smem_optin());
      if (ph.q.N * ph.q.out[1] * int64_t(pt.wp) > kMax32) return "problem too large for 32-bit GEMM rows";
      return {};
    }
  }
  // Blocks of the stride1 kernel with `smem` bytes one SM holds (occupancy query; the last
  // answer is kept).
  static int patch_resident_blocks(int smem) {
    static std::atomic<uint64_t> memo{0};  // smem << 8 | blocks
    const uint64_t m = memo.load(std::memory_order_relaxed);
    if (m != 0 && int(m >> 8) == smem) return int(m & 255);
    int b = 0;
    if (prepare_launch() != gpuSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, tma_conv_kernel<Cfg, false>, Tr::kThreads, smem) !=
            cudaSuccess ||
        b < 1)
      b = 1;
    memo.store((uint64_t(smem) << 8) | uint64_t(std::min(b, 255)), std::memory_order_relaxed);
    return b;
  }
  static bool splits_any(const Plan& pl, const ConvProblem& p, const RunOptions& opts) {
    if (requested_splits(opts) == 1) return false;
    for (const Phase& ph : pl.phase)
      if (phase_split(ph, written_elems(p), opts, pl.phase.size()).k_split > 1) return true;
    return false;
  }
  // The workspace: the fp32 split sums (when any launch splits), then the padded dy (below),
  // 256-byte aligned.
  static std::size_t split_bytes(const Plan& pl, const ConvProblem& p, const RunOptions& opts) {
    if (!splits_any(pl, p, opts)) return 0;
    return (std::size_t(written_elems(p)) * sizeof(float) + 255) / 256 * 256;
  }
  // backward_data / backward_weight with K % 8 != 0 in one group (the K=36 box heads): dy's rows
  // are not 16-byte multiples, which the copy engine needs; dy is copied into the workspace with
  // K padded to a multiple of 8 (zeros). backward_data reduces over the padded channels (w is
  // read as it lies: the boxes' rows past K are zero-filled by the engine); backward_weight's
  // tiles compute the padded rows of dw as zeros and store only the K real ones. 0 = no padding.
  static int64_t padded_k(const ConvProblem& p) {
    if constexpr (Cfg::kVariant == Variant::Forward) {
      (void)p;
      return 0;
    } else {
      return p.K % 8 != 0 && p.G == 1 ? (p.K + 7) / 8 * 8 : 0;
    }
  }
  // forward / backward_weight with C % 8 != 0 in one group (the C=3 stem): the explicit im2col
  // copy (detail::tma_im2col_width, kernel_base.hpp), written into the workspace after the split
  // sums; the problem runs as a 1x1 GEMM over it (gemm_view): forward with a copy of w padded the
  // same way, backward_weight into a padded dw, cropped into dw. (Measured on the stem: copying
  // only the X taps of a filter row, a quarter of the bytes, and running a Y x 1 convolution over
  // that was slower, 124 -> 184 us: the copy engine moves 48-byte pixel rows slowly and the
  // 64-channel k tiles are 3/8 live.)
  static int64_t im2col_width(const ConvProblem& p) { return detail::tma_im2col_width(Cfg::kVariant, p); }
  static ConvProblem gemm_view(const ConvProblem& p) { return detail::tma_gemm_view(Cfg::kVariant, p); }
  // The copy of x and the padded w (forward) or dw (backward_weight), K x cp.
  static std::size_t im2col_bytes(const ConvProblem& p) {
    const int64_t cp = im2col_width(p);
    return cp > 0 ? std::size_t((p.N * p.out_spatial() + p.K) * cp) * sizeof(typename Tr::Raw) : 0;
  }
  static std::string im2col_staging_limits(const ConvProblem& p) {
    if (im2col_width(p) > 0 && im2col_tiling(p).T == 0)
      return "wavelet_tma: the im2col copy stages one window's input rows in 48 KB of shared memory; "
             "this filter's (dilated) extent x C needs more";
    return {};
  }
  // dy -> its copy with K padded (at `offset` bytes into the workspace) when padded_k says so;
  // dy is then the copy. The same launch zeroes the clear_n split sums at clear (when not null).
  static gpuError_t pad_dy(const ConvProblem& p, const void*& dy, void* workspace, std::size_t offset,
                           gpuStream_t stream, float* clear = nullptr, int64_t clear_n = 0) {
    using Raw = typename Tr::Raw;
    const int64_t kp = padded_k(p);
    if (kp == 0) return gpuSuccess;
    if (workspace == nullptr) return cudaErrorInvalidValue;
    Raw* padded = reinterpret_cast<Raw*>(static_cast<unsigned char*>(workspace) + offset);
    if (gpuError_t e =
            pad_channels(static_cast<const Raw*>(dy), padded, p.N * p.out_spatial(), p.K, kp, stream, false, clear, clear_n);
        e != gpuSuccess)
      return e;
    dy = padded;
    return gpuSuccess;
  }
  static std::size_t pad_bytes(const ConvProblem& p) {
    const int64_t kp = padded_k(p);
    return kp > 0 ? std::size_t(p.N * p.out_spatial() * kp) * sizeof(typename Tr::Raw) : 0;
  }
  // backward_weight: 64-pixel k tiles over the K x C tiles of every group and tap (p: the GEMM
  // view), and the fp32 sums a split adds into (leading the workspace, 256-byte aligned).
  // The splits of a tile meet in a cluster (SplitReduce::Cluster, or Auto where the rule or an
  // explicit k_batch of 2..8 allows it) when the ring holds the fp32 tile and the device keeps
  // such clusters resident.
  static Split weight_split(const ConvProblem& p, const RunOptions& opts) {
    const int64_t k_tiles = Tr::kRows ? detail::tma_row_k_tiles(p, Tr::BN) : detail::ceil_div(p.N * p.out_spatial(), Tr::BK);
    return split_of(k_tiles, weight_tiles(p),
                    p.weight_elems(), requested_splits(opts), Tr::kClusterFits ? cluster_slots() : nullptr,
                    opts.split_reduce);
  }
  static bool weight_packs_taps(const ConvProblem& p) { return detail::tma_weight_packs_taps(p, Tr::BN); }
  static int64_t weight_tiles(const ConvProblem& p) {
    return Tr::kRows ? detail::tma_row_tiles(p, Tr::BM) : detail::tma_weight_tiles(p, Tr::BM, Tr::BN);
  }
  static std::size_t weight_sum_bytes(const ConvProblem& q, const Split& sp) {
    if (sp.k_split == 1 || sp.cluster) return 0;
    return (std::size_t(q.weight_elems()) * sizeof(float) + 255) / 256 * 256;
  }

  // The engine's limits on an im2col map of x: corner offsets in [-128, 127] (4D maps; 5D maps
  // of 3D problems: [-16, 15]), traversal strides <= 8, 16-bit tap offsets.
  static std::string im2col_limits(const ConvProblem& p) {
    const bool deep = p.ndim == 3;
    const int64_t lim = deep ? 16 : 128;
    for (int i = deep ? 0 : 1; i < 3; ++i) {
      const int64_t lo = -p.pad_l[i], hi = p.pad_r[i] - (p.filter[i] - 1) * p.dilation[i];
      if (lo < -lim || lo >= lim || hi < -lim || hi >= lim)
        return std::string("wavelet_tma: padding / filter extent outside the im2col corner range ") +
               (deep ? "[-16, 15] (5D maps of 3D problems)" : "[-128, 127]");
      if (p.stride[i] > 8) return "wavelet_tma needs strides <= 8";
      if ((p.filter[i] - 1) * p.dilation[i] > 65535) return "wavelet_tma: filter extent > 65535";
    }
    if (p.N * p.out_spatial() > kMax32 || p.N * p.in_spatial() * p.G * p.C > (int64_t(1) << 40))
      return "problem too large for 32-bit GEMM rows";
    return {};
  }

  // What a forward launch (a forward problem or a backward_data phase) needs besides
  // im2col_limits: 16-byte rows of x and of w as read.
  static std::string forward_supported(const ConvProblem& p) {
    using detail::str;
    const char* in_c = Cfg::kVariant == Variant::Forward ? "C" : "K";
    if (p.C % 8 != 0)
      return std::string("wavelet_tma needs ") + in_c + " (" + str(p.C) +
             ") to be a multiple of 8 (16-byte rows)";
    if (Tr::kBNMajor && p.K % 8 != 0)
      return "wavelet_tma backward_data needs C (" + str(p.K) +
             ") to be a multiple of 8 (w is read as it lies: 16-byte rows)";
    if (p.G > 1 && p.C % Tr::BK != 0)
      return std::string("wavelet_tma: grouped problems need ") + in_c + " (" + str(p.C) +
             ") to be a multiple of 64 (a channel chunk must stay inside its group)";
    if (std::string e = im2col_limits(p); !e.empty()) return e;
    const int64_t tiles = detail::ceil_div(p.N * p.out_spatial(), Tr::BM) *
                          detail::ceil_div(p.K, Tr::BN) * p.G;
    if (tiles * kMaxSplits > kMax32) return "too many tiles for a 32-bit work-unit index";
    return {};
  }

  static CUtensorMapDataType map_type() {
    return Tr::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  }

  // x (NHWGC) as {G*C, W, H, N} in im2col mode: `pixels` output pixels x 64 channels per copy
  // (3D problems: NDHWGC as {G*C, W, H, D, N}).
  static bool encode_x(CUtensorMap* map, const void* x, const ConvProblem& p, int pixels) {
    static const auto enc = detail::driver_entry<detail::EncodeIm2colFn>("cuTensorMapEncodeIm2col");
    if (!enc) return false;
    // rank 4 (2D views: W, H) or 5 (3D views: W, H, D); dims and strides innermost first
    const int spatial = p.ndim == 3 ? 3 : 2, rank = spatial + 2;
    cuuint64_t dims[5] = {cuuint64_t(p.G * p.C)}, strides[4] = {dims[0] * 2};
    int lo[3], hi[3];
    cuuint32_t estr[5] = {1};
    for (int j = 0; j < spatial; ++j) {
      const int i = 2 - j;
      dims[1 + j] = cuuint64_t(p.in[i]);
      lo[j] = int(-p.pad_l[i]);
      hi[j] = int(p.pad_r[i] - (p.filter[i] - 1) * p.dilation[i]);
      estr[1 + j] = cuuint32_t(p.stride[i]);
    }
    dims[rank - 1] = cuuint64_t(p.N);
    estr[rank - 1] = 1;
    for (int r = 1; r + 1 < rank; ++r) strides[r] = strides[r - 1] * dims[r];
    return enc(map, map_type(), cuuint32_t(rank), const_cast<void*>(x), dims, strides, lo, hi, cuuint32_t(Tr::BK),
               cuuint32_t(pixels), estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  }

  // backward_weight with a 1x1 filter at stride 1 without padding reads x's pixels as they lie:
  // the reduction's rows are x's rows, which a 2D tiled map (G*C x N*H*W, box 64 channels x
  // `pixels`) copies faster than the im2col map (H200: r50_l3_1x1_256_1024 14.0 -> 10.5 us).
  // (Forward's A over the same map measured no faster and stays on the im2col map.)
  static bool plain_rows(const ConvProblem& p) {
    for (int i = 0; i < 3; ++i)
      if (p.filter[i] != 1 || p.stride[i] != 1 || p.pad_l[i] != 0 || p.pad_r[i] != 0) return false;
    return true;
  }
  static bool encode_x_rows(CUtensorMap* map, const void* x, const ConvProblem& p, int pixels) {
    const cuuint64_t dims[2] = {cuuint64_t(p.G * p.C), cuuint64_t(p.N * p.in_spatial())};
    const cuuint32_t box[2] = {cuuint32_t(Tr::BK), cuuint32_t(pixels)};
    return encode_tiled(map, x, 2, dims, box);
  }

  static bool encode_tiled(CUtensorMap* map, const void* ptr, int rank, const cuuint64_t* dims,
                           const cuuint32_t* box) {
    return detail::encode_tiled16(map, Tr::kBF16, ptr, rank, dims, box);
  }


  // The convolution geometry every launch carries.
  static void set_geometry(TmaConvArgs& a, const ConvProblem& p) {
    static_cast<ConvGeometry2D&>(a) = conv_geometry_2d(p);
    a.G = int(p.G);
    a.deep = p.ndim == 3 ? 1 : 0;  // a view is 3D only when its depth does not fold
    a.Do = int(p.out[0]);
    a.Y = int(p.filter[1]);
    a.s_d = int(p.stride[0]);
    a.pl_d = int(p.pad_l[0]);
    a.d_d = int(p.dilation[0]);
  }

  // The launch configuration of `grid` blocks in clusters of c along x (cfg points at attr:
  // built in place, not copied). The launch and the cluster occupancy query share it.
  struct ClusterLaunch {
    cudaLaunchAttribute attr{};
    cudaLaunchConfig_t cfg{};
    ClusterLaunch(unsigned grid, int c, gpuStream_t stream) {
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = unsigned(c);
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      cfg.gridDim = dim3(grid, 1, 1);
      cfg.blockDim = dim3(Tr::kThreads, 1, 1);
      cfg.dynamicSmemBytes = Tr::kSmemBytes;
      cfg.stream = stream;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    ClusterLaunch(const ClusterLaunch&) = delete;
    ClusterLaunch& operator=(const ClusterLaunch&) = delete;
  };

  // Persistent grid: every resident block slot once, at most one block per work unit. A cluster
  // reduction: one block per unit, clusters of a.cluster blocks (a tile's splits).
  // smem: stride1's (Patch::smem), else 0 (the instance's fixed size).
  // after_kernel: chained to the stream's previous kernel (chain.hpp).
  static gpuError_t launch(const TmaConvArgs& args, gpuStream_t stream, bool after_kernel, int smem = 0) {
    TmaConvArgs a = args;
    a.set_divisors();
    const int64_t units = int64_t(a.tiles_m) * a.tiles_n * a.G * a.taps * a.k_split;
    if (a.cluster > 1) {
      const ClusterLaunch cl(unsigned(units), a.cluster, stream);
      return launch_chained(kernel_of(a), cl.cfg.gridDim, cl.cfg.blockDim, cl.cfg.dynamicSmemBytes, stream,
                            after_kernel, &cl.attr, a);
    }
    const int per_sm = smem > 0 ? patch_resident_blocks(smem) : resident_blocks();
    const int64_t slots = int64_t(detail::device_sm_count()) * per_sm;
    const dim3 grid(unsigned(std::min(units, slots)), 1, 1);
    return launch_chained(kernel_of(a), grid, dim3(Tr::kThreads), std::size_t(smem > 0 ? smem : Tr::kSmemBytes),
                          stream, after_kernel, nullptr, a);
  }

  // y = conv(x, w) for the forward problem ph.q (x: NHWGC, y: NHWGK), rows placed by the phase's
  // output map; w: GKYXC (forward), or the backward_data filter as it lies (G, w_k, taps, q.K;
  // w_k = q.C unless dy was padded), its taps picked by the phase's tap map. With ws, fp32 sums
  // are added there instead (split sp).
  // late_wait: after_kernel where that kernel only zeroed ws (TmaConvArgs::late_wait).
  static gpuError_t run_forward(const Phase& ph, const void* x, const void* w, int64_t w_k, void* y,
                                float* ws, const Split& sp, gpuStream_t stream, bool after_kernel,
                                bool late_wait = false) {
    const ConvProblem& p = ph.q;
    if (!detail::aligned16({x, w, y})) return cudaErrorMisalignedAddress;
    if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
    TmaConvArgs a{};
    Patch pt{};
    if constexpr (Tr::kPatch) {  // x {G*C, W, H, N}, box 64 x wp x rows x 1 from (c, -pl_w, row - pl_h, n)
      pt = patch_of(p);
      const cuuint64_t dims[4] = {cuuint64_t(p.G * p.C), cuuint64_t(p.in[2]), cuuint64_t(p.in[1]), cuuint64_t(p.N)};
      const cuuint32_t box[4] = {cuuint32_t(Tr::BK), cuuint32_t(pt.wp), cuuint32_t(pt.rows), 1};
      if (!encode_tiled(&a.a, x, 4, dims, box)) return cudaErrorInvalidValue;
      a.wp = pt.wp;
      a.patch_rows = pt.rows;
      a.patch_box = pt.box;
      a.patch_stride = pt.stride;
    } else if (!encode_x(&a.a, x, p, Tr::BM)) {
      return cudaErrorInvalidValue;
    }
    {  // forward w: {C, taps, G*K}, box 64 x 1 x BN; backward_data w: {C, taps, G*K} as it lies
       // (K = w_k, the filter's, even when dy is padded), box 64 x 1 x 64
      const cuuint64_t dims[3] = {cuuint64_t(Tr::kBNMajor ? p.K : p.C), cuuint64_t(ph.w_taps),
                                  cuuint64_t(p.G * (Tr::kBNMajor ? w_k : p.K))};
      // Rows a B box copies: forward, the tile's filters up to K (rounded to 8; the rows past
      // them feed only output columns past K); backward_data with one k chunk (w_k <= 64), its
      // w_k rows rounded to 8 (the kernel zeroes the rows past them once: dy's padded
      // channels multiply them). The copy engine's zero-filled rows past the tensor cost time
      // (K=36 head forward 26.4 -> 20.2 us when its 28 of 64 were dropped).
      const int b_rows = Tr::kBNMajor ? (w_k <= Tr::BK ? int((w_k + 7) / 8 * 8) : Tr::BK)
                                      : int(std::min<int64_t>(Tr::BN, (p.K + 7) / 8 * 8));
      const cuuint32_t box[3] = {cuuint32_t(Tr::BK), 1, cuuint32_t(b_rows)};
      if (!encode_tiled(&a.b, w, 3, dims, box)) return cudaErrorInvalidValue;
      a.b_rows = b_rows;
      a.stage_tx = (Tr::kPatch ? 0 : Tr::kABytes) +
                   (Tr::kBNMajor ? (Tr::BN / 64) * b_rows * Tr::kRowBytes : b_rows * Tr::kRowBytes);
    }
    set_geometry(a, p);
    a.y = y;
    a.M = int(p.N * p.out_spatial());
    a.K = int(p.K);
    a.GK = int(p.G * p.K);
    a.tap0 = int(ph.tap0);
    a.tap_dd = int(ph.tap_dd);
    a.tap_dh = int(ph.tap_dh);
    a.tap_dw = int(ph.tap_dw);
    a.c_chunks = int(detail::ceil_div(p.C, Tr::BK));
    a.k_tiles = int(p.filter_spatial()) * a.c_chunks;
    a.tiles_n = int(detail::ceil_div(p.K, Tr::BN));
    a.tiles_m = int(detail::ceil_div(a.M, Tr::BM));
    a.ftaps = int(p.filter_spatial());
    if constexpr (Tr::kPatch) {  // rows: positions of one image's padded output rows
      a.M = int(p.out[1] * pt.wp);
      a.tiles_img = int(detail::ceil_div(a.M, Tr::BM));
      a.tiles_m = int(p.N) * a.tiles_img;
    }
    a.taps = 1;
    a.k_split = ws != nullptr ? sp.k_split : 1;
    a.kt_per_split = ws != nullptr ? sp.kt_per_split : a.k_tiles;
    a.ws = ws;
    a.late_wait = late_wait && after_kernel && ws != nullptr ? 1 : 0;
    a.out_dense = ph.dense ? 1 : 0;
    a.out_sn = ph.out_sn;
    a.out_sh = ph.out_sh;
    a.out_sw = ph.out_sw;
    a.out_base = ph.out_base;
    return launch(a, stream, after_kernel, Tr::kPatch ? pt.smem : 0);
  }

  // dw[g][k][tap][c] = sum over output pixels of dy[pixel][g][k] * x[pixel at tap][g][c]: A = dy
  // (M-major, BM / 64 tiled copies of 64 pixels x 64 channels), B = x (N-major, BN / 64 im2col
  // copies of the same 64 pixels at the tile's tap). A split reduction adds fp32 partial sums
  // into the zeroed workspace and splitk_finish converts them. With C % 8 != 0 (one group) it
  // runs over the im2col copy of x into a padded dw (K x cp), cropped into dw.
  static gpuError_t run_weight_grad(const ConvProblem& p, const ConvTensors& t, void* workspace,
                                    gpuStream_t stream, const RunOptions& opts) {
    using Raw = typename Tr::Raw;
    const int64_t cp = im2col_width(p);
    const ConvProblem q = gemm_view(p);
    const Split sp = weight_split(q, opts);
    const std::size_t sum_bytes = weight_sum_bytes(q, sp);
    const int64_t kp = padded_k(p);
    if ((sum_bytes > 0 || cp > 0) && workspace == nullptr) return cudaErrorInvalidValue;
    float* ws = sum_bytes > 0 ? static_cast<float*>(workspace) : nullptr;
    const void* dy = t.out;
    const void* x = t.in;
    void* dw = t.wei;
    // Each launch after the first is chained to the one before it (chain.hpp). With dy padded,
    // its padding launch zeroes the split sums too.
    const bool pad_clears = ws != nullptr && kp > 0;
    if (gpuError_t e = pad_dy(p, dy, workspace, sum_bytes, stream, pad_clears ? ws : nullptr, q.weight_elems());
        e != gpuSuccess)
      return e;
    bool chained = kp > 0;
    if (cp > 0) {
      Raw* col = reinterpret_cast<Raw*>(static_cast<unsigned char*>(workspace) + sum_bytes + pad_bytes(p));
      if (gpuError_t e = im2col(static_cast<const Raw*>(t.in), col, p, cp, stream, chained); e != gpuSuccess) return e;
      x = col;
      dw = col + p.N * p.out_spatial() * cp;
      chained = true;
    }
    bool clear_first = false;  // the clear is the call's first launch (nothing else precedes)
    if (ws != nullptr && !pad_clears) {
      clear_first = !chained;
      if (gpuError_t e = launch_clear_sums(ws, q.weight_elems(), stream, chained); e != gpuSuccess) return e;
      chained = true;
    }
    if (gpuError_t e = launch_weight_grad(q, dy, kp > 0 ? kp : q.G * q.K, x, dw, ws, sp, stream, chained,
                                          clear_first);
        e != gpuSuccess)
      return e;
    if (ws != nullptr)
      if (gpuError_t e = launch_splitk_finish<Cfg::kDataType>(ws, 1, 0, static_cast<Raw*>(dw), q.weight_elems(), stream,
                                                              true);
          e != gpuSuccess)
        return e;
    if (cp == 0) return gpuSuccess;
    return pad_channels(static_cast<const Raw*>(dw), static_cast<Raw*>(t.wei), p.K, cp, p.filter_spatial() * p.C,
                        stream, true);
  }
  // One launch of the weight-gradient GEMM over dy (rows of dy_row elements: G*K, or K padded)
  // and x into dw, or (ws not null) adding into the fp32 sums ws, with split sp. late_wait:
  // after_kernel where that kernel only zeroed ws (TmaConvArgs::late_wait).
  static gpuError_t launch_weight_grad(const ConvProblem& p, const void* dy, int64_t dy_row, const void* x,
                                       void* dw, float* ws, const Split& sp, gpuStream_t stream,
                                       bool after_kernel, bool late_wait = false) {
    if (!detail::aligned16({dy, x, dw})) return cudaErrorMisalignedAddress;
    if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
    TmaConvArgs a{};
    if constexpr (Tr::kRows) {
      // The row form: dy {dy_row, Q, P, N}, box 64 x row_len; x {G*C, W, H, N}, box 64 x
      // (row_len + the taps' reach); GEMM columns dw's X * C of the tile's filter row (taps = Y).
      const detail::TmaRowSegs rs = detail::tma_row_segs(p.out[2], Tr::BN);
      const int reach = int((p.filter[2] - 1) * p.dilation[2]);
      const cuuint64_t ad[4] = {cuuint64_t(dy_row), cuuint64_t(p.out[2]), cuuint64_t(p.out[1]), cuuint64_t(p.N)};
      const cuuint32_t abox[4] = {cuuint32_t(Tr::BK), cuuint32_t(rs.len), 1, 1};
      const cuuint64_t bd[4] = {cuuint64_t(p.G * p.C), cuuint64_t(p.in[2]), cuuint64_t(p.in[1]), cuuint64_t(p.N)};
      const cuuint32_t bbox[4] = {cuuint32_t(Tr::BK), cuuint32_t(rs.len + reach), 1, 1};
      if (!encode_tiled(&a.a, dy, 4, ad, abox) || !encode_tiled(&a.b, x, 4, bd, bbox)) return cudaErrorInvalidValue;
      a.row_len = rs.len;
      a.row_segs = rs.segs;
      a.stage_tx = (2 * rs.len + reach) * Tr::kRowBytes;
      a.K = int(p.filter[2] * p.C);
      a.tiles_n = int(p.C / 64);
      a.taps = int(p.filter[1]);
    } else {
      {  // dy: {dy_row, N*P*Q}, box 64 x 64
        const cuuint64_t dims[2] = {cuuint64_t(dy_row), cuuint64_t(p.N * p.out_spatial())};
        const cuuint32_t box[2] = {cuuint32_t(Tr::BK), cuuint32_t(Tr::BK)};
        if (!encode_tiled(&a.a, dy, 2, dims, box)) return cudaErrorInvalidValue;
      }
      a.plain_x = plain_rows(p) ? 1 : 0;
      if (!(a.plain_x ? encode_x_rows(&a.b, x, p, Tr::BK) : encode_x(&a.b, x, p, Tr::BK)))
        return cudaErrorInvalidValue;
      a.pack = weight_packs_taps(p) ? 1 : 0;
      a.K = int(a.pack ? p.filter_spatial() * p.C : p.C);
      a.tiles_n = int(detail::ceil_div(a.K, Tr::BN));
      a.taps = a.pack ? 1 : int(p.filter_spatial());
    }
    set_geometry(a, p);
    a.y = dw;
    a.M = int(p.K);
    a.GK = int(p.G * p.K);
    a.k_tiles = sp.k_tiles;
    a.tiles_m = int(detail::ceil_div(p.K, Tr::BM));
    const bool split = ws != nullptr || sp.cluster;
    a.k_split = split ? sp.k_split : 1;
    a.kt_per_split = split ? sp.kt_per_split : sp.k_tiles;
    a.cluster = sp.cluster ? sp.k_split : 1;
    a.ld_row = p.filter_spatial() * p.C;
    a.ws = ws;
    a.late_wait = late_wait && after_kernel && ws != nullptr ? 1 : 0;
    return launch(a, stream, after_kernel);
  }

  // Blocks that clusters of c (index 2..8) keep resident on the device (occupancy query once;
  // 0 where a cluster of c cannot launch).
  static const int64_t* cluster_slots() {
    static const std::array<int64_t, 9> n = [] {
      std::array<int64_t, 9> v{};
      if (prepare_launch() != gpuSuccess) return v;
      for (int c = 2; c <= 8; ++c) {
        const ClusterLaunch cl(unsigned(c), c, nullptr);
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, tma_conv_kernel<Cfg, false>, &cl.cfg) == cudaSuccess)
          v[size_t(c)] = int64_t(clusters) * c;
        else
          (void)cudaGetLastError();  // not sticky: keep it from the next launch's check
      }
      return v;
    }();
    return n.data();
  }

  // Blocks of this kernel one SM holds (occupancy query once; 1 if it fails).
  static int resident_blocks() {
    static const int n = [] {
      int b = 0;
      if (prepare_launch() != gpuSuccess ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, tma_conv_kernel<Cfg, false>, Tr::kThreads,
                                                        Tr::kSmemBytes) != cudaSuccess || b < 1)
        return 1;
      return b;
    }();
    return n;
  }

  // The kernel a launch runs: backward_weight over plain rows of x (a.plain_x) reads them
  // through the tiled map, a separate instantiation (a run-time branch in the load warp's loop
  // cost the im2col launches ~4 %, bench/NOTES.md).
  using KernelFn = void (*)(TmaConvArgs);
  static KernelFn kernel_of(const TmaConvArgs& a) {
    if constexpr (Tr::kWeightGrad)
      if (a.plain_x) return tma_conv_kernel<Cfg, true>;
    return tma_conv_kernel<Cfg, false>;
  }
  static gpuError_t prepare_launch() {
    static std::atomic<uint64_t> done{0}, done_plain{0};
    const int bytes = Tr::kPatch ? detail::device_smem_optin() : int(Tr::kSmemBytes);
    const gpuError_t e = detail::allow_dynamic_smem(tma_conv_kernel<Cfg, false>, bytes, done);
    if constexpr (Tr::kWeightGrad)
      if (e == gpuSuccess)
        return detail::allow_dynamic_smem(tma_conv_kernel<Cfg, true>, int(Tr::kSmemBytes), done_plain);
    return e;
  }
  KernelKey key_;
};

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
