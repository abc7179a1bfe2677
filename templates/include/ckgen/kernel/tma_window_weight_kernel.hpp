// TmaWindowWeightKernel<Cfg>: the host face of a backward_weight Specialization::Window instance
// (pipeline/tma_window_weight.hpp).
#pragma once

#include <string>

#include "ckgen/kernel/tma_window_kernel.hpp"
#include "ckgen/pipeline/tma_window_weight.hpp"
#include "ckgen/schedule/splitk_finish.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

template <class Cfg>
class TmaWindowWeightKernel final : public HostFace<Cfg> {
  using HostFace<Cfg>::key_;
  using HostFace<Cfg>::invalid_value;

 public:
  using Tr = TmaWindowWeightTraits<Cfg>;

  TmaWindowWeightKernel() {
    detail::set_window_key(key_, Tr::PN, 12, Tr::kN);
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    if (std::string e = detail::common_refusal(p, 2, [&] { return detail::tma_window_options_refusal(opts); });
        !e.empty())
      return e;
    if (p.filter[1] != 3 || p.filter[2] != 3)
      return "backward_weight window needs a 3x3 filter (one math warpgroup a filter row of three taps; got " +
             str(p.filter[1]) + "x" + str(p.filter[2]) + ")";
    // A block runs one group's windows (the path of several groups a block, G above the compute
    // units, has not run on a GPU).
    if (p.G > detail::device_sm_count())
      return "backward_weight window: more groups (" + str(p.G) + ") than compute units (" +
             str(detail::device_sm_count()) + "); a block runs one group";
    const Geometry gm = geometry(p);
    return detail::tma_window_refusal(p, gm, gm.smem, str(Tr::S) + " stages");
  }
  // The fp32 sums of dw.
  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& = {}) const override {
    return std::size_t(p.weight_elems()) * sizeof(float);
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& = {}) const override {
    if (!detail::epilogue_operands_refusal<Cfg>(t.ep).empty()) return cudaErrorInvalidValue;
    if (workspace == nullptr) return cudaErrorInvalidValue;
    if (!detail::aligned16({t.in, t.out, t.wei, workspace})) return cudaErrorMisalignedAddress;
    const Geometry gm = geometry(p);
    TmaWindowWeightArgs a{};
    const bool bf = Tr::kBF16;
    if (!detail::encode_window_maps(&a.x, &a.dy, bf, p, t.in, t.out, gm, Tr::TH)) return cudaErrorInvalidValue;
    float* ws = static_cast<float*>(workspace);
    const int64_t n = p.weight_elems();
    a.ws = ws;
    const int patch = detail::tma_window_patch_bytes(int(gm.pw), int(gm.ph));
    a.stage_bytes = Tr::kDyBytes + patch;
    a.stage_tx = Tr::kDyBytes + int(gm.pw * gm.ph) * Tr::kRowBytes;
    a.ring_bytes = Tr::S * a.stage_bytes;
    if (a.ring_bytes < detail::kTmaWindowPartBytes) a.ring_bytes = detail::kTmaWindowPartBytes;
    if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
    const detail::TmaWindowWeightGrid gr =
        detail::tma_window_weight_grid(p.G, detail::device_sm_count(), cluster_slots(), gm.tiles_group, Tr::PN);
    a.win = detail::window_geometry(p, gm, gr.bpg, gr.group_stride);
    a.cluster = gr.cluster;
    if (gpuError_t e = launch_clear_sums(ws, n, stream, false); e != gpuSuccess) return e;
    cudaLaunchAttribute cl{};
    cl.id = cudaLaunchAttributeClusterDimension;
    cl.val.clusterDim.x = unsigned(gr.cluster);
    cl.val.clusterDim.y = cl.val.clusterDim.z = 1;
    if (gpuError_t e = launch_chained(tma_window_weight_kernel<Cfg>, dim3(unsigned(gr.bpg * gr.group_stride)),
                                      dim3(Tr::kThreads), std::size_t(gm.smem), stream, true,
                                      gr.cluster > 1 ? &cl : nullptr, a);
        e != gpuSuccess)
      return e;
    return launch_splitk_finish<Cfg::kDataType>(ws, 1, 0, static_cast<typename Tr::Raw*>(t.wei), n, stream, true);
  }

 private:
  struct Geometry : detail::TmaWindowShape {
    int smem;
  };
  static Geometry geometry(const ConvProblem& p) {
    Geometry g{};
    static_cast<detail::TmaWindowShape&>(g) = detail::tma_window_shape(p, Tr::PN);
    g.smem = detail::tma_window_weight_smem_bytes(int(g.pw), int(g.ph), Tr::S, Tr::PN);
    return g;
  }
  static gpuError_t prepare_launch() {
    static std::atomic<uint64_t> done{0};
    return detail::allow_dynamic_smem(tma_window_weight_kernel<Cfg>, detail::device_smem_optin(), done);
  }
  // Blocks the device keeps resident in clusters of c = 2..8 (occupancy query once, at the
  // shared memory of a 3x3 filter without dilation: one block a compute unit at any of them).
  static const int64_t* cluster_slots() {
    static const std::array<int64_t, 9> n = [] {
      std::array<int64_t, 9> v{};
      if (prepare_launch() != gpuSuccess) return v;
      for (int c = 2; c <= 8; ++c) {
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = unsigned(c);
        attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(unsigned(c * 64), 1, 1);
        cfg.blockDim = dim3(Tr::kThreads, 1, 1);
        cfg.dynamicSmemBytes = std::size_t(detail::tma_window_weight_smem_bytes(10, Tr::TH + 2, Tr::S, Tr::PN));
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, tma_window_weight_kernel<Cfg>, &cfg) == cudaSuccess)
          v[size_t(c)] = int64_t(clusters) * c;
        else
          (void)cudaGetLastError();  // not sticky: keep it from the next launch's check
      }
      return v;
    }();
    return n.data();
  }
};

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
