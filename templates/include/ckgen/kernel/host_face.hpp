// HostFace<Cfg>: what every host face of an instance shares (kernel/gemm_kernel.hpp,
// kernel/tma_kernel.hpp, kernel/tma_window_kernel.hpp, kernel/tma_window_weight_kernel.hpp,
// kernel/depthwise_kernel.hpp): the registry key built from the instance's fields, which a face
// completes in its constructor with what its kernel really runs, and the platform's
// invalid-value error. The problem checks every face runs first are detail::common_refusal
// (kernel/kernel_base.hpp).
#pragma once

#include "ckgen/core/portability.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

template <class Cfg>
class HostFace : public KernelBase {
 public:
  const KernelKey& key() const override { return key_; }

 protected:
  HostFace() : key_(config_key<Cfg>()) {}
  static gpuError_t invalid_value() {
#if defined(CKGEN_NVIDIA)
    return cudaErrorInvalidValue;
#elif defined(CKGEN_AMD_NOGPUINC)
    return 1;
#else
    return hipErrorInvalidValue;
#endif
  }
  KernelKey key_;
};

}  // namespace ckgen
