// SpaceToDepthKernel: a forward instance of 16-byte vectors run on a strided problem with few input
// channels (the C = 3 stems) as the stride-1 problem of schedule/space_to_depth_plan.hpp. Two
// copies into workspace (x', and w' of a few thousand elements), then the inner instance writes
// the user's y itself, with the user's fused operands (its output is the original one). The
// registry adds one for every forward instance of whole vectors (add_space_to_depth_faces,
// registry.cpp); its name is the inner name + "_s2d", its key the inner key with space_to_depth
// set, which the cost model prices as the inner instance on the stride-1 problem plus the copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/kernel/channel_pad.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/schedule/space_to_depth_plan.hpp"

namespace ckgen {

namespace detail {

// x' from x, a thread V channels of a pixel at a time (one 16-byte store), vecs vectors.
template <class T, class I>
CKGEN_GLOBAL void space_to_depth_input_kernel(T* __restrict__ dst, const T* __restrict__ src, I vecs,
                                              ConvProblem p, ConvProblem q, int64_t packed) {
#if CKGEN_GPU_COMPILER
  chain_wait();
  constexpr int V = int(16 / sizeof(T));
  const I step = I(gridDim.x) * I(blockDim.x);
  for (I v = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); v < vecs; v += step) {
    union {
      uint4 u;
      T e[V];
    } b;
    space_to_depth_input<V, T, I>(src, v, p, q, packed, b.e);
    reinterpret_cast<uint4*>(dst)[v] = b.u;
  }
#else
  (void)dst, (void)src, (void)vecs, (void)p, (void)q, (void)packed;
#endif
}

// w' from w, an element a thread (a few thousand of them).
template <class T, class I>
CKGEN_GLOBAL void space_to_depth_weight_kernel(T* __restrict__ dst, const T* __restrict__ src, I n,
                                               ConvProblem p, ConvProblem q, int64_t packed) {
#if CKGEN_GPU_COMPILER
  chain_wait();
  const I step = I(gridDim.x) * I(blockDim.x);
  for (I e = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); e < n; e += step)
    dst[e] = space_to_depth_weight<T, I>(src, e, p, q, packed);
#else
  (void)dst, (void)src, (void)n, (void)p, (void)q, (void)packed;
#endif
}

// x' and w' of plan s into their workspace twins (host-only builds copy on the host).
template <class T>
gpuError_t space_to_depth_copies(T* x2, const T* x, T* w2, const T* w, const ConvProblem& p,
                                 const SpaceToDepthPlan& s, gpuStream_t stream) {
  constexpr int V = int(16 / sizeof(T));
  const int64_t vecs = s.inner.input_elems() / V, wn = s.inner.weight_elems();
#if CKGEN_GPU_COMPILER
  const unsigned xb = unsigned(grid_stride_blocks(vecs, kChannelPadThreads, 8));
  const unsigned wb = unsigned(grid_stride_blocks(wn, kChannelPadThreads, 8));
  gpuError_t e =
      vecs * V <= int64_t(INT32_MAX)
          ? launch_kernel(space_to_depth_input_kernel<T, int32_t>, dim3(xb), dim3(kChannelPadThreads), 0,
                          stream, false, x2, x, int32_t(vecs), p, s.inner, s.packed)
          : launch_kernel(space_to_depth_input_kernel<T, int64_t>, dim3(xb), dim3(kChannelPadThreads), 0,
                          stream, false, x2, x, vecs, p, s.inner, s.packed);
  if (e != gpuSuccess) return e;
  return launch_kernel(space_to_depth_weight_kernel<T, int64_t>, dim3(wb), dim3(kChannelPadThreads), 0,
                       stream, false, w2, w, wn, p, s.inner, s.packed);
#else
  (void)stream;
  for (int64_t v = 0; v < vecs; ++v) {
    T b[V];
    space_to_depth_input<V, T, int64_t>(x, v, p, s.inner, s.packed, b);
    for (int e = 0; e < V; ++e) x2[v * V + e] = b[e];
  }
  for (int64_t e = 0; e < wn; ++e) w2[e] = space_to_depth_weight<T, int64_t>(w, e, p, s.inner, s.packed);
  return gpuSuccess;
#endif
}

}  // namespace detail

class SpaceToDepthKernel final : public KernelBase {
 public:
  explicit SpaceToDepthKernel(const KernelBase& inner)
      : inner_(inner), key_(inner.key()), quantum_(channel_pad_quantum(inner.key().datatype)) {
    key_.name += "_s2d";
    key_.space_to_depth = true;
  }
  const KernelKey& key() const override { return key_; }

  // Whether p has a space-to-depth form, then the inner instance's refusal of it.
  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if (std::string r = p.validate(); !r.empty()) return r;
    if (std::string r = space_to_depth_refusal(p); !r.empty()) return r;
    return inner_.is_supported(plan(p).inner, opts);
  }

  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    return layout(p, opts).bytes;
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    if (workspace == nullptr) return gpu_invalid_value();
    const Layout l = layout(p, opts);
    unsigned char* ws = static_cast<unsigned char*>(workspace);
    ConvTensors packed = t;
    packed.in = ws + l.x_at;
    packed.wei = ws + l.w_at;
    gpuError_t e =
        elem_bytes(key_.datatype) == 4
            ? detail::space_to_depth_copies(
                  static_cast<uint32_t*>(packed.in), static_cast<const uint32_t*>(t.in),
                  static_cast<uint32_t*>(packed.wei), static_cast<const uint32_t*>(t.wei), p, l.plan, stream)
            : detail::space_to_depth_copies(
                  static_cast<uint16_t*>(packed.in), static_cast<const uint16_t*>(t.in),
                  static_cast<uint16_t*>(packed.wei), static_cast<const uint16_t*>(t.wei), p, l.plan, stream);
    if (e != gpuSuccess) return e;
    return inner_.run(l.plan.inner, packed, ws, stream, opts);
  }

  const KernelBase& inner() const { return inner_; }

 private:
  // The workspace: the inner instance's own at offset 0, then x' at x_at and w' at w_at.
  struct Layout {
    SpaceToDepthPlan plan;
    std::size_t x_at = 0, w_at = 0, bytes = 0;
  };

  SpaceToDepthPlan plan(const ConvProblem& p) const { return space_to_depth_plan(p, quantum_); }
  Layout layout(const ConvProblem& p, const RunOptions& opts) const {
    Layout l;
    l.plan = plan(p);
    const std::size_t eb = std::size_t(elem_bytes(key_.datatype));
    l.x_at = detail::channel_pad_aligned(inner_.workspace_bytes(l.plan.inner, opts));
    l.w_at = l.x_at + detail::channel_pad_aligned(std::size_t(l.plan.inner.input_elems()) * eb);
    l.bytes = l.w_at + detail::channel_pad_aligned(std::size_t(l.plan.inner.weight_elems()) * eb);
    return l;
  }
  const KernelBase& inner_;
  KernelKey key_;
  int quantum_;
};

// Whether the registry gives instance key k a space-to-depth face: a forward split-K (not
// StreamK) implicit-GEMM or wavelet_tma instance reading 16-byte vectors, not itself a face.
inline bool wants_space_to_depth_face(const KernelKey& k) {
  const int q = channel_pad_quantum(k.datatype);
  return k.variant == Variant::Forward && k.channel_pad == 0 && !k.space_to_depth && !k.mask_copy &&
         k.pipeline != Pipeline::Direct && k.reduction == Reduction::SplitK && k.vec_a == q && k.vec_b == q;
}

// Adds the space-to-depth faces of every registered instance that wants one (after them).
inline void add_space_to_depth_faces(Registry& reg) {
  const std::size_t n = reg.all().size();
  for (std::size_t i = 0; i < n; ++i)
    if (wants_space_to_depth_face(reg.all()[i]->key()))
      reg.add(std::make_unique<SpaceToDepthKernel>(*reg.all()[i]));
}

}  // namespace ckgen
