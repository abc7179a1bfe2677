// Out-of-class definitions of TmaConvKernel<Cfg> (kernel/tma_kernel.hpp): the forward /
// backward_data call (phases, split workspace, side streams), the launch geometry, tensor-map
// encoding of x, the launch shape (persistent or clustered grid) and the launches of each variant.
#pragma once

#include "ckgen/kernel/tma_kernel.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

template <class Cfg>
gpuError_t TmaConvKernel<Cfg>::run_2d(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                  const RunOptions& opts) const {
  if constexpr (Tr::kWeightGrad) {
    return run_weight_grad(p, t, workspace, stream, opts);
  } else {
    // forward: one launch x -> y; backward_data: one launch dy -> dx per stride phase. With a
    // split, every launch adds into the zeroed fp32 workspace (which also covers the pixels no
    // phase writes) and one splitk_finish converts it.
    using Raw = typename Tr::Raw;
    using OutRaw = typename Tr::OutRaw;  // the written tensor's (a forward's conversion)
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
    if constexpr (Cfg::kStats) {  // the units add their chunks' channel sums (ChunkStats)
      if (gpuError_t e = launch_clear_sums(t.ep.stats, 2 * p.G * p.K, stream, chained); e != gpuSuccess) return e;
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
      if (gpuError_t e = gpuMemsetAsync(dst, 0, std::size_t(n) * sizeof(OutRaw), stream); e != gpuSuccess)
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
                                     chained && clear_first, t.ep);
          e != gpuSuccess)
        return e;
    }
    for (int i = 0; i < sides; ++i) {
      if (gpuError_t e = cudaEventRecord(fj->join[i], fj->side[i]); e != gpuSuccess) return e;
      if (gpuError_t e = cudaStreamWaitEvent(stream, fj->join[i], 0); e != gpuSuccess) return e;
    }
    if (ws == nullptr) return gpuSuccess;
    if constexpr (Cfg::kEpilogueOps)  // a fused forward: the epilogue applied to the sums
      return launch_splitk_finish_fused<Cfg>(ws, static_cast<OutRaw*>(dst), n, int64_t(p.G) * p.K, t.ep, stream,
                                              pl.phase.size() == 1);
    return launch_splitk_finish<Cfg::kOutDataType>(ws, 1, 0, static_cast<OutRaw*>(dst), n, stream,
                                                   pl.phase.size() == 1);
  }
}

template <class Cfg>
void TmaConvKernel<Cfg>::set_geometry(TmaConvArgs& a, const ConvProblem& p) {
  static_cast<ConvGeometry2D&>(a) = conv_geometry_2d(p);
  a.G = int(p.G);
  a.deep = p.ndim == 3 ? 1 : 0;  // a view is 3D only when its depth does not fold
  a.Do = int(p.out[0]);
  a.Y = int(p.filter[1]);
  a.s_d = int(p.stride[0]);
  a.pl_d = int(p.pad_l[0]);
  a.d_d = int(p.dilation[0]);
}

template <class Cfg>
bool TmaConvKernel<Cfg>::encode_x(CUtensorMap* map, const void* x, const ConvProblem& p, int pixels) {
  static const auto enc = detail::driver_entry<detail::EncodeIm2colFn>("cuTensorMapEncodeIm2col");
  if (!enc) return false;
  // rank 4 (2D views: W, H) or 5 (3D views: W, H, D); dims and strides innermost first
  const int spatial = p.ndim == 3 ? 3 : 2, rank = spatial + 2;
  cuuint64_t dims[5] = {cuuint64_t(p.G * p.C)}, strides[4] = {dims[0] * 2};
  int lo[3], hi[3];
  cuuint32_t estr[5] = {1};
  for (int j = 0; j < spatial; ++j) {
    const int i = 2 - j;
    dims[1 + j] = cuuint64_t(p.in[i]);
    lo[j] = int(-p.pad_l[i]);
    hi[j] = int(p.pad_r[i] - (p.filter[i] - 1) * p.dilation[i]);
    estr[1 + j] = cuuint32_t(p.stride[i]);
  }
  dims[rank - 1] = cuuint64_t(p.N);
  estr[rank - 1] = 1;
  for (int r = 1; r + 1 < rank; ++r) strides[r] = strides[r - 1] * dims[r];
  return enc(map, map_type(), cuuint32_t(rank), const_cast<void*>(x), dims, strides, lo, hi, cuuint32_t(Tr::BK),
             cuuint32_t(pixels), estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <class Cfg>
gpuError_t TmaConvKernel<Cfg>::launch(const TmaConvArgs& args, gpuStream_t stream, bool after_kernel, int smem) {
  TmaConvArgs a = args;
  a.set_divisors();
  const int64_t units = int64_t(a.tiles_m) * a.tiles_n * a.G * a.taps * a.k_split;
  if (a.cluster > 1) {
    const ClusterLaunch cl(unsigned(units), a.cluster, stream);
    return launch_chained(kernel_of(a), cl.cfg.gridDim, cl.cfg.blockDim, cl.cfg.dynamicSmemBytes, stream,
                          after_kernel, &cl.attr, a);
  }
  const int per_sm = smem > 0 ? patch_resident_blocks(smem) : resident_blocks();
  const int64_t slots = int64_t(detail::device_sm_count()) * per_sm;
  const dim3 grid(unsigned(std::min(units, slots)), 1, 1);
  return launch_chained(kernel_of(a), grid, dim3(Tr::kThreads), std::size_t(smem > 0 ? smem : Tr::kSmemBytes),
                        stream, after_kernel, nullptr, a);
}

template <class Cfg>
gpuError_t TmaConvKernel<Cfg>::run_forward(const Phase& ph, const void* x, const void* w, int64_t w_k,
                                           void* y, float* ws, const Split& sp, gpuStream_t stream,
                                           bool after_kernel, bool late_wait, const EpilogueArgs& ep) {
  const ConvProblem& p = ph.q;
  if (!detail::aligned16({x, w, y}) || (Tr::kMask && !detail::aligned16({ep.y}))) return cudaErrorMisalignedAddress;
  if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
  TmaConvArgs a{};
  a.ep = ep;
  Patch pt{};
  if constexpr (Tr::kPatch) {  // x {G*C, W, H, N}, box 64 x wp x rows x 1 from (c, -pl_w, row - pl_h, n)
    pt = patch_of(p);
    const cuuint64_t dims[4] = {cuuint64_t(p.G * p.C), cuuint64_t(p.in[2]), cuuint64_t(p.in[1]), cuuint64_t(p.N)};
    const cuuint32_t box[4] = {cuuint32_t(Tr::BK), cuuint32_t(pt.wp), cuuint32_t(pt.rows), 1};
    if (!encode_tiled(&a.a, x, 4, dims, box)) return cudaErrorInvalidValue;
    if (Tr::kMask && !encode_tiled(&a.ym, ep.y, 4, dims, box)) return cudaErrorInvalidValue;
    a.wp = pt.wp;
    a.patch_rows = pt.rows;
    a.patch_box = pt.box;
    a.patch_stride = pt.stride;
  } else if (!encode_x(&a.a, x, p, Tr::BM) || (Tr::kMask && !encode_x(&a.ym, ep.y, p, Tr::BM))) {
    return cudaErrorInvalidValue;
  }
  {  // forward w: {C, taps, G*K}, box 64 x 1 x BN; backward_data w: {C, taps, G*K} as it lies
     // (K = w_k, the filter's, even when dy is padded), box 64 x 1 x 64
    const cuuint64_t dims[3] = {cuuint64_t(Tr::kBNMajor ? p.K : p.C), cuuint64_t(ph.w_taps),
                                cuuint64_t(p.G * (Tr::kBNMajor ? w_k : p.K))};
    // Rows a B box copies: forward, the tile's filters up to K (rounded to 8; the rows past
    // them feed only output columns past K); backward_data with one k chunk (w_k <= 64), its
    // w_k rows rounded to 8 (the kernel zeroes the rows past them once: dy's padded
    // channels multiply them). The copy engine's zero-filled rows past the tensor cost time.
    const int b_rows = Tr::kBNMajor ? (w_k <= Tr::BK ? int((w_k + 7) / 8 * 8) : Tr::BK)
                                    : int(std::min<int64_t>(Tr::BN, (p.K + 7) / 8 * 8));
    const cuuint32_t box[3] = {cuuint32_t(Tr::BK), 1, cuuint32_t(b_rows)};
    if (!encode_tiled(&a.b, w, 3, dims, box)) return cudaErrorInvalidValue;
    a.b_rows = b_rows;
    a.stage_tx = (Tr::kPatch ? 0 : Tr::kABytes + Tr::kYBytes) +
                 (Tr::kBNMajor ? (Tr::BN / 64) * b_rows * Tr::kRowBytes : b_rows * Tr::kRowBytes);
  }
  set_geometry(a, p);
  a.y = y;
  a.M = int(p.N * p.out_spatial());
  a.K = int(p.K);
  a.GK = int(p.G * p.K);
  a.tap0 = int(ph.tap0);
  a.tap_dd = int(ph.tap_dd);
  a.tap_dh = int(ph.tap_dh);
  a.tap_dw = int(ph.tap_dw);
  a.c_chunks = int(detail::ceil_div(p.C, Tr::BK));
  a.k_tiles = int(p.filter_spatial()) * a.c_chunks;
  a.tiles_n = int(detail::ceil_div(p.K, Tr::BN));
  a.tiles_m = int(detail::ceil_div(a.M, Tr::BM));
  a.ftaps = int(p.filter_spatial());
  if constexpr (Tr::kPatch) {  // rows: positions of one image's padded output rows
    a.M = int(p.out[1] * pt.wp);
    a.tiles_img = int(detail::ceil_div(a.M, Tr::BM));
    a.tiles_m = int(p.N) * a.tiles_img;
  }
  a.taps = 1;
  a.k_split = ws != nullptr ? sp.k_split : 1;
  a.kt_per_split = ws != nullptr ? sp.kt_per_split : a.k_tiles;
  a.ws = ws;
  a.late_wait = late_wait && after_kernel && ws != nullptr ? 1 : 0;
  a.out_dense = ph.dense ? 1 : 0;
  a.out_sn = ph.out_sn;
  a.out_sh = ph.out_sh;
  a.out_sw = ph.out_sw;
  a.out_base = ph.out_base;
  return launch(a, stream, after_kernel, Tr::kPatch ? pt.smem : 0);
}

template <class Cfg>
gpuError_t TmaConvKernel<Cfg>::run_weight_grad(const ConvProblem& p, const ConvTensors& t, void* workspace,
    gpuStream_t stream, const RunOptions& opts) {
  using Raw = typename Tr::Raw;
  const int64_t cp = im2col_width(p);
  const ConvProblem q = gemm_view(p);
  const Split sp = weight_split(q, opts);
  const std::size_t sum_bytes = weight_sum_bytes(q, sp);
  const int64_t kp = padded_k(p);
  if ((sum_bytes > 0 || cp > 0) && workspace == nullptr) return cudaErrorInvalidValue;
  float* ws = sum_bytes > 0 ? static_cast<float*>(workspace) : nullptr;
  const void* dy = t.out;
  const void* x = t.in;
  void* dw = t.wei;
  // Each launch after the first is chained to the one before it (core/chain.hpp). With dy padded,
  // its padding launch zeroes the split sums too.
  const bool pad_clears = ws != nullptr && kp > 0;
  if (gpuError_t e = pad_dy(p, dy, workspace, sum_bytes, stream, pad_clears ? ws : nullptr, q.weight_elems());
      e != gpuSuccess)
    return e;
  bool chained = kp > 0;
  if (cp > 0) {
    Raw* col = reinterpret_cast<Raw*>(static_cast<unsigned char*>(workspace) + sum_bytes + pad_bytes(p));
    if (gpuError_t e = im2col(static_cast<const Raw*>(t.in), col, p, cp, stream, chained); e != gpuSuccess) return e;
    x = col;
    dw = col + p.N * p.out_spatial() * cp;
    chained = true;
  }
  bool clear_first = false;  // the clear is the call's first launch (nothing else precedes)
  bool db_clear = Cfg::kBiasGrad;  // bias_grad's db still to clear where the units add into it
  if (ws != nullptr && !pad_clears) {
    clear_first = !chained;
    if (gpuError_t e = launch_clear_sums(ws, q.weight_elems(), stream, chained, db_clear ? t.ep.db : nullptr,
                                         db_clear ? q.G * q.K : 0);
        e != gpuSuccess)
      return e;
    chained = true;
    db_clear = false;
  }
  if (gpuError_t e = launch_weight_grad(q, dy, kp > 0 ? kp : q.G * q.K, x, dw, ws, sp, stream, chained,
                                        clear_first, t.ep, db_clear);
      e != gpuSuccess)
    return e;
  if (ws != nullptr)
    if (gpuError_t e = launch_splitk_finish<Cfg::kDataType>(ws, 1, 0, static_cast<Raw*>(dw), q.weight_elems(), stream,
                                                            true);
        e != gpuSuccess)
      return e;
  if (cp == 0) return gpuSuccess;
  return pad_channels(static_cast<const Raw*>(dw), static_cast<Raw*>(t.wei), p.K, cp, p.filter_spatial() * p.C,
                      stream, true);
}

template <class Cfg>
gpuError_t TmaConvKernel<Cfg>::launch_weight_grad(const ConvProblem& p, const void* dy, int64_t dy_row, const void* x,
    void* dw, float* ws, const Split& sp, gpuStream_t stream,
    bool after_kernel, bool late_wait, const EpilogueArgs& ep, bool db_clear) {
  if (!detail::aligned16({dy, x, dw})) return cudaErrorMisalignedAddress;
  if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
  TmaConvArgs a{};
  if constexpr (Tr::kRows) {
    // The row form: dy {dy_row, Q, P, N}, box 64 x row_len; x {G*C, W, H, N}, box 64 x
    // (row_len + the taps' reach); GEMM columns dw's X * C of the tile's filter row (taps = Y).
    const detail::TmaRowSegs rs = detail::tma_row_segs(p.out[2], Tr::BN);
    const int reach = int((p.filter[2] - 1) * p.dilation[2]);
    const cuuint64_t ad[4] = {cuuint64_t(dy_row), cuuint64_t(p.out[2]), cuuint64_t(p.out[1]), cuuint64_t(p.N)};
    const cuuint32_t abox[4] = {cuuint32_t(Tr::BK), cuuint32_t(rs.len), 1, 1};
    const cuuint64_t bd[4] = {cuuint64_t(p.G * p.C), cuuint64_t(p.in[2]), cuuint64_t(p.in[1]), cuuint64_t(p.N)};
    const cuuint32_t bbox[4] = {cuuint32_t(Tr::BK), cuuint32_t(rs.len + reach), 1, 1};
    if (!encode_tiled(&a.a, dy, 4, ad, abox) || !encode_tiled(&a.b, x, 4, bd, bbox)) return cudaErrorInvalidValue;
    a.row_len = rs.len;
    a.row_segs = rs.segs;
    a.stage_tx = (2 * rs.len + reach) * Tr::kRowBytes;
    a.K = int(p.filter[2] * p.C);
    a.tiles_n = int(p.C / 64);
    a.taps = int(p.filter[1]);
  } else {
    {  // dy: {dy_row, N*P*Q}, box 64 x 64
      const cuuint64_t dims[2] = {cuuint64_t(dy_row), cuuint64_t(p.N * p.out_spatial())};
      const cuuint32_t box[2] = {cuuint32_t(Tr::BK), cuuint32_t(Tr::BK)};
      if (!encode_tiled(&a.a, dy, 2, dims, box)) return cudaErrorInvalidValue;
    }
    a.plain_x = plain_rows(p) ? 1 : 0;
    if (!(a.plain_x ? encode_x_rows(&a.b, x, p, Tr::BK) : encode_x(&a.b, x, p, Tr::BK)))
      return cudaErrorInvalidValue;
    a.pack = weight_packs_taps(p) ? 1 : 0;
    a.K = int(a.pack ? p.filter_spatial() * p.C : p.C);
    a.tiles_n = int(detail::ceil_div(a.K, Tr::BN));
    a.taps = a.pack ? 1 : int(p.filter_spatial());
  }
  set_geometry(a, p);
  a.y = dw;
  a.M = int(p.K);
  a.GK = int(p.G * p.K);
  a.k_tiles = sp.k_tiles;
  a.tiles_m = int(detail::ceil_div(p.K, Tr::BM));
  const bool split = ws != nullptr || sp.cluster;
  a.k_split = split ? sp.k_split : 1;
  a.kt_per_split = split ? sp.kt_per_split : sp.k_tiles;
  a.cluster = sp.cluster ? sp.k_split : 1;
  a.ld_row = p.filter_spatial() * p.C;
  a.ws = ws;
  a.late_wait = late_wait && after_kernel && ws != nullptr ? 1 : 0;
  a.ep = ep;
  // bias_grad where several units add into db: cleared first unless the split's clear did (a
  // clear of zeros only: the launch after it may still read its inputs early, late_wait)
  if constexpr (Cfg::kBiasGrad)
    if (db_clear && a.bias_grad_adds()) {
      if (gpuError_t e = launch_clear_sums(ep.db, p.G * p.K, stream, after_kernel); e != gpuSuccess) return e;
      after_kernel = true;
    }
  return launch(a, stream, after_kernel);
}

template <class Cfg>
const int64_t* TmaConvKernel<Cfg>::cluster_slots() {
  static const std::array<int64_t, 9> n = [] {
    std::array<int64_t, 9> v{};
    if (prepare_launch() != gpuSuccess) return v;
    for (int c = 2; c <= 8; ++c) {
      const ClusterLaunch cl(unsigned(c), c, nullptr);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, tma_conv_kernel<Cfg, false>, &cl.cfg) == cudaSuccess)
        v[size_t(c)] = int64_t(clusters) * c;
      else
        (void)cudaGetLastError();  // not sticky: keep it from the next launch's check
    }
    return v;
  }();
  return n.data();
}

template <class Cfg>
int TmaConvKernel<Cfg>::resident_blocks() {
  static const int n = [] {
    int b = 0;
    if (prepare_launch() != gpuSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, tma_conv_kernel<Cfg, false>, Tr::kThreads,
                                                      Tr::kSmemBytes) != cudaSuccess || b < 1)
      return 1;
    return b;
  }();
  return n;
}

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
