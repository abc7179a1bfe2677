// Host side of wavelet_tma: the driver's tensor-map encoders (reached through the runtime),
// and the side streams on which backward_data's stride phases run side by side.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>
#include <initializer_list>
#include <mutex>

#if defined(CKGEN_NVIDIA)
#include <cuda.h>
#endif

namespace ckgen {

#if defined(CKGEN_NVIDIA)

namespace detail {
using EncodeIm2colFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                    const cuuint64_t*, const cuuint64_t*, const int*, const int*,
                                    cuuint32_t, cuuint32_t, const cuuint32_t*,
                                    CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
// A driver entry point through the runtime (no link against the driver library).
template <class Fn>
Fn driver_entry(const char* name) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<Fn>(f);
}
// Whether every pointer is 16-byte aligned (a tensor map's global address must be).
inline bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* ptr : ptrs)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  return true;
}
// A dense tensor of rank 2..4 (dims innermost first, fp16 or bf16 elements) in tiled mode,
// 128-byte swizzled boxes.
inline bool encode_tiled16(CUtensorMap* map, bool bf16, const void* ptr, int rank, const cuuint64_t* dims,
                           const cuuint32_t* box) {
  static const auto enc = driver_entry<EncodeTiledFn>("cuTensorMapEncodeTiled");
  if (!enc) return false;
  cuuint64_t strides[3] = {dims[0] * 2, 0, 0};
  for (int i = 1; i + 1 < rank; ++i) strides[i] = strides[i - 1] * dims[i];
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  return enc(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, cuuint32_t(rank),
             const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Side streams that let backward_data's stride phases (disjoint dx pixels, or fp32 reductions
// into one workspace) run side by side: phase j > 0 runs on side stream (j - 1) % kSide, forked
// from and joined back into the caller's stream with events (stream capture follows the fork
// and the join). Created once per device on first use, kept for the process; null when the
// runtime refuses them (the phases then run one after another on the caller's stream).
struct PhaseStreams {
  static constexpr int kSide = 3;
  cudaStream_t side[kSide] = {};
  cudaEvent_t fork = nullptr, join[kSide] = {};
  bool ok = false;
};
inline PhaseStreams* phase_streams() {
  constexpr int kDevices = 64;
  static PhaseStreams per_device[kDevices];
  static std::once_flag once[kDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) return nullptr;
  PhaseStreams& ps = per_device[dev];
  std::call_once(once[dev], [&ps] {
    bool ok = cudaEventCreateWithFlags(&ps.fork, cudaEventDisableTiming) == cudaSuccess;
    for (int i = 0; i < PhaseStreams::kSide; ++i)
      ok = ok && cudaStreamCreateWithFlags(&ps.side[i], cudaStreamNonBlocking) == cudaSuccess &&
           cudaEventCreateWithFlags(&ps.join[i], cudaEventDisableTiming) == cudaSuccess;
    ps.ok = ok;
  });
  return ps.ok ? &ps : nullptr;
}
}  // namespace detail

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
