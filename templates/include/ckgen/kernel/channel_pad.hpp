// ChannelPadKernel: an instance of 16-byte vectors run on a problem whose channels are not whole
// vectors (odd channel counts, C = 3 stems, r(2+1)d's 45 / 230 / 921; for a direct instance a
// pixel's G * Cg channels: depthwise layers of 690 or 815 groups), which otherwise only the
// narrow and scalar instances serve; over a direct depthwise instance also the forward and
// backward_weight of a depthwise layer with a channel multiplier (C = 1, K = M), which no direct
// instance serves itself. The copies of schedule/channel_pad_plan.hpp put the
// operands into workspace with zero channels added, the inner instance runs on the padded
// problem, and the written tensor is copied back. The registry adds one for every plain instance
// of whole vectors (add_channel_pad_faces, registry.cpp); its name is the inner name + "_cpad",
// its key the inner key with channel_pad set, which the cost model prices as the inner instance
// on the padded problem plus the copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/schedule/channel_pad_plan.hpp"

namespace ckgen {

namespace detail {
inline constexpr int kChannelPadThreads = 256;
inline constexpr std::size_t kChannelPadAlign = 256;

// dst[o][r][c] over dst's rows_d x cols_d blocks: src[o][r][c] inside src's rows_s x cols_s, else 0.
template <class T, class I>
CKGEN_HOST_DEVICE inline T channel_pad_value(const T* src, I i, I rows_d, I cols_d, I rows_s, I cols_s) {
  const I c = i % cols_d, t = i / cols_d;
  const I r = t % rows_d, o = t / rows_d;
  return r < rows_s && c < cols_s ? src[(o * rows_s + r) * cols_s + c] : T(0);
}

template <class T, class I>
CKGEN_GLOBAL void channel_pad_kernel(T* __restrict__ dst, const T* __restrict__ src, I n, I rows_d, I cols_d,
                                     I rows_s, I cols_s) {
#if CKGEN_GPU_COMPILER
  chain_wait();
  const I step = I(gridDim.x) * I(blockDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step)
    dst[i] = channel_pad_value(src, i, rows_d, cols_d, rows_s, cols_s);
#else
  (void)dst, (void)src, (void)n, (void)rows_d, (void)cols_d, (void)rows_s, (void)cols_s;
#endif
}

// An activation copy (one block of rows, only the columns padded): a thread moves one 16-byte
// vector of the padded twin (16-byte aligned, rows of whole vectors) and its elements of the
// user's tensor, read or written as they lie (zeros past the user's columns when reading).
template <class T, class I>
CKGEN_GLOBAL void channel_pad_rows_kernel(T* __restrict__ user, T* __restrict__ padded, I vecs, I row_vecs,
                                          I cols, bool read) {
#if CKGEN_GPU_COMPILER
  chain_wait();
  constexpr int V = int(16 / sizeof(T));
  uint4* pv = reinterpret_cast<uint4*>(padded);
  const I step = I(gridDim.x) * I(blockDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < vecs; i += step) {
    const I r = i / row_vecs;
    const I c0 = (i - r * row_vecs) * V;
    T* u = user + r * cols + c0;
    const int n = c0 + V <= cols ? V : (c0 < cols ? int(cols - c0) : 0);
    union {
      uint4 v;
      T e[V];
    } b;
    if (read) {
#pragma unroll
      for (int j = 0; j < V; ++j) b.e[j] = j < n ? u[j] : T(0);
      pv[i] = b.v;
    } else {
      b.v = pv[i];
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < n) u[j] = b.e[j];
    }
  }
#else
  (void)user, (void)padded, (void)vecs, (void)row_vecs, (void)cols, (void)read;
#endif
}

// One copy of the plan on `stream`: into the padded twin (c.read) or out of it. Host-only builds
// (the dispatcher's host tests) copy on the host.
template <class T>
gpuError_t channel_pad_copy(const PadCopy& c, T* padded, T* user, gpuStream_t stream) {
  T* dst = c.read ? padded : user;
  const T* src = c.read ? user : padded;
  const int64_t rows_d = c.read ? c.rows_padded : c.rows, cols_d = c.read ? c.cols_padded : c.cols;
  const int64_t rows_s = c.read ? c.rows : c.rows_padded, cols_s = c.read ? c.cols : c.cols_padded;
  const int64_t n = c.outer * rows_d * cols_d;
#if CKGEN_GPU_COMPILER
  constexpr int64_t V = int64_t(16 / sizeof(T));
  if (c.outer == 1 && c.rows == c.rows_padded && c.cols_padded % V == 0) {  // activations
    const int64_t vecs = c.rows * (c.cols_padded / V);
    const unsigned vblocks = unsigned(grid_stride_blocks(vecs, kChannelPadThreads, 8));
    if (vecs * V <= int64_t(INT32_MAX))
      return launch_kernel(channel_pad_rows_kernel<T, int32_t>, dim3(vblocks), dim3(kChannelPadThreads), 0, stream,
                           false, user, padded, int32_t(vecs), int32_t(c.cols_padded / V), int32_t(c.cols), c.read);
    return launch_kernel(channel_pad_rows_kernel<T, int64_t>, dim3(vblocks), dim3(kChannelPadThreads), 0, stream,
                         false, user, padded, vecs, c.cols_padded / V, c.cols, c.read);
  }
  const unsigned blocks = unsigned(grid_stride_blocks(n, kChannelPadThreads, 8));
  if (n <= int64_t(INT32_MAX))
    return launch_kernel(channel_pad_kernel<T, int32_t>, dim3(blocks), dim3(kChannelPadThreads), 0, stream, false, dst,
                         src, int32_t(n), int32_t(rows_d), int32_t(cols_d), int32_t(rows_s), int32_t(cols_s));
  return launch_kernel(channel_pad_kernel<T, int64_t>, dim3(blocks), dim3(kChannelPadThreads), 0, stream, false, dst,
                       src, n, rows_d, cols_d, rows_s, cols_s);
#else
  (void)stream;
  for (int64_t i = 0; i < n; ++i) dst[i] = channel_pad_value(src, i, rows_d, cols_d, rows_s, cols_s);
  return gpuSuccess;
#endif
}

// A spread copy (PadCopy::spread > 1, one block of rows, read only): the twin's column j of a
// row is the user's column j / spread, zero past cols * spread.
template <class T, class I>
CKGEN_HOST_DEVICE inline T channel_spread_value(const T* user, I i, I cols, I cols_p, I spread) {
  const I r = i / cols_p, j = i - r * cols_p;
  return j < cols * spread ? user[r * cols + j / spread] : T(0);
}

template <class T, class I>
CKGEN_GLOBAL void channel_spread_kernel(T* __restrict__ padded, const T* __restrict__ user, I n, I cols,
                                        I cols_p, I spread) {
#if CKGEN_GPU_COMPILER
  chain_wait();
  const I step = I(gridDim.x) * I(blockDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step)
    padded[i] = channel_spread_value(user, i, cols, cols_p, spread);
#else
  (void)padded, (void)user, (void)n, (void)cols, (void)cols_p, (void)spread;
#endif
}

// One spread copy of the plan on `stream` (host-only builds copy on the host).
template <class T>
gpuError_t channel_spread_copy(const PadCopy& c, T* padded, const T* user, gpuStream_t stream) {
  const int64_t n = c.rows * c.cols_padded;
#if CKGEN_GPU_COMPILER
  const unsigned blocks = unsigned(grid_stride_blocks(n, kChannelPadThreads, 8));
  if (n <= int64_t(INT32_MAX))
    return launch_kernel(channel_spread_kernel<T, int32_t>, dim3(blocks), dim3(kChannelPadThreads), 0, stream,
                         false, padded, user, int32_t(n), int32_t(c.cols), int32_t(c.cols_padded),
                         int32_t(c.spread));
  return launch_kernel(channel_spread_kernel<T, int64_t>, dim3(blocks), dim3(kChannelPadThreads), 0, stream,
                       false, padded, user, n, c.cols, c.cols_padded, c.spread);
#else
  (void)stream;
  for (int64_t i = 0; i < n; ++i) padded[i] = channel_spread_value(user, i, c.cols, c.cols_padded, c.spread);
  return gpuSuccess;
#endif
}

inline std::size_t channel_pad_aligned(std::size_t b) {
  return (b + kChannelPadAlign - 1) / kChannelPadAlign * kChannelPadAlign;
}
}  // namespace detail

class ChannelPadKernel final : public KernelBase {
 public:
  explicit ChannelPadKernel(const KernelBase& inner)
      : inner_(inner), key_(inner.key()), quantum_(channel_pad_quantum(inner.key().datatype)) {
    key_.name += "_cpad";
    key_.channel_pad = quantum_;
  }
  const KernelKey& key() const override { return key_; }

  // The inner instance's refusal of the padded problem (its options first: a refusal names a bad
  // option whatever the problem), then whether any channel needs padding.
  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if (std::string r = p.validate(); !r.empty()) return r;
    if (groups() && p.C == 1 && p.K > 1 && key_.variant == Variant::BackwardData)
      return "channel_pad: a channel multiplier's backward_data would add the repeats' rounded gradients "
             "(not served)";
    const ConvProblem padded = plan(p).padded;
    if (std::string r = inner_.is_supported(padded, opts); !r.empty()) return r;
    if (padded.G == p.G && padded.C == p.C && padded.K == p.K)  // nothing to pad
      return groups()
                 ? "channel_pad: G * C channels are whole 16-byte vectors (the instance itself runs the "
                   "problem)"
                 : "channel_pad: C and K are whole 16-byte vectors (the instance itself runs the problem)";
    return {};
  }

  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    return layout(p, opts).bytes;
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    if (workspace == nullptr) return gpu_invalid_value();
    const Layout l = layout(p, opts);
    const ChannelPadPlan& pl = l.plan;
    unsigned char* ws = static_cast<unsigned char*>(workspace);
    void* inner_ws = ws;
    ConvTensors padded = t;
    void* twin[3] = {nullptr, nullptr, nullptr};
    for (int i = 0; i < pl.count; ++i) {
      twin[i] = ws + l.twin_at[i];
      slot(padded, pl.copies[i].operand) = twin[i];
    }
    for (int i = 0; i < pl.count; ++i)
      if (pl.copies[i].read)
        if (gpuError_t e = copy(pl.copies[i], twin[i], slot(t, pl.copies[i].operand), stream); e != gpuSuccess) return e;
    if (gpuError_t e = inner_.run(pl.padded, padded, inner_ws, stream, opts); e != gpuSuccess) return e;
    for (int i = 0; i < pl.count; ++i)
      if (!pl.copies[i].read)
        if (gpuError_t e = copy(pl.copies[i], twin[i], slot(t, pl.copies[i].operand), stream); e != gpuSuccess) return e;
    return gpuSuccess;
  }

  const KernelBase& inner() const { return inner_; }

 private:
  // The workspace: the inner instance's own workspace at offset 0, then the padded twin of each
  // copy of the plan at twin_at[i], every part aligned to kChannelPadAlign; bytes in all.
  struct Layout {
    ChannelPadPlan plan;
    std::size_t twin_at[3] = {0, 0, 0};
    std::size_t bytes = 0;
  };

  // A direct inner instance pads the group count (schedule/channel_pad_plan.hpp).
  bool groups() const { return key_.pipeline == Pipeline::Direct; }
  ChannelPadPlan plan(const ConvProblem& p) const {
    return pad_plan(key_.pipeline, key_.variant, p, quantum_);
  }
  Layout layout(const ConvProblem& p, const RunOptions& opts) const {
    Layout l;
    l.plan = plan(p);
    std::size_t at = detail::channel_pad_aligned(inner_.workspace_bytes(l.plan.padded, opts));
    for (int i = 0; i < l.plan.count; ++i) {
      l.twin_at[i] = at;
      at += detail::channel_pad_aligned(padded_bytes(l.plan.copies[i]));
    }
    l.bytes = at;
    return l;
  }
  std::size_t padded_bytes(const PadCopy& c) const {
    return std::size_t(c.padded_elems()) * std::size_t(elem_bytes(key_.datatype));
  }
  // The tensor pointer of operand o (assignable when t is).
  template <class Tensors>
  static auto slot(Tensors& t, PadOperand o) -> decltype((t.in)) {
    return o == PadOperand::In ? t.in : o == PadOperand::Wei ? t.wei : t.out;
  }
  gpuError_t copy(const PadCopy& c, void* padded, void* user, gpuStream_t stream) const {
    if (c.spread > 1) {  // (read copies only: direct_pad_plan)
      if (elem_bytes(key_.datatype) == 4)
        return detail::channel_spread_copy(c, static_cast<uint32_t*>(padded),
                                           static_cast<const uint32_t*>(user), stream);
      return detail::channel_spread_copy(c, static_cast<uint16_t*>(padded),
                                         static_cast<const uint16_t*>(user), stream);
    }
    if (elem_bytes(key_.datatype) == 4)
      return detail::channel_pad_copy(c, static_cast<uint32_t*>(padded), static_cast<uint32_t*>(user), stream);
    return detail::channel_pad_copy(c, static_cast<uint16_t*>(padded), static_cast<uint16_t*>(user), stream);
  }
  const KernelBase& inner_;
  KernelKey key_;
  int quantum_;
};

// Whether the registry gives instance key k a channel-padding face: a plain split-K (not StreamK)
// instance whose three operands move in 16-byte vectors; of the direct ones the FMA path (the
// matrix path's groups of 8-32 channels are whole vectors already).
inline bool wants_channel_pad_face(const KernelKey& k) {
  const int q = channel_pad_quantum(k.datatype);
  const bool direct_mma = k.pipeline == Pipeline::Direct && k.warp_m > 1;
  return k.channel_pad == 0 && !direct_mma && k.reduction == Reduction::SplitK &&
         epilogue_ops(k) == EpilogueOps{} && k.vec_a == q && k.vec_b == q && k.vec_c == q;
}

// Adds the channel-padding faces of every registered instance that wants one (after them).
inline void add_channel_pad_faces(Registry& reg) {
  const std::size_t n = reg.all().size();
  for (std::size_t i = 0; i < n; ++i)
    if (wants_channel_pad_face(reg.all()[i]->key())) reg.add(std::make_unique<ChannelPadKernel>(*reg.all()[i]));
}

}  // namespace ckgen
