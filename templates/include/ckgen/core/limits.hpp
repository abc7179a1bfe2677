// Rendered from ckgen/model/limits.py by `python -m ckgen.model.cxx`; do not edit by hand.
// The limits of the template library; the Python rules and estimates read the same
// values.
#pragma once

namespace ckgen {

// fewest stages of a staging pipeline
inline constexpr int kMinStages = 2;
// most stages of a staging pipeline
inline constexpr int kMaxStages = 8;
// most reduction splits of an implicit-GEMM / wavelet_tma call
inline constexpr int kMaxKBatch = 64;
// the groups one tile may compute
inline constexpr int kGroupsToMergeValues[] = {1, 2, 4, 8, 16, 32};
// most threads of a block
inline constexpr int kMaxThreadsPerBlock = 1024;
// most reduction slices of a direct backward_weight
inline constexpr int kDirectMaxSlices = 1024;
// pointwise: output columns a warp accumulates at once
inline constexpr int kPointwiseChunk = 64;
// pointwise: source tiles in flight (output buffers)
inline constexpr int kPointwiseStages = 2;
// pointwise: C and K per group are multiples
inline constexpr int kPointwiseChannelStep = 8;
// pointwise: registers per m16 tile a warp
inline constexpr int kPointwiseAccPerMTile = 32;
// pointwise: registers beyond accumulators
inline constexpr int kPointwiseRegisterBase = 52;
// direct matrix forward / backward_data: the C = K per group it serves
inline constexpr int kDirectMmaGroupChannels[] = {8, 16, 32};
// direct matrix backward_weight: the C = K per group it serves
inline constexpr int kDirectMmaBwdGroupChannels[] = {1, 2, 4, 8, 16, 32};
// direct matrix path: filter taps staged at once
inline constexpr int kDirectMmaMaxTaps = 9;
// direct matrix path: source rows staged (a 3x3 filter's three + 1 ahead)
inline constexpr int kDirectMmaMaxStages = 4;
// direct matrix path: static shared memory
inline constexpr int kDirectMmaMaxSmem = 48 * 1024;
// direct matrix path: staged columns per filter row beyond a 16-pixel block's
inline constexpr int kDirectMmaNarrowColumnSlack = 24;
// direct matrix path: staged columns per filter row beyond the block's pixels
inline constexpr int kDirectMmaColumnSlack = 16;
// direct matrix path: bytes after each staged column's channels
inline constexpr int kDirectMmaColumnPad = 16;
// direct matrix backward_weight: filter rows (Z * Y) a unit reads
inline constexpr int kDirectMmaBwdFilterRows = 3;
// direct matrix backward_weight: gradient buffers (units in flight + 1)
inline constexpr int kDirectMmaBwdMaxStages = 8;
// direct matrix backward_weight: dynamic shared memory (2 blocks per SM)
inline constexpr int kDirectMmaBwdMaxSmem = 112 * 1024;
// direct backward_weight: most pixels a thread of the nine-tap path
inline constexpr int kDirectBwdLinearMaxPixels = 2;
// direct backward_weight: floats of the block's combining buffer
inline constexpr int kDirectCombineFloats = 5 * 1024;
// direct backward_weight: floats of padding per row of the combining buffer
inline constexpr int kDirectCombinePad = 4;
// wavelet_tma: tile N of backward_data / backward_weight
inline constexpr int kTmaTileN[] = {64, 128, 192, 256};
// wavelet_tma: tile N of forward
inline constexpr int kTmaForwardTileN[] = {64, 128, 160, 192, 256};
// wavelet_tma bias_grad: shared bytes of the all-ones operand of dy's row sums
inline constexpr int kTmaBiasGradOnesBytes = 256;
// wavelet_tma stats: most fp32 accumulators a math thread holds beside the channel sums
inline constexpr int kTmaStatsMaxAcc = 64;
// direct row windows: the filter widths compiled
inline constexpr int kDirectWindowWidths[] = {3, 5, 7, 11};
// direct row windows: most bytes of staged filter (forward / backward_data)
inline constexpr int kDirectWindowMaxSmem = 48 * 1024;
// direct: floats of padding per filter row in shared memory
inline constexpr int kDirectFilterRowPad = 4;

// Whether v is one of the values of an array above.
template <int N>
constexpr bool one_of(const int (&values)[N], int v) {
  for (int i = 0; i < N; ++i)
    if (values[i] == v) return true;
  return false;
}

}  // namespace ckgen
