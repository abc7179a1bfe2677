// The run-time face of one generated kernel instance, and the registry that holds them.
//
// Every generated translation unit defines one `register_<instance name>(Registry&)` that adds
// a `KernelInstance<Config>` (kernel.hpp) to the registry. Host tools (profiler, tests,
// dispatcher) only see this interface.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ckgen/portability.hpp"
#include "ckgen/problem.hpp"
#include "ckgen/vocab.hpp"

namespace ckgen {

namespace detail {
// Compute units of the current device (132 when no device answers), read once. The GEMM and
// direct kernels size their automatic splits with it.
inline int device_sm_count() {
  static const int count = [] {
    int dev = 0, v = 0;
    if (gpuGetDevice(&dev) != gpuSuccess) return 132;
    if (gpuDeviceGetAttribute(&v, gpuDevAttrMultiProcessorCount, dev) != gpuSuccess || v < 1)
      return 132;
    return v;
  }();
  return count;
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
// Shared memory of a wavelet_tma block (pipeline_tma.hpp, TmaTraits; the dispatcher's occupancy
// estimate): a ring of 128-byte rows (tile M + tile N per stage), two mbarriers per stage, with
// the cshuffle epilogue a slab of 16 rows x 40 elements per math warp, 1 KB of alignment slack.
constexpr int tma_smem_bytes(int tile_m, int tile_n, int stages, int math_warps, int elem_bytes,
                             bool staged) {
  return stages * (tile_m + tile_n) * 128 + 2 * stages * 8 +
         (staged ? math_warps * 16 * 40 * elem_bytes : 0) + 1024;
}
// wavelet_tma's automatic split of a launch's reduction (pipeline_tma.hpp TmaConvKernel::split_of
// with the device's resident blocks; the dispatcher with its occupancy estimate): the count in
// 1..min(max_splits, k_tiles / 4) that minimises, in k-tile times,
//   rounds over `slots` blocks x (k tiles per split + 2)   (2: the unit's atomic epilogue)
//   + for a split, 8 + written elements / 120000   (clearing the fp32 workspace and converting
//     it: two more launches and 10 bytes per element, at ~0.4 us per k tile and ~3 TB/s),
// fewest splits on ties. Fitted on backward_weight (128 x 128 tiles, bench/NOTES.md).
inline int tma_reduction_splits(int64_t k_tiles, int64_t tiles, int64_t slots, int64_t dw_elems,
                                int max_splits = 64) {
  const int kmax = int(std::min<int64_t>(max_splits, std::max<int64_t>(1, k_tiles / 4)));
  slots = std::max<int64_t>(1, slots);
  int kb = 1;
  int64_t best = -1;
  for (int c = 1; c <= kmax; ++c) {
    const int64_t cost = ceil_div(tiles * c, slots) * (ceil_div(k_tiles, c) + 2) +
                         (c > 1 ? 8 + dw_elems / 120000 : 0);
    if (best < 0 || cost < best) best = cost, kb = c;
  }
  return kb;
}
}  // namespace detail

// Device pointers of one convolution call. Which one is written depends on the variant:
//   forward:         reads in (x), wei (w);   writes out (y)
//   backward_data:   reads out (dy), wei (w); writes in (dx)
//   backward_weight: reads out (dy), in (x);  writes wei (dw)
struct ConvTensors {
  void* in = nullptr;
  void* wei = nullptr;
  void* out = nullptr;
};

// Per-call options.
//   k_batch:        split count of the reduction (0 = choose automatically) for backward_weight
//                   and for forward / backward_data instances whose k_batch is not 1 (those
//                   with k_batch 1 never split and ignore it); StreamK instances refuse
//                   anything but 0.
//   streamk_blocks: StreamK instances: the StreamK grid B (0 = #SMs x resident blocks per
//                   SM, see streamk_plan.hpp); split-K instances refuse anything but 0.
struct RunOptions {
  int k_batch = 0;
  int streamk_blocks = 0;
};

// Static description of an instance (mirrors the generated Config; the key of the registry).
struct KernelKey {
  std::string name;
  Variant variant;
  DataType datatype;
  int ndim;
  int tile_m, tile_n, tile_k;
  int wave_m, wave_n, wave_k;
  int warp_m, warp_n, warp_k;
  Pipeline pipeline;
  int stages;
  Scheduler scheduler;
  int load_waves, math_waves;
  Epilogue epilogue;
  int vec_a, vec_b, vec_c;
  Specialization specialization;
  int groups_to_merge;
  int k_batch;
  Reduction reduction;
  bool persistent;
  Stage stage;
  const char* arch;
};

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
  k.arch = Cfg::kArch;
  return k;
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
