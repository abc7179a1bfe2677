// MaskCopyKernel: a backward request with a gradient mask (drelu, drelu6, dleaky_relu) served by a
// plain instance: one launch writes dy times the gradient of the activation at the saved forward
// output y into the workspace, then the plain instance runs over that copy, the unfused path in
// one call. The registry adds one face per gradient mask for every plain backward_data /
// backward_weight instance whose fused twin it does not hold (add_mask_copy_faces, registry.cpp):
// its name is that twin's (the inner name + the mask's token), its key the inner key with the
// activation set and mask_copy true, which the cost model prices as the inner instance plus the
// copy. Where the fused twin is registered (wavelet_tma's masks, configs/backward_data/fused.yaml),
// the twin serves the request: it takes the mask in the kernel where that pays and this copy
// elsewhere (kernel/tma_kernel.hpp premask). Included by the registry only: the run-time dispatch
// below instantiates the copy for every mask and datatype.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "ckgen/core/chain.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/epilogue/fusion.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/kernel/mask_copy_kernel.hpp"

namespace ckgen {

namespace detail {

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
    if (!epilogue_operands_refusal(epilogue_ops(key_), t.ep).empty()) return gpu_invalid_value();
    return detail::run_premasked(
        p, key_.datatype, t, workspace,
        [&](const void* dy, const void* y, void* dst, int64_t n, float alpha) {
          return detail::mask_copy(key_.activation, key_.datatype, dy, y, dst, n, alpha, stream);
        },
        [&](const ConvTensors& u, void* ws) { return inner_.run(p, u, ws, stream, opts); });
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
