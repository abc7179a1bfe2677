// wavelet_tma's kernel arguments (TmaConvArgs: the two tensor maps and the geometry the device
// needs) and its traits (TmaTraits: tile, warpgroups, ring stages, shared-memory layout).
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/fast_div.hpp"
#include "ckgen/core/forms.hpp"
#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/block/tma_staging.hpp"
#include "ckgen/schedule/tma_phases.hpp"

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
  CUtensorMap ym;  // a gradient mask's saved forward output y: map a's twin over y (else unused)
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
  // buffers patch_stride bytes apart (a gradient mask: y's patch in the second half), and tap (fy, fx) reads its A tile from position
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
  // A fused epilogue's operands (epilogue/fusion.hpp, forward); read only by fused instances.
  EpilogueArgs ep;
  // backward_weight's bias_grad (epilogue/tma_ws_bias_grad.hpp): several units add to a channel's
  // db (its columns x taps share the sums, or the reduction is split), which the call then
  // clears first; else the one unit stores it.
  CKGEN_HOST_DEVICE bool bias_grad_adds() const { return tiles_n * taps > 1 || k_split > 1; }
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
  using OutRaw = typename DataTypeTraits<Cfg::kOutDataType>::raw;  // a forward's written output
  static constexpr int BM = Cfg::Tile::kM, BN = Cfg::Tile::kN, BK = Cfg::Tile::kK;
  static constexpr int kMathGroups = detail::tma_math_groups(Cfg::Waves::kM);  // share one tile
  static constexpr int RepM = detail::tma_rep_m(BM, Cfg::Waves::kM);
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
  // A gradient mask (backward_data, Cfg::kGradMask): a stage holds y's tile after dy's A tile
  // and w's B tile, copied through TmaConvArgs::ym at the A tile's coordinates (the same layout
  // and swizzle). kMaskRegs: each math warp loads its A fragments and y's into registers,
  // multiplies in the gradient of the activation at y and issues the wgmma with A from registers
  // (tma_ws::load_masked_a). stride1 (each patch buffer holds y's patch in its second half) and
  // swap_ab (the pixel tile is the instruction's B) multiply it into shared memory instead, once
  // per copy (tma_ws::mask_rows).
  static constexpr bool kMask = Cfg::kGradMask;
  static constexpr int kYBytes = kMask ? kABytes : 0;
  static constexpr int kStageBytes = kABytes + kBBytes + kYBytes;
  static constexpr bool kStaged = Cfg::kEpilogue == Epilogue::CShuffle;
  // CShuffle slab per math warp: 16 rows x kSlabCols columns, rows kSlabStride elements apart.
  static constexpr int kSlabCols = 32, kSlabStride = 40;
  static constexpr int kSlabBytes = 16 * kSlabStride * int(sizeof(Raw));
  static constexpr int kSlabsBytes = kStaged ? (kMathThreads / 32) * kSlabBytes : 0;  // all math warps'
  // Ring, 2 mbarriers per stage, slabs, slack to align the ring to the 1024-byte swizzle atom.
  // bias_grad: the all-ones operand of dy's row sums after the slabs (tma_ws_bias_grad.hpp).
  static constexpr int kOnesBytes = Cfg::kBiasGrad ? kTmaBiasGradOnesBytes : 0;
  static constexpr int kSmemBytes = detail::tma_smem_bytes(BM, BN, S, kMathThreads / 32, int(sizeof(Raw)),
                                                           kStaged, Cfg::kBiasGrad, kMask);
  static_assert(kSmemBytes == S * kStageBytes + 2 * S * 8 + kSlabsBytes + kOnesBytes + 1024,
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
  static constexpr bool kRows = is_row_form(Cfg::kPipeline, Cfg::kVariant, Cfg::kSpecialization);
  static constexpr int kRowPos = detail::tma_row_positions(BN);
  static constexpr int kRowBlock = (BM + BN - kRowPos) * kRowBytes;
  static constexpr int kPatchBuffers = 2;
  static constexpr int kPatchCopies = kMask ? 2 : 1;  // dy's patch (and y's) in a buffer
  static constexpr bool kMaskRegs = kMask && !kPatch && !kSwap;  // (kMask above)
  static constexpr int kRingStage = kPatch ? kBBytes : kStageBytes;
  static constexpr int kPatchFixedBytes = S * kBBytes + 2 * (S + kPatchBuffers) * 8 + kSlabsBytes + 1024;
  // Cluster reduction: a block's fp32 partial tile in the ring (free once its one unit is
  // done), rows kPartLd floats apart (8 floats of padding: a half-warp's 8-byte stores of four
  // rows fall in distinct banks).
  static constexpr int kPartLd = BN + 8;
  static constexpr bool kClusterFits = BM * kPartLd * 4 <= S * kStageBytes && !kPingPong && !kRows;

  static_assert(Cfg::kKBatch >= 0 && Cfg::kStage == Stage::One,
                "ckgen: wavelet_tma splits its reduction with fp32 reductions (stage one)");
  static_assert(Cfg::kDataType == DataType::FP16 || Cfg::kDataType == DataType::BF16,
                "ckgen: wavelet_tma needs fp16 or bf16");
  static_assert(Cfg::kOutDataType == DataType::FP16 || Cfg::kOutDataType == DataType::BF16 || !kStaged,
                "ckgen: wavelet_tma's CShuffle copies 16-bit slabs: it writes fp16 or bf16");
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
  static_assert(kBNMajor ? one_of(kTmaTileN, BN) : one_of(kTmaForwardTileN, BN),
                "ckgen: wavelet_tma needs Tile N in kTmaTileN (forward: kTmaForwardTileN; core/limits.hpp)");
  static_assert(kSwap || (BM % (64 * kMathGroups) == 0 && RepM >= 1 && RepM <= 3),
                "ckgen: wavelet_tma needs Tile M = 64, 128 or 192 per math warpgroup");
  static_assert(BM <= 256, "ckgen: an im2col box holds at most 256 pixels");
  static_assert(Cfg::kLoadWaves == 1 && (Cfg::kMathWaves == Cfg::Waves::kM ||
                                         (kPingPong && Cfg::Waves::kM == 4 && !kSwap && !kPatch)),
                "ckgen: wavelet_tma has one load warp (load waves 1) and math waves = waves M, or "
                "2 x 4 (ping-pong; no swap_ab, no stride1)");
  static_assert(S >= kMinStages && S <= kMaxStages, "ckgen: wavelet_tma needs kMinStages..kMaxStages stages");
  static_assert(Cfg::kGroupsToMerge == 1 && Cfg::kReduction == Reduction::SplitK && !Cfg::kPersistent &&
                    (Cfg::kSpecialization == Specialization::Default || kPatch || kRows),
                "ckgen: wavelet_tma: no merged groups, split-K only, specialization default or stride1");
  static_assert(!kMask || (Cfg::kVariant == Variant::BackwardData && !Cfg::kBiasGrad),
                "ckgen: wavelet_tma applies a gradient mask alone, in backward_data");
  static_assert(!kRows || (BM == 64 && !kPingPong && BN >= 128),
                "ckgen: backward_weight stride1 (the row form) needs Tile M 64, one math warpgroup, Tile N >= 128");
  static_assert(BN % kSlabCols == 0, "ckgen: wavelet_tma cshuffle stages 32-column slabs");
  static_assert(Cfg::kVecA == 8 && Cfg::kVecB == 8 && Cfg::kVecC == 8,
                "ckgen: wavelet_tma moves 16-byte rows (vector 8, 8, 8)");
  static_assert(Cfg::kNDim >= 1 && Cfg::kNDim <= 3,
                "ckgen: wavelet_tma is 1D / 2D / 3D");
};

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
