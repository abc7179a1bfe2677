// Portability layer: one set of kernel sources for nvcc (CUDA) and clang/hipcc (HIP).
//
// Platform selection (first match wins):
//   - nvcc (__CUDACC__), or a host compiler with CKGEN_PLATFORM_NVIDIA defined or
//     <cuda_runtime_api.h> on the include path                          -> CKGEN_NVIDIA
//   - clang/hipcc in HIP mode (__HIP__), or CKGEN_PLATFORM_AMD defined   -> CKGEN_AMD
//     * with HIP headers (<hip/hip_runtime.h>)                            -> uses them
//     * without (clang -x hip -nogpuinc): this header defines __global__, threadIdx,
//       __syncthreads, ... from clang builtins and declares the few runtime entry points
//       (device-only compiles never link them)                            -> CKGEN_AMD_NOGPUINC
//   - a host compiler with CKGEN_PLATFORM_HOST defined (checked first), or anything else:
//     host-only declarations (types; the runtime calls answer "no device").
//
// Macros: CKGEN_HOST_DEVICE, CKGEN_DEVICE, CKGEN_HOST, CKGEN_GLOBAL, CKGEN_FORCEINLINE,
//         CKGEN_DEVICE_PASS (1 while compiling device code), CKGEN_NVIDIA / CKGEN_AMD.
// Runtime: gpuError_t, gpuStream_t, gpuEvent_t, gpuSuccess, gpuMalloc, gpuFree, gpuMemcpy
//          (gpuMemcpyHostToDevice, ...), gpuMemset(Async), gpuDeviceSynchronize,
//          gpuGetLastError, gpuGetErrorString, gpuEventCreate/Record/Synchronize/
//          ElapsedTime/Destroy, gpuStreamSynchronize, gpuFuncSetAttribute /
//          gpuFuncAttributeMaxDynamicSharedMemorySize, gpuGetDeviceProperties, gpuDeviceProp,
//          gpuGetDeviceCount, gpuGetDevice, gpuDeviceGetAttribute (+ gpuDevAttrMultiProcessorCount),
//          gpuOccupancyMaxActiveBlocksPerMultiprocessor.
// Types:   ckgen::half_t, ckgen::bf16_t, ckgen::to_float(x), ckgen::from_float<T>(f).
#pragma once

#include <cstdint>
#include <cstddef>

// ------------------------------------------------------------------------------------------
// Platform detection
// ------------------------------------------------------------------------------------------
#if defined(CKGEN_PLATFORM_HOST) && !defined(__CUDACC__) && !defined(__HIP__)
// host-only on request, whatever runtime headers the include path has
#elif defined(__CUDACC__) && !defined(__HIP__)
#define CKGEN_NVIDIA 1
#elif defined(__HIP__) || defined(__HIPCC__) || defined(CKGEN_PLATFORM_AMD)
#define CKGEN_AMD 1
#elif defined(CKGEN_PLATFORM_NVIDIA)
#define CKGEN_NVIDIA 1
#elif defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#define CKGEN_NVIDIA 1
#elif __has_include(<hip/hip_runtime.h>)
#define CKGEN_AMD 1
#endif
#endif

// HIP mode without clang's runtime wrapper means -nogpuinc: use our own definitions even if
// some HIP headers happen to be on the include path.
#if defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
#if defined(__HIP__) && !defined(__CLANG_HIP_RUNTIME_WRAPPER_H__) && !defined(__HIPCC_RTC__)
#define CKGEN_AMD_NOGPUINC 1
#elif defined(__has_include)
#if !__has_include(<hip/hip_runtime.h>)
#define CKGEN_AMD_NOGPUINC 1
#endif
#endif
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define CKGEN_DEVICE_PASS 1
#else
#define CKGEN_DEVICE_PASS 0
#endif

// ------------------------------------------------------------------------------------------
// NVIDIA
// ------------------------------------------------------------------------------------------
#if defined(CKGEN_NVIDIA)
#include <cuda_runtime_api.h>
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif
#include <cuda_fp16.h>
#include <cuda_bf16.h>

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuEventCreate cudaEventCreate
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuEventDestroy cudaEventDestroy
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuFuncSetAttribute(f, attr, v) cudaFuncSetAttribute(f, attr, v)
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, smem) \
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, smem)

// ------------------------------------------------------------------------------------------
// AMD with HIP headers
// ------------------------------------------------------------------------------------------
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime.h>

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuGetErrorString hipGetErrorString
#define gpuEventCreate hipEventCreate
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuEventDestroy hipEventDestroy
#define gpuStreamCreate hipStreamCreate
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuFuncSetAttribute(f, attr, v) hipFuncSetAttribute(reinterpret_cast<const void*>(f), attr, v)
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, smem) \
  hipOccupancyMaxActiveBlocksPerMultiprocessor(n, reinterpret_cast<const void*>(f), threads, smem)

// ------------------------------------------------------------------------------------------
// AMD without HIP headers (clang -x hip -nogpuinc): builtins + declarations only.
// Also the fallback for a plain host compiler that has neither runtime (types only).
// ------------------------------------------------------------------------------------------
#else
#if defined(__HIP__)
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __host__
#define __host__ __attribute__((host))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __constant__
#define __constant__ __attribute__((constant))
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...) __attribute__((amdgpu_flat_work_group_size(1, __VA_ARGS__)))
#endif
#endif  // __HIP__

extern "C" {
typedef int gpuError_t;
typedef struct ihipStream_t* gpuStream_t;
typedef struct ihipEvent_t* gpuEvent_t;
}
#define gpuSuccess 0
enum gpuMemcpyKind_ { gpuMemcpyHostToHost = 0, gpuMemcpyHostToDevice = 1, gpuMemcpyDeviceToHost = 2,
                      gpuMemcpyDeviceToDevice = 3, gpuMemcpyDefault = 4 };
#define gpuFuncAttributeMaxDynamicSharedMemorySize 8
#define gpuDevAttrMultiProcessorCount 63
#define gpuDevAttrMaxSharedMemoryPerBlockOptin 74
struct gpuDeviceProp {
  char name[256];
  int multiProcessorCount;
  std::size_t sharedMemPerBlock;
  int warpSize;
};
#if defined(__HIP__)
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
// Declarations only (a device-only compile never links the host side).
extern "C" {
gpuError_t hipMalloc(void** p, std::size_t n);
gpuError_t hipFree(void* p);
gpuError_t hipMemcpy(void* d, const void* s, std::size_t n, int kind);
gpuError_t hipMemcpyAsync(void* d, const void* s, std::size_t n, int kind, gpuStream_t st);
gpuError_t hipMemset(void* d, int v, std::size_t n);
gpuError_t hipMemsetAsync(void* d, int v, std::size_t n, gpuStream_t st);
gpuError_t hipDeviceSynchronize();
gpuError_t hipGetLastError();
gpuError_t hipPeekAtLastError();
const char* hipGetErrorString(gpuError_t e);
gpuError_t hipEventCreate(gpuEvent_t* e);
gpuError_t hipEventRecord(gpuEvent_t e, gpuStream_t s);
gpuError_t hipEventSynchronize(gpuEvent_t e);
gpuError_t hipEventElapsedTime(float* ms, gpuEvent_t a, gpuEvent_t b);
gpuError_t hipEventDestroy(gpuEvent_t e);
gpuError_t hipStreamCreate(gpuStream_t* s);
gpuError_t hipStreamDestroy(gpuStream_t s);
gpuError_t hipStreamSynchronize(gpuStream_t s);
gpuError_t hipFuncSetAttribute(const void* f, int attr, int v);
gpuError_t hipGetDeviceProperties(gpuDeviceProp* p, int dev);
gpuError_t hipGetDeviceCount(int* n);
gpuError_t hipGetDevice(int* d);
gpuError_t hipSetDevice(int d);
gpuError_t hipDeviceGetAttribute(int* v, int attr, int dev);
gpuError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* f, int threads,
                                                        std::size_t smem);
// Needed by clang to parse <<<...>>> launches.
gpuError_t __hipPushCallConfiguration(dim3 grid, dim3 block, std::size_t shmem = 0,
                                      gpuStream_t stream = nullptr);
gpuError_t __hipPopCallConfiguration(dim3* grid, dim3* block, std::size_t* shmem,
                                     gpuStream_t* stream);
gpuError_t hipLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, std::size_t shmem,
                           gpuStream_t stream);
}
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuGetErrorString hipGetErrorString
#define gpuEventCreate hipEventCreate
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuEventDestroy hipEventDestroy
#define gpuStreamCreate hipStreamCreate
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuFuncSetAttribute(f, attr, v) hipFuncSetAttribute(reinterpret_cast<const void*>(f), attr, v)
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, smem) \
  hipOccupancyMaxActiveBlocksPerMultiprocessor(n, reinterpret_cast<const void*>(f), threads, smem)

// Thread indexing and barriers from clang builtins.
namespace ckgen::detail {
struct ThreadIdx {
  __declspec(property(get = get_x)) unsigned x;
  __declspec(property(get = get_y)) unsigned y;
  __declspec(property(get = get_z)) unsigned z;
  __attribute__((device)) unsigned get_x() const { return __builtin_amdgcn_workitem_id_x(); }
  __attribute__((device)) unsigned get_y() const { return __builtin_amdgcn_workitem_id_y(); }
  __attribute__((device)) unsigned get_z() const { return __builtin_amdgcn_workitem_id_z(); }
};
struct BlockIdx {
  __declspec(property(get = get_x)) unsigned x;
  __declspec(property(get = get_y)) unsigned y;
  __declspec(property(get = get_z)) unsigned z;
  __attribute__((device)) unsigned get_x() const { return __builtin_amdgcn_workgroup_id_x(); }
  __attribute__((device)) unsigned get_y() const { return __builtin_amdgcn_workgroup_id_y(); }
  __attribute__((device)) unsigned get_z() const { return __builtin_amdgcn_workgroup_id_z(); }
};
struct BlockDim {
  __declspec(property(get = get_x)) unsigned x;
  __declspec(property(get = get_y)) unsigned y;
  __declspec(property(get = get_z)) unsigned z;
  __attribute__((device)) unsigned get_x() const { return __builtin_amdgcn_workgroup_size_x(); }
  __attribute__((device)) unsigned get_y() const { return __builtin_amdgcn_workgroup_size_y(); }
  __attribute__((device)) unsigned get_z() const { return __builtin_amdgcn_workgroup_size_z(); }
};
struct GridDim {
  __declspec(property(get = get_x)) unsigned x;
  __declspec(property(get = get_y)) unsigned y;
  __declspec(property(get = get_z)) unsigned z;
  __attribute__((device)) unsigned get_x() const {
    return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
  }
  __attribute__((device)) unsigned get_y() const {
    return __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y();
  }
  __attribute__((device)) unsigned get_z() const {
    return __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z();
  }
};
}  // namespace ckgen::detail
static constexpr __attribute__((device)) ckgen::detail::ThreadIdx threadIdx{};
static constexpr __attribute__((device)) ckgen::detail::BlockIdx blockIdx{};
static constexpr __attribute__((device)) ckgen::detail::BlockDim blockDim{};
static constexpr __attribute__((device)) ckgen::detail::GridDim gridDim{};
// Device versions of the few C library calls device code (and clang's cuda_wrappers/<new>)
// reaches; HIP's headers provide these when present.
__attribute__((device)) inline void* memcpy(void* d, const void* s, std::size_t n) {
  return __builtin_memcpy(d, s, n);
}
__attribute__((device)) inline void* memset(void* d, int v, std::size_t n) {
  return __builtin_memset(d, v, n);
}
__attribute__((device)) inline void* malloc(std::size_t) {  // no device heap without the runtime
  __builtin_trap();
  return nullptr;
}
__attribute__((device)) inline void free(void*) {}
__attribute__((device)) inline float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__attribute__((device)) inline void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__attribute__((device)) inline void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
#else   // a plain host compiler without a GPU runtime
// The device queries host code makes answer "no device", so host-side logic (the dispatcher's
// ranking, tests/host) builds and runs; anything that launches needs a runtime.
#define gpuErrorNoDevice 100
inline gpuError_t gpuGetDevice(int* d) {
  if (d != nullptr) *d = 0;
  return gpuErrorNoDevice;
}
inline gpuError_t gpuDeviceGetAttribute(int* v, int, int) {
  if (v != nullptr) *v = 0;
  return gpuErrorNoDevice;
}
inline gpuError_t gpuGetLastError() { return gpuSuccess; }
inline const char* gpuGetErrorString(gpuError_t e) { return e == gpuSuccess ? "no error" : "no GPU runtime"; }
#endif  // __HIP__
#endif  // platform

// ------------------------------------------------------------------------------------------
// Function qualifiers
// ------------------------------------------------------------------------------------------
#if defined(__CUDACC__) || defined(__HIP__)
#define CKGEN_HOST_DEVICE __host__ __device__
#define CKGEN_DEVICE __device__
#define CKGEN_HOST __host__
#define CKGEN_GLOBAL __global__
#define CKGEN_FORCEINLINE __forceinline__
#define CKGEN_GPU_COMPILER 1
#else
#define CKGEN_HOST_DEVICE
#define CKGEN_DEVICE
#define CKGEN_HOST
#define CKGEN_GLOBAL
#define CKGEN_FORCEINLINE inline __attribute__((always_inline))
#define CKGEN_GPU_COMPILER 0
#endif
#if defined(CKGEN_AMD_NOGPUINC) && !defined(__forceinline__)
#undef CKGEN_FORCEINLINE
#define CKGEN_FORCEINLINE inline __attribute__((always_inline))
#endif

// ------------------------------------------------------------------------------------------
// 16-bit float types with float conversions usable on host and device
// ------------------------------------------------------------------------------------------
namespace ckgen {

namespace detail {
CKGEN_HOST_DEVICE inline uint32_t f32_bits(float f) {
  union { float f; uint32_t u; } c;
  c.f = f;
  return c.u;
}
CKGEN_HOST_DEVICE inline float bits_f32(uint32_t u) {
  union { float f; uint32_t u; } c;
  c.u = u;
  return c.f;
}
// An attribute of the current device, or `fallback` when no device answers or it answers below
// 1. Callers keep it in a function-local static (device_sm_count and device_smem_optin in
// kernel/kernel_base.hpp, device_cc_major in core/chain.hpp).
template <class Attr>
inline int device_attribute_or(Attr attr, int fallback) {
  int dev = 0, v = 0;
  if (gpuGetDevice(&dev) != gpuSuccess) return fallback;
  if (gpuDeviceGetAttribute(&v, attr, dev) != gpuSuccess || v < 1) return fallback;
  return v;
}
}  // namespace detail

#if defined(CKGEN_NVIDIA)
using half_t = __half;
using bf16_t = __nv_bfloat16;
CKGEN_HOST_DEVICE inline float to_float(half_t x) { return __half2float(x); }
CKGEN_HOST_DEVICE inline float to_float(bf16_t x) { return __bfloat162float(x); }
template <typename T> CKGEN_HOST_DEVICE inline T from_float(float f);
template <> CKGEN_HOST_DEVICE inline half_t from_float<half_t>(float f) { return __float2half_rn(f); }
template <> CKGEN_HOST_DEVICE inline bf16_t from_float<bf16_t>(float f) { return __float2bfloat16_rn(f); }
#else
// AMD (and host-only fallback): _Float16 for fp16, a 16-bit storage struct for bf16
// (portable across clang versions; MFMA/WMMA backends bit-cast it).
using half_t = _Float16;
struct bf16_t {
  uint16_t bits;
};
CKGEN_HOST_DEVICE inline float to_float(half_t x) { return static_cast<float>(x); }
CKGEN_HOST_DEVICE inline float to_float(bf16_t x) { return detail::bits_f32(uint32_t(x.bits) << 16); }
template <typename T> CKGEN_HOST_DEVICE inline T from_float(float f);
template <> CKGEN_HOST_DEVICE inline half_t from_float<half_t>(float f) { return static_cast<half_t>(f); }
template <> CKGEN_HOST_DEVICE inline bf16_t from_float<bf16_t>(float f) {
  uint32_t u = detail::f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40)};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return bf16_t{uint16_t(u >> 16)};
}
#endif
CKGEN_HOST_DEVICE inline float to_float(float x) { return x; }
template <> CKGEN_HOST_DEVICE inline float from_float<float>(float f) { return f; }

// __launch_bounds__ with a minimum of resident blocks per SM (NVIDIA); AMD takes the threads
// only (its __launch_bounds__ maps to amdgpu_flat_work_group_size).
#if defined(CKGEN_NVIDIA)
#define CKGEN_LAUNCH_BOUNDS_MIN_BLOCKS(threads, blocks) __launch_bounds__(threads, blocks)
#else
#define CKGEN_LAUNCH_BOUNDS_MIN_BLOCKS(threads, blocks) __launch_bounds__(threads)
#endif

// Kernel parameters passed by value and read in place (no local copy) where the target has it.
#if defined(CKGEN_NVIDIA)
#define CKGEN_GRID_CONSTANT __grid_constant__
#else
#define CKGEN_GRID_CONSTANT
#endif

// fp32 atomic add to global memory (split-K one-stage reduction).
#if CKGEN_GPU_COMPILER
CKGEN_DEVICE inline void atomic_add_f32(float* p, float v) {
#if defined(CKGEN_AMD_NOGPUINC)
  __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#else
  atomicAdd(p, v);
#endif
}
#endif

}  // namespace ckgen
