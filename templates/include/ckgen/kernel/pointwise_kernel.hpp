// PointwiseKernel<Cfg>: the host face of a Pipeline::Pointwise instance (pipeline/pointwise.hpp):
// its checks, shared memory per problem and the persistent grid.
#pragma once

#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "ckgen/core/chain.hpp"
#include "ckgen/kernel/host_face.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/pipeline/pointwise.hpp"
#include "ckgen/schedule/pointwise_plan.hpp"

namespace ckgen {

template <class Cfg>
class PointwiseKernel final : public HostFace<Cfg> {
  using HostFace<Cfg>::key_;

 public:
  using HostFace<Cfg>::kVariant;
  using HostFace<Cfg>::kMax32;
  static constexpr int BM = Cfg::Tile::kM;
  static constexpr int kThreads = Cfg::Waves::kM * 32;
  static_assert(Cfg::kVariant != Variant::BackwardWeight && Cfg::kDataType != DataType::FP32 &&
                    BM % (16 * Cfg::Waves::kM) == 0 && Cfg::Tile::kN == kPointwiseChunk &&
                    Cfg::kStages == kPointwiseStages && !Cfg::kFused && Cfg::kGroupsToMerge == 1,
                "ckgen: pointwise takes forward / backward_data, 16-bit data, tile [16 x waves x m, 64, 16], "
                "two stages, no fusion or merged groups (ckgen/space/rules/pointwise.py)");

  PointwiseKernel() {
    this->set_shape(BM, Cfg::Tile::kN, Cfg::Tile::kK, Cfg::Waves::kM, 1, 1, 16, 8, 16, 8, 8, 8);
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    // RunOptions::k_batch is ignored, as by every forward / backward_data instance that never splits
    if (std::string e =
            detail::common_refusal(p, Cfg::kNDim,
                                   [&]() -> std::string {
                                     if (opts.streamk_blocks != 0)
                                       return "RunOptions::streamk_blocks is for StreamK instances";
                                     return detail::split_reduce_refusal(opts.split_reduce);
                                   });
        !e.empty())
      return e;
    if (const char* why = pointwise_refusal(kVariant, p)) return why;
    const PointwiseLayout L = layout(p);
    if (L.total > detail::device_smem_optin())
      return "pointwise shared memory " + str(L.total) +
             " bytes (the filter of every group, two source and two "
             "output tiles of " +
             str(BM) + " rows) exceeds the device's " + str(detail::device_smem_optin());
    if (tiles(p) > kMax32) return "N * spatial / tile M exceeds 2^31-1 tiles";
    return {};
  }

  std::size_t workspace_bytes(const ConvProblem&, const RunOptions& = {}) const override { return 0; }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void*, gpuStream_t stream,
                 const RunOptions& = {}) const override {
#if defined(CKGEN_NVIDIA)
    if (!detail::epilogue_operands_refusal<Cfg>(t.ep).empty()) return this->invalid_value();
    const bool fwd = kVariant == Variant::Forward;
    PointwiseArgs a;
    a.src = fwd ? t.in : t.out;
    a.w = t.wei;
    a.dst = fwd ? t.out : t.in;
    for (const void* q : {a.src, a.w, static_cast<const void*>(a.dst)})
      if (reinterpret_cast<uintptr_t>(q) % 16 != 0) return this->invalid_value();  // bulk copies
    a.rows = p.N * p.out_spatial();
    a.G = int(p.G);
    a.R = int(pointwise_reduction(kVariant, p));
    a.Nn = int(pointwise_outputs(kVariant, p));
    a.tiles = int(tiles(p));
    const int smem = int(layout(p).total);
    const auto kernel = pointwise_conv_kernel<Cfg>;
    static std::atomic<uint64_t> done{0};
    if (gpuError_t e = detail::allow_dynamic_smem(kernel, detail::device_smem_optin(), done); e != gpuSuccess)
      return e;
    const int64_t grid =
        std::min<int64_t>(a.tiles, int64_t(resident_blocks(smem)) * detail::device_sm_count());
    return launch_kernel(kernel, dim3(unsigned(grid)), dim3(kThreads), std::size_t(smem), stream, false, a);
#else
    (void)p, (void)t, (void)stream;
    return this->invalid_value();
#endif
  }

  static PointwiseLayout layout(const ConvProblem& p) {
    return pointwise_layout(kVariant == Variant::Forward, p.G, pointwise_reduction(kVariant, p),
                            pointwise_outputs(kVariant, p), BM);
  }
  static int64_t tiles(const ConvProblem& p) { return (p.N * p.out_spatial() + BM - 1) / BM; }

 private:
#if defined(CKGEN_NVIDIA)
  // Blocks with `smem` bytes one SM holds (occupancy query; the last answer is kept).
  static int resident_blocks(int smem) {
    static std::atomic<uint64_t> memo{0};
    return detail::resident_blocks_memo(memo, pointwise_conv_kernel<Cfg>, kThreads, smem,
                                        [] { return gpuSuccess; });
  }
#endif
};

}  // namespace ckgen
