// Asynchronous global -> shared copies: cp.async (sm_80+) where the access is 4, 8 or 16
// bytes, otherwise (and on other platforms) a synchronous load + store, which is equally
// correct under the pipeline's barriers.
#pragma once

#include <cstdint>

#include "ckgen/core/portability.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
#define CKGEN_HAS_CP_ASYNC 1
#endif

#if defined(CKGEN_HAS_CP_ASYNC)
// async_copy_zfill with the destination as a shared-window address (__cvta_generic_to_shared):
// loops that step the address skip the generic -> shared conversion per copy.
template <int Bytes, bool L1 = false>
CKGEN_DEVICE inline void async_copy_zfill_shared(uint32_t s, const void* gmem_src, bool ok) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "ckgen: cp.async copies 4, 8 or 16 bytes");
  const int src_bytes = ok ? Bytes : 0;  // 0: nothing is read, the destination is zero-filled
  if constexpr (Bytes == 16 && !L1)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem_src), "r"(src_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem_src), "n"(Bytes),
                 "r"(src_bytes));
}
#else
// Declared for the NVIDIA-only kernels that name it (a template is parsed on every platform);
// defined and called only where cp.async exists.
template <int Bytes, bool L1 = false>
CKGEN_DEVICE void async_copy_zfill_shared(uint32_t s, const void* gmem_src, bool ok);
#endif

// Copies Bytes from gmem_src (always a valid address) to smem_dst, or zeros when !ok.
// L1: 16-byte copies keep the line in L1 too (cp.async.ca; default .cg, L2 only), for operands
// re-read by neighbouring rows of the same block (im2col taps).
template <int Bytes, bool L1 = false>
CKGEN_DEVICE inline void async_copy_zfill(void* smem_dst, const void* gmem_src, bool ok) {
#if defined(CKGEN_HAS_CP_ASYNC)
  if constexpr (Bytes == 4 || Bytes == 8 || Bytes == 16) {
    async_copy_zfill_shared<Bytes, L1>(static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst)), gmem_src, ok);
    return;
  }
#endif
  struct alignas(Bytes) Blob { unsigned char b[Bytes]; };
  Blob v = *static_cast<const Blob*>(gmem_src);
  if (!ok)
    for (int i = 0; i < Bytes; ++i) v.b[i] = 0;
  *static_cast<Blob*>(smem_dst) = v;
}

CKGEN_DEVICE inline void async_commit() {
#if defined(CKGEN_HAS_CP_ASYNC)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most N committed groups of this thread are still in flight.
template <int N>
CKGEN_DEVICE inline void async_wait() {
#if defined(CKGEN_HAS_CP_ASYNC)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// async_wait<n> for a run-time n in [0, Max] (wait_group takes an immediate); n > Max waits for Max.
template <int Max>
CKGEN_DEVICE inline void async_wait_n(int n) {
  if constexpr (Max > 0) {
    if (n >= Max) {
      async_wait<Max>();
      return;
    }
    async_wait_n<Max - 1>(n);
  } else {
    async_wait<0>();
  }
}

}  // namespace ckgen
