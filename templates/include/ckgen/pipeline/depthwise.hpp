// DepthwiseKernel<Config>: the direct (not implicit-GEMM) kernel of Pipeline::Direct instances,
// for depthwise problems (C = K = 1 per group) and problems with small groups (C = K = Cg per
// group, Cg = 2, 4 or 8: ResNeXt-style). NDHWGC / GKZYXC / NDHWGK: the
// G * Cg channels of a pixel are contiguous, and output channel j of group j / Cg reads the input
// channels of the same group, so a thread's V output channels (whole groups) read the V input
// channels at the same positions. Any filter size, stride, dilation and (asymmetric) padding,
// 1D/2D/3D. WarpTile<16, 8, 16> instances (Cg = 8, 16-bit, forward / backward_data) run the
// matrix path instead (pipeline/direct_mma.hpp: mma.sync per tap, its own limits in is_supported).
//
// Config fields (ckgen/space/rules/direct.py checks them; DirectTraits static_asserts them):
//   Tile<P, Ct, Cg>  a block covers Ct channels (Ct / Cg groups) and P pixels; Cg: the channels
//   per group it serves (1 = depthwise); Waves<w, 1, 1>: w warps;
//   kVecA = kVecB = kVecC = V: each thread owns V consecutive channels (V / Cg whole groups;
//   16-byte accesses at V = 8 for fp16 / bf16, V = 4 for fp32). Threads: TG = Ct / V across
//   the channels (fastest), Rows = threads / TG across the pixels, PP = P / Rows per thread.
//
// forward / backward_data: a thread owns V channels at PP consecutive pixels (of the output, of
//   the input gradient), loops over the taps with fp32 accumulators, each tap's weights shared
//   by its PP pixels; a 1x3x3 filter takes a compile-time path (depthwise: the group vector's
//   whole filter in registers, loaded once as V * 9 contiguous elements; Cg > 1: the block's
//   Ct x 9 x Cg weights in shared memory as fp32, [tap][c][channel]), other depthwise filters
//   the row windows (pipeline/depthwise_rows.hpp: a filter row's source columns loaded once for
//   the thread's pixels), any other filter the generic path (the tap's weights read per tap,
//   L1-resident). forward applies its fused epilogue in the store. Per tap and input channel c of
//   the group, output channel j adds its group's input channel c times w(j, tap, c).
//   backward_data gathers: dx[i] = sum over taps of dy[(i + pl - f * d) / s] * w[f] where the
//   division is exact and in range (no zero insertion).
// backward_weight: block (slice, channel tile) reduces dy * x over its slice of the N*Do*Ho*Wo
//   output pixels for its Gt channels and all taps (depthwise 1x3x3: all 9 x V accumulators in
//   registers, the source read per filter row as a window of the thread's pixels where they
//   share a row (DirectPath::Window / WindowS2) or per tap (Linear, up to 2 pixels per thread);
//   otherwise, and for small groups, one tap at a time with Cg x V accumulators),
//   combines its threads through shared memory ([Rows][Gt] floats), then: one slice -> converted
//   straight into dw; Stage::One -> fp32 atomics into a zeroed workspace of G * taps floats +
//   convert; Stage::Two -> its slice of a [slices][G * taps] fp32 workspace + reduce/convert
//   (schedule/splitk_finish.hpp). Slices: RunOptions::k_batch, else the
//   instance's kKBatch, else direct_auto_slices (schedule/direct_plan.hpp).
#pragma once

#include "ckgen/core/portability.hpp"

#include "ckgen/core/chain.hpp"
#include "ckgen/pipeline/depthwise_fwd.hpp"
#include "ckgen/pipeline/depthwise_rows.hpp"
#include "ckgen/pipeline/depthwise_weight.hpp"
#include "ckgen/pipeline/direct_mma.hpp"
#include "ckgen/pipeline/direct_mma_bwd_weight.hpp"

namespace ckgen {

// KZ, KY, KX > 0: compile-time filter size (else 0, 0, 0); Rows / RowsS2: KZ = KY = 0 and KX the
// window's compiled width.
// FMA: one block per SM is enough: registers up to the per-thread maximum (without the minimum
// ptxas caps 256-thread blocks at 64 registers and spills the register-held filter). The matrix
// paths: see their traits' kMinBlocks.
template <class Cfg, int KZ, int KY, int KX, DirectPath Path>
CKGEN_GLOBAL void CKGEN_LAUNCH_BOUNDS_MIN_BLOCKS(DirectTraits<Cfg>::kThreads, DirectTraits<Cfg>::kMinBlocks)
    depthwise_conv_kernel(const CKGEN_GRID_CONSTANT DirectArgs a) {
  // backward_weight's conversion of the slices (launch_splitk_finish, chained) may be placed now:
  // its blocks wait in chain_wait until this grid has completed.
  if constexpr (Cfg::kVariant == Variant::BackwardWeight) chain_release();
  chain_wait();  // global memory from here on (core/chain.hpp)
  if constexpr (Cfg::kVariant == Variant::BackwardWeight && DirectTraits<Cfg>::kMma)
    direct::bwd_weight_mma<Cfg>(a);
  else if constexpr (Cfg::kVariant == Variant::BackwardWeight)
    direct::bwd_weight<Cfg, KZ, KY, KX, Path>(a);
  else if constexpr (DirectTraits<Cfg>::kMma)
    direct::fwd_bwd_data_mma<Cfg, KZ, KY, KX, Path == DirectPath::Gather>(a);
  else if constexpr ((Path == DirectPath::Rows || Path == DirectPath::RowsS2) && Cfg::kVariant == Variant::Forward)
    direct::rows_fwd<Cfg, KX, Path == DirectPath::RowsS2 ? 2 : 1>(a);
  else if constexpr (Path == DirectPath::Rows || Path == DirectPath::RowsS2)
    direct::rows_bwd_data<Cfg, KX, Path == DirectPath::RowsS2>(a);
  else
    direct::fwd_bwd_data<Cfg, KZ, KY, KX, Path>(a);
}

}  // namespace ckgen
