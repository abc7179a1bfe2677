// The dispatcher's cost model, used when the tuning database has nothing near
// (dispatch/dispatcher.hpp): per instance (and per k_batch for backward_weight) an estimated
// time from
//   tile efficiency  = useful / padded M*N*K (what the tile wastes at the edges),
//   waves            = ceil(tiles / (compute units * resident blocks per CU)); the busiest
//                      CU's tiles run in rounds of the resident blocks, a partial last round
//                      as slow as a full one while its warps cannot hide the latency,
//   occupancy        = resident blocks per CU from threads, shared memory, registers,
//   a roofline       = max(compute at peak * utilisation, bytes / bandwidth) + launch,
//   split-K          = fp32 workspace traffic in the main kernel, the memset / finish
//                      kernels after it (serial) and their launches for k_batch > 1 (every
//                      variant: forward / backward_data instances with k_batch != 1 split too).
// The arch numbers come from ckgen/generated/arch_params.hpp (rendered from
// arch_specs.json); the compute-unit count is the device's when a device is present. The
// estimate is then multiplied by the target's measured calibration per variant and pipeline
// (arch_specs.json cost_calibration: what the model systematically misses per family).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "ckgen/conv/gemm_dims.hpp"
#include "ckgen/dispatch/cost_estimate.hpp"
#include "ckgen/dispatch/cost_pointwise.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/schedule/channel_pad_plan.hpp"
#include "ckgen/schedule/direct_plan.hpp"
#include "ckgen/schedule/tma_phases.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// Cost model
// ------------------------------------------------------------------------------------------
// Direct instances (pipeline/depthwise.hpp): a bandwidth estimate. Bytes: the read and written tensors
// once, the source re-read by the filter rows that miss L1 (taps / filter width, half of them
// from L2), channel tiles that overhang G * C counted as traffic; threads: one channel vector x
// pixels per thread, too few resident warps to hide the memory latency slow it down (latency
// bound below ~16 warps per SM). backward_weight adds its workspace traffic and the reduce
// launch. On FMA: the larger of the memory time and the issue time of the threads' instructions
// (direct_fma_issue / direct_fma_bwd_issue: loads with their addressing, conversions, FMAs;
// these kernels are issue- and latency-bound). The matrix path (warp tile
// 16x8x16, pipeline/direct_mma.hpp) has no FMA term: its mma.sync work is far below the memory time; its
// forward / backward_data blocks take the bands the launch gives them (fewer blocks, each source
// row staged once per band), its backward_weight blocks add a fixed time per unit they run.
// Instructions a thread of the forward / backward_data FMA path issues (pipeline/depthwise.hpp), for pp
// pixels a thread and vectors of vec channels: its source loads (the window path: pp + X - 1
// columns per filter row; the row pairs: pp / 2 + X - 1 columns of Y + 1 rows; else one per tap
// and pixel), each kDirectLoadIssue instructions (the load, its 64-bit address, its bound test,
// its zeroed destination, as the window kernel's SASS has them) plus one conversion per 16-bit
// element, the gathered weights of a filter other than 1x3x3 (kDirectGatherIssue) or a depthwise
// 1x3x3 filter's taps vector loads (once a thread, for its pp pixels), and taps x pp x vec x C
// fp32 FMAs.
inline constexpr double kDirectLoadIssue = 4.0;  // instructions a source load issues
// The backward_weight matrix path (pipeline/direct_mma_bwd_weight.hpp) runs the row segments of its slice
// one after another, each a chain of copy, wait and a short MMA: a fixed time a unit beyond the
// bandwidth time, which the bytes alone do not see.
inline constexpr double kDirectMmaBwdUnitUs = 0.75;     // latency of one unit's copy-wait-MMA chain
// The forward / backward_data matrix path's fixed time a launch: 3 us (the other kernels') ranked
// its small grouped layers behind the GEMM tiles they beat 1.3-3x; 2 us (1-2 alike, offline over
// H200 profiles of 36 grouped layers of 8-32 channels a group) picks faster on 9 forward layers,
// slower on none, and leaves backward_data's picks as they were.
inline constexpr double kDirectMmaLaunchUs = 2.0;
// The phased backward_data blocks (strided, pipeline/direct_mma.hpp) in waves: as many resident a
// compute unit as shared memory (direct_mma_ring) and 1024 threads allow, each its first copies'
// latency (kDirectMmaBlockUs) and then kDirectMmaRowUs a staged source row; the launch takes the
// longer of that and the bytes' time. Short phase rows make many blocks of a few staged rows,
// latency-bound (bench/results/2026-11-30_H200_strided_bwd_data.md). The other matrix blocks
// stage whole filters over long rows: their times follow the bytes.
inline constexpr double kDirectMmaBlockUs = 0.5;
inline constexpr double kDirectMmaRowUs = 0.3;
inline constexpr double kDirectIssueEfficiency = 0.55;  // fraction of issue slots the FMA kernels keep busy
// A filter other than 1x3x3 outside the row windows: a thread gathers its V x Cg weights of every
// tap as single elements, a filter apart (GKZYXC), shared by its pp pixels. A warp's gather
// touches a sector per distinct channel vector among its threads (min(TG, warp)): issue slots a
// gathered element costs when all of a warp's threads read different vectors (chosen offline on
// H200 profiles, docs/performance.md "Depthwise layers of any channel count").
inline constexpr double kDirectGatherIssue = 16.0;
inline double direct_fma_issue(Variant v, const ConvProblem& p, int pp, int vec, int elem_bytes,
                               int tile_channels, int warp) {
  const double taps = double(p.filter_spatial());
  const double convert = elem_bytes == 2 ? double(vec) : 0.0;
  if (const int rw = direct_row_window(v, p, pp, tile_channels); rw > 0) {
    // the row windows: per filter row (pp - 1) * s + X columns (backward_data pp + ceil(X / s)
    // - 1, the rows that meet the unit: 1 / (s_d s_h) of them), the row's weights from shared
    // memory (vec / 4 loads a tap), rw taps' FMAs; the padded rows' dead pixels
    const bool bd = v == Variant::BackwardData;
    const double rows = double(p.filter[0] * p.filter[1]) / (bd ? double(p.stride[0] * p.stride[1]) : 1.0);
    const double cols = bd ? double(pp + (p.filter[2] + p.stride[2] - 1) / p.stride[2] - 1)
                           : double((pp - 1) * p.stride[2] + p.filter[2]);
    const double dead = double(direct_row_window_pixels(v, p, pp)) / double(direct_pixels(v, p));
    return dead * rows * (cols * (kDirectLoadIssue + convert) + rw * std::max(1.0, vec / 4.0) + double(rw) * pp * vec);
  }
  const double loads = direct_fma_row_pair(v, p, pp) ? double(p.filter[1] + 1) * double(pp / 2 + p.filter[2] - 1)
                       : direct_fma_window(v, p, pp) ? double(p.filter[0] * p.filter[1] * (pp + p.filter[2] - 1))
                                                     : taps * pp;
  const bool k3x3 = p.filter[0] == 1 && p.filter[1] == 3 && p.filter[2] == 3;
  const double vectors = double(std::min(std::max(1, tile_channels / vec), warp)) / double(warp);
  const double gathers = k3x3 ? 0.0 : taps * vec * double(p.C) * vectors;
  const double filter = k3x3 && p.C == 1 ? taps * (kDirectLoadIssue + convert) : 0.0;
  return loads * (kDirectLoadIssue + convert) + gathers * kDirectGatherIssue + filter +
         taps * pp * vec * double(p.C);
}

// Issue slots a pixel's coordinates cost (three divisions, the bound tests, 64-bit offsets):
// scored 0-80 offline on H200 profiles of random depthwise layers, 40 kept (docs/performance.md,
// "Depthwise layers of any channel count").
inline constexpr double kDirectPixelIssue = 40.0;
// Instructions a thread of the backward_weight FMA path (pipeline/depthwise.hpp bwd_weight) issues for
// `ppt` pixels of its slice, pp at a time, vectors of vec channels: per pixel group the dy loads
// and the source loads of its path (direct_fma_bwd_path: the window's (pp - 1) * s + X columns of
// each filter row, the nine taps at once, or passes of direct_bwd_generic_taps taps that each
// re-read dy), each kDirectLoadIssue instructions plus one conversion per 16-bit element, the
// pixels' coordinates (kDirectPixelIssue: once a pixel group and pass), and taps x pp x vec x Cg
// fp32 FMAs; then the block's combine of its taps x Cg x vec sums through shared memory (a store,
// a load and an add each).
inline double direct_fma_bwd_issue(const ConvProblem& p, double ppt, int pp, int vec, int elem_bytes) {
  const double taps = double(p.filter_spatial());
  const double convert = elem_bytes == 2 ? double(vec) : 0.0;
  const DirectBwdPath path = direct_fma_bwd_path(p, int(p.C), pp);
  // the walks over the thread's pixels: the generic path's passes of direct_bwd_generic_taps taps
  const double passes =
      path == DirectBwdPath::Generic ? std::ceil(taps / double(direct_bwd_generic_taps(int(p.C), vec))) : 1.0;
  double loads = 0;
  switch (path) {
    case DirectBwdPath::Window: loads = pp + 3.0 * (pp + 2); break;
    case DirectBwdPath::WindowS2: loads = pp + 3.0 * (2 * pp + 1); break;
    case DirectBwdPath::Linear9: loads = pp + 9.0 * pp; break;
    case DirectBwdPath::Rows:
    case DirectBwdPath::RowsS2: {
      // per filter row: the unit's dy, the window's (pp - 1) * s + X columns, rw taps' FMAs
      const int rw = direct_row_window(Variant::BackwardWeight, p, pp, 0);
      const double rows = double(p.filter[0] * p.filter[1]);
      const double cols = double((pp - 1) * p.stride[2] + p.filter[2]);
      return ppt / pp * rows * ((pp + cols) * (kDirectLoadIssue + convert) + double(rw) * pp * vec) +
             3.0 * rows * rw * vec;
    }
    case DirectBwdPath::Generic:
      loads = (taps + passes) * pp;
      break;
  }
  const double index = passes * pp * kDirectPixelIssue;
  const double combine = 3.0 * taps * double(p.C) * vec;
  return ppt / pp * (loads * (kDirectLoadIssue + convert) + index + taps * pp * vec * double(p.C)) + combine;
}

// A residual add (epilogue/fusion.hpp) reads a tensor of the written one's shape in the output's
// datatype, once, beside the store.
inline double residual_bytes(const KernelKey& k, const ConvProblem& p) {
  return k.residual ? double(written_elems(k.variant, p)) * elem_bytes(k.out_datatype) : 0.0;
}

inline CostEstimate estimate_direct_cost(const KernelKey& k, const ConvProblem& p, int k_batch,
                                         const ArchNumbers& a) {
  CostEstimate c;
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const int eb = elem_bytes(k.datatype);
  const int64_t pixels = direct_pixels(k.variant, p);
  const int64_t chans = p.G * p.C;
  const int64_t gtiles = cdiv(chans, k.tile_n);
  const double overhang = double(gtiles * k.tile_n) / double(chans);
  const double taps = double(p.filter_spatial());
  double rows_reread = std::max(1.0, taps / double(std::max<int64_t>(1, p.filter[2])));
  const double src = double(k.variant == Variant::BackwardData ? p.output_elems() : p.input_elems());
  const double dst = double(k.variant == Variant::BackwardData ? p.input_elems() : p.output_elems());
  const bool matrix = k.warp_m > 1;  // a block per row segment or band (schedule/direct_plan.hpp)
  // launch (the forward / backward_data matrix path: kDirectMmaLaunchUs)
  double extra_us = matrix && k.variant != Variant::BackwardWeight ? kDirectMmaLaunchUs : 3.0;
  const int threads = std::max(1, k.wave_m) * a.warp_size;
  c.blocks_per_cu = std::max(1, 2048 / threads);
  int64_t active_threads;
  double block_us = 0.0;  // forward / backward_data matrix path: its waves of blocks
  // the FMA path's channel vector and pixels a thread (the matrix path lays out its own warps)
  const int vec = std::max(1, k.vec_a);
  const int pp = matrix ? 1 : std::max(1, direct_fma_pixels_per_thread(k.tile_m, k.tile_n, vec, threads));
  double bytes = 0;
  // backward_weight: the slices of the launch, read by the split, the FMA issue and the unit terms
  DirectSlices sl{};
  if (k.variant == Variant::BackwardWeight) {
    sl = direct_weight_slices(p, k.tile_m, matrix, std::max(1, k_batch), pp);
    c.k_batch = sl.count;
    c.tiles = int64_t(sl.count) * gtiles;
    active_threads = c.tiles * threads;
    if (sl.count > 1) {
      const double ws = double(p.weight_elems()) * 4.0;
      bytes += (k.stage == Stage::One ? 2.0 : 1.0) * sl.count * ws;  // atomics / partial writes
      bytes += (k.stage == Stage::One ? 1.0 : sl.count) * ws;        // the reduce reads
      extra_us += k.stage == Stage::One ? 4.0 : 2.0;
    }
  } else if (matrix) {
    // The launch's bands (pipeline/depthwise.hpp run, direct_mma_band_rows): a block of `band` rows stages
    // its band + Y - 1 source rows once each.
    const DirectMmaRing ring = direct_mma_ring(k.tile_m, k.tile_n, k.tile_k, eb);
    const int band = direct_mma_band_rows(direct_row_segments(k.variant, p, k.tile_m) * gtiles, a.compute_units);
    const bool shared = direct_mma_band_shares_rows(k.variant, p, ring.stages);
    const bool phased = direct_mma_phased(k.variant, p);
    c.tiles = direct_band_segments(k.variant, p, k.tile_m, band) * gtiles;
    if (band > 1 && shared) rows_reread = double(band + p.filter[1] - 1) / band;
    // strided backward_data: each W phase of a dx row stages the dy rows its taps reach, and
    // each block its walked taps' weights (about taps / strides; L2 reads, at half price); its
    // waves of blocks each stage their rows' walked filter rows (kDirectMmaRowUs)
    if (phased) {
      rows_reread *= double(p.stride[2]);
      const double walked = taps / double(p.stride[0] * p.stride[1] * p.stride[2]);
      const double zy = double(p.filter[0] * p.filter[1]);
      const double staged = double(band) * std::max(1.0, zy / double(p.stride[0] * p.stride[1]));
      bytes += 0.5 * double(c.tiles) * std::max(1.0, walked) * double(k.tile_n * k.tile_k * eb);
      const int resident = std::max(1, std::min(a.lds_bytes / (ring.stages * ring.row_bytes + ring.weight_bytes),
                                                1024 / threads));
      block_us = double(cdiv(c.tiles, int64_t(a.compute_units) * resident)) *
                 (kDirectMmaBlockUs + kDirectMmaRowUs * staged);
    }
    active_threads = c.tiles * threads;
    c.k_batch = 1;
  } else {
    const bool rows = direct_row_window(k.variant, p, pp, k.tile_n) > 0;
    c.tiles = cdiv(rows ? direct_row_window_pixels(k.variant, p, pp) : pixels, k.tile_m) * gtiles;
    active_threads = c.tiles * threads;
    c.k_batch = 1;
    rows_reread = 1.0;  // the taps' re-reads are loads the issue term counts (L1 / L2 hits)
  }
  bytes += (src * (1.0 + 0.5 * (rows_reread - 1.0)) + dst + double(p.weight_elems())) * eb;
  bytes += residual_bytes(k, p);
  c.waves = cdiv(c.tiles, int64_t(a.compute_units) * c.blocks_per_cu);
  c.tile_efficiency = 1.0 / overhang;
  if (matrix)  // idle pixels past each row's last segment
    c.tile_efficiency *= double(pixels) /
                         double(direct_row_segments(k.variant, p, k.tile_m) * k.tile_m);
  // A forward / backward_data launch of fewer blocks than compute units issues on those units
  // alone (backward_weight's slices are sized to fill the machine: direct_weight_slices).
  const double used_cus = k.variant == Variant::BackwardWeight
                              ? double(a.compute_units)
                              : double(std::min<int64_t>(std::max<int64_t>(c.tiles, 1), a.compute_units));
  const double warps_per_cu = double(active_threads) / a.warp_size / used_cus;
  const double latency = std::max(1.0, 16.0 / std::max(1.0, std::min(64.0, warps_per_cu)));
  const double mem_us = bytes * overhang / (a.bandwidth_gbs * 1e9) * 1e6 * std::sqrt(latency);
  double fma_us = block_us;  // the matrix path: its blocks' latency (forward / backward_data)
  // warp instructions issued per second at every scheduler busy: the fp32 peak / (2 x warp size)
  const double issue_rate = a.peak_tflops(DataType::FP32) * 1e12 / (2.0 * a.warp_size) *
                            kDirectIssueEfficiency * used_cus / a.compute_units;
  if (!matrix && k.variant == Variant::BackwardWeight) {
    const double warp_instr = double(active_threads) / a.warp_size *
                              direct_fma_bwd_issue(p, double(sl.chunk) * pp / k.tile_m, pp, vec, eb);
    fma_us = warp_instr / issue_rate * 1e6 * std::sqrt(latency);
  } else if (!matrix) {
    const double warp_instr = double(active_threads) / a.warp_size *
                              direct_fma_issue(k.variant, p, pp, vec, eb, k.tile_n, a.warp_size);
    fma_us = warp_instr / issue_rate * 1e6 * std::sqrt(latency);
  }
  c.us = std::max(mem_us, fma_us) + extra_us;
  if (matrix && k.variant == Variant::BackwardWeight)  // its units in sequence (kDirectMmaBwdUnitUs)
    c.us += kDirectMmaBwdUnitUs * double(sl.chunk);
  return c;
}

// Write bandwidth of a register epilogue against the cshuffle one: its narrow stores reach a
// fraction of the bandwidth.
inline constexpr double kRegisterStoreEfficiency = 0.3;
// Fixed time of a round of copy-engine tiles on a compute unit, microseconds (without it
// narrow tiles with many k tiles rank behind short ones).
inline constexpr double kTmaRoundUs = 0.75;
// Resident math warps at which wavelet_tma's wgmma reaches its full rate (mma.sync: 8). Fitted on
// the H200 corpus profiles (bench/offline_dispatch.py): 5 to 7 score alike, 8 mis-ranks one
// warpgroup tiles against ping-pong ones and two-stage multistage splits in backward_weight.
inline constexpr double kTmaHidingWarps = 6.0;
// Time a wavelet_tma round of units adds with a residual add, microseconds: the math warps wait on
// their unit's residual (read ahead of the main loop, or in the epilogue: tma_ws::UnitResidual)
// and add it before the store (epilogue/tma_ws_epilogue.hpp), a time the bytes alone do not see.
// A ping-pong block's rounds are twice as many (its slots hold one unit each).
inline constexpr double kTmaResidualRoundUs = 1.75;

// The window forms (pipeline/tma_window.hpp, pipeline/tma_window_weight.hpp): the busiest block
// runs ceil(G / groups side by side) groups x ceil(windows / blocks a group) windows, each taps x
// 64 x 64 x window MACs from shared memory at a rate of the compute unit's peak; forward adds one
// filter copy a group (kTmaWindowFilterUs), backward_weight its cluster's sums
// (detail::kTmaWindowSumUs / cluster, the grid of detail::tma_window_weight_grid) and the clear
// and conversion launches. Or the bytes, whichever is longer: x's patches, y (dy), and a filter
// a block and group (forward: its copy) or a cluster (backward_weight: its fp32 sums); plus the
// launch. Rates fitted on grouped forward / backward_weight window problems.
inline constexpr double kTmaWindowRate = 0.8;         // forward windows: fraction of peak
inline constexpr double kTmaWindowFilterUs = 0.5;     // forward: one filter copy a group
inline constexpr double kTmaWindowWeightRate = 0.5;   // backward_weight windows: fraction of peak
inline constexpr double kTmaWindowWeightLaunchUs = 2.0;
inline CostEstimate estimate_window_cost(const KernelKey& k, const ConvProblem& p, const ArchNumbers& a) {
  CostEstimate c;
  const bool weight_grad = k.variant == Variant::BackwardWeight;
  const detail::TmaWindowShape ws = detail::tma_window_shape(p, k.tile_m);
  const int64_t windows = ws.tiles_group;
  // The launch's grid; forward: tma_window_grid's blocks, each copying the filter (a cluster of one).
  const detail::TmaWindowWeightGrid wg = [&] {
    if (weight_grad) return detail::tma_window_weight_grid(p.G, a.compute_units, nullptr, windows, k.tile_m);
    const detail::TmaWindowGrid gr = detail::tma_window_grid(p.G, a.compute_units);
    return detail::TmaWindowWeightGrid{gr.bpg, gr.group_stride, 1};
  }();
  const int64_t groups_per_block = (p.G + wg.group_stride - 1) / wg.group_stride;
  const int64_t per_block = groups_per_block * ((windows + wg.bpg - 1) / wg.bpg);
  c.tiles = windows * p.G;
  c.blocks_per_cu = 1;
  c.waves = per_block;
  c.tile_efficiency = double(p.N * p.out[1] * p.out[2]) / double(windows * k.tile_m);
  const double window_flops = 2.0 * 64 * k.tile_m * double(p.filter_spatial()) * 64;
  const double peak_cu = a.peak_tflops(k.datatype) * 1e12 / a.compute_units;
  const double rate = weight_grad ? kTmaWindowWeightRate : kTmaWindowRate;
  const double per_group_us = weight_grad ? detail::kTmaWindowSumUs / wg.cluster : kTmaWindowFilterUs;
  const double compute_us = double(per_block) * window_flops / (peak_cu * rate) * 1e6 +
                            double(groups_per_block) * per_group_us + (weight_grad ? kTmaWindowWeightLaunchUs : 0.0);
  const int eb = elem_bytes(k.datatype);
  const double filter_bytes = double(p.filter_spatial()) * 64 * 64 * (weight_grad ? 4 : eb);
  const int64_t adders = wg.bpg / wg.cluster;  // blocks (clusters) of a group copying or adding its filter
  const double bytes = (double(c.tiles) * double(ws.pw * ws.ph) * 64 + double(p.output_elems())) * eb +
                       double(adders * wg.group_stride * groups_per_block) * filter_bytes +
                       residual_bytes(k, p);
  c.us = std::max(compute_us, bytes / (a.bandwidth_gbs * 1e9) * 1e6) + 3.0;
  return c;
}

inline CostEstimate estimate_cost(const KernelKey& k, const ConvProblem& p, int k_batch,
                                  const ArchNumbers& a = {});


// A channel-padding face's copy launches: a short copy kernel each, chained to the next launch
// (core/chain.hpp), beyond its bytes. 1 us scores the padded faces best on the corpus and the
// random-family layers alike (2 us cost 3-5 % of the random layers' picks, none of the corpus').
inline constexpr double kPadLaunchUs = 1.0;

// Whether instance k runs problem p as its unmasked instance over a masked copy of dy: a mask-copy
// face, or wavelet_tma's masked backward_data twin where it masks a copy (tma_phases::premask_dy).
inline bool runs_mask_copy(const KernelKey& k, const ConvProblem& p) {
  return k.mask_copy || (k.pipeline == Pipeline::WaveletTma && k.variant == Variant::BackwardData &&
                         is_grad_mask(k.activation) && tma_phases::premask_dy(p, k.tile_n));
}

// Estimated time of one instance running one problem as it lies (no copies around it) with a
// given split count, before the target's calibration (estimate_cost below).
inline CostEstimate estimate_cost_model(const KernelKey& k, const ConvProblem& p, int k_batch,
                                        const ArchNumbers& a = {}) {
  if (k.pipeline == Pipeline::Direct) return estimate_direct_cost(k, p, k_batch, a);
  if (k.pipeline == Pipeline::Pointwise) return estimate_pointwise_cost(k, p, a);
  if (tma_window_form(k)) return estimate_window_cost(k, p, a);
  CostEstimate c;
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const GemmDims g = tiled_gemm_dims(k.variant, p, k.groups_to_merge);
  // forward / backward_data instances with k_batch 1 never split (kernel/conv_kernel.hpp resolve_k_batch).
  const bool splits = k.variant == Variant::BackwardWeight || k.k_batch != 1;
  const int kb = std::max(1, splits ? k_batch : 1);
  c.k_batch = kb;
  const int64_t mt = cdiv(g.M, k.tile_m), nt = cdiv(g.N, k.tile_n);
  // wavelet_tma forward / backward_data walk the reduction tap by tap in chunks of tile_k
  // channels (kernel/tma_launch.hpp: taps x c_chunks k tiles): a channel count below tile_k pads
  // every tap's chunk. The explicit im2col copy (detail::tma_im2col_width) is one tap of its
  // packed columns.
  int64_t kt;
  if (k.pipeline == Pipeline::WaveletTma && k.variant != Variant::BackwardWeight) {
    const int64_t cp = detail::tma_im2col_width(k.variant, p);
    const int64_t red_c = cp > 0 ? cp : k.variant == Variant::Forward ? p.C : p.K;
    const int64_t taps = cp > 0 ? 1 : cdiv(g.K, red_c);
    kt = cdiv(taps * cdiv(red_c, k.tile_k), kb);
  } else {
    kt = cdiv(cdiv(g.K, kb), k.tile_k);
  }
  // wavelet_tma backward_weight runs its own grid (pipeline/tma_ws.hpp): taps x (K / BM) x (C / BN)
  // tiles a group unless the taps pack into the columns or x goes through the im2col copy
  // (detail::tma_weight_tiles of detail::tma_gemm_view). With few channels a group that is far
  // more tiles than the GEMM view's (ResNeXt 5x5 c8: 800 against 64).
  const int64_t grid =
      k.pipeline == Pipeline::WaveletTma && k.variant == Variant::BackwardWeight && !tma_row_form(k)
          ? detail::tma_weight_tiles(detail::tma_gemm_view(Variant::BackwardWeight, p), k.tile_m, k.tile_n)
          : mt * nt * g.batch;
  c.tiles = grid * kb;
  // a merged block's useful MACs: its gm groups' diagonal blocks (1 / gm of its GEMM)
  const double useful = double(g.M) * double(g.N) * double(g.K) * double(g.batch);
  const double padded = double(grid) * k.tile_m * k.tile_n * double(kt * k.tile_k * kb) * std::max(1, k.groups_to_merge);
  c.tile_efficiency = useful / padded;

  // Occupancy: threads, shared memory (as core/config_traits.hpp lays it out, rows padded by 16 bytes),
  // registers (fp32 accumulators per math thread plus a fixed overhead; a kernel's register
  // count holds for every warp, the wavelet's load warps included).
  const int eb = elem_bytes(k.datatype);
  const int warps = std::max(1, k.wave_m * k.wave_n * k.wave_k);  // math warps
  // wavelet: load waves come on top of the math waves (LaunchBlockSize = load + math threads).
  // wavelet_tma (pipeline/tma_ws.hpp): detail::tma_smem_bytes (unpadded 128-byte rows).
  const bool tma = k.pipeline == Pipeline::WaveletTma;
  const bool specialized = k.pipeline == Pipeline::Wavelet || tma;
  // wavelet_tma ping-pong: two warpgroups of the tile's warps take turns on units (math waves
  // = 2 x waves M): twice the math threads and cshuffle slabs, the same accumulators a thread.
  const int math_warps = specialized ? std::max(warps, k.math_waves) : warps;
  const int threads = (math_warps + (specialized ? k.load_waves : 0)) * a.warp_size;
  const int stages = k.pipeline != Pipeline::Basic ? std::max(1, k.stages) : 1;
  const int pad = std::max(16 / eb, 1);
  const double smem = tma ? double(detail::tma_smem_bytes(k.tile_m, k.tile_n, stages, math_warps, eb,
                                                         k.epilogue == Epilogue::CShuffle,
                                                         k.channel_op == ChannelOp::BiasGrad,
                                                         is_grad_mask(k.activation)))
                          : double(stages) * double((k.tile_m + k.tile_n) * (k.tile_k + pad)) * eb;
  const int acc_regs = (k.tile_m * k.tile_n) / (warps * a.warp_size);
  // wavelet_tma: a residual read into registers ahead of the main loop holds them through it
  const int preload = tma ? detail::tma_residual_preload_registers(k.tile_m, k.tile_n, k.wave_m, k.residual,
                                                                   k.epilogue == Epilogue::CShuffle, k.swap_ab)
                          : 0;
  const int regs = std::min(255, acc_regs + 48 + preload);
  const int by_threads = std::max(1, 2048 / threads);
  const int by_smem = smem > 0 ? std::max(1, int(double(a.lds_bytes) / smem)) : 32;
  const int by_regs = std::max(1, a.register_file_bytes_per_cu / (4 * regs * threads));
  c.blocks_per_cu = std::max(1, std::min({by_threads, by_smem, by_regs, 32}));
  const int64_t slots = int64_t(a.compute_units) * c.blocks_per_cu;
  c.waves = cdiv(c.tiles, slots);

  // Compute: the busiest CU works through ceil(tiles / CUs) tiles in rounds of blocks_per_cu
  // resident blocks, the last round holding the remainder; the r blocks of a round share the CU.
  // Utilisation grows with the warps resident (latency hiding: below 8 resident warps a round
  // takes as long whatever its block count) and with the warp tile's operand reuse;
  // narrow global accesses (vector bytes < 16) and the single-buffer pipeline stall the math.
  // The constants are fitted so that basic runs ~1.6x slower than multistage and mma.sync tiles
  // reach ~20 % of peak at best.
  const double tile_flops = 2.0 * k.tile_m * k.tile_n * double(kt * k.tile_k);
  const double peak_cu = a.peak_tflops(k.datatype) * 1e12 / a.compute_units;
  const int64_t per_cu = cdiv(c.tiles, a.compute_units);
  // wavelet_tma: a warpgroup (4 warps along M) owns a 64-row wgmma slice of the whole tile N.
  const double wm = double(k.tile_m) / (tma ? detail::tma_math_groups(k.wave_m) : std::max(1, k.wave_m));
  const double wn = double(k.tile_n) / std::max(1, k.wave_n);
  const double reuse = 2.0 * wm * wn / (wm + wn);  // harmonic mean of a warp's C tile sides
  const double vec_bytes = double(std::min(k.vec_a, k.vec_b) * eb);
  // Prefetching pipelines copy asynchronously only in 4-, 8- or 16-byte accesses (cp.async,
  // core/async_copy.hpp); a narrower operand is a synchronous load + store, which stalls the
  // math as the single-buffer pipeline does, for its share of the tile's copies.
  const bool sync_a = !tma && k.vec_a * eb < 4, sync_b = !tma && k.vec_b * eb < 4;
  const double sync_share =
      k.pipeline == Pipeline::Basic
          ? 1.0
          : double((sync_a ? k.tile_m : 0) + (sync_b ? k.tile_n : 0)) / double(k.tile_m + k.tile_n);
  const double feed = (0.5 + 0.5 * std::min(16.0, vec_bytes) / 16.0) * (1.0 - 0.4 * sync_share);
  // wavelet: the math warps wait on the load waves at every stage; with fewer than 4 math warps a
  // block cannot keep the math going through those waits.
  const double handoff = k.pipeline == Pipeline::Wavelet ? std::min(1.0, warps / 4.0) : 1.0;
  // wavelet_tma: the copy engine feeds asynchronous wgmma: about twice the mma.sync pipelines'
  // rate at the same operand reuse.
  const double async_math = tma ? 2.0 : 1.0;
  const double tile_util = (reuse / (reuse + 32.0)) * 0.4 * feed * handoff * async_math;
  // Latency hiding counts the resident math warps, a ping-pong block's two warpgroups as one and
  // a half (hiding_warps: the mean of the tile's warps and the block's math warps): they take
  // turns on the tensor cores (one's epilogue beside the other's MMA), so the second adds only
  // part of a warpgroup's latency hiding. mma.sync needs 8 resident warps for its full rate,
  // asynchronous wgmma fed by the copy engine kTmaHidingWarps.
  // wavelet_tma: a round also pays a fixed time (the ring's first copies, the drain of the last
  // wgmma group, the epilogue): kTmaRoundUs.
  const double hiding_warps = (warps + math_warps) / 2.0;
  auto round_us = [&](int64_t r) {
    const double hidden = std::min(1.0, double(r) * hiding_warps / (tma ? kTmaHidingWarps : 8.0));
    return double(r) * tile_flops / (peak_cu * hidden * tile_util) * 1e6 +
           (tma ? kTmaRoundUs : 0.0);
  };
  const int64_t full_rounds = per_cu / c.blocks_per_cu, last_round = per_cu % c.blocks_per_cu;
  const double compute_us = double(full_rounds) * round_us(c.blocks_per_cu) + (last_round ? round_us(last_round) : 0.0);

  // Memory: the unique bytes once, plus operand re-reads per tile (L2 catches half). A tile
  // stored from registers (epilogue default: a warp's store covers 8 rows x 16 bytes, half
  // sectors) writes at a fraction of the bandwidth that the cshuffle epilogue's whole-sector
  // 16-byte stores reach (kRegisterStoreEfficiency).
  const int64_t written = written_elems(k.variant, p);
  const double unique = double(p.input_elems() + p.weight_elems() + p.output_elems()) * eb;
  const double reread =
      double(c.tiles) * double(k.tile_m + k.tile_n) * double(kt * k.tile_k) * eb * 0.5;
  double bytes = unique + reread;
  // a gradient mask in the kernel: y read once beside dy (its tiles' re-reads hit L2)
  if (is_grad_mask(k.activation)) bytes += double(p.output_elems()) * eb;
  bytes += residual_bytes(k, p);
  // wavelet_tma stores the rows of an output whose channels are not whole 16-byte vectors element
  // by element from the cshuffle slabs, in pairs from registers (pipeline/tma_ws.hpp): narrow
  // stores either way.
  const int64_t out_c = k.variant == Variant::Forward ? p.K : p.C;
  const bool narrow_rows = tma && k.variant != Variant::BackwardWeight && out_c % (16 / eb) != 0;
  if (kb == 1 && (k.epilogue != Epilogue::CShuffle || narrow_rows))
    bytes += double(written) * eb * (1.0 / kRegisterStoreEfficiency - 1.0);
  double extra_us = 3.0;  // launch
  if (tma && k.residual) extra_us += double(c.waves) * kTmaResidualRoundUs;
  double serial_bytes = 0;  // split-K work outside the main kernel (memset, finish kernel)
  if (kb > 1) {
    const double ws = double(written) * 4.0;  // the fp32 workspace holds the written tensor
    if (k.stage == Stage::One) {
      // zero-fill, kb fp32 atomic read-modify-writes of the workspace inside the main kernel,
      // then a convert kernel: three launches.
      // (the atomics contend on the same addresses: not hidden under the math)
      serial_bytes += 2.0 * kb * ws + ws + ws + double(written) * eb;
      extra_us += 4.0;
    } else {
      // kb partial writes, then a reduce that reads them all and writes the result: two launches.
      bytes += kb * ws;
      serial_bytes += kb * ws + double(written) * eb;
      extra_us += 2.0;
    }
  }
  const double mem_us = bytes / (a.bandwidth_gbs * 1e9) * 1e6;
  c.us = std::max(compute_us, mem_us) + serial_bytes / (a.bandwidth_gbs * 1e9) * 1e6 + extra_us;
  return c;
}

// Estimated time of one instance on one problem with a given split count: the model's estimate
// times the target's measured calibration of the instance's variant and pipeline (a
// channel-padding or mask-copy face: its instance's, calibrated, plus the copies).
inline CostEstimate estimate_cost(const KernelKey& k, const ConvProblem& p, int k_batch, const ArchNumbers& a) {
  if (runs_mask_copy(k, p)) {
    // the copy (read dy and y, write their product) in one launch, then the unmasked instance
    KernelKey inner = k;
    inner.mask_copy = false;
    inner.activation = Activation::Identity;
    CostEstimate c = estimate_cost(inner, p, k_batch, a);
    c.us += 3.0 * double(p.output_elems()) * elem_bytes(k.datatype) / (a.bandwidth_gbs * 1e9) * 1e6 +
            kPadLaunchUs;
    return c;
  }
  if (k.channel_pad > 0) {
    // a channel-padding face: its instance on the padded problem, then the copies (one launch each)
    KernelKey inner = k;
    inner.channel_pad = 0;
    const ChannelPadPlan plan = pad_plan(k.pipeline, k.variant, p, k.channel_pad);
    CostEstimate c = estimate_cost(inner, plan.padded, k_batch, a);
    c.us += channel_pad_bytes(plan, elem_bytes(k.datatype)) / (a.bandwidth_gbs * 1e9) * 1e6 +
            kPadLaunchUs * plan.count;
    return c;
  }
  CostEstimate c = estimate_cost_model(k, p, k_batch, a);
  c.us *= a.calibration(k.variant, k.pipeline);
  return c;
}

}  // namespace ckgen
