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
    return shape_refusal(view(p), opts);
  }
  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    return workspace_2d(view(p), opts);
  }
  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    return run_2d(view(p), t, workspace, stream, opts);
  }

 private:
  // The call's options, refused whatever problem they come with (common_refusal's order).
  std::string options_refusal(const RunOptions& opts) const {
    using detail::str;
    if (opts.streamk_blocks != 0)
      return "RunOptions::streamk_blocks is for StreamK instances (this one never uses StreamK)";
    if (kTakesKBatch && (opts.k_batch < 0 || opts.k_batch > kMaxSplits))
      return "k_batch " + str(opts.k_batch) + " out of range 0.." + str(kMaxSplits) + " (0 = chosen per problem)";
    if constexpr (!Tr::kWeightGrad) {
      return detail::split_reduce_refusal(opts.split_reduce);
    } else {
      if (opts.split_reduce != SplitReduce::Cluster) return {};
      if (Tr::kPingPong)
        return "split_reduce cluster: a ping-pong instance (two warpgroups taking turns on units) has no "
               "cluster reduction";
      if (Tr::kRows) return "split_reduce cluster: backward_weight stride1 adds its splits through the workspace";
      if (!Tr::kClusterFits)
        return "split_reduce cluster: this instance's ring (" + str(Tr::S) +
               " stages) cannot hold its fp32 tile";
      if (opts.k_batch > 8)
        return "split_reduce cluster takes k_batch 0..8 (a cluster holds at most 8 blocks), got " +
               str(opts.k_batch);
      if (opts.k_batch > 1 && cluster_slots()[opts.k_batch] == 0)
        return "split_reduce cluster: the device keeps no cluster of " + str(opts.k_batch) +
               " blocks of this instance resident";
    }
    return {};
  }
  // What the problem's view leaves out, once common_refusal has passed.
  std::string shape_refusal(const ConvProblem& p, const RunOptions& opts) const {
    using detail::str;
    if (p.ndim == 3) {  // unfolded: the 5D maps
      if (Tr::kPatch)
        return "specialization stride1 stages 2D input rows: a 3D problem needs depth filter 1, depth stride 1 "
               "and no depth padding (it then runs as 2D over N x D images)";
      if (im2col_width(p) > 0)
        return "wavelet_tma: a 3D problem whose depth does not fold needs C (" + str(p.C) +
               ") to be a multiple of 8 (the explicit im2col copy is 2D)";
    }
    if constexpr (Tr::kWeightGrad) {
      if ((p.K % 8 != 0 && padded_k(p) == 0) || (p.C % 8 != 0 && im2col_width(p) == 0))
        return "wavelet_tma backward_weight needs K (" + str(p.K) + ") and C (" + str(p.C) +
               ") to be multiples of 8, or one group (K padded; C with taps x C <= 512): 16-byte rows of x and dy";
      if (std::string e = im2col_staging_limits(p); !e.empty()) return e;
      if (std::string e = rows_refusal(p); !e.empty()) return e;
      const ConvProblem q = gemm_view(p);
      if (std::string e = im2col_limits(q); !e.empty()) return e;
      const int64_t tiles = weight_tiles(q);
      if (tiles * kMaxSplits > kMax32) return "too many tiles for a 32-bit work-unit index";
      return {};
    } else {
      if (std::string e = im2col_staging_limits(p); !e.empty()) return e;
      const Plan pl = plan(p);
      if (!pl.error.empty()) return pl.error;
      for (const Phase& ph : pl.phase) {
        if (std::string e = forward_supported(ph.q); !e.empty()) return e;
        if (std::string e = patch_refusal(p, ph); !e.empty()) return e;
        if (ph.q.K % 2 != 0 && phase_split(ph, 0, opts, 1).k_split > 1)
          return std::string("wavelet_tma: a split reduction needs an even ") +
                 (Cfg::kVariant == Variant::Forward ? "K" : "C") + " (" + str(ph.q.K) +
                 ", 8-byte fp32 reductions)";
      }
      return {};
    }
  }

  // What backward_weight's row form (TmaTraits::kRows) needs of a 2D view: width stride 1 (a
  // row segment's pixels are consecutive input pixels), 64-channel blocks, the instance's filter
  // width (tile N = X x 64) and the taps' reach within the stage's halo.
  static std::string rows_refusal(const ConvProblem& p) {
    if constexpr (!Tr::kRows) {
      (void)p;
      return {};
    } else {
      using detail::str;
      if (p.ndim == 3)
        return "backward_weight stride1 reads 2D input rows: a 3D problem needs depth filter 1, depth stride 1 "
               "and no depth padding (it then runs as 2D over N x D images)";
      if (p.stride[2] != 1) return "backward_weight stride1 needs width stride 1 (got " + str(p.stride[2]) + ")";
      if (p.C % 64 != 0)
        return "backward_weight stride1 needs C (" + str(p.C) + ") to be a multiple of 64 (64-channel blocks)";
      if (p.filter[2] * 64 != Tr::BN)
        return "backward_weight stride1: tile N " + str(Tr::BN) + " holds the 64-channel blocks of a filter " +
               str(Tr::BN / 64) + " wide, got filter width " + str(p.filter[2]);
      if ((p.filter[2] - 1) * p.dilation[2] > detail::tma_row_halo(Tr::BN))
        return "backward_weight stride1: the filter's dilated width reaches " +
               str((p.filter[2] - 1) * p.dilation[2]) + " pixels past a row segment; the stage holds " +
               str(detail::tma_row_halo(Tr::BN));
      if (detail::tma_row_k_tiles(p, Tr::BN) > kMax32) return "problem too large for 32-bit k tiles";
      return {};
    }
  }

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
                    const RunOptions& opts) const {
    if constexpr (Tr::kWeightGrad) {
      return run_weight_grad(p, t, workspace, stream, opts);
    } else {
      // forward: one launch x -> y; backward_data: one launch dy -> dx per stride phase. With a
      // split, every launch adds into the zeroed fp32 workspace (which also covers the pixels no
      // phase writes) and one splitk_finish converts it.
      using Raw = typename Tr::Raw;
      constexpr bool kFwd = Cfg::kVariant == Variant::Forward;
      const void* src = kFwd ? t.in : t.out;
      const void* w = t.wei;
      void* dst = kFwd ? t.out : t.in;
      const Plan pl = plan(p);
      if (!pl.error.empty()) return cudaErrorInvalidValue;
      const int64_t n = written_elems(p);
      const std::size_t ws_bytes = split_bytes(pl, p, opts);  // the split sums lead the workspace
      if (ws_bytes > 0 && workspace == nullptr) return cudaErrorInvalidValue;
      float* ws = ws_bytes > 0 ? static_cast<float*>(workspace) : nullptr;
      const bool pad_clears = ws != nullptr && padded_k(p) > 0;  // dy's padding launch zeroes the sums
      if (gpuError_t e = pad_dy(p, src, workspace, ws_bytes, stream, pad_clears ? ws : nullptr, n); e != gpuSuccess)
        return e;
      bool chained = padded_k(p) > 0;  // the next launch follows one of ours (core/chain.hpp)
      if (const int64_t cp = im2col_width(p); cp > 0) {  // forward: the explicit im2col GEMM
        if (workspace == nullptr) return cudaErrorInvalidValue;
        Raw* col = reinterpret_cast<Raw*>(static_cast<unsigned char*>(workspace) + ws_bytes);
        Raw* wp = col + p.N * p.out_spatial() * cp;
        if (gpuError_t e = im2col(static_cast<const Raw*>(src), col, p, cp, stream); e != gpuSuccess) return e;
        if (gpuError_t e = pad_channels(static_cast<const Raw*>(w), wp, p.K, p.filter_spatial() * p.C, cp, stream,
                                        true);
            e != gpuSuccess)
          return e;
        src = col;
        w = wp;
        chained = true;
      }
      bool clear_first = false;  // the clear is the call's first launch (nothing else precedes)
      if (ws != nullptr) {
        if (!pad_clears) {
          clear_first = !chained;
          if (gpuError_t e = launch_clear_sums(ws, n, stream, chained); e != gpuSuccess) return e;
          chained = true;
        }
      } else if (pl.zero_first) {
        if (gpuError_t e = gpuMemsetAsync(dst, 0, std::size_t(n) * sizeof(Raw), stream); e != gpuSuccess)
          return e;
        chained = false;
      }
      // Several phases fork onto side streams: their launches follow events, not a kernel.
      chained = chained && pl.phase.size() == 1;
      // Several phases: forked onto the side streams after the clear, joined before the finish.
      detail::PhaseStreams* fj = pl.phase.size() > 1 ? detail::phase_streams() : nullptr;
      const int sides = fj ? int(std::min<std::size_t>(pl.phase.size() - 1, detail::PhaseStreams::kSide)) : 0;
      if (sides > 0) {
        if (gpuError_t e = cudaEventRecord(fj->fork, stream); e != gpuSuccess) return e;
        for (int i = 0; i < sides; ++i)
          if (gpuError_t e = cudaStreamWaitEvent(fj->side[i], fj->fork, 0); e != gpuSuccess) return e;
      }
      for (std::size_t j = 0; j < pl.phase.size(); ++j) {
        const gpuStream_t st = sides > 0 && j > 0 ? fj->side[(j - 1) % detail::PhaseStreams::kSide] : stream;
        if (gpuError_t e = run_forward(pl.phase[j], src, w, p.K, dst, ws,
                                       phase_split(pl.phase[j], n, opts, pl.phase.size()), st, chained,
                                       chained && clear_first);
            e != gpuSuccess)
          return e;
      }
      for (int i = 0; i < sides; ++i) {
        if (gpuError_t e = cudaEventRecord(fj->join[i], fj->side[i]); e != gpuSuccess) return e;
        if (gpuError_t e = cudaStreamWaitEvent(stream, fj->join[i], 0); e != gpuSuccess) return e;
      }
      if (ws == nullptr) return gpuSuccess;
      return launch_splitk_finish<Cfg::kDataType>(ws, 1, 0, static_cast<Raw*>(dst), n, stream, pl.phase.size() == 1);
    }
  }

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
  // every tap, 1 KB-aligned buffers; smem = the block's dynamic shared memory.
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
    pt.stride = (pt.box + 1023) / 1024 * 1024;
    pt.smem = Tr::kPatchFixedBytes + Tr::kPatchBuffers * pt.stride;
    return pt;
  }
  static std::string patch_refusal(const ConvProblem& p, const Phase& ph) {
    if constexpr (!Tr::kPatch) {
      (void)p;
      (void)ph;
      return {};
    } else {
      using detail::str;
      for (int i = 0; i < 3; ++i)
        if (p.stride[i] != 1)
          return "specialization stride1 needs stride 1 (got " + str(p.stride[1]) + "x" + str(p.stride[2]) + ")";
      if (!ph.dense) return "specialization stride1 needs a stride-1 problem (one dense launch)";
      const Patch pt = patch_of(ph.q);
      if (pt.wp > 256)
        return "specialization stride1: an output row plus the filter's width spans " + str(pt.wp) +
               " pixels; the copy engine's box holds at most 256";
      if (pt.rows > 256) return "specialization stride1: the staged patch needs more than 256 rows";
      if (pt.smem > detail::device_smem_optin())
        return "specialization stride1: two staged patches of " + str(pt.rows) + " x " + str(pt.wp) +
               " pixels need " + str(pt.smem) + " bytes of shared memory; the device allows " +
               str(detail::device_smem_optin());
      if (ph.q.N * ph.q.out[1] * int64_t(pt.wp) > kMax32) return "problem too large for 32-bit GEMM rows";
      return {};
    }
  }
  // Blocks of the stride1 kernel with `smem` bytes one SM holds (occupancy query; the last
  // answer is kept).
  static int patch_resident_blocks(int smem) {
    static std::atomic<uint64_t> memo{0};  // smem << 8 | blocks
    const uint64_t m = memo.load(std::memory_order_relaxed);
    if (m != 0 && int(m >> 8) == smem) return int(m & 255);
    int b = 0;
    if (prepare_launch() != gpuSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, tma_conv_kernel<Cfg, false>, Tr::kThreads, smem) !=
            cudaSuccess ||
        b < 1)
      b = 1;
    memo.store((uint64_t(smem) << 8) | uint64_t(std::min(b, 255)), std::memory_order_relaxed);
    return b;
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
      return p.K % 8 != 0 && p.G == 1 ? (p.K + 7) / 8 * 8 : 0;
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
  static std::string im2col_limits(const ConvProblem& p) {
    const bool deep = p.ndim == 3;
    const int64_t lim = deep ? 16 : 128;
    for (int i = deep ? 0 : 1; i < 3; ++i) {
      const int64_t lo = -p.pad_l[i], hi = p.pad_r[i] - (p.filter[i] - 1) * p.dilation[i];
      if (lo < -lim || lo >= lim || hi < -lim || hi >= lim)
        return std::string("wavelet_tma: padding / filter extent outside the im2col corner range ") +
               (deep ? "[-16, 15] (5D maps of 3D problems)" : "[-128, 127]");
      if (p.stride[i] > 8) return "wavelet_tma needs strides <= 8";
      if ((p.filter[i] - 1) * p.dilation[i] > 65535) return "wavelet_tma: filter extent > 65535";
    }
    if (p.N * p.out_spatial() > kMax32 || p.N * p.in_spatial() * p.G * p.C > (int64_t(1) << 40))
      return "problem too large for 32-bit GEMM rows";
    return {};
  }

  // What a forward launch (a forward problem or a backward_data phase) needs besides
  // im2col_limits: 16-byte rows of x and of w as read.
  static std::string forward_supported(const ConvProblem& p) {
    using detail::str;
    const char* in_c = Cfg::kVariant == Variant::Forward ? "C" : "K";
    if (p.C % 8 != 0)
      return std::string("wavelet_tma needs ") + in_c + " (" + str(p.C) +
             ") to be a multiple of 8 (16-byte rows)";
    if (Tr::kBNMajor && p.K % 8 != 0)
      return "wavelet_tma backward_data needs C (" + str(p.K) +
             ") to be a multiple of 8 (w is read as it lies: 16-byte rows)";
    if (p.G > 1 && p.C % Tr::BK != 0)
      return std::string("wavelet_tma: grouped problems need ") + in_c + " (" + str(p.C) +
             ") to be a multiple of 64 (a channel chunk must stay inside its group)";
    if (std::string e = im2col_limits(p); !e.empty()) return e;
    const int64_t tiles = detail::ceil_div(p.N * p.out_spatial(), Tr::BM) *
                          detail::ceil_div(p.K, Tr::BN) * p.G;
    if (tiles * kMaxSplits > kMax32) return "too many tiles for a 32-bit work-unit index";
    return {};
  }

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
  static void set_geometry(TmaConvArgs& a, const ConvProblem& p) {
    static_cast<ConvGeometry2D&>(a) = conv_geometry_2d(p);
    a.G = int(p.G);
    a.deep = p.ndim == 3 ? 1 : 0;  // a view is 3D only when its depth does not fold
    a.Do = int(p.out[0]);
    a.Y = int(p.filter[1]);
    a.s_d = int(p.stride[0]);
    a.pl_d = int(p.pad_l[0]);
    a.d_d = int(p.dilation[0]);
  }

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
  // late_wait: after_kernel where that kernel only zeroed ws (TmaConvArgs::late_wait).
  static gpuError_t run_forward(const Phase& ph, const void* x, const void* w, int64_t w_k, void* y,
                                float* ws, const Split& sp, gpuStream_t stream, bool after_kernel,
                                bool late_wait = false);

  // dw[g][k][tap][c] = sum over output pixels of dy[pixel][g][k] * x[pixel at tap][g][c]: A = dy
  // (M-major, BM / 64 tiled copies of 64 pixels x 64 channels), B = x (N-major, BN / 64 im2col
  // copies of the same 64 pixels at the tile's tap). A split reduction adds fp32 partial sums
  // into the zeroed workspace and splitk_finish converts them. With C % 8 != 0 (one group) it
  // runs over the im2col copy of x into a padded dw (K x cp), cropped into dw.
  static gpuError_t run_weight_grad(const ConvProblem& p, const ConvTensors& t, void* workspace,
                                    gpuStream_t stream, const RunOptions& opts);
  // One launch of the weight-gradient GEMM over dy (rows of dy_row elements: G*K, or K padded)
  // and x into dw, or (ws not null) adding into the fp32 sums ws, with split sp. late_wait:
  // after_kernel where that kernel only zeroed ws (TmaConvArgs::late_wait).
  static gpuError_t launch_weight_grad(const ConvProblem& p, const void* dy, int64_t dy_row, const void* x,
                                       void* dw, float* ws, const Split& sp, gpuStream_t stream,
                                       bool after_kernel, bool late_wait = false);

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

#include "ckgen/kernel/tma_launch.hpp"
