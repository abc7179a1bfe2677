// The run-time face of one generated kernel instance, and the registry that holds them.
//
// Every generated translation unit defines one `register_<instance name>(Registry&)` that adds
// a `KernelInstance<Config>` (kernel/conv_kernel.hpp) to the registry. Host tools (profiler, tests,
// dispatcher) only see this interface.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/forms.hpp"
#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/core/kernel_key.hpp"
#include "ckgen/core/limits.hpp"
#include "ckgen/core/names.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Where the partial sums of a split reduction meet (RunOptions::split_reduce):
//   Auto:      the instance chooses per problem (wavelet_tma backward_weight by its cost rule,
//              every other instance its one scheme)
//   Workspace: fp32 reductions into a zeroed workspace, converted by a finish launch
//   Cluster:   (wavelet_tma backward_weight) the k_batch blocks of one output tile run as a
//              thread-block cluster (2..8) and add their partial tiles through distributed
//              shared memory; no workspace, no extra launches, a fixed summation order
enum class SplitReduce : int { Auto = 0, Workspace = 1, Cluster = 2 };
inline const char* to_string(SplitReduce r) {
  return r == SplitReduce::Workspace ? "workspace" : r == SplitReduce::Cluster ? "cluster" : "auto";
}
inline bool parse_split_reduce(const std::string& s, SplitReduce& r) {
  return parse_name(s, {SplitReduce::Auto, SplitReduce::Workspace, SplitReduce::Cluster}, r);
}
namespace detail {
// The refusal of a split_reduce request by an instance that has one reduction scheme.
inline std::string split_reduce_refusal(SplitReduce r) {
  if (r == SplitReduce::Auto) return {};
  return std::string("RunOptions::split_reduce ") + to_string(r) +
         " is for wavelet_tma backward_weight instances (this one has one reduction scheme)";
}
}  // namespace detail

namespace detail {
// Compute units of the current device (132 when no device answers), read once. The GEMM and
// direct kernels size their automatic splits with it.
inline int device_sm_count() {
  static const int count = device_attribute_or(gpuDevAttrMultiProcessorCount, 132);
  return count;
}
// The most dynamic shared memory one block may opt in to (48 KB when there is no device).
inline int device_smem_optin() {
  static const int bytes = device_attribute_or(gpuDevAttrMaxSharedMemoryPerBlockOptin, 48 * 1024);
  return bytes;
}
// Blocks of a grid-stride launch over `items` with `threads` per block: one item per thread,
// at most `per_sm` blocks per compute unit (the finish and staging copies use it).
inline int64_t grid_stride_blocks(int64_t items, int threads, int per_sm) {
  return std::max<int64_t>(1, std::min<int64_t>((items + threads - 1) / threads,
                                                int64_t(per_sm) * device_sm_count()));
}
// Lets `kernel` launch with `bytes` of dynamic shared memory on the current device, once per
// device (one bit per device id in `done`). The implicit-GEMM and wavelet_tma kernels use it.
template <class F>
gpuError_t allow_dynamic_smem(F kernel, int bytes, std::atomic<uint64_t>& done) {
  int dev = 0;
  if (gpuError_t e = gpuGetDevice(&dev); e != gpuSuccess) return e;
  const uint64_t bit = uint64_t(1) << (dev & 63);
  if (done.load(std::memory_order_relaxed) & bit) return gpuSuccess;
  if (gpuError_t e = gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, bytes);
      e != gpuSuccess)
    return e;
  done.fetch_or(bit, std::memory_order_relaxed);
  return gpuSuccess;
}
// Blocks of `kernel` with `threads` threads and `smem` bytes of dynamic shared memory one compute
// unit holds, from the occupancy query after `prepare` (1 when either fails); `memo` keeps the
// last answer (smem << 8 | blocks), so a repeated shared-memory size costs no query.
template <class F, class Prepare>
int resident_blocks_memo(std::atomic<uint64_t>& memo, F kernel, int threads, int smem, Prepare&& prepare) {
  const uint64_t m = memo.load(std::memory_order_relaxed);
  if (m != 0 && int(m >> 8) == smem) return int(m & 255);
  int b = 0;
  if (prepare() != gpuSuccess ||
      gpuOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, threads, smem) != gpuSuccess || b < 1)
    b = 1;
  memo.store((uint64_t(smem) << 8) | uint64_t(std::min(b, 255)), std::memory_order_relaxed);
  return b;
}
inline std::string str(int64_t v) { return std::to_string(v); }
// The refusals every instance's is_supported starts with, in this order: an invalid problem,
// another ndim, the call's options (`options()`: the instance's own checks, "" when fine; a
// wrong option is refused whatever shape it comes with), an out size that is not
// compute_output()'s.
template <class Options>
std::string common_refusal(const ConvProblem& p, int ndim, Options&& options) {
  if (std::string e = p.validate(); !e.empty()) return "invalid problem: " + e;
  if (p.ndim != ndim)
    return "ndim mismatch: instance is " + str(ndim) + "D, problem is " + str(p.ndim) + "D";
  if (std::string e = options(); !e.empty()) return e;
  ConvProblem q = p;
  q.compute_output();
  for (int i = 0; i < 3; ++i)
    if (q.out[i] != p.out[i]) return "problem.out does not match compute_output()";
  return {};
}
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// A 3D problem whose depth is one tap (filter 1, stride 1, no depth padding) is a 2D problem
// over N x D images: output depth d reads input depth d only, and NDHWGC puts the D slices of an
// image one after the other. depth_fold_refusal: why p's depth does not fold ("" when it does).
inline std::string depth_fold_refusal(const ConvProblem& p) {
  if (p.ndim != 3 || (p.filter[0] == 1 && p.stride[0] == 1 && p.pad_l[0] == 0 && p.pad_r[0] == 0)) return {};
  return "a 3D problem runs here as 2D over N x D images: it needs depth filter 1, depth stride 1 and no "
         "depth padding (got filter " + str(p.filter[0]) + ", stride " + str(p.stride[0]) + ", pads " +
         str(p.pad_l[0]) + " / " + str(p.pad_r[0]) + ")";
}
inline ConvProblem fold_depth(const ConvProblem& p) {
  if (p.ndim != 3) return p;
  ConvProblem q = p;
  q.ndim = 2;
  q.N = p.N * p.in[0];
  q.in[0] = q.out[0] = q.filter[0] = q.stride[0] = q.dilation[0] = 1;
  return q;
}
// wavelet_tma's explicit im2col (pipeline/tma_ws.hpp; the dispatcher's estimate): forward and
// backward_weight problems of one group whose C is not a multiple of 8 have x rows that are not
// 16-byte multiples, so x is copied into the workspace as a dense matrix (rows = output pixels,
// taps x C columns padded with zeros to a multiple of 8) and the problem runs as a 1x1 GEMM over
// it (tma_gemm_view). Width 0 = not used (also past 512 columns).
inline int64_t tma_im2col_width(Variant v, const ConvProblem& p) {
  if (v == Variant::BackwardData) return 0;
  const int64_t cp = (p.filter_spatial() * p.C + 7) / 8 * 8;
  return p.C % 8 != 0 && p.G == 1 && cp <= 512 ? cp : 0;
}
// The problem the GEMM launches see: p, or the 1x1 problem over the im2col copy.
inline ConvProblem tma_gemm_view(Variant v, const ConvProblem& p) {
  const int64_t cp = tma_im2col_width(v, p);
  if (cp == 0) return p;
  ConvProblem q = p;
  q.C = cp;
  for (int i = 0; i < 3; ++i) {
    q.in[i] = p.out[i];
    q.filter[i] = q.stride[i] = q.dilation[i] = 1;
    q.pad_l[i] = q.pad_r[i] = 0;
  }
  return q;
}
// wavelet_tma backward_weight's tiles (pipeline/tma_ws.hpp; the dispatcher's split estimate): per
// group K x C columns per tap, taps tile grids; or, with C % 64 == 0 not a multiple of the tile's
// N and several taps, dw's taps * C columns in one grid (tap packing: each 64-column block of a
// tile is copied at its own tap).
inline bool tma_weight_packs_taps(const ConvProblem& p, int tile_n) {
  return p.C % 64 == 0 && p.C % tile_n != 0 && p.filter_spatial() > 1;
}
inline int64_t tma_weight_tiles(const ConvProblem& p, int tile_m, int tile_n) {
  const bool pack = tma_weight_packs_taps(p, tile_n);
  return ceil_div(p.K, tile_m) * ceil_div(pack ? p.filter_spatial() * p.C : p.C, tile_n) * p.G *
         (pack ? 1 : p.filter_spatial());
}
// wavelet_tma backward_weight, specialization stride1 (the row form, pipeline/tma_ws.hpp): a tile
// is one filter row's X = tile N / 64 taps x 64 channels, a k tile a segment of one output row.
// A stage (tile M 64 + tile N rows of 128 bytes) holds the segment's dy pixels (at most
// tma_row_positions, a multiple of 16) and its x pixels plus a halo of at least
// tma_row_halo(tile_n) pixels for the taps' offsets.
constexpr int tma_row_positions(int tile_n) {
  const int fit = (64 + tile_n - 16) / 2 / 16 * 16;
  return fit < 128 ? fit : 128;
}
constexpr int tma_row_halo(int tile_n) { return 64 + tile_n - 2 * tma_row_positions(tile_n); }
// The segments of an output row of q pixels: as few as fit, of equal length rounded up to 16.
struct TmaRowSegs {
  int len, segs;
};
inline TmaRowSegs tma_row_segs(int64_t q, int tile_n) {
  const int64_t segs = ceil_div(q, tma_row_positions(tile_n));
  return {int(ceil_div(ceil_div(q, segs), 16) * 16), int(segs)};
}
// The row form's k tiles (row segments of every image) and tiles (groups x filter rows x K
// tiles x 64-channel blocks).
inline int64_t tma_row_k_tiles(const ConvProblem& p, int tile_n) {
  return p.N * p.out[0] * p.out[1] * tma_row_segs(p.out[2], tile_n).segs;
}
inline int64_t tma_row_tiles(const ConvProblem& p, int tile_m) {
  return p.G * p.filter[0] * p.filter[1] * ceil_div(p.K, tile_m) * ceil_div(p.C, 64);
}
// A wavelet_tma tile's math warpgroups (waves M / 4, sharing one tile) and the m64 row slices
// each of them computes (TmaTraits::kMathGroups, RepM; the cost model's register estimate).
constexpr int tma_math_groups(int wave_m) { return wave_m >= 4 ? wave_m / 4 : 1; }
constexpr int tma_rep_m(int tile_m, int wave_m) { return tile_m / (64 * tma_math_groups(wave_m)); }
// Registers a wavelet_tma math thread spends holding its unit's residual through the main loop
// (tma_ws::UnitResidual: a cshuffle instance with a residual add, no swap_ab, at most 64
// accumulators a thread): a 16-byte vector per m64 row slice, 32-column chunk and half; else 0.
constexpr int tma_residual_preload_registers(int tile_m, int tile_n, int wave_m, bool residual, bool cshuffle,
                                             bool swap_ab) {
  const int rep_m = tma_rep_m(tile_m, wave_m);
  return residual && cshuffle && !swap_ab && rep_m * tile_n / 2 <= 64 ? rep_m * (tile_n / 32) * 2 * 4 : 0;
}
// Shared memory of a wavelet_tma block (pipeline/tma_ws.hpp, TmaTraits; the dispatcher's occupancy
// estimate): a ring of 128-byte rows (tile M + tile N per stage), two mbarriers per stage, with
// the cshuffle epilogue a slab of 16 rows x 40 elements per math warp, with bias_grad the all-ones
// operand of dy's row sums, with a gradient mask y's tile beside dy's in every stage, 1 KB of
// alignment slack.
constexpr int tma_smem_bytes(int tile_m, int tile_n, int stages, int math_warps, int elem_bytes,
                             bool staged, bool bias_grad = false, bool grad_mask = false) {
  return stages * ((grad_mask ? 2 : 1) * tile_m + tile_n) * 128 + 2 * stages * 8 +
         (staged ? math_warps * 16 * 40 * elem_bytes : 0) + (bias_grad ? kTmaBiasGradOnesBytes : 0) + 1024;
}
// wavelet_tma's automatic split of a launch's reduction (pipeline/tma_ws.hpp TmaConvKernel::split_of
// with the device's resident blocks; the dispatcher with its occupancy estimate): the split count
// c in 1..min(max_splits, k_tiles / 4) and, for backward_weight, where the partial sums meet,
// minimising in k-tile times
//   workspace: rounds over `slots` blocks x (k tiles per split + 2)   (2: the unit's epilogue)
//              + for c > 1, 8 + written elements / 120000   (clearing the fp32 workspace and
//              converting it: two more launches and 10 bytes per element, in k-tile times)
//   cluster:   (c in 2..8 with cluster_slots[c] > 0: the blocks that many clusters of c keep
//              resident, at most `slots`) rounds over cluster_slots[c] x (k tiles per split
//              + 2 + c^2)   (c^2: the partial tile through shared memory and the slice summed
//              over the cluster: small clusters pay off, 8-block ones cost more than the
//              workspace)
// fewest splits on ties, a cluster before a workspace at the same count. `mode` keeps one kind
// (Workspace: no cluster; Cluster: no workspace, at most 8). Fitted on backward_weight.
struct ReductionSplit {
  int splits = 1;
  bool cluster = false;
};
// The rule's cost of c splits (c > 1 for a cluster, which needs cluster_slots[c] > 0).
inline int64_t tma_split_cost(int64_t k_tiles, int64_t tiles, int64_t slots, const int64_t* cluster_slots,
                              int64_t dw_elems, int c, bool cluster) {
  slots = std::max<int64_t>(1, slots);
  const int64_t per_split = ceil_div(k_tiles, c);
  if (cluster)
    return ceil_div(tiles * c, std::min(slots, cluster_slots[c])) * (per_split + 2 + int64_t(c) * c);
  return ceil_div(tiles * c, slots) * (per_split + 2) + (c > 1 ? 8 + dw_elems / 120000 : 0);
}
// Whether a cluster of c can launch (cluster_slots: index 2..8).
inline bool cluster_fits(const int64_t* cluster_slots, int c) {
  return cluster_slots != nullptr && c > 1 && c <= 8 && cluster_slots[c] > 0;
}
inline ReductionSplit tma_reduction_choice(int64_t k_tiles, int64_t tiles, int64_t slots,
                                           const int64_t* cluster_slots, int64_t dw_elems,
                                           int max_splits = kMaxKBatch, SplitReduce mode = SplitReduce::Auto) {
  int kmax = int(std::min<int64_t>(max_splits, std::max<int64_t>(1, k_tiles / 4)));
  if (mode == SplitReduce::Cluster) kmax = std::min(kmax, 8);
  ReductionSplit best;
  int64_t best_cost = -1;
  for (int c = 1; c <= kmax; ++c) {
    for (bool cluster : {true, false}) {
      if (cluster ? (!cluster_fits(cluster_slots, c) || mode == SplitReduce::Workspace)
                  : (c > 1 && mode == SplitReduce::Cluster))
        continue;
      const int64_t cost = tma_split_cost(k_tiles, tiles, slots, cluster_slots, dw_elems, c, cluster);
      if (best_cost < 0 || cost < best_cost) best_cost = cost, best = ReductionSplit{c, cluster};
    }
  }
  return best;
}
// An explicit split count c: a cluster (mode Cluster; Auto where it fits and the rule prices it
// at most the workspace's) or the workspace.
inline bool tma_split_in_cluster(int64_t k_tiles, int64_t tiles, int64_t slots, const int64_t* cluster_slots,
                                 int64_t dw_elems, int c, SplitReduce mode) {
  if (mode == SplitReduce::Workspace || !cluster_fits(cluster_slots, c)) return false;
  return mode == SplitReduce::Cluster ||
         tma_split_cost(k_tiles, tiles, slots, cluster_slots, dw_elems, c, true) <=
             tma_split_cost(k_tiles, tiles, slots, cluster_slots, dw_elems, c, false);
}
// The same without clusters (forward / backward_data): the split count.
inline int tma_reduction_splits(int64_t k_tiles, int64_t tiles, int64_t slots, int64_t dw_elems,
                                int max_splits = kMaxKBatch) {
  return tma_reduction_choice(k_tiles, tiles, slots, nullptr, dw_elems, max_splits).splits;
}
}  // namespace detail

// Device pointers of one convolution call. Which one is written depends on the variant:
//   forward:         reads in (x), wei (w);   writes out (y)
//   backward_data:   reads out (dy), wei (w); writes in (dx)
//   backward_weight: reads out (dy), in (x);  writes wei (dw)
// ep: a fused instance's operands (epilogue/fusion.hpp); null for an unfused one.
struct ConvTensors {
  void* in = nullptr;
  void* wei = nullptr;
  void* out = nullptr;
  EpilogueArgs ep;
};

// Why the fused operands `e` do not fit an instance with the operations `ops` ("" when they do):
// each vector its operations read is given (the residual 16-byte aligned, as the output), every
// other is null.
inline std::string epilogue_operands_refusal(const EpilogueOps& ops, const EpilogueArgs& e) {
  const bool bias = ops.channel_op == ChannelOp::Bias || ops.channel_op == ChannelOp::ScaleShift;
  const bool scale = ops.channel_op == ChannelOp::ScaleShift;
  auto one = [](bool needed, const void* ptr, const char* what) -> std::string {
    if (needed && ptr == nullptr) return std::string("the fused epilogue needs ") + what;
    if (!needed && ptr != nullptr) return std::string("this instance reads no ") + what + " (pass null)";
    return {};
  };
  if (std::string r = one(bias, e.bias, "bias vector"); !r.empty()) return r;
  if (std::string r = one(scale, e.scale, "scale vector"); !r.empty()) return r;
  if (std::string r = one(ops.residual, e.residual, "residual tensor"); !r.empty()) return r;
  if (std::string r = one(is_grad_mask(ops.activation), e.y, "saved forward output y"); !r.empty()) return r;
  if (std::string r = one(ops.channel_op == ChannelOp::BiasGrad, e.db, "bias gradient db"); !r.empty())
    return r;
  if (std::string r = one(ops.stats, e.stats, "statistics output stats"); !r.empty()) return r;
  if (reinterpret_cast<uintptr_t>(e.residual) % 16 != 0) return "the residual tensor must be 16-byte aligned";
  if (reinterpret_cast<uintptr_t>(e.y) % 16 != 0) return "the saved forward output y must be 16-byte aligned";
  if (reinterpret_cast<uintptr_t>(e.db) % 4 != 0) return "the bias gradient db must be 4-byte aligned";
  if (reinterpret_cast<uintptr_t>(e.stats) % 4 != 0) return "the statistics output stats must be 4-byte aligned";
  return {};
}

namespace detail {
// The same for the instance configuration Cfg.
template <class Cfg>
std::string epilogue_operands_refusal(const EpilogueArgs& e) {
  return ckgen::epilogue_operands_refusal(EpilogueOps{Cfg::kChannelOp, Cfg::kActivation, Cfg::kResidual, Cfg::kStats,
                                                      out_datatype_code(Cfg::kDataType, Cfg::kOutDataType)},
                                          e);
}
}  // namespace detail

// Per-call options.
//   k_batch:        split count of the reduction (0 = choose automatically) for backward_weight
//                   and for forward / backward_data instances whose k_batch is not 1 (those
//                   with k_batch 1 never split and ignore it); StreamK instances refuse
//                   anything but 0.
//   streamk_blocks: StreamK instances: the StreamK grid B (0 = #SMs x resident blocks per
//                   SM, see schedule/streamk_plan.hpp); split-K instances refuse anything but 0.
//   split_reduce:   where a split reduction's partial sums meet (SplitReduce); anything but
//                   Auto is for wavelet_tma backward_weight instances, the others refuse it.
struct RunOptions {
  int k_batch = 0;
  int streamk_blocks = 0;
  SplitReduce split_reduce = SplitReduce::Auto;
};

// backward_weight's row form (wavelet_tma, specialization stride1: TmaTraits::kRows), as the
// dispatcher and the test harness tell it from a key.
inline bool tma_row_form(const KernelKey& k) {
  return is_row_form(k.pipeline, k.variant, k.specialization);
}

// windows (wavelet_tma, specialization window: pipeline/tma_window.hpp forward,
// pipeline/tma_window_weight.hpp backward_weight).
inline bool tma_window_form(const KernelKey& k) {
  return k.pipeline == Pipeline::WaveletTma && k.specialization == Specialization::Window;
}
namespace detail {
// The window form's grid: the compute units spread over the groups, bpg blocks a group (at least
// one), group_stride groups side by side (block b runs groups b / bpg, + group_stride, ...).
struct TmaWindowGrid {
  int64_t bpg, group_stride;
};
inline TmaWindowGrid tma_window_grid(int64_t groups, int64_t compute_units) {
  const int64_t bpg = std::max<int64_t>(1, compute_units / groups);
  return {bpg, std::min<int64_t>(groups, std::max<int64_t>(1, compute_units / bpg))};
}
// The backward_weight windows' grid (pipeline/tma_window_weight.hpp): tma_window_grid's, with
// the blocks of a group in clusters of `cluster` blocks that sum their partial filters through
// distributed shared memory before adding them into the workspace. A block's own reductions
// run at its end (reductions spread over a row's lines are slow): its 147 KB of sums ~kTmaWindowSumUs, 1 / cluster of it in a cluster; a window
// ~kTmaWindowPixelUs a pixel (a 3x3 filter at ~0.8 of an SM's peak). The cluster (2..8 blocks,
// bpg a multiple of it, every cluster resident at once: slots[c] blocks, all when slots is
// null) minimizes window rounds x window + sums / cluster; cluster 1 where none does better.
inline constexpr double kTmaWindowSumUs = 6.0;
inline constexpr double kTmaWindowPixelUs = 0.01;
struct TmaWindowWeightGrid {
  int64_t bpg, group_stride;
  int cluster;
};
inline TmaWindowWeightGrid tma_window_weight_grid(int64_t groups, int64_t compute_units, const int64_t* slots,
                                                  int64_t windows_group, int pixels, int max_cluster = 8) {
  const TmaWindowGrid g = tma_window_grid(groups, compute_units);
  const double window_us = kTmaWindowPixelUs * pixels;
  auto cost = [&](int64_t bpg, int c) {
    return double((windows_group + bpg - 1) / bpg) * window_us + kTmaWindowSumUs / c;
  };
  TmaWindowWeightGrid best{g.bpg, g.group_stride, 1};
  double best_cost = cost(g.bpg, 1);
  for (int c = 2; c <= max_cluster; ++c) {
    int64_t bpg = g.bpg / c * c;
    if (slots != nullptr) bpg = std::min(bpg, slots[c] / (c * g.group_stride) * c);
    if (bpg < c) continue;
    if (const double t = cost(bpg, c); t < best_cost) {
      best = {bpg, g.group_stride, c};
      best_cost = t;
    }
  }
  return best;
}
// A problem's windows of `pixels` / 8 rows x 8 columns: the input patch a window copies (pw x ph
// pixels: the window plus the dilated filter's reach) and the windows of an image and a group.
struct TmaWindowShape {
  int64_t pw, ph, tiles_w, tiles_img, tiles_group;
};
inline TmaWindowShape tma_window_shape(const ConvProblem& p, int pixels) {
  const int64_t rows = pixels / 8;
  TmaWindowShape s;
  s.pw = 8 + (p.filter[2] - 1) * p.dilation[2];
  s.ph = rows + (p.filter[1] - 1) * p.dilation[1];
  s.tiles_w = (p.out[2] + 7) / 8;
  s.tiles_img = s.tiles_w * ((p.out[1] + rows - 1) / rows);
  s.tiles_group = p.N * s.tiles_img;
  return s;
}
}  // namespace detail

// The KernelKey fields a generated Config names directly, the same for every launcher; each
// launcher adds the tile, wave, warp-tile and vector fields from its own traits.
template <class Cfg>
KernelKey config_key() {
  KernelKey k{};
  k.name = Cfg::kName;
  k.variant = Cfg::kVariant;
  k.datatype = Cfg::kDataType;
  k.ndim = Cfg::kNDim;
  k.pipeline = Cfg::kPipeline;
  k.stages = Cfg::kStages;
  k.scheduler = Cfg::kScheduler;
  k.load_waves = Cfg::kLoadWaves;
  k.math_waves = Cfg::kMathWaves;
  k.epilogue = Cfg::kEpilogue;
  k.specialization = Cfg::kSpecialization;
  k.groups_to_merge = Cfg::kGroupsToMerge;
  k.k_batch = Cfg::kKBatch;
  k.reduction = Cfg::kReduction;
  k.persistent = Cfg::kPersistent;
  k.stage = Cfg::kStage;
  k.channel_op = Cfg::kChannelOp;
  k.activation = Cfg::kActivation;
  k.residual = Cfg::kResidual;
  k.stats = Cfg::kStats;
  k.out_datatype = Cfg::kOutDataType;
  k.arch = Cfg::kArch;
  return k;
}

// The platform's invalid-value error (a launch refused for its arguments).
inline gpuError_t gpu_invalid_value() {
#if defined(CKGEN_NVIDIA)
  return cudaErrorInvalidValue;
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
  return hipErrorInvalidValue;
#else
  return gpuError_t(1);
#endif
}

class KernelBase {
 public:
  virtual ~KernelBase() = default;
  virtual const KernelKey& key() const = 0;
  const std::string& name() const { return key().name; }

  // Empty string when this instance can run `p` (with opts), else the reason it cannot.
  virtual std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const = 0;

  // Bytes of device workspace `run` needs for `p` (0 for most instances).
  virtual std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const = 0;

  // Enqueues the convolution on `stream`. Returns gpuSuccess or the launch error. The caller
  // has checked is_supported. `workspace` holds workspace_bytes(p, opts) bytes (may be null
  // when that is 0).
  virtual gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace,
                         gpuStream_t stream, const RunOptions& opts = {}) const = 0;
};

class Registry {
 public:
  void add(std::unique_ptr<KernelBase> k) { kernels_.push_back(std::move(k)); }
  const std::vector<std::unique_ptr<KernelBase>>& all() const { return kernels_; }

 private:
  std::vector<std::unique_ptr<KernelBase>> kernels_;
};

// The process-wide registry filled by the generated registry source (registry.cpp).
Registry& registry();

}  // namespace ckgen
