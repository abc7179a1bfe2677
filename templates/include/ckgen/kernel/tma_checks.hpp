// Out-of-class definitions of TmaConvKernel<Cfg> (kernel/tma_kernel.hpp): what an instance
// refuses (the call's options, the problem's shape, the row form, the patch, the im2col copy).
#pragma once

#include "ckgen/kernel/tma_kernel.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

template <class Cfg>
std::string TmaConvKernel<Cfg>::options_refusal(const RunOptions& opts) const {
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

template <class Cfg>
std::string TmaConvKernel<Cfg>::shape_refusal(const ConvProblem& p, const RunOptions& opts) const {
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

template <class Cfg>
std::string TmaConvKernel<Cfg>::rows_refusal(const ConvProblem& p) {
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

template <class Cfg>
std::string TmaConvKernel<Cfg>::patch_refusal(const ConvProblem& p, const Phase& ph) {
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

template <class Cfg>
std::string TmaConvKernel<Cfg>::im2col_limits(const ConvProblem& p) {
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

template <class Cfg>
std::string TmaConvKernel<Cfg>::forward_supported(const ConvProblem& p) {
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

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
