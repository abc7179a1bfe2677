// GroupedConvKernel<Cfg>: the host face of the implicit-GEMM pipelines (kernel/gemm_device.hpp):
// support checks, split choice, workspace and the launch with its split-K finish.
#pragma once

// First: under clang -nogpuinc, clang's cuda_wrappers/<algorithm> and <new> need __host__ /
// __device__, which core/portability.hpp defines.
#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <type_traits>

#include "ckgen/conv/gemm_dims.hpp"
#include "ckgen/kernel/gemm_device.hpp"
#include "ckgen/kernel/host_face.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/schedule/splitk_finish.hpp"
#include "ckgen/schedule/streamk.hpp"

namespace ckgen {

template <class Cfg>
class GroupedConvKernel final : public HostFace<Cfg> {
  using HostFace<Cfg>::key_;
  using HostFace<Cfg>::invalid_value;

 public:
  using Tr = ConfigTraits<Cfg>;
  using Raw = typename Tr::Raw;
  using HostFace<Cfg>::kVariant;
  using HostFace<Cfg>::kMax32;

  GroupedConvKernel() {
    this->set_shape(Tr::BM, Tr::BN, Tr::BK, Tr::WM, Tr::WN, Tr::WK, Tr::IM, Tr::IN, Tr::IK, Tr::VA, Tr::VB,
                    Tr::VC);
  }

  static constexpr bool kStreamK = Tr::kStreamK;
#if defined(CKGEN_AMD)
  static constexpr std::size_t kDynSmem = 0;  // static LDS (see grouped_conv_kernel)
#else
  static constexpr std::size_t kDynSmem = Tr::kSmemBytes;
#endif

  // Opts in to large dynamic shared memory, once per device (before launches and occupancy
  // queries).
  static gpuError_t prepare_launch() {
    if constexpr (kDynSmem > 48 * 1024) {
      static std::atomic<uint64_t> done{0};
      return detail::allow_dynamic_smem(grouped_conv_kernel<Cfg>, int(Tr::kSmemBytes), done);
    }
    return gpuSuccess;
  }

  static constexpr int GM = Cfg::kGroupsToMerge;

  // GEMM sizes per block's group (merged groups: GM of them; backward_data: the largest
  // stride class).
  static void gemm_dims(const ConvProblem& p, int64_t& M, int64_t& N, int64_t& K) {
    const GemmDims d = tiled_gemm_dims(kVariant, p, GM);
    M = d.M;
    N = d.N;
    K = d.K;
  }

  // The split count a call uses. backward_weight: opts.k_batch, else the instance's kKBatch,
  // else chosen per problem. forward / backward_data: an instance with kKBatch == 1 never
  // splits (RunOptions::k_batch ignored); kKBatch 0 (auto) or > 1 takes opts.k_batch when
  // given, else its kKBatch, else (0) the per-problem choice below.
  int resolve_k_batch(const ConvProblem& p, const RunOptions& opts) const {
    if (kVariant != Variant::BackwardWeight && Cfg::kKBatch == 1) {
      return 1;
    } else {
      if (opts.k_batch > 0) return opts.k_batch;
      if (Cfg::kKBatch > 0) return Cfg::kKBatch;
      int64_t M, N, K;
      gemm_dims(p, M, N, K);
      int64_t classes = 1;
      if constexpr (kVariant == Variant::BackwardData) classes = p.stride[0] * p.stride[1] * p.stride[2];
      const int64_t tiles = p.G / GM * classes * detail::ceil_div(M, Tr::BM) * detail::ceil_div(N, Tr::BN);
      const int64_t target = 2 * int64_t(detail::device_sm_count());
      int64_t kb = detail::ceil_div(target, tiles);
      const int64_t kmax = std::max<int64_t>(1, detail::ceil_div(K, 4 * Tr::BK));  // >= 4 k tiles
      kb = std::min<int64_t>(kb, kmax);
      return int(std::max<int64_t>(1, std::min<int64_t>(64, kb)));
    }
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    if (std::string e = detail::common_refusal(
            p, Cfg::kNDim,
            [&]() -> std::string {
              if (std::string r = detail::split_reduce_refusal(opts.split_reduce); !r.empty()) return r;
              if constexpr (kStreamK) {
                if (opts.k_batch != 0)
                  return "StreamK sizes its own split: RunOptions::k_batch must be 0 (got " +
                         str(opts.k_batch) + ")";
                if (opts.streamk_blocks < 0)
                  return "RunOptions::streamk_blocks must be >= 0 (0 = #SMs x occupancy), got " +
                         str(opts.streamk_blocks);
              } else {
                if (opts.streamk_blocks != 0)
                  return "RunOptions::streamk_blocks is for StreamK instances (this one uses split-K)";
              }
              return {};
            });
        !e.empty())
      return e;
    // Specialization.
    if constexpr (Cfg::kSpecialization != Specialization::Default) {
      for (int i = 0; i < 3; ++i) {
        if (p.filter[i] != 1) return "specialization filter1x1 needs a 1x1 filter";
        if (p.pad_l[i] != 0 || p.pad_r[i] != 0) return "specialization filter1x1 needs zero pads";
        if (Cfg::kSpecialization == Specialization::Filter1x1Stride1Pad0 && p.stride[i] != 1)
          return "specialization filter1x1_stride1_pad0 needs stride 1";
      }
    }
    // Vector widths vs channel alignment (the contiguous dim of each operand).
    const int64_t zyxc = p.filter_spatial() * p.C;
    auto need = [&](int64_t v, int vec, const char* what, const char* op) -> std::string {
      if (v % vec == 0) return {};
      return std::string(op) + " vector width " + str(vec) + " needs " + what + " (" + str(v) +
             ") to be a multiple of " + str(vec);
    };
    std::string e;
    if constexpr (GM > 1) {
      if (p.G % GM != 0)
        return "groups_to_merge " + str(GM) + " needs G (" + str(p.G) + ") to be a multiple of it";
    }
    if constexpr (GM > 1 && kVariant == Variant::Forward) {
      // merged runs: A over (g', c), C over (g, k); B vectors stay inside one group's c run
      if (!(e = need(GM * p.C, Tr::VA, "groups_to_merge*C", "A (input)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (weight, merged groups)")).empty()) return e;
      if (!(e = need(GM * p.K, Tr::VC, "groups_to_merge*K", "C (output)")).empty()) return e;
    } else if constexpr (GM > 1 && kVariant == Variant::BackwardData) {
      if (!(e = need(GM * p.K, Tr::VA, "groups_to_merge*K", "A (output grad)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (weight)")).empty()) return e;
      if (!(e = need(GM * p.C, Tr::VC, "groups_to_merge*C", "C (input grad)")).empty()) return e;
    } else if constexpr (kVariant == Variant::Forward) {
      if (!(e = need(p.C, Tr::VA, "C", "A (input)")).empty()) return e;
      if (!(e = need(zyxc, Tr::VB, "Z*Y*X*C", "B (weight)")).empty()) return e;
      if (!(e = need(p.K, Tr::VC, "K", "C (output)")).empty()) return e;
    } else if constexpr (kVariant == Variant::BackwardData) {
      if (!(e = need(p.K, Tr::VA, "K", "A (output grad)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (weight)")).empty()) return e;
      if (!(e = need(p.C, Tr::VC, "C", "C (input grad)")).empty()) return e;
    } else {
      if (!(e = need(p.K, Tr::VA, "K", "A (output grad)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (input)")).empty()) return e;
      if (!(e = need(zyxc, Tr::VC, "Z*Y*X*C", "C (weight grad)")).empty()) return e;
    }
    // 32-bit limits of the index math (tensor offsets themselves are 64-bit).
    int64_t M, N, K;
    gemm_dims(p, M, N, K);
    const int64_t lim = int64_t(1) << 30;
    // (+ one tile of headroom: tile coordinates run up to M + BM - 1)
    constexpr int64_t kTileRoom =
        Tr::BM > Tr::BN ? (Tr::BM > Tr::BK ? Tr::BM : Tr::BK) : (Tr::BN > Tr::BK ? Tr::BN : Tr::BK);
    if (M > kMax32 - kTileRoom || N > kMax32 - kTileRoom || K > kMax32 - kTileRoom)
      return "a per-group GEMM dim exceeds 2^31-1 (M=" + str(M) + " N=" + str(N) + " K=" + str(K) + ")";
    if (p.N * p.in_spatial() > kMax32 || p.N * p.out_spatial() > kMax32)
      return "N * spatial size exceeds 2^31-1 (32-bit index math)";
    if (zyxc > kMax32 || GM * p.C > kMax32 || GM * p.K > kMax32) return "Z*Y*X*C exceeds 2^31-1";
    for (int i = 0; i < 3; ++i)
      if (p.in[i] + p.pad_l[i] + p.pad_r[i] > lim || (p.filter[i] - 1) * p.dilation[i] > lim ||
          p.stride[i] > lim)
        return "a spatial size exceeds 2^30";
    int64_t tiles = detail::ceil_div(M, Tr::BM) * detail::ceil_div(N, Tr::BN);
    if (tiles > kMax32) return "too many tiles for grid.x";
    int64_t classes = 1;
    if constexpr (kVariant == Variant::BackwardData) classes = p.stride[0] * p.stride[1] * p.stride[2];
    if (p.G / GM * classes > 65535)
      return "G (x stride classes for backward_data) exceeds 65535 (grid.y limit)";
    if constexpr (kStreamK) {
      const StreamKPlan s = streamk_plan(p, opts);
      if (s.tiles * s.iters > kMax32)
        return "StreamK: tiles x k iterations (" + str(s.tiles) + " x " + str(s.iters) + ") exceeds 2^31-1";
      if (s.grid > kMax32) return "StreamK: grid of " + str(s.grid) + " blocks exceeds 2^31-1";
    } else {  // Split-K.
      const int kb = resolve_k_batch(p, opts);
      if (kb < 1 || kb > kMaxKBatch) return "k_batch " + str(kb) + " out of range 1.." + str(kMaxKBatch);
    }
    if (Tr::kSmemBytes > 48 * 1024 && Tr::kSmemBytes > detail::device_smem_optin())
      return "needs " + str(Tr::kSmemBytes) + " bytes of shared memory, device allows " +
             str(detail::device_smem_optin());
    return {};
  }

  // Elements of the written tensor (the split-K workspace holds it in fp32, per split for
  // two-stage).
  static int64_t dst_elems(const ConvProblem& p) { return ckgen::written_elems(kVariant, p); }

  // Blocks of this instance resident on one SM x SMs: the default StreamK grid B.
  static int resident_blocks() {
    static const int blocks = [] {
      int per_sm = 0;
      if (prepare_launch() != gpuSuccess ||
          gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grouped_conv_kernel<Cfg>, Tr::kThreads,
                                                       kDynSmem) != gpuSuccess ||
          per_sm < 1)
        per_sm = 1;
      return per_sm * detail::device_sm_count();
    }();
    return blocks;
  }

  // The StreamK plan of a call (schedule/streamk_plan.hpp): tiles over all groups, k iterations per
  // tile, B = opts.streamk_blocks or streamk_default_blocks over resident_blocks().
  static StreamKPlan streamk_plan(const ConvProblem& p, const RunOptions& opts) {
    int64_t M, N, K;
    gemm_dims(p, M, N, K);
    const int64_t tiles = p.G * detail::ceil_div(M, Tr::BM) * detail::ceil_div(N, Tr::BN);
    const int64_t iters = std::max<int64_t>(1, detail::ceil_div(K, Tr::BK));
    const int64_t blocks = opts.streamk_blocks > 0 ? opts.streamk_blocks
                                                   : streamk_default_blocks(tiles, iters, resident_blocks());
    return make_streamk_plan(tiles, iters, blocks, Cfg::kPersistent);
  }

  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if constexpr (kStreamK)
      return std::size_t(streamk_workspace_bytes(streamk_plan(p, opts), Tr::BM, Tr::BN));
    const int kb = resolve_k_batch(p, opts);
    if (kb <= 1) return 0;
    const std::size_t elems = std::size_t(dst_elems(p));
    return (Cfg::kStage == Stage::One ? 1 : std::size_t(kb)) * elems * sizeof(float);
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    if (!detail::epilogue_operands_refusal<Cfg>(t.ep).empty()) return invalid_value();
    ConvArgs a{};
    a.in = t.in;
    a.wei = t.wei;
    a.out = t.out;
    a.G = int(p.G);
    a.N = int(p.N);
    a.C = int(p.C);
    a.K = int(p.K);
    for (int i = 0; i < 3; ++i) {
      a.in_[i] = int(p.in[i]);
      a.out_[i] = int(p.out[i]);
      a.fil[i] = int(p.filter[i]);
      a.s[i] = int(p.stride[i]);
      a.dil[i] = int(p.dilation[i]);
      a.pl[i] = int(p.pad_l[i]);
      a.fd_fil[i].init(p.filter[i]);
      a.fd_out[i].init(p.out[i]);
    }
    a.in_spatial = int(p.in_spatial());
    a.out_spatial = int(p.out_spatial());
    a.ZYX = int(p.filter_spatial());
    a.ZYXC = int(p.filter_spatial() * p.C);
    a.GC = p.G * p.C;
    a.GK = p.G * p.K;
    a.fd_C.init(p.C);
    a.fd_K.init(p.K);
    a.gm = GM;
    a.fd_gmC.init(GM * p.C);
    a.fd_gmK.init(GM * p.K);
    int64_t M, N, K;
    gemm_dims(p, M, N, K);
    a.M = int(M);
    a.Ng = int(N);
    a.Kred = int(K);
    a.tiles_n = int(detail::ceil_div(N, Tr::BN));
    const int64_t tiles = detail::ceil_div(M, Tr::BM) * a.tiles_n;
    a.num_classes = 1;
    if constexpr (kVariant == Variant::BackwardData) {
      a.num_classes = int(p.stride[0] * p.stride[1] * p.stride[2]);
      fill_dim_classes(a);
    }
    const int kb = kStreamK ? 1 : resolve_k_batch(p, opts);  // StreamK: launch_streamk
    a.k_batch = kb;
    a.k_chunk = int(detail::ceil_div(detail::ceil_div(std::max<int64_t>(K, 1), kb), Tr::BK) * Tr::BK);
    // The backward_data class K varies per block: the kernel splits each class's own K
    // (k_batch > 1); one chunk covers every class otherwise.
    if constexpr (kVariant == Variant::BackwardData) a.k_chunk = int(kMax32);
    a.ws = static_cast<float*>(workspace);
    a.ws_split_stride = dst_elems(p);
    a.ep = t.ep;
    void* dst = kVariant == Variant::Forward ? t.out
                : kVariant == Variant::BackwardData ? t.in
                                                    : t.wei;
    a.dst = dst;
    a.out_mode = OutMode::Direct;
    if (kb > 1) a.out_mode = Cfg::kStage == Stage::One ? OutMode::AtomicF32 : OutMode::PartialF32;
    if (kb > 1 && workspace == nullptr) return invalid_value();

    if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
    if constexpr (Cfg::kBiasGrad) {  // the blocks add their channel sums (pipeline/basic.hpp)
      static_assert(!kStreamK && Cfg::kPipeline == Pipeline::Basic && GM == 1,
                    "ckgen: bias_grad is summed by the basic pipeline's split-K blocks");
      if (gpuError_t e = gpuMemsetAsync(t.ep.db, 0, std::size_t(p.G * p.K) * sizeof(float), stream); e != gpuSuccess)
        return e;
    }
    if constexpr (Cfg::kStats) {  // the CShuffle epilogue adds each block's column sums
      static_assert(!kStreamK, "ckgen: stats is summed by unsplit blocks");
      if (kb != 1) return invalid_value();
      if (gpuError_t e = gpuMemsetAsync(t.ep.stats, 0, std::size_t(2 * p.G * p.K) * sizeof(float), stream);
          e != gpuSuccess)
        return e;
    }
    if constexpr (Cfg::kGradMask)
      static_assert(Cfg::kPipeline == Pipeline::Basic || Cfg::kPipeline == Pipeline::Multistage,
                    "ckgen: the gradient mask is applied by the basic or multistage pipeline");
    if constexpr (kStreamK) {
      return launch_streamk(p, a, workspace, stream, opts);
    } else {
      if (a.out_mode == OutMode::AtomicF32) {
        gpuError_t e = gpuMemsetAsync(workspace, 0, std::size_t(dst_elems(p)) * sizeof(float), stream);
        if (e != gpuSuccess) return e;
      }
      const dim3 grid(unsigned(tiles), unsigned(p.G / GM * a.num_classes), unsigned(kb));
      gpuError_t e = launch_kernel(grouped_conv_kernel<Cfg>, grid, dim3(Tr::kThreads), kDynSmem, stream, false, a);
      if (e != gpuSuccess) return e;
      if (kb > 1) {
        const int64_t n = dst_elems(p);
        const int splits = Cfg::kStage == Stage::One ? 1 : kb;
        using OutRaw = typename Tr::OutRaw;
        e = launch_splitk_finish<Cfg::kOutDataType>(static_cast<const float*>(workspace), splits, a.ws_split_stride,
                                                    static_cast<OutRaw*>(dst), n, stream, true);
      }
      return e;
    }
  }

 private:
  // StreamK launch: zero the flags (one memsetAsync), then one kernel; grid.x = plan.grid.
  gpuError_t launch_streamk(const ConvProblem& p, ConvArgs& a, void* workspace, gpuStream_t stream,
                            const RunOptions& opts) const {
    const StreamKPlan s = streamk_plan(p, opts);
    a.sk = make_streamk_args(s, s.tiles / p.G);
    if (s.sk_blocks > 0) {
      if (workspace == nullptr) return invalid_value();
      unsigned char* ws = static_cast<unsigned char*>(workspace);
      a.sk.partials = reinterpret_cast<float*>(ws);
      a.sk.flags = reinterpret_cast<int*>(ws + streamk_partials_bytes(s, Tr::BM, Tr::BN));
      gpuError_t e = gpuMemsetAsync(a.sk.flags, 0, std::size_t(streamk_flags_bytes(s)), stream);
      if (e != gpuSuccess) return e;
    }
    return launch_kernel(grouped_conv_kernel<Cfg>, dim3(unsigned(s.grid), 1, 1), dim3(Tr::kThreads), kDynSmem, stream,
                         false, a);
  }
};

}  // namespace ckgen
