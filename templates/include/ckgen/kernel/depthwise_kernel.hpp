// DepthwiseKernel<Cfg>: the host face of a Pipeline::Direct instance (pipeline/depthwise.hpp):
// its checks, the launch shape and path choice, and backward_weight's slices and finish.
#pragma once

#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/kernel/host_face.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/pipeline/depthwise.hpp"
#include "ckgen/schedule/direct_plan.hpp"
#include "ckgen/schedule/splitk_finish.hpp"

namespace ckgen {

template <class Cfg>
class DepthwiseKernel final : public HostFace<Cfg> {
  using HostFace<Cfg>::key_;
  using HostFace<Cfg>::invalid_value;

 public:
  using Tr = DirectTraits<Cfg>;
  using Raw = typename Tr::Raw;
  using HostFace<Cfg>::kVariant;
  using HostFace<Cfg>::kMax32;

  DepthwiseKernel() {
    this->set_shape(Tr::P, Tr::Gt, Tr::Cg, Cfg::Waves::kM, 1, 1, Cfg::WarpTile::kM, Cfg::WarpTile::kN,
                    Cfg::WarpTile::kK, Tr::V, Tr::V, Tr::V);
  }

  // backward_weight slices: RunOptions::k_batch, else kKBatch, else direct_auto_slices.
  int resolve_slices(const ConvProblem& p, const RunOptions& opts) const {
    if constexpr (kVariant != Variant::BackwardWeight) {
      return 1;
    } else {
      if (opts.k_batch > 0) return opts.k_batch;
      if (Cfg::kKBatch > 0) return Cfg::kKBatch;
      return direct_auto_slices(direct_pixels(kVariant, p), Tr::P, channel_tiles(p), Tr::kThreads,
                                detail::device_sm_count(), Tr::kMma);
    }
  }
  DirectSlices slices(const ConvProblem& p, const RunOptions& opts) const {
    return direct_weight_slices(p, Tr::P, Tr::kMma, resolve_slices(p, opts), Tr::PP);
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    if (std::string e = detail::common_refusal(
            p, Cfg::kNDim,
            [&]() -> std::string {
              if (std::string r = detail::split_reduce_refusal(opts.split_reduce); !r.empty()) return r;
              if (opts.streamk_blocks != 0)
                return "RunOptions::streamk_blocks is for StreamK instances (this one uses direct slices)";
              return {};
            });
        !e.empty())
      return e;
    if (p.C != Tr::Cg || p.K != Tr::Cg)
      return "direct instance serves C = K = " + str(Tr::Cg) + " per group (problem has C=" + str(p.C) +
             ", K=" + str(p.K) + ")";
    // 32-bit index math: pixel indices and coordinates (tensor offsets are 64-bit).
    if (p.N * p.in_spatial() > kMax32 || p.N * p.out_spatial() > kMax32 || chans(p) > kMax32)
      return "N * spatial size or G * C exceeds 2^31-1 (32-bit index math)";
    // a block's first pixel index past the last one, the row pairs' dead rows included
    const int64_t pixels = launch_pixels(p, row_window(p));
    if (pixels + Tr::P > kMax32)
      return "the launch's pixel indices (N * D * H * W; with row pairs N * Do * ceil(Ho / 2) * 2 * Wo, with "
             "row windows W rounded up to whole units) plus a tile exceed 2^31-1 (32-bit index math)";
    if (chans(p) % Tr::V != 0)
      return "direct vector width " + str(Tr::V) + " needs G * C (" + str(chans(p)) +
             ") to be a multiple of " + str(Tr::V);
    const int64_t lim = int64_t(1) << 30;
    for (int i = 0; i < 3; ++i)
      if (p.in[i] + p.pad_l[i] + p.pad_r[i] > lim || (p.filter[i] - 1) * p.dilation[i] > lim ||
          p.stride[i] > lim)
        return "a spatial size exceeds 2^30";
    if (channel_tiles(p) > 65535) return "G * C / tile N exceeds 65535 (grid.y limit)";
    if constexpr (kVariant == Variant::BackwardWeight) {
      if (opts.k_batch < 0 || opts.k_batch > kDirectMaxSlices)
        return "k_batch " + str(opts.k_batch) + " out of range 0.." + str(kDirectMaxSlices) +
               " (0 = chosen per problem)";
      if (p.weight_elems() * kDirectMaxSlices > kMax32)
        return "G * K * Z * Y * X * C too large for the workspace index";
      if constexpr (Tr::kMma) {
        if (std::string e = mma_staging_refusal(p, true, DirectMmaBwdTraits<Cfg>::kCols); !e.empty())
          return e;
        if (p.filter[0] * p.filter[1] > kDirectMmaBwdFilterRows)
          return "the direct matrix path for backward_weight stages at most " + str(kDirectMmaBwdFilterRows) +
                 " filter rows (Z * Y; problem has " + str(p.filter[0] * p.filter[1]) + ")";
      }
    } else {
      if ((pixels + Tr::P - 1) / Tr::P > kMax32) return "too many pixel blocks for grid.x";
      if constexpr (Tr::kMma) {
        constexpr bool kFwd = kVariant == Variant::Forward;
        if (std::string e = mma_staging_refusal(p, kFwd, DirectMmaTraits<Cfg>::kCols); !e.empty()) return e;
        if (direct_row_segments(kVariant, p, Tr::P) > kMax32) return "too many row segments for grid.x";
      }
    }
    return {};
  }

  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if constexpr (kVariant != Variant::BackwardWeight) {
      return 0;
    } else {
      const DirectSlices s = slices(p, opts);
      if (s.count <= 1) return 0;
      const std::size_t elems = std::size_t(p.weight_elems());
      return (Cfg::kStage == Stage::One ? 1 : std::size_t(s.count)) * elems * sizeof(float);
    }
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    if (!detail::epilogue_operands_refusal<Cfg>(t.ep).empty()) return this->invalid_value();
    DirectArgs a;
    a.x = t.in;
    a.w = t.wei;
    a.y = t.out;
    a.dst = kVariant == Variant::Forward ? t.out : kVariant == Variant::BackwardData ? t.in : t.wei;
    a.ws = static_cast<float*>(workspace);
    a.ep = t.ep;
    a.chans = int(chans(p));
    for (int i = 0; i < 3; ++i) {
      a.in_[i] = int(p.in[i]);
      a.out_[i] = int(p.out[i]);
      a.fil[i] = int(p.filter[i]);
      a.s[i] = int(p.stride[i]);
      a.dil[i] = int(p.dilation[i]);
      a.pl[i] = int(p.pad_l[i]);
      a.fd_pix[i].init(kVariant == Variant::BackwardData ? p.in[i] : p.out[i]);
      a.fd_s[i].init(p.stride[i]);
    }
    a.taps = int(p.filter_spatial());
    a.in_spatial = int(p.in_spatial());
    a.out_spatial = int(p.out_spatial());
    const int rw = row_window(p);  // the row windows' compiled width, 0: not a row window
    const int64_t pixels = launch_pixels(p, rw);
    a.pixels = int(pixels);
    a.mode = OutMode::Direct;
    a.ws_stride = p.weight_elems();
    const unsigned gtiles = unsigned(channel_tiles(p));
    const bool k3x3 = p.filter[0] == 1 && p.filter[1] == 3 && p.filter[2] == 3;
    gpuError_t e;
    if constexpr (kVariant != Variant::BackwardWeight) {
      a.slice_pixels = 0;
      // one launch of kernel k over grid g with smem bytes of dynamic shared memory, reading `a`
      const auto go = [&](auto k, dim3 g, int smem = 0) {
        return launch_kernel(k, g, dim3(Tr::kThreads), std::size_t(smem), stream, false, a);
      };
      if constexpr (Tr::kMma) {  // the matrix path: a block per segment of a band of rows
                                 // (pipeline/direct_mma.hpp)
        a.band_rows =
            direct_mma_band_rows(direct_row_segments(kVariant, p, Tr::P) * gtiles, detail::device_sm_count());
        a.band_shares_rows = direct_mma_band_shares_rows(kVariant, p, DirectMmaTraits<Cfg>::kStages);
        a.fd_bands.init(direct_bands_per_plane(kVariant, p, a.band_rows));
        const dim3 rgrid(unsigned(direct_band_segments(kVariant, p, Tr::P, a.band_rows)), gtiles, 1);
        if constexpr (kVariant == Variant::BackwardData) {  // strided: one W phase a block
          if (direct_mma_phased(kVariant, p)) return go(depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Gather>, rgrid);
        }
        if (k3x3 && p.dilation[2] == 1)  // the filter at compile time
          e = go(depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Linear>, rgrid);
        else
          e = go(depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>, rgrid);
      } else {
        const dim3 grid(unsigned((pixels + Tr::P - 1) / Tr::P), gtiles, 1);
        const bool gather =
            kVariant == Variant::BackwardData && (p.stride[0] > 1 || p.stride[1] > 1 || p.stride[2] > 1);
        const bool pair = direct_fma_row_pair(kVariant, p, fma_pp());
        const bool window = direct_fma_window(kVariant, p, Tr::PP);
        constexpr DirectPath kG = kVariant == Variant::BackwardData ? DirectPath::Gather : DirectPath::Linear;
        constexpr DirectPath kQ = kVariant == Variant::BackwardData ? DirectPath::QuadS2 : DirectPath::Linear;
        const bool quad = gather && k3x3 && p.stride[0] == 1 && p.stride[1] == 2 && p.stride[2] == 2 &&
                          p.dilation[1] == 1 && p.dilation[2] == 1 && p.pad_l[0] == 0;
        if (rw > 0) {  // units of PP pixels a row (DirectPath::Rows)
          a.fd_pix[2].init(direct_row_window_units(kVariant, p, Tr::PP));
          const int smem = int(direct_row_window_smem(p, Tr::Gt));
          e = go(row_kernel(rw, row_strided(p)), grid, smem);
        } else if (quad) {  // the grid and the pixel split count 2 x 2 quads of dx (DirectPath::QuadS2)
          const int64_t qh = (p.in[1] + 1) / 2, qw = (p.in[2] + 1) / 2;
          a.fd_pix[1].init(qh);
          a.fd_pix[2].init(qw);
          a.pixels = int(p.N * p.in[0] * qh * qw);
          const dim3 qgrid(unsigned((a.pixels + Tr::P - 1) / Tr::P), gtiles, 1);
          e = go(depthwise_conv_kernel<Cfg, 1, 3, 3, kQ>, qgrid);
        } else if (pair) {  // the pixel split counts the pair order's units (DirectPath::RowPair)
          a.fd_pix[1].init((p.out[1] + 1) / 2);
          a.fd_pix[2].init(p.out[2] / (Tr::PP / 2));
          e = go(row_pair_kernel(), grid);
        } else if (window)
          e = go(depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Window>, grid);
        else if (k3x3 && !gather)
          e = go(depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Linear>, grid);
        else if (k3x3)
          e = go(depthwise_conv_kernel<Cfg, 1, 3, 3, kG>, grid);
        else if (!gather)
          e = go(depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>, grid);
        else
          e = go(depthwise_conv_kernel<Cfg, 0, 0, 0, kG>, grid);
      }
      return e;
    } else {
      const DirectSlices s = slices(p, opts);
      a.slice_pixels = int(s.chunk);  // the matrix path: row segments per slice
      if (s.count > 1) {
        if (workspace == nullptr) return invalid_value();
        a.mode = Cfg::kStage == Stage::One ? OutMode::AtomicF32 : OutMode::PartialF32;
      }
      if (a.mode == OutMode::AtomicF32) {
        e = gpuMemsetAsync(workspace, 0, std::size_t(p.weight_elems()) * sizeof(float), stream);
        if (e != gpuSuccess) return e;
      }
      const dim3 grid(unsigned(s.count), gtiles, 1);
      int smem = 0;
      const auto kernel = bwd_kernel(p, smem);
      if (rw > 0) a.fd_pix[2].init(direct_row_window_units(kVariant, p, Tr::PP));
      if constexpr (Tr::kMma) {  // the matrix path: its ring of units in dynamic shared memory
        static std::atomic<uint64_t> done{0};
        if ((e = detail::allow_dynamic_smem(kernel, smem, done)) != gpuSuccess) return e;
      }
      e = launch_kernel(kernel, grid, dim3(Tr::kThreads), std::size_t(smem), stream, false, a);
      if (e != gpuSuccess || a.mode == OutMode::Direct) return e;
      const int64_t n = p.weight_elems();
      const int splits = Cfg::kStage == Stage::One ? 1 : s.count;
      return launch_splitk_finish<Cfg::kDataType>(a.ws, splits, a.ws_stride, static_cast<Raw*>(a.dst), n,
                                                  stream, true);
    }
  }

 private:
  // backward_weight's kernel for p and its dynamic shared memory: the matrix path (its ring of
  // units), or for depthwise FMA tiles with a 1x3x3 filter a window when the thread's pixels share
  // a row and read neighbouring columns, else the Linear 9-tap path up to
  // kDirectBwdLinearMaxPixels pixels per thread (its hoisted loads spill beyond); otherwise the
  // generic one-tap-at-a-time path.
  static auto bwd_kernel(const ConvProblem& p, int& smem) {
    auto kernel = depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>;
    smem = 0;
    if constexpr (Tr::kMma) {
      smem = DirectMmaBwdTraits<Cfg>::kSmemBytes;
    } else if constexpr (Tr::Cg == 1) {
      switch (direct_fma_bwd_path(p, Tr::Cg, Tr::PP)) {
        case DirectBwdPath::Window:
          kernel = depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Window>;
          break;
        case DirectBwdPath::WindowS2:
          kernel = depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::WindowS2>;
          break;
        case DirectBwdPath::Linear9:
          if constexpr (Tr::PP <= kDirectBwdLinearMaxPixels)
            kernel = depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::Linear>;
          break;
        case DirectBwdPath::Rows:
        case DirectBwdPath::RowsS2:
          kernel = row_kernel(row_window(p), row_strided(p));
          break;
        case DirectBwdPath::Generic:
          break;
      }
    }
    return kernel;
  }

  // The matrix paths' staging limits (forward / backward_data: pipeline/direct_mma.hpp, backward_weight:
  // pipeline/direct_mma_bwd_weight.hpp): the taps whose weights are staged at once and the source
  // columns a filter row stages (cols_staged); the refusal, or empty.
  static std::string mma_staging_refusal(const ConvProblem& p, bool fwd_map, int cols_staged) {
    using detail::str;
    if (p.filter_spatial() > kDirectMmaMaxTaps)
      return "the direct matrix path stages at most " + str(kDirectMmaMaxTaps) +
             " filter taps (problem has " + str(p.filter_spatial()) + ")";
    const int64_t cols = direct::mma_staged_cols(fwd_map, Tr::P, p.stride[2], p.dilation[2], p.filter[2]);
    if (cols > cols_staged)
      return "the direct matrix path stages " + str(cols_staged) +
             " source columns per filter row (this stride / dilation needs " + str(cols) + ")";
    return {};
  }

  static int64_t chans(const ConvProblem& p) { return p.G * p.C; }  // channels per pixel
  // Whether the instance has a pair path (DirectPath::RowPair: forward, depthwise FMA, an even
  // PP >= 4), and the pixels a thread takes that direct_fma_pixels / direct_fma_row_pair
  // test (0: never pairs), and its kernel (the generic one where it has none: never launched).
  static constexpr bool kRowPairs =
      kVariant == Variant::Forward && Tr::Cg == 1 && !Tr::kMma && Tr::PP >= 4 && Tr::PP % 2 == 0;
  static constexpr int fma_pp() { return kRowPairs ? Tr::PP : 0; }
  static auto row_pair_kernel() {
    if constexpr (kRowPairs)
      return depthwise_conv_kernel<Cfg, 1, 3, 3, DirectPath::RowPair>;
    else
      return depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>;
  }
  static int64_t channel_tiles(const ConvProblem& p) { return (chans(p) + Tr::Gt - 1) / Tr::Gt; }

  // The row windows (DirectPath::Rows / RowsS2, direct_row_window): depthwise FMA tiles of two or
  // more pixels a thread; the compiled width p takes (0: none), and its kernel for width w,
  // strided (RowsS2) or not (instantiated per entry of kDirectWindowWidths).
  static constexpr bool kRowWindows = Tr::Cg == 1 && !Tr::kMma && Tr::PP >= 2;
  static int row_window(const ConvProblem& p) {
    if constexpr (kRowWindows)
      return direct_row_window(kVariant, p, Tr::PP, Tr::Gt);
    else
      return 0;
  }
  template <int I = 0>
  static auto row_kernel(int width, bool s2) {
    if constexpr (!kRowWindows) {
      return depthwise_conv_kernel<Cfg, 0, 0, 0, DirectPath::Linear>;
    } else {
      constexpr int kN = int(sizeof(kDirectWindowWidths) / sizeof(kDirectWindowWidths[0]));
      constexpr int W = kDirectWindowWidths[I];
      if constexpr (I + 1 < kN) {
        if (width != W) return row_kernel<I + 1>(width, s2);
      }
      if (s2) return depthwise_conv_kernel<Cfg, 0, 0, W, DirectPath::RowsS2>;
      return depthwise_conv_kernel<Cfg, 0, 0, W, DirectPath::Rows>;
    }
  }
  // Whether p takes the RowsS2 kernel: W stride 2 (backward_data: any stride > 1).
  static bool row_strided(const ConvProblem& p) {
    if constexpr (kVariant == Variant::BackwardData)
      return p.stride[0] > 1 || p.stride[1] > 1 || p.stride[2] > 1;
    else
      return p.stride[2] == 2;
  }
  // The pixel indices the launch iterates (rw: row_window(p)): the row windows' padded rows, the
  // row pairs' order or the iterated tensor's pixels.
  static int64_t launch_pixels(const ConvProblem& p, int rw) {
    if (rw > 0) return direct_row_window_pixels(kVariant, p, Tr::PP);
    return direct_fma_pixels(kVariant, p, fma_pp());
  }
};

}  // namespace ckgen
