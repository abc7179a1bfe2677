// Launches as a chain (NVIDIA sm_90+: programmatic dependent launch).
//
// Every ckgen kernel calls chain_wait() (griddepcontrol.wait) before it touches global memory:
// it returns once the kernel before it on the stream has completed and its memory is visible, and
// it is a no-op where the kernel was launched plainly. So every launch may be a programmatic
// dependent of the stream's previous kernel, whoever launched that one: its blocks are scheduled,
// and set up their barriers and shared memory, while that kernel finishes, instead of after its
// last block has exited. chain_release() (griddepcontrol.launch_dependents) lets the next kernel
// be scheduled before this one ends.
//
// CKGEN_CHAIN picks which launches are chained (read once per process):
//   all (default)  every launch through launch_chained / launch_kernel;
//   call           only a kernel that follows another kernel of the same call (after_kernel),
//                  the first one of a call waits for the stream as a plain launch does;
//   off            none.
// Other platforms: plain launches, no-op device calls.
#pragma once

#include <cstdlib>
#include <cstring>
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

enum class ChainMode { All, Call, Off };

// CKGEN_CHAIN's value (all when unset or unknown).
inline ChainMode chain_mode_from(const char* v) {
  if (v != nullptr && std::strcmp(v, "off") == 0) return ChainMode::Off;
  if (v != nullptr && std::strcmp(v, "call") == 0) return ChainMode::Call;
  return ChainMode::All;
}
inline ChainMode chain_mode() {
  static const ChainMode m = chain_mode_from(std::getenv("CKGEN_CHAIN"));
  return m;
}
// Whether a launch is chained under mode m: after_kernel, a kernel of the same call ran before it.
inline bool chain_launch(ChainMode m, bool after_kernel) {
  return m == ChainMode::All || (m == ChainMode::Call && after_kernel);
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
// previous kernel where chain_mode() chains it and the device has compute capability 9.0 or more.
// after_kernel: the launch follows another kernel of the same call (a split-K finish, a phase of
// a strided backward_data, the channel-padding copies' consumer), which CKGEN_CHAIN=call chains
// and whose producer may release it early (a TMA kernel's late_wait). `extra` (optional): one
// more launch attribute (a cluster shape).
template <class... Params, class... Args>
gpuError_t launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, gpuStream_t stream,
                          bool after_kernel, const cudaLaunchAttribute* extra, Args&&... args) {
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  if (extra != nullptr) attrs[n++] = *extra;
  if (chain_launch(chain_mode(), after_kernel) && detail::device_cc_major() >= 9) {
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

#if defined(CKGEN_NVIDIA) || defined(CKGEN_AMD)
// launch_chained without an extra attribute, on every GPU platform (elsewhere a plain launch).
template <class... Params, class... Args>
gpuError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, gpuStream_t stream,
                         bool after_kernel, Args&&... args) {
#if defined(CKGEN_NVIDIA)
  return launch_chained(kernel, grid, block, smem, stream, after_kernel, nullptr, std::forward<Args>(args)...);
#else
  (void)after_kernel;
  kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
  return gpuGetLastError();
#endif
}
#endif

}  // namespace ckgen
