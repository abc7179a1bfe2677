// DirectTraits<Cfg>: the thread layout of a Pipeline::Direct instance (pipeline/depthwise.hpp),
// and DirectPath: how a forward / backward_data thread finds a tap's source pixel.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>
#include <type_traits>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/vocab.hpp"
#include "ckgen/pipeline/direct_common.hpp"
#include "ckgen/pipeline/direct_mma.hpp"
#include "ckgen/pipeline/direct_mma_bwd_weight.hpp"
#include "ckgen/schedule/direct_plan.hpp"

namespace ckgen {

template <class Cfg>
struct DirectTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr DataType kDataType = Cfg::kDataType;
  static constexpr int V = Cfg::kVecC;
  static constexpr int P = Cfg::Tile::kM;
  static constexpr int Gt = Cfg::Tile::kN;  // channels of a block (depthwise: groups)
  static constexpr int Cg = Cfg::Tile::kK;  // channels per group (C = K) served
  static constexpr int kThreads = Cfg::Waves::kM * Cfg::kWarpSize;
  static constexpr int TG = Gt / V;
  static constexpr int Rows = kThreads / TG;
  static constexpr int PP = direct_fma_pixels_per_thread(P, Gt, V, kThreads);  // = P / Rows

  static_assert(Cfg::kPipeline == Pipeline::Direct, "ckgen: DirectTraits is for Pipeline::Direct");
  static_assert(Cfg::kVecA == V && Cfg::kVecB == V && is_pow2_upto8(V) && V * sizeof(Raw) <= 16,
                "ckgen: direct needs one vector size 1/2/4/8 of at most 16 bytes");
  // WarpTile<16, 8, 16>: the matrix path (forward / backward_data pipeline/direct_mma.hpp, backward_weight
  // pipeline/direct_mma_bwd_weight.hpp), else plain FMA (WarpTile<1, 1, 1>).
  static constexpr bool kMma = Cfg::WarpTile::kM == 16;
  // Groups of 16 / 32 channels: the matrix paths only (their traits check Cg).
  static_assert((kMma || ((Cg == 1 || Cg == 2 || Cg == 4 || Cg == 8) && V % Cg == 0)) &&
                    Cfg::Waves::kN == 1 && Cfg::Waves::kK == 1,
                "ckgen: direct needs Tile<P, Ct, Cg> with Cg in 1/2/4/8 dividing V, Waves<w, 1, 1>");
  static_assert((Cfg::WarpTile::kM == 1 && Cfg::WarpTile::kN == 1 && Cfg::WarpTile::kK == 1) ||
                    (kMma && Cfg::WarpTile::kN == 8 && Cfg::WarpTile::kK == 16),
                "ckgen: direct takes WarpTile<1, 1, 1> (FMA) or <16, 8, 16> (mma.sync)");
  // The FMA path's thread layout (the matrix paths lay out their warps in their own traits).
  static_assert(kMma || (Gt % V == 0 && kThreads % TG == 0 && P % Rows == 0 && PP >= 1),
                "ckgen: direct threads must tile the block's groups and pixels");
  // Blocks per SM the launch bounds ask for: FMA 1 (see depthwise_conv_kernel), the matrix
  // paths their traits' kMinBlocks (named lazily: only the chosen traits are instantiated).
  struct FmaBlocks {
    static constexpr int kMinBlocks = 1;
  };
  using MinBlocksFrom =
      std::conditional_t<!kMma, FmaBlocks,
                         std::conditional_t<kVariant == Variant::BackwardWeight, DirectMmaBwdTraits<Cfg>,
                                            DirectMmaTraits<Cfg>>>;
  static constexpr int kMinBlocks = MinBlocksFrom::kMinBlocks;
  static_assert(kThreads <= kMaxThreadsPerBlock, "ckgen: too many threads per block");
  static_assert(Cfg::kGroupsToMerge == 1 && Cfg::kEpilogue == Epilogue::Default &&
                    Cfg::kSpecialization == Specialization::Default &&
                    Cfg::kScheduler == Scheduler::Intrawave && Cfg::kReduction == Reduction::SplitK &&
                    !Cfg::kPersistent && Cfg::kLoadWaves == 0 && Cfg::kMathWaves == 0,
                "ckgen: direct takes the default value of every GEMM-only field");
  static_assert(!Cfg::kFused || (kVariant == Variant::Forward && Cfg::kEpilogueOps &&
                                 (!kMma || (!Cfg::kStats && Cfg::kOutDataType == Cfg::kDataType))),
                "ckgen: direct fuses forward epilogues (the matrix path: no stats or conversion)");
  static_assert(kVariant == Variant::BackwardWeight || (Cfg::kKBatch == 1 && Cfg::kStage == Stage::One),
                "ckgen: direct forward / backward_data do not split (kKBatch 1, Stage::One)");
};

// How forward / backward_data find a tap's source pixel (DepthwiseKernel::run picks one):
//   Linear  c + k * step (forward: c = o * s - pl, step = dil; backward_data with unit strides:
//           c = i + pl, step = -dil): one uniform offset per tap from a per-pixel base;
//   Window  Linear with a compile-time filter, W stride and dilation 1 and a thread's PP pixels
//           in one row (Wo % PP == 0): per filter row the PP + X - 1 source columns are loaded
//           and converted once and shared by the PP pixels (instead of PP * X loads);
//   Gather  backward_data with a stride > 1: o = (i + pl - k * dil) / s where exact and in range.
//   QuadS2  backward_data, 1x3x3 filter, H and W stride 2, dilation 1, depth stride 1 without
//           depth padding: a thread's pixel m is a quad of 2 x 2 input-gradient pixels (a.pixels
//           and a.fd_pix count quads). Over the quad's rows 2 qa + u (u = 0, 1) and the taps
//           ky = 0..2 the numerators 2 qa + u + pl - ky are four consecutive integers, so the
//           quad reads two dy rows r0, r0 + 1 (r0 = qa + (pl - 2 + (pl & 1)) / 2), and likewise
//           two dy columns: 4 loads for 4 pixels instead of 36 gathered taps. Which (u, ky) pairs
//           meet, and in which of the two rows, follows from the padding's parity alone.
//   WindowS2  backward_weight only: Window at W stride 2 (the PP pixels read 2 * PP + KX - 2
//           columns per filter row). backward_weight takes Window / WindowS2 for the depthwise
//           compile-time filter: per filter row a thread loads and converts the (PP - 1) * s + KX
//           input columns its PP output pixels read once, instead of PP * KX loads.
//   RowPair forward, depthwise 1x3x3 filter, H and W stride and dilation 1 (direct_fma_row_pair):
//           a thread's PP pixels are two output rows x PC = PP / 2 columns, so each of the KY + 1
//           source rows under them is loaded and converted once for both rows: (KY + 1) x
//           (PC + KX - 1) loads instead of the window's KY x (PP + KX - 1) (4 x 6 = 24 against 30
//           at PP = 8). a.pixels and a.fd_pix count the pair order (direct_fma_pixels): index i
//           is column i % PC of row i / PC % 2 of unit i / PP, unit u = ((n * Do + d) *
//           ceil(Ho / 2) + hp) * (Wo / PC) + wc at rows 2 hp, 2 hp + 1 and columns wc * PC ...;
//           the row past an odd Ho is dead (not stored).
//   Rows / RowsS2  depthwise filters the 1x3x3 paths do not take, W dilation 1
//           (pipeline/depthwise_rows.hpp, direct_row_window): a thread's PP pixels are a unit of
//           one row (rows padded to whole units: a.pixels and a.fd_pix count the units' pixels),
//           per filter row the source columns under them loaded once; KX is the compiled window
//           width, the filter rows a runtime loop. RowsS2: forward and backward_weight W stride
//           2, backward_data any stride > 1 (the units split by W phase).
enum class DirectPath { Linear, Window, Gather, WindowS2, QuadS2, RowPair, Rows, RowsS2 };

}  // namespace ckgen
