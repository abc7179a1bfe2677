// TmaConvKernel<Cfg>: the host face of a Pipeline::WaveletTma instance (pipeline/tma_ws.hpp):
// support checks, workspace, split choice, tensor-map encoding and the launches of every
// variant (backward_data: one forward launch per stride phase, schedule/tma_phases.hpp).
#pragma once

#include "ckgen/core/portability.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "ckgen/core/chain.hpp"
#include "ckgen/kernel/host_face.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/kernel/mask_copy_kernel.hpp"
#include "ckgen/kernel/tma_maps.hpp"
#include "ckgen/pipeline/tma_ws.hpp"
#include "ckgen/schedule/splitk_finish.hpp"
#include "ckgen/schedule/tma_phases.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

template <class Cfg>
class TmaConvKernel final : public HostFace<Cfg> {
  using HostFace<Cfg>::key_;
  using HostFace<Cfg>::invalid_value;

 public:
  using Tr = TmaTraits<Cfg>;
  static constexpr int64_t kMax32 = (int64_t(1) << 31) - 1;

  TmaConvKernel() {
    key_.tile_m = Tr::BM;
    key_.tile_n = Tr::BN;
    key_.tile_k = Tr::BK;
    key_.wave_m = Cfg::Waves::kM;
    key_.wave_n = 1;
    key_.wave_k = 1;
    key_.ping_pong = Tr::kPingPong;
    key_.warp_m = 64;
    key_.warp_n = Tr::kAccN;
    key_.swap_ab = Tr::kSwap;
    key_.warp_k = 16;
    key_.vec_a = key_.vec_b = key_.vec_c = 8;
  }


  using Phase = tma_phases::Phase;
  using Plan = tma_phases::Plan;
  static Plan plan(const ConvProblem& p) {
    if constexpr (Cfg::kVariant == Variant::Forward) {
      return tma_phases::forward_plan(gemm_view(p));
    } else {
      Plan pl = tma_phases::backward_data_plan(p);
      if (const int64_t kp = padded_k(p); kp > 0)
        for (Phase& ph : pl.phase) ph.q.C = kp;  // the launches read the padded copy of dy
      return pl;
    }
  }

  // 3D instances: a problem whose depth folds (detail::depth_fold_refusal) runs folded to 2D
  // (detail::fold_depth), any other as 3D through 5D im2col maps (TmaConvArgs::deep);
  // everything below sees this view (a 1D / 2D instance sees its problem as given).
  static ConvProblem view(const ConvProblem& p) {
    return Cfg::kNDim == 3 && detail::depth_fold_refusal(p).empty() ? detail::fold_depth(p) : p;
  }
  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if (std::string e = detail::common_refusal(p, Cfg::kNDim, [&] { return options_refusal(opts); });
        !e.empty())
      return e;
    if constexpr (Tr::kMask)
      if (premask(view(p))) return Unmasked().is_supported(p, opts);
    return shape_refusal(view(p), opts);
  }
  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if constexpr (Tr::kMask)
      if (premask(view(p))) return detail::mask_copy_bytes(p, Cfg::kDataType) + Unmasked().workspace_bytes(p, opts);
    return workspace_2d(view(p), opts);
  }
  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    if (!detail::epilogue_operands_refusal<Cfg>(t.ep).empty()) return cudaErrorInvalidValue;
    if constexpr (Tr::kMask)
      if (premask(view(p))) return run_premasked(p, t, workspace, stream, opts);
    return run_2d(view(p), t, workspace, stream, opts);
  }

  // backward_data with a gradient mask: the mask in the kernel, or a masked copy of dy that the
  // unmasked twin reads (tma_phases::premask_dy).
  static bool premask(const ConvProblem& q) {
    if constexpr (!Tr::kMask) {
      (void)q;
      return false;
    } else {
      return tma_phases::premask_dy(q, Tr::BN);
    }
  }

 private:
  using Unmasked = TmaConvKernel<WithoutGradMask<Cfg>>;
  gpuError_t run_premasked(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                           const RunOptions& opts) const {
    return detail::run_premasked(
        p, Cfg::kDataType, t, workspace,
        [&](const void* dy, const void* y, void* dst, int64_t n, float alpha) {
          return detail::mask_copy<Cfg::kActivation, Cfg::kDataType>(dy, y, dst, n, alpha, stream);
        },
        [&](const ConvTensors& u, void* ws) { return Unmasked().run(p, u, ws, stream, opts); });
  }

  // The call's options, refused whatever problem they come with (common_refusal's order).
  std::string options_refusal(const RunOptions& opts) const;
  // What the problem's view leaves out, once common_refusal has passed.
  std::string shape_refusal(const ConvProblem& p, const RunOptions& opts) const;

  // What backward_weight's row form (TmaTraits::kRows) needs of a 2D view: width stride 1 (a
  // row segment's pixels are consecutive input pixels), 64-channel blocks, the instance's filter
  // width (tile N = X x 64) and the taps' reach within the stage's halo.
  static std::string rows_refusal(const ConvProblem& p);

  // A split reduction: fp32 sums in the written tensor's layout, converted by splitk_finish.
  std::size_t workspace_2d(const ConvProblem& p, const RunOptions& opts) const {
    if constexpr (Tr::kWeightGrad) {
      const ConvProblem q = gemm_view(p);
      return weight_sum_bytes(q, weight_split(q, opts)) + pad_bytes(p) + im2col_bytes(p);
    } else {
      const Plan pl = plan(p);
      if (pl.error.empty()) return split_bytes(pl, p, opts) + pad_bytes(p) + im2col_bytes(p);
    }
    return 0;
  }

  gpuError_t run_2d(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                    const RunOptions& opts) const;

 private:
  static constexpr int kMaxSplits = kMaxKBatch;
  // Whether RunOptions::k_batch reaches the kernel: backward_weight, or an instance whose
  // k_batch is not 1 (forward / backward_data with k_batch 1 never split and ignore it).
  static constexpr bool kTakesKBatch = Tr::kWeightGrad || Cfg::kKBatch != 1;

  // The elements a call writes (and its split workspace holds): y, dx or dw.
  static int64_t written_elems(const ConvProblem& p) { return ckgen::written_elems(Cfg::kVariant, p); }

  // A launch's split of its reduction: k_tiles reduction tiles over `tiles` output tiles.
  // RunOptions::k_batch where the instance takes it, else the instance's kKBatch, else (0)
  // detail::tma_reduction_choice over the resident block slots (`elems`: the written
  // elements, the fixed cost of a workspace split); at most k_tiles splits, none of them
  // empty. `cluster`: the splits of a tile meet in a cluster (backward_weight, weight_split).
  struct Split {
    int k_tiles, kt_per_split, k_split;
    bool cluster;
  };
  static Split split_of(int64_t k_tiles, int64_t tiles, int64_t elems, int kb,
                        const int64_t* cluster_slots = nullptr, SplitReduce mode = SplitReduce::Workspace,
                        int blocks_per_sm = 0) {
    Split s{};
    s.k_tiles = int(std::max<int64_t>(1, k_tiles));
    const int64_t slots = int64_t(detail::device_sm_count()) * (blocks_per_sm > 0 ? blocks_per_sm : resident_blocks());
    if (kb <= 0) {
      const detail::ReductionSplit c =
          detail::tma_reduction_choice(s.k_tiles, tiles, slots, cluster_slots, elems, kMaxSplits, mode);
      kb = c.splits;
      s.cluster = c.cluster;
    } else {
      s.cluster = detail::tma_split_in_cluster(s.k_tiles, tiles, slots, cluster_slots, elems, kb, mode);
    }
    kb = std::max(1, std::min(kb, s.k_tiles));
    s.kt_per_split = int(detail::ceil_div(s.k_tiles, kb));
    s.k_split = int(detail::ceil_div(s.k_tiles, s.kt_per_split));  // no empty split
    s.cluster = s.cluster && s.k_split > 1;
    return s;
  }
  static int requested_splits(const RunOptions& opts) {
    return kTakesKBatch && opts.k_batch > 0 ? opts.k_batch : Cfg::kKBatch;
  }
  // forward / backward_data: one launch's split (64-channel chunks x taps); `phases` launches
  // share the machine (backward_data's run side by side), so the rule sees their tiles that many
  // times. An odd K (the launch's output channels) is never split automatically: the reductions
  // add column pairs.
  static Split phase_split(const Phase& ph, int64_t elems, const RunOptions& opts, std::size_t phases) {
    const ConvProblem& q = ph.q;
    int kb = requested_splits(opts);
    if (kb == 0 && q.K % 2 != 0) kb = 1;
    if constexpr (Tr::kPatch) {  // whole chunks per split (a chunk's taps share its patch)
      const Patch pt = patch_of(q);
      const int64_t tiles = q.N * detail::ceil_div(int64_t(q.out[1]) * pt.wp, Tr::BM) *
                            detail::ceil_div(q.K, Tr::BN) * q.G;
      Split sp = split_of(detail::ceil_div(q.C, Tr::BK), tiles * int64_t(phases), elems, kb,
                          nullptr, SplitReduce::Workspace, patch_resident_blocks(pt.smem));
      sp.k_tiles *= int(q.filter_spatial());
      sp.kt_per_split *= int(q.filter_spatial());
      return sp;
    }
    const int64_t tiles =
        detail::ceil_div(q.N * q.out_spatial(), Tr::BM) * detail::ceil_div(q.K, Tr::BN) * q.G;
    return split_of(q.filter_spatial() * detail::ceil_div(q.C, Tr::BK), tiles * int64_t(phases), elems, kb);
  }
  // Specialization::Stride1: the patch a block stages per 64-channel chunk of the forward
  // launch q (TmaConvArgs): rows of wp pixels, enough rows for any tile's BM positions under
  // every tap, 1 KB-aligned buffers (a gradient mask: dy's patch and y's); smem = the block's
  // dynamic shared memory.
  struct Patch {
    int wp, rows, box, stride;
    int smem;
  };
  static Patch patch_of(const ConvProblem& q) {
    Patch pt{};
    pt.wp = int(q.out[2] + (q.filter[2] - 1) * q.dilation[2]);
    const int64_t reach = (q.filter[1] - 1) * q.dilation[1] * pt.wp + (q.filter[2] - 1) * q.dilation[2];
    pt.rows = int((pt.wp - 1 + Tr::BM - 1 + reach) / pt.wp + 1);
    pt.box = pt.rows * pt.wp * Tr::kRowBytes;
    pt.stride = (pt.box + 1023) / 1024 * 1024 * Tr::kPatchCopies;  // a gradient mask: y's patch after dy's
    pt.smem = Tr::kPatchFixedBytes + Tr::kPatchBuffers * pt.stride;
    return pt;
  }
  static std::string patch_refusal(const ConvProblem& p, const Phase& ph);
  // Blocks of the stride1 kernel with `smem` bytes one SM holds (occupancy query; the last
  // answer is kept).
  static int patch_resident_blocks(int smem) {
    static std::atomic<uint64_t> memo{0};
    return detail::resident_blocks_memo(memo, tma_conv_kernel<Cfg, false>, Tr::kThreads, smem,
                                        [] { return prepare_launch(); });
  }
  static bool splits_any(const Plan& pl, const ConvProblem& p, const RunOptions& opts) {
    if (requested_splits(opts) == 1) return false;
    for (const Phase& ph : pl.phase)
      if (phase_split(ph, written_elems(p), opts, pl.phase.size()).k_split > 1) return true;
    return false;
  }
  // The workspace: the fp32 split sums (when any launch splits), then the padded dy (below),
  // 256-byte aligned.
  static std::size_t split_bytes(const Plan& pl, const ConvProblem& p, const RunOptions& opts) {
    if (!splits_any(pl, p, opts)) return 0;
    return (std::size_t(written_elems(p)) * sizeof(float) + 255) / 256 * 256;
  }
  // backward_data / backward_weight with K % 8 != 0 in one group (the K=36 box heads): dy's rows
  // are not 16-byte multiples, which the copy engine needs; dy is copied into the workspace with
  // K padded to a multiple of 8 (zeros). backward_data reduces over the padded channels (w is
  // read as it lies: the boxes' rows past K are zero-filled by the engine); backward_weight's
  // tiles compute the padded rows of dw as zeros and store only the K real ones. 0 = no padding.
  static int64_t padded_k(const ConvProblem& p) {
    if constexpr (Cfg::kVariant == Variant::Forward) {
      (void)p;
      return 0;
    } else {
      return tma_phases::padded_dy_channels(p);
    }
  }
  // forward / backward_weight with C % 8 != 0 in one group (the C=3 stem): the explicit im2col
  // copy (detail::tma_im2col_width, kernel/kernel_base.hpp), written into the workspace after the split
  // sums; the problem runs as a 1x1 GEMM over it (gemm_view): forward with a copy of w padded the
  // same way, backward_weight into a padded dw, cropped into dw. (Copying only the X taps of a
  // filter row and running a Y x 1 convolution over that is slower: the copy engine moves 48-byte
  // pixel rows slowly and the 64-channel k tiles are 3/8 live.)
  static int64_t im2col_width(const ConvProblem& p) { return detail::tma_im2col_width(Cfg::kVariant, p); }
  static ConvProblem gemm_view(const ConvProblem& p) { return detail::tma_gemm_view(Cfg::kVariant, p); }
  // The copy of x and the padded w (forward) or dw (backward_weight), K x cp.
  static std::size_t im2col_bytes(const ConvProblem& p) {
    const int64_t cp = im2col_width(p);
    return cp > 0 ? std::size_t((p.N * p.out_spatial() + p.K) * cp) * sizeof(typename Tr::Raw) : 0;
  }
  static std::string im2col_staging_limits(const ConvProblem& p) {
    if (im2col_width(p) > 0 && im2col_tiling(p).T == 0)
      return "wavelet_tma: the im2col copy stages one window's input rows in 48 KB of shared memory; "
             "this filter's (dilated) extent x C needs more";
    return {};
  }
  // dy -> its copy with K padded (at `offset` bytes into the workspace) when padded_k says so;
  // dy is then the copy. The same launch zeroes the clear_n split sums at clear (when not null).
  static gpuError_t pad_dy(const ConvProblem& p, const void*& dy, void* workspace, std::size_t offset,
                           gpuStream_t stream, float* clear = nullptr, int64_t clear_n = 0) {
    using Raw = typename Tr::Raw;
    const int64_t kp = padded_k(p);
    if (kp == 0) return gpuSuccess;
    if (workspace == nullptr) return cudaErrorInvalidValue;
    Raw* padded = reinterpret_cast<Raw*>(static_cast<unsigned char*>(workspace) + offset);
    if (gpuError_t e =
            pad_channels(static_cast<const Raw*>(dy), padded, p.N * p.out_spatial(), p.K, kp, stream, false, clear, clear_n);
        e != gpuSuccess)
      return e;
    dy = padded;
    return gpuSuccess;
  }
  static std::size_t pad_bytes(const ConvProblem& p) {
    const int64_t kp = padded_k(p);
    return kp > 0 ? std::size_t(p.N * p.out_spatial() * kp) * sizeof(typename Tr::Raw) : 0;
  }
  // backward_weight: 64-pixel k tiles over the K x C tiles of every group and tap (p: the GEMM
  // view), and the fp32 sums a split adds into (leading the workspace, 256-byte aligned).
  // The splits of a tile meet in a cluster (SplitReduce::Cluster, or Auto where the rule or an
  // explicit k_batch of 2..8 allows it) when the ring holds the fp32 tile and the device keeps
  // such clusters resident.
  static Split weight_split(const ConvProblem& p, const RunOptions& opts) {
    const int64_t k_tiles = Tr::kRows ? detail::tma_row_k_tiles(p, Tr::BN) : detail::ceil_div(p.N * p.out_spatial(), Tr::BK);
    return split_of(k_tiles, weight_tiles(p),
                    p.weight_elems(), requested_splits(opts), Tr::kClusterFits ? cluster_slots() : nullptr,
                    opts.split_reduce);
  }
  static bool weight_packs_taps(const ConvProblem& p) { return detail::tma_weight_packs_taps(p, Tr::BN); }
  static int64_t weight_tiles(const ConvProblem& p) {
    return Tr::kRows ? detail::tma_row_tiles(p, Tr::BM) : detail::tma_weight_tiles(p, Tr::BM, Tr::BN);
  }
  static std::size_t weight_sum_bytes(const ConvProblem& q, const Split& sp) {
    if (sp.k_split == 1 || sp.cluster) return 0;
    return (std::size_t(q.weight_elems()) * sizeof(float) + 255) / 256 * 256;
  }

  // The engine's limits on an im2col map of x: corner offsets in [-128, 127] (4D maps; 5D maps
  // of 3D problems: [-16, 15]), traversal strides <= 8, 16-bit tap offsets.
  static std::string im2col_limits(const ConvProblem& p);

  // What a forward launch (a forward problem or a backward_data phase) needs besides
  // im2col_limits: 16-byte rows of x and of w as read.
  static std::string forward_supported(const ConvProblem& p);

  static CUtensorMapDataType map_type() {
    return Tr::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  }

  // x (NHWGC) as {G*C, W, H, N} in im2col mode: `pixels` output pixels x 64 channels per copy
  // (3D problems: NDHWGC as {G*C, W, H, D, N}).
  static bool encode_x(CUtensorMap* map, const void* x, const ConvProblem& p, int pixels);

  // backward_weight with a 1x1 filter at stride 1 without padding reads x's pixels as they lie:
  // the reduction's rows are x's rows, which a 2D tiled map (G*C x N*H*W, box 64 channels x
  // `pixels`) copies faster than the im2col map. (Forward's A gains nothing from the same map and
  // stays on the im2col map.)
  static bool plain_rows(const ConvProblem& p) {
    for (int i = 0; i < 3; ++i)
      if (p.filter[i] != 1 || p.stride[i] != 1 || p.pad_l[i] != 0 || p.pad_r[i] != 0) return false;
    return true;
  }
  static bool encode_x_rows(CUtensorMap* map, const void* x, const ConvProblem& p, int pixels) {
    const cuuint64_t dims[2] = {cuuint64_t(p.G * p.C), cuuint64_t(p.N * p.in_spatial())};
    const cuuint32_t box[2] = {cuuint32_t(Tr::BK), cuuint32_t(pixels)};
    return encode_tiled(map, x, 2, dims, box);
  }

  static bool encode_tiled(CUtensorMap* map, const void* ptr, int rank, const cuuint64_t* dims,
                           const cuuint32_t* box) {
    return detail::encode_tiled16(map, Tr::kBF16, ptr, rank, dims, box);
  }


  // The convolution geometry every launch carries.
  static void set_geometry(TmaConvArgs& a, const ConvProblem& p);

  // The launch configuration of `grid` blocks in clusters of c along x (cfg points at attr:
  // built in place, not copied). The launch and the cluster occupancy query share it.
  struct ClusterLaunch {
    cudaLaunchAttribute attr{};
    cudaLaunchConfig_t cfg{};
    ClusterLaunch(unsigned grid, int c, gpuStream_t stream) {
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = unsigned(c);
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      cfg.gridDim = dim3(grid, 1, 1);
      cfg.blockDim = dim3(Tr::kThreads, 1, 1);
      cfg.dynamicSmemBytes = Tr::kSmemBytes;
      cfg.stream = stream;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    ClusterLaunch(const ClusterLaunch&) = delete;
    ClusterLaunch& operator=(const ClusterLaunch&) = delete;
  };

  // Persistent grid: every resident block slot once, at most one block per work unit. A cluster
  // reduction: one block per unit, clusters of a.cluster blocks (a tile's splits).
  // smem: stride1's (Patch::smem), else 0 (the instance's fixed size).
  // after_kernel: chained to the stream's previous kernel (core/chain.hpp).
  static gpuError_t launch(const TmaConvArgs& args, gpuStream_t stream, bool after_kernel, int smem = 0);

  // y = conv(x, w) for the forward problem ph.q (x: NHWGC, y: NHWGK), rows placed by the phase's
  // output map; w: GKYXC (forward), or the backward_data filter as it lies (G, w_k, taps, q.K;
  // w_k = q.C unless dy was padded), its taps picked by the phase's tap map. With ws, fp32 sums
  // are added there instead (split sp).
  // late_wait: after_kernel where that kernel only zeroed ws (TmaConvArgs::late_wait). ep: a
  // fused instance's operands.
  static gpuError_t run_forward(const Phase& ph, const void* x, const void* w, int64_t w_k, void* y,
                                float* ws, const Split& sp, gpuStream_t stream, bool after_kernel,
                                bool late_wait = false, const EpilogueArgs& ep = {});

  // dw[g][k][tap][c] = sum over output pixels of dy[pixel][g][k] * x[pixel at tap][g][c]: A = dy
  // (M-major, BM / 64 tiled copies of 64 pixels x 64 channels), B = x (N-major, BN / 64 im2col
  // copies of the same 64 pixels at the tile's tap). A split reduction adds fp32 partial sums
  // into the zeroed workspace and splitk_finish converts them. With C % 8 != 0 (one group) it
  // runs over the im2col copy of x into a padded dw (K x cp), cropped into dw.
  static gpuError_t run_weight_grad(const ConvProblem& p, const ConvTensors& t, void* workspace,
                                    gpuStream_t stream, const RunOptions& opts);
  // One launch of the weight-gradient GEMM over dy (rows of dy_row elements: G*K, or K padded)
  // and x into dw, or (ws not null) adding into the fp32 sums ws, with split sp. late_wait:
  // after_kernel where that kernel only zeroed ws (TmaConvArgs::late_wait). ep: bias_grad's db,
  // which it clears first where the units add into it, unless db_clear is false (cleared).
  static gpuError_t launch_weight_grad(const ConvProblem& p, const void* dy, int64_t dy_row, const void* x,
                                       void* dw, float* ws, const Split& sp, gpuStream_t stream,
                                       bool after_kernel, bool late_wait = false, const EpilogueArgs& ep = {},
                                       bool db_clear = true);

  // Blocks that clusters of c (index 2..8) keep resident on the device (occupancy query once;
  // 0 where a cluster of c cannot launch).
  static const int64_t* cluster_slots();

  // Blocks of this kernel one SM holds (occupancy query once; 1 if it fails).
  static int resident_blocks();

  // The kernel a launch runs: backward_weight over plain rows of x (a.plain_x) reads them
  // through the tiled map, a separate instantiation (a run-time branch in the load warp's loop
  // slows the im2col launches down).
  using KernelFn = void (*)(TmaConvArgs);
  static KernelFn kernel_of(const TmaConvArgs& a) {
    if constexpr (Tr::kWeightGrad)
      if (a.plain_x) return tma_conv_kernel<Cfg, true>;
    return tma_conv_kernel<Cfg, false>;
  }
  static gpuError_t prepare_launch() {
    static std::atomic<uint64_t> done{0}, done_plain{0};
    const int bytes = Tr::kPatch ? detail::device_smem_optin() : int(Tr::kSmemBytes);
    const gpuError_t e = detail::allow_dynamic_smem(tma_conv_kernel<Cfg, false>, bytes, done);
    if constexpr (Tr::kWeightGrad)
      if (e == gpuSuccess)
        return detail::allow_dynamic_smem(tma_conv_kernel<Cfg, true>, int(Tr::kSmemBytes), done_plain);
    return e;
  }
};

#endif  // CKGEN_NVIDIA

}  // namespace ckgen

#include "ckgen/kernel/tma_checks.hpp"
#include "ckgen/kernel/tma_launch.hpp"
