// TmaWindowKernel<Cfg>: the host face of a forward Specialization::Window instance
// (pipeline/tma_window.hpp): the window checks, the window tensor maps and the launch.
#pragma once

#include <string>

#include "ckgen/kernel/tma_kernel.hpp"
#include "ckgen/pipeline/tma_window.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

namespace detail {
// What both window forms refuse (pipeline/tma_window.hpp, pipeline/tma_window_weight.hpp), after
// common_refusal: groups of other than 64 channels, stride, a patch past a tensor copy's box, a
// launch past the device's shared memory (`what` needs `smem` bytes), 32-bit window indices.
inline std::string tma_window_refusal(const ConvProblem& p, const TmaWindowShape& s, int smem, const std::string& what) {
  if (p.C != 64 || p.K != 64)
    return "specialization window needs C = K = 64 a group (got C " + str(p.C) + ", K " + str(p.K) + ")";
  if (p.stride[1] != 1 || p.stride[2] != 1)
    return "specialization window needs stride 1 (got " + str(p.stride[1]) + "x" + str(p.stride[2]) + ")";
  if (s.pw > 256 || s.ph > 256)
    return "specialization window: the input patch (" + str(s.ph) + " x " + str(s.pw) +
           " pixels) exceeds a tensor copy's 256 per dimension";
  if (smem > device_smem_optin())
    return "specialization window: " + what + " need " + str(smem) + " bytes of shared memory, the device allows " +
           str(device_smem_optin());
  if (s.tiles_group > (int64_t(1) << 30) || p.N * p.G * p.in_spatial() * 64 > (int64_t(1) << 40))
    return "specialization window: too many windows for a 32-bit index";
  return {};
}
// The key fields of a window instance: tile (pixels, 64, 64), waves (wave_m, 1, 1), warp tile
// (64, warp_n, 16), 16-byte vectors.
inline void set_window_key(KernelKey& k, int pixels, int wave_m, int warp_n) {
  k.tile_m = pixels;
  k.tile_n = k.tile_k = 64;
  k.wave_m = wave_m;
  k.wave_n = k.wave_k = 1;
  k.warp_m = 64;
  k.warp_n = warp_n;
  k.warp_k = 16;
  k.vec_a = k.vec_b = k.vec_c = 8;
}
// The launch's window geometry: problem p's windows (shape s) over bpg blocks a group,
// group_stride groups side by side.
inline TmaWindowGeometry window_geometry(const ConvProblem& p, const TmaWindowShape& s, int64_t bpg,
                                        int64_t group_stride) {
  TmaWindowGeometry w{};
  w.G = int(p.G);
  w.pl_h = int(p.pad_l[1]);
  w.pl_w = int(p.pad_l[2]);
  w.d_h = int(p.dilation[1]);
  w.d_w = int(p.dilation[2]);
  w.pw = int(s.pw);
  w.tiles_group = int(s.tiles_group);
  w.by_tiles_img.init(s.tiles_img);
  w.by_tiles_w.init(s.tiles_w);
  w.bpg = int(bpg);
  w.group_stride = int(group_stride);
  return w;
}
// The windows' run options: neither StreamK nor a choice of split reduction.
inline std::string tma_window_options_refusal(const RunOptions& opts) {
  if (opts.streamk_blocks != 0) return "RunOptions::streamk_blocks is for StreamK instances (this one never uses StreamK)";
  return split_reduce_refusal(opts.split_reduce);
}
// The windows' two activation maps: x {G*C, W, H, N} in boxes of a window's input patch (64 x
// pw x ph), and y / dy {G*K, Q, P, N} in boxes of a window (64 x 8 x rows).
inline bool encode_window_maps(CUtensorMap* x, CUtensorMap* y, bool bf16, const ConvProblem& p, const void* xp,
                               const void* yp, const TmaWindowShape& s, int rows) {
  const cuuint64_t xd[4] = {cuuint64_t(p.G * 64), cuuint64_t(p.in[2]), cuuint64_t(p.in[1]), cuuint64_t(p.N)};
  const cuuint32_t xb[4] = {64, cuuint32_t(s.pw), cuuint32_t(s.ph), 1};
  const cuuint64_t yd[4] = {cuuint64_t(p.G * 64), cuuint64_t(p.out[2]), cuuint64_t(p.out[1]), cuuint64_t(p.N)};
  const cuuint32_t yb[4] = {64, 8, cuuint32_t(rows), 1};
  return encode_tiled16(x, bf16, xp, 4, xd, xb) && encode_tiled16(y, bf16, yp, 4, yd, yb);
}
}  // namespace detail

template <class Cfg>
class TmaWindowKernel final : public HostFace<Cfg> {
  using HostFace<Cfg>::key_;
  using HostFace<Cfg>::invalid_value;

 public:
  using Tr = TmaWindowTraits<Cfg>;

  TmaWindowKernel() {
    detail::set_window_key(key_, Tr::PN, 4, Tr::PN);
    key_.ping_pong = key_.swap_ab = true;
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    if (std::string e = detail::common_refusal(p, 2, [&] { return detail::tma_window_options_refusal(opts); });
        !e.empty())
      return e;
    const Geometry gm = geometry(p);
    return detail::tma_window_refusal(
        p, gm, gm.smem, "the filter (" + str(p.filter_spatial()) + " taps) and " + str(Tr::S) + " patches");
  }
  std::size_t workspace_bytes(const ConvProblem&, const RunOptions& = {}) const override { return 0; }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void*, gpuStream_t stream,
                 const RunOptions& = {}) const override {
    if (!detail::epilogue_operands_refusal<Cfg>(t.ep).empty()) return cudaErrorInvalidValue;
    if (!detail::aligned16({t.in, t.wei, t.out})) return cudaErrorMisalignedAddress;
    const Geometry gm = geometry(p);
    TmaWindowArgs a{};
    const bool bf = Tr::kBF16;
    if (!detail::encode_window_maps(&a.x, &a.y, bf, p, t.in, t.out, gm, Tr::TH)) return cudaErrorInvalidValue;
    {
      const cuuint64_t dims[3] = {64, cuuint64_t(p.filter_spatial()), cuuint64_t(p.G * 64)};
      const cuuint32_t box[3] = {64, 1, 64};
      if (!detail::encode_tiled16(&a.w, bf, t.wei, 3, dims, box)) return cudaErrorInvalidValue;
    }
    a.taps = int(p.filter_spatial());
    a.X = int(p.filter[2]);
    a.ep = t.ep;
    a.patch_bytes = detail::tma_window_patch_bytes(int(gm.pw), int(gm.ph));
    a.patch_tx = int(gm.pw * gm.ph) * Tr::kRowBytes;
    const detail::TmaWindowGrid gr = detail::tma_window_grid(p.G, detail::device_sm_count());
    a.win = detail::window_geometry(p, gm, gr.bpg, gr.group_stride);
    static std::atomic<uint64_t> done{0};
    if (gpuError_t e = detail::allow_dynamic_smem(tma_window_kernel<Cfg>, detail::device_smem_optin(), done);
        e != gpuSuccess)
      return e;
    return launch_chained(tma_window_kernel<Cfg>, dim3(unsigned(gr.bpg * gr.group_stride)), dim3(Tr::kThreads),
                          std::size_t(gm.smem), stream, false, nullptr, a);
  }

 private:
  // The problem's windows (detail::tma_window_shape, which the dispatcher's estimate reads too)
  // and the shared memory of its launch.
  struct Geometry : detail::TmaWindowShape {
    int smem;
  };
  static Geometry geometry(const ConvProblem& p) {
    Geometry g{};
    static_cast<detail::TmaWindowShape&>(g) = detail::tma_window_shape(p, Tr::PN);
    g.smem = detail::tma_window_smem_bytes(int(p.filter_spatial()), int(g.pw), int(g.ph), Tr::S, Tr::PN);
    return g;
  }
};

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
