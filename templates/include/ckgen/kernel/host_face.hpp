// HostFace<Cfg>: what every host face of an instance shares (kernel/gemm_kernel.hpp,
// kernel/tma_kernel.hpp, kernel/tma_window_kernel.hpp, kernel/tma_window_weight_kernel.hpp,
// kernel/depthwise_kernel.hpp): the registry key built from the instance's fields, which a face
// completes in its constructor with what its kernel really runs (set_shape), the variant, the
// 32-bit index limit and the platform's invalid-value error. The problem checks every face runs
// first are detail::common_refusal (kernel/kernel_base.hpp).
#pragma once

#include "ckgen/core/portability.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

template <class Cfg>
class HostFace : public KernelBase {
 public:
  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr int64_t kMax32 = (int64_t(1) << 31) - 1;  // the largest 32-bit signed index

  const KernelKey& key() const override { return key_; }

 protected:
  HostFace() : key_(config_key<Cfg>()) {}
  // The key's block tile, waves, warp tile and vector widths as the face's kernel runs them.
  void set_shape(int tile_m, int tile_n, int tile_k, int wave_m, int wave_n, int wave_k, int warp_m,
                 int warp_n, int warp_k, int vec_a, int vec_b, int vec_c) {
    key_.tile_m = tile_m;
    key_.tile_n = tile_n;
    key_.tile_k = tile_k;
    key_.wave_m = wave_m;
    key_.wave_n = wave_n;
    key_.wave_k = wave_k;
    key_.warp_m = warp_m;
    key_.warp_n = warp_n;
    key_.warp_k = warp_k;
    key_.vec_a = vec_a;
    key_.vec_b = vec_b;
    key_.vec_c = vec_c;
  }
  static gpuError_t invalid_value() { return gpu_invalid_value(); }
  KernelKey key_;
};

}  // namespace ckgen
