// The launches of one call as a chain (NVIDIA sm_90+: programmatic dependent launch).
//
// A call that runs several kernels one after the other on its stream (a staging copy, the clear
// of a split's fp32 sums, the GEMM, the split's conversion, a crop) launches every kernel after
// the first with `launch_chained(..., after_kernel = true)`: its blocks may be scheduled, and run
// up to chain_wait(), while the kernel before it is still finishing, instead of after its last
// block has exited. chain_wait() (griddepcontrol.wait) returns once the kernel before it has
// completed and its memory is visible, so a kernel that calls it before touching global memory
// is correct whether or not it was launched as a dependent (elsewhere it is a no-op), and
// chain_release() (griddepcontrol.launch_dependents) lets the next kernel be scheduled before
// this one ends. The first kernel of a call is launched plainly: it waits for all earlier work
// on the stream, as any launch does. Other platforms: plain launches, no-op device calls.
#pragma once

#include <utility>

#include "ckgen/core/portability.hpp"

namespace ckgen {

CKGEN_DEVICE CKGEN_FORCEINLINE void chain_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
CKGEN_DEVICE CKGEN_FORCEINLINE void chain_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

#if defined(CKGEN_NVIDIA)
namespace detail {
// Compute capability major of the current device (0 when no device answers), read once.
inline int device_cc_major() {
  static const int major = device_attribute_or(cudaDevAttrComputeCapabilityMajor, 0);
  return major;
}
}  // namespace detail

// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent of the stream's
// previous kernel when after_kernel is set and the device has compute capability 9.0 or more.
// `extra` (optional): one more launch attribute (a cluster shape).
template <class... Params, class... Args>
gpuError_t launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, gpuStream_t stream,
                          bool after_kernel, const cudaLaunchAttribute* extra, Args&&... args) {
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  if (extra != nullptr) attrs[n++] = *extra;
  if (after_kernel && detail::device_cc_major() >= 9) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (n == 0) {
    kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
#endif

}  // namespace ckgen
