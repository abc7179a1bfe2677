// mbarrier wrappers (sm_80+): the shared-memory barriers that hand ring stages between the
// load and math warps of the warp-specialized pipelines (wavelet, wavelet_tma).
#pragma once

#include <cstdint>

#include "ckgen/core/portability.hpp"

namespace ckgen {


#if defined(CKGEN_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
#define CKGEN_HAS_MBARRIER 1
#endif

namespace mbar {
#if defined(CKGEN_HAS_MBARRIER)
CKGEN_DEVICE inline uint32_t addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
CKGEN_DEVICE inline void init(uint64_t* b, int count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(addr(b)), "r"(count) : "memory");
}
CKGEN_DEVICE inline void arrive(uint64_t* b) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(addr(b))
               : "memory");
}
// Arrives once this thread's earlier cp.async copies have landed (count includes it).
CKGEN_DEVICE inline void arrive_cp_async(uint64_t* b) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(addr(b)) : "memory");
}
CKGEN_DEVICE inline void wait(uint64_t* b, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .pred P1;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(addr(b)),
      "r"(parity)
      : "memory");
#else
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred P1;\nmbarrier.test_wait.parity.shared.b64 P1, [%1], %2;\n"
        "selp.b32 %0, 1, 0, P1;\n}\n"
        : "=r"(done)
        : "r"(addr(b)), "r"(parity)
        : "memory");
  }
#endif
}
// Whether the barrier's phase `parity` has completed, without waiting.
CKGEN_DEVICE inline bool test(uint64_t* b, uint32_t parity) {
  uint32_t done = 0;
  asm volatile(
      "{\n.reg .pred P1;\nmbarrier.test_wait.parity.shared.b64 P1, [%1], %2;\n"
      "selp.b32 %0, 1, 0, P1;\n}\n"
      : "=r"(done)
      : "r"(addr(b)), "r"(parity)
      : "memory");
  return done != 0;
}
#endif
}  // namespace mbar

}  // namespace ckgen
