// Host-side plan of the direct (depthwise) kernel that the kernel (pipeline/depthwise.hpp) and the
// dispatcher's cost model (dispatch/dispatcher.hpp) share: which pixels it iterates and how
// backward_weight splits its reduction over them.
#pragma once

#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <cstdint>

#include "ckgen/core/limits.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// The pixels a direct kernel iterates: forward and backward_weight the output pixels
// (N * Do * Ho * Wo), backward_data the input pixels it writes (N * Di * Hi * Wi).
inline int64_t direct_pixels(Variant v, const ConvProblem& p) {
  return v == Variant::BackwardData ? p.N * p.in_spatial() : p.N * p.out_spatial();
}

// The matrix path's W phases (pipeline/direct_mma.hpp kPhased): backward_data at a stride > 1
// takes a row's pixels of one W phase a block (stride W of them a row), else 1.
inline bool direct_mma_phased(Variant v, const ConvProblem& p) {
  return v == Variant::BackwardData && (p.stride[0] > 1 || p.stride[1] > 1 || p.stride[2] > 1);
}
inline int64_t direct_mma_phases(Variant v, const ConvProblem& p) {
  return direct_mma_phased(v, p) ? p.stride[2] : 1;
}
// Bands of band_rows rows per (n, d) plane of the iterated tensor: ceil(H / band_rows). Phased
// (direct_mma_phased): a band takes band_rows rows of one H phase (stride H apart) and one W
// phase, stride W x stride H x ceil(ceil(H / stride H) / band_rows) of them (the last of an H
// phase may fall short, or past its rows).
inline int64_t direct_bands_per_plane(Variant v, const ConvProblem& p, int band_rows) {
  const int64_t hlen = v == Variant::BackwardData ? p.in[1] : p.out[1];
  if (!direct_mma_phased(v, p)) return (hlen + band_rows - 1) / band_rows;
  const int64_t sy = p.stride[1], per_phase = (hlen + sy - 1) / sy;
  return p.stride[2] * sy * ((per_phase + band_rows - 1) / band_rows);
}
// The forward / backward_data matrix path's blocks per group tile: segments of its bands,
// planes x bands x ceil(W / W phases / tile_pixels).
inline int64_t direct_band_segments(Variant v, const ConvProblem& p, int tile_pixels, int band_rows) {
  const bool bd = v == Variant::BackwardData;
  const int64_t planes = p.N * (bd ? p.in[0] : p.out[0]), wlen = bd ? p.in[2] : p.out[2];
  const int64_t ph = direct_mma_phases(v, p), row = (wlen + ph - 1) / ph;
  return planes * direct_bands_per_plane(v, p, band_rows) * ((row + tile_pixels - 1) / tile_pixels);
}
// The matrix path's units (pipeline/direct_mma.hpp, pipeline/direct_mma_bwd_weight.hpp): row segments of
// tile_pixels pixels along the W rows of the iterated tensor (bands of one row).
inline int64_t direct_row_segments(Variant v, const ConvProblem& p, int tile_pixels) {
  return direct_band_segments(v, p, tile_pixels, 1);
}

// The forward / backward_data matrix path's shared memory (pipeline/direct_mma.hpp; ckgen/model/limits.py holds the
// constants for its shared-memory check): the weights of up to kDirectMmaMaxTaps taps (group_channels
// per output channel), and a ring
// of staged source rows, each direct_mma_cols(tile_pixels) columns of the block's channels
// padded by kDirectMmaColumnPad bytes, as many as fit in kDirectMmaMaxSmem (at most
// kDirectMmaMaxStages; the constants in core/limits.hpp). The kernel's traits and the
// dispatcher's cost model (bands need stages >= Y + 1) both read it here. The column slack
// covers (X - 1) * dil up to 16 at stride 1; 16-pixel blocks stage kDirectMmaNarrowColumnSlack
// beyond their pixels, the columns of a 3-wide filter at W stride 2 (larger W strides and
// the wider blocks' strided rows take the other paths; is_supported compares the columns).
constexpr int direct_mma_cols(int tile_pixels) {
  return tile_pixels + (tile_pixels <= 16 ? kDirectMmaNarrowColumnSlack : kDirectMmaColumnSlack);
}
struct DirectMmaRing {
  int row_bytes;     // one staged source row
  int weight_bytes;  // the staged weights
  int stages;        // staged rows
};
constexpr DirectMmaRing direct_mma_ring(int tile_pixels, int tile_channels, int group_channels, int elem_bytes) {
  const int row = direct_mma_cols(tile_pixels) * (tile_channels * elem_bytes + kDirectMmaColumnPad);
  const int weights = kDirectMmaMaxTaps * tile_channels * group_channels * elem_bytes;
  const int fit = (kDirectMmaMaxSmem - weights) / row;
  return {row, weights, fit < kDirectMmaMaxStages ? fit : kDirectMmaMaxStages};
}

// The FMA path of forward / backward_data (pipeline/depthwise.hpp): threads take V channels of a vector
// across the tile's channels and PP consecutive pixels each (pixels per thread for a tile of
// tile_pixels x tile_channels, vectors of vec channels, `threads` threads).
constexpr int direct_fma_pixels_per_thread(int tile_pixels, int tile_channels, int vec, int threads) {
  return tile_pixels / (threads / (tile_channels / vec));
}
// Whether the FMA launch takes the window path (DirectPath::Window: a 1x3x3 filter, no stride-class
// gather, W stride and dilation 1, and a thread's pp pixels within one row of the iterated tensor):
// per filter row a thread loads its pp + 2 source columns once.
inline bool direct_fma_window(Variant v, const ConvProblem& p, int pp) {
  const bool bd = v == Variant::BackwardData;
  const bool k3x3 = p.filter[0] == 1 && p.filter[1] == 3 && p.filter[2] == 3;
  const bool gather = bd && (p.stride[0] > 1 || p.stride[1] > 1 || p.stride[2] > 1);
  return k3x3 && !gather && p.stride[2] == 1 && p.dilation[2] == 1 && pp > 0 && (bd ? p.in[2] : p.out[2]) % pp == 0;
}

// The generic-filter row windows (DirectPath::Rows / RowsS2, pipeline/depthwise_rows.hpp): a
// depthwise filter the 1x3x3 paths do not take, W dilation 1, pp >= 2 pixels a thread; forward
// and backward_weight W stride 1 or 2, backward_data any strides (a W phase's pixels meet every
// S-th tap). Returns the compiled window the launch takes, the first of kDirectWindowWidths at
// least the taps a filter row applies (X; backward_data ceil(X / S)), else 0. forward /
// backward_data stage the block's filter (taps x (tile_channels + pad) floats) in at most
// kDirectWindowMaxSmem bytes.
// The bytes of dynamic shared memory a forward / backward_data row window stages the filter in.
inline int64_t direct_row_window_smem(const ConvProblem& p, int tile_channels) {
  return p.filter_spatial() * (tile_channels + kDirectFilterRowPad) * int64_t(sizeof(float));
}
inline int direct_row_window(Variant v, const ConvProblem& p, int pp, int tile_channels) {
  const bool k3x3 = p.filter[0] == 1 && p.filter[1] == 3 && p.filter[2] == 3;
  const bool bd = v == Variant::BackwardData;
  if (p.C != 1 || p.K != 1 || k3x3 || pp < 2 || p.dilation[2] != 1 || (!bd && p.stride[2] > 2)) return 0;
  if (v != Variant::BackwardWeight && direct_row_window_smem(p, tile_channels) > kDirectWindowMaxSmem) return 0;
  const int64_t row_taps = bd ? (p.filter[2] + p.stride[2] - 1) / p.stride[2] : p.filter[2];
  for (const int w : kDirectWindowWidths)
    if (row_taps <= w) return w;
  return 0;
}
// The row windows' pixel indices: the iterated tensor's rows padded to whole units of pp pixels
// (a unit is pp pixels of one row, backward_data of one of its S = stride W phases; the pixels
// past the row's end are dead): planes x a row's units (S x ceil(ceil(W / S) / pp)) x pp.
inline int64_t direct_row_window_units(Variant v, const ConvProblem& p, int pp) {
  const bool bd = v == Variant::BackwardData;
  const int64_t s = bd ? p.stride[2] : 1, wlen = bd ? p.in[2] : p.out[2];
  return s * (((wlen + s - 1) / s + pp - 1) / pp);
}
inline int64_t direct_row_window_pixels(Variant v, const ConvProblem& p, int pp) {
  const bool bd = v == Variant::BackwardData;
  const int64_t planes = p.N * (bd ? p.in[0] * p.in[1] : p.out[0] * p.out[1]);
  return planes * direct_row_window_units(v, p, pp) * pp;
}

// Whether the forward FMA launch takes two output rows a thread (DirectPath::RowPair): a depthwise
// 1x3x3 filter, H and W stride and dilation 1, and a thread's pp (even, >= 4) pixels two rows of
// pp / 2 columns within one row of the output (Wo % (pp / 2) == 0). (backward_weight gains
// nothing from the pairs.)
inline bool direct_fma_row_pair(Variant v, const ConvProblem& p, int pp) {
  const bool k3x3 = p.filter[0] == 1 && p.filter[1] == 3 && p.filter[2] == 3;
  return v == Variant::Forward && p.C == 1 && p.K == 1 && k3x3 && p.stride[1] == 1 && p.stride[2] == 1 &&
         p.dilation[1] == 1 && p.dilation[2] == 1 && pp >= 4 && pp % 2 == 0 && p.out[1] >= 2 &&
         p.out[2] % (pp / 2) == 0;
}
// The pixel indices the FMA launch iterates for pp pixels a thread: direct_pixels, or in the pair
// order (DirectPath::RowPair) N * Do * ceil(Ho / 2) * 2 * Wo (a dead row past an odd Ho).
inline int64_t direct_fma_pixels(Variant v, const ConvProblem& p, int pp) {
  if (!direct_fma_row_pair(v, p, pp)) return direct_pixels(v, p);
  return p.N * p.out[0] * ((p.out[1] + 1) / 2) * 2 * p.out[2];
}
// The matrix path's bands (forward / backward_data, pipeline/direct_mma.hpp): a block takes band_rows
// rows of one (n, d) plane and stages the taps' weights once for all of them. Where the rows
// share source rows along H (a filter of depth 1, unit stride and dilation along H, and room
// for the filter's rows plus one in flight: stages >= Y + 1; direct_mma_band_shares_rows) it
// stages each source row once; otherwise each row stages its own filter rows. Phased blocks
// (strided backward_data) take band_rows rows of one H phase, which the same taps reach (their
// walked taps' weights).
inline bool direct_mma_band_shares_rows(Variant v, const ConvProblem& p, int stages) {
  return !direct_mma_phased(v, p) && p.filter[0] == 1 && p.stride[1] == 1 && p.dilation[1] == 1 &&
         stages >= p.filter[1] + 1;
}
// The band is the longest of kDirectMmaBandRows that still leaves a block for every compute unit
// (row_blocks: the blocks of one row each); else one row a block. Longer bands leave too few
// blocks to fill the device.
inline constexpr int kDirectMmaBandRows[] = {4, 2};
inline int direct_mma_band_rows(int64_t row_blocks, int compute_units) {
  for (const int b : kDirectMmaBandRows)
    if (row_blocks / b >= compute_units) return b;
  return 1;
}

// backward_weight's FMA path (pipeline/depthwise.hpp bwd_kernel) for a tile of pp pixels a thread:
// depthwise (Cg = 1) with a 1x3x3 filter takes a window of the thread's pixels per filter row
// where they share an output row (W dilation 1, W stride 1 or 2, Wo % pp == 0: Window /
// WindowS2), else all nine taps at once up to kDirectBwdLinearMaxPixels pixels a thread (its
// hoisted loads spill beyond; core/limits.hpp); other depthwise filters the row windows where
// direct_row_window takes them (Rows / RowsS2); everything else in passes of a few taps (Generic).
enum class DirectBwdPath { Window, WindowS2, Linear9, Rows, RowsS2, Generic };
// The generic path's taps a pass (a runtime filter, or groups of cg > 1 channels): a thread walks
// its pixels ceil(taps / n) times, holding n x cg x vec fp32 sums (at most 32; n at most 4).
CKGEN_HOST_DEVICE constexpr int direct_bwd_generic_taps(int cg, int vec) {
  return 32 / (cg * vec) < 1 ? 1 : 32 / (cg * vec) > 4 ? 4 : 32 / (cg * vec);
}
inline DirectBwdPath direct_fma_bwd_path(const ConvProblem& p, int group_channels, int pp) {
  if (group_channels != 1) return DirectBwdPath::Generic;
  if (p.filter[0] != 1 || p.filter[1] != 3 || p.filter[2] != 3) {
    if (direct_row_window(Variant::BackwardWeight, p, pp, 0) == 0) return DirectBwdPath::Generic;
    return p.stride[2] == 1 ? DirectBwdPath::Rows : DirectBwdPath::RowsS2;
  }
  const bool win = p.dilation[2] == 1 && pp > 0 && p.out[2] % pp == 0;
  if (win && p.stride[2] == 1) return DirectBwdPath::Window;
  if (win && p.stride[2] == 2) return DirectBwdPath::WindowS2;
  return pp <= kDirectBwdLinearMaxPixels ? DirectBwdPath::Linear9 : DirectBwdPath::Generic;
}
// backward_weight's iterated pixel indices for the FMA path at pp pixels a thread: the output
// pixels, in the row windows' padded order where they take the problem.
inline int64_t direct_weight_pixels(const ConvProblem& p, int pp) {
  const DirectBwdPath b = direct_fma_bwd_path(p, int(p.C), pp);
  return b == DirectBwdPath::Rows || b == DirectBwdPath::RowsS2
             ? direct_row_window_pixels(Variant::BackwardWeight, p, pp)
             : direct_pixels(Variant::BackwardWeight, p);
}

// backward_weight: the slice count (k_batch) when none is given. Slices x group tiles blocks
// of `threads` threads are sized to about kDirectThreadsPerCU threads per compute unit: more
// slices shorten each block's loop but add partials to combine; the optimum sits at about 256
// threads per compute unit for every tile and shape. At least tile_pixels / 2 pixels per slice.
// The matrix path (pipeline/direct_mma_bwd_weight.hpp) fits two 256-thread blocks per SM and
// wants both.
inline constexpr int kDirectThreadsPerCU = 256;     // FMA path: threads per compute unit
inline constexpr int kDirectMmaThreadsPerCU = 512;  // matrix path: two 256-thread blocks
inline int direct_auto_slices(int64_t pixels, int tile_pixels, int64_t group_tiles, int threads,
                              int compute_units, bool matrix = false) {
  const int per_cu = matrix ? kDirectMmaThreadsPerCU : kDirectThreadsPerCU;
  const int64_t blocks = int64_t(std::max(1, compute_units)) * per_cu / std::max(1, threads);
  const int64_t want = (blocks + group_tiles - 1) / std::max<int64_t>(1, group_tiles);
  const int64_t min_pixels = std::max(1, tile_pixels / 2);
  const int64_t cap = (pixels + min_pixels - 1) / min_pixels;
  return int(std::clamp<int64_t>(std::min(want, cap), 1, kDirectMaxSlices));
}

// Pixels per slice (a multiple of tile_pixels) and the slices that hold pixels for k_batch kb.
struct DirectSlices {
  int64_t chunk = 0;
  int count = 0;
};
inline DirectSlices direct_slices(int64_t pixels, int tile_pixels, int kb) {
  DirectSlices s;
  const int64_t per = (pixels + kb - 1) / kb;
  s.chunk = std::max<int64_t>(tile_pixels, (per + tile_pixels - 1) / tile_pixels * tile_pixels);
  s.count = int((pixels + s.chunk - 1) / s.chunk);
  return s;
}

// backward_weight's slices for k_batch kb: the FMA path slices pixels (chunks of whole tiles),
// the matrix path row segments (chunk = segments per slice).
// pp: the FMA path's pixels a thread (direct_weight_pixels).
inline DirectSlices direct_weight_slices(const ConvProblem& p, int tile_pixels, bool matrix, int kb, int pp) {
  const Variant v = Variant::BackwardWeight;
  return matrix ? direct_slices(direct_row_segments(v, p, tile_pixels), 1, kb)
                : direct_slices(direct_weight_pixels(p, pp), tile_pixels, kb);
}

}  // namespace ckgen
