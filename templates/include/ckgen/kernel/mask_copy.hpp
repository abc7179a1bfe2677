// MaskCopyKernel: a backward request with a gradient mask (drelu, drelu6, dleaky_relu) served by a
// plain instance: one launch writes dy times the gradient of the activation at the saved forward
// output y into the workspace, then the plain instance runs over that copy, the unfused path in
// one call. The registry adds one face per gradient mask for every plain backward_data /
// backward_weight instance whose fused twin it does not hold (add_mask_copy_faces, registry.cpp):
// its name is that twin's (the inner name + the mask's token), its key the inner key with the
// activation set and mask_copy true, which the cost model prices as the inner instance plus the
// copy. Where the fused twin is registered (wavelet_tma's masks, configs/backward_data/fused.yaml),
// the twin serves the request: it takes the mask in the kernel where that pays and this copy
// elsewhere (kernel/tma_kernel.hpp premask).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

namespace detail {

inline constexpr int kMaskCopyThreads = 256;
inline constexpr std::size_t kMaskCopyAlign = 256;

// dst = dy x the gradient of activation A at y, element by element over n elements; 16-byte
// vectors where n and the three pointers allow them (vec), kUnroll of them a thread in flight.
template <Activation A, DataType D>
CKGEN_GLOBAL void mask_copy_kernel(const typename DataTypeTraits<D>::raw* __restrict__ dy,
                                   const typename DataTypeTraits<D>::raw* __restrict__ y,
                                   typename DataTypeTraits<D>::raw* __restrict__ dst, int64_t n, float alpha,
                                   bool vec) {
#if CKGEN_GPU_COMPILER
  using Raw = typename DataTypeTraits<D>::raw;
  constexpr int V = int(16 / sizeof(Raw)), kUnroll = 4;
  chain_wait();
  chain_release();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t i0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    using VecT = Vec<Raw, V>;  // 16 bytes
    const int64_t vecs = n / V;
    for (int64_t i = i0; i < vecs; i += kUnroll * step) {
      VecT a[kUnroll], b[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * step < vecs) {
          a[u] = reinterpret_cast<const VecT*>(dy)[i + u * step];
          b[u] = reinterpret_cast<const VecT*>(y)[i + u * step];
        }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * step < vecs) {
#pragma unroll
          for (int j = 0; j < V; ++j) a[u].v[j] = fusion::grad_mask<A, D>(a[u].v[j], b[u].v[j], alpha);
          reinterpret_cast<VecT*>(dst)[i + u * step] = a[u];
        }
    }
  } else {
    for (int64_t i = i0; i < n; i += step) dst[i] = fusion::grad_mask<A, D>(dy[i], y[i], alpha);
  }
#else
  (void)dy, (void)y, (void)dst, (void)n, (void)alpha, (void)vec;
#endif
}

// The launch of mask_copy_kernel on `stream` (host-only builds, the dispatcher's host tests: the
// same product on the host).
template <Activation A, DataType D>
gpuError_t mask_copy(const void* dy, const void* y, void* dst, int64_t n, float alpha, gpuStream_t stream) {
  using Raw = typename DataTypeTraits<D>::raw;
  const Raw* a = static_cast<const Raw*>(dy);
  const Raw* b = static_cast<const Raw*>(y);
  Raw* c = static_cast<Raw*>(dst);
#if CKGEN_GPU_COMPILER
  constexpr int64_t V = int64_t(16 / sizeof(Raw));
  auto a16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  const bool vec = n % V == 0 && a16(dy) && a16(y) && a16(dst);
  const unsigned blocks = unsigned(grid_stride_blocks(vec ? n / V : n, kMaskCopyThreads, 8));
  return launch_kernel(mask_copy_kernel<A, D>, dim3(blocks), dim3(kMaskCopyThreads), 0, stream, false, a, b, c, n,
                       alpha, vec);
#else
  (void)stream;
  for (int64_t i = 0; i < n; ++i) c[i] = fusion::grad_mask<A, D>(a[i], b[i], alpha);
  return gpuSuccess;
#endif
}

// mask_copy for a gradient mask and datatype known at run time.
template <Activation A>
gpuError_t mask_copy(DataType d, const void* dy, const void* y, void* dst, int64_t n, float alpha,
                     gpuStream_t stream) {
  switch (d) {
    case DataType::FP16: return mask_copy<A, DataType::FP16>(dy, y, dst, n, alpha, stream);
    case DataType::BF16: return mask_copy<A, DataType::BF16>(dy, y, dst, n, alpha, stream);
    case DataType::FP32: return mask_copy<A, DataType::FP32>(dy, y, dst, n, alpha, stream);
  }
  return gpu_invalid_value();
}
inline gpuError_t mask_copy(Activation a, DataType d, const void* dy, const void* y, void* dst, int64_t n,
                            float alpha, gpuStream_t stream) {
  switch (a) {
    case Activation::DRelu: return mask_copy<Activation::DRelu>(d, dy, y, dst, n, alpha, stream);
    case Activation::DRelu6: return mask_copy<Activation::DRelu6>(d, dy, y, dst, n, alpha, stream);
    case Activation::DLeakyRelu: return mask_copy<Activation::DLeakyRelu>(d, dy, y, dst, n, alpha, stream);
    default: return gpu_invalid_value();
  }
}

// The bytes of dy (the forward's output) of p, rounded up to kMaskCopyAlign.
inline std::size_t mask_copy_bytes(const ConvProblem& p, DataType d) {
  const std::size_t b = std::size_t(p.N * p.out_spatial() * p.G * p.K) * std::size_t(elem_bytes(d));
  return (b + kMaskCopyAlign - 1) / kMaskCopyAlign * kMaskCopyAlign;
}

}  // namespace detail

class MaskCopyKernel final : public KernelBase {
 public:
  MaskCopyKernel(const KernelBase& inner, Activation mask) : inner_(inner), key_(inner.key()) {
    key_.name += std::string("_") + name_token(mask);
    key_.activation = mask;
    key_.mask_copy = true;
  }
  const KernelKey& key() const override { return key_; }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    return inner_.is_supported(p, opts);
  }
  // The masked copy of dy at offset 0, the inner instance's workspace after it.
  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    return detail::mask_copy_bytes(p, key_.datatype) + inner_.workspace_bytes(p, opts);
  }
  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    if (!epilogue_operands_refusal(epilogue_ops(key_), t.ep).empty() || workspace == nullptr)
      return gpu_invalid_value();
    if (gpuError_t e = detail::mask_copy(key_.activation, key_.datatype, t.out, t.ep.y, workspace,
                                         p.N * p.out_spatial() * p.G * p.K, t.ep.alpha, stream);
        e != gpuSuccess)
      return e;
    ConvTensors u = t;
    u.out = workspace;
    u.ep = EpilogueArgs{};
    return inner_.run(p, u, static_cast<unsigned char*>(workspace) + detail::mask_copy_bytes(p, key_.datatype),
                      stream, opts);
  }

  const KernelBase& inner() const { return inner_; }

 private:
  const KernelBase& inner_;
  KernelKey key_;
};

// The gradient masks a face can take.
inline constexpr Activation kMaskCopyMasks[] = {Activation::DRelu, Activation::DRelu6, Activation::DLeakyRelu};

// Whether the registry gives instance key k mask-copy faces: a plain backward_data /
// backward_weight instance (not itself a face).
inline bool wants_mask_copy_faces(const KernelKey& k) {
  return (k.variant == Variant::BackwardData || k.variant == Variant::BackwardWeight) && k.channel_pad == 0 &&
         !k.mask_copy && epilogue_ops(k) == EpilogueOps{};
}

// Adds the mask-copy faces of every registered instance that wants them (after them), but none
// whose name a registered instance has (its fused twin).
inline void add_mask_copy_faces(Registry& reg) {
  std::set<std::string> names;
  for (const auto& k : reg.all()) names.insert(k->name());
  const std::size_t n = reg.all().size();
  for (std::size_t i = 0; i < n; ++i) {
    const KernelBase& inner = *reg.all()[i];
    if (!wants_mask_copy_faces(inner.key())) continue;
    for (Activation a : kMaskCopyMasks)
      if (!names.count(inner.name() + "_" + name_token(a))) reg.add(std::make_unique<MaskCopyKernel>(inner, a));
  }
}

}  // namespace ckgen
