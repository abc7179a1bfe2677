// StreamK block body (backward_weight, Reduction::StreamKLinear / StreamKTree): the device
// side of the plan in schedule/streamk_plan.hpp. It reuses the instance's main loop and epilogue through
// a Parts policy (kernel/conv_kernel.hpp's BlockParts):
//   Parts::Tr, Parts::View, Parts::Acc
//   Parts::mainloop(view, acc, m0, n0, kb, ke, smem, tid)   acc = A * B over k in [kb, ke)
//   Parts::epilogue(view, args, acc, m0, n0, smem, tid)    write the tile (OutMode::Direct)
//
// Memory ordering of the cross-block reduction: a publisher stores its partial tile with
// L2-only stores (st.global.cg), every thread fences (__threadfence), the block synchronizes,
// and thread 0 sets the flag with a release store at GPU scope. A consumer's thread 0 polls
// the flag with acquire loads at GPU scope, fences, the block synchronizes, and every thread
// reads the slot with L2-only loads (ld.global.cg), so no stale L1 line is ever read.
// Flags are zeroed by the host before every launch (GroupedConvKernel::run, memsetAsync).
#pragma once

#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/schedule/streamk_plan.hpp"

namespace ckgen {

#if CKGEN_GPU_COMPILER
namespace streamk_detail {

CKGEN_DEVICE CKGEN_FORCEINLINE void flag_release(int* f) {
#if defined(CKGEN_NVIDIA)
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(f), "r"(1) : "memory");
#else
  __hip_atomic_store(f, 1, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#endif
}

CKGEN_DEVICE CKGEN_FORCEINLINE int flag_acquire(const int* f) {
#if defined(CKGEN_NVIDIA)
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
  return v;
#else
  return __hip_atomic_load(f, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#endif
}

CKGEN_DEVICE CKGEN_FORCEINLINE void backoff() {
#if defined(CKGEN_NVIDIA)
  __nanosleep(64);
#else
  __builtin_amdgcn_s_sleep(1);
#endif
}

// 4 floats, L2 only (the slot is written by one block and read by another).
CKGEN_DEVICE CKGEN_FORCEINLINE void store4(float* p, float a, float b, float c, float d) {
#if defined(CKGEN_NVIDIA)
  __stcg(reinterpret_cast<float4*>(p), make_float4(a, b, c, d));
#else
  __hip_atomic_store(p + 0, a, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  __hip_atomic_store(p + 1, b, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  __hip_atomic_store(p + 2, c, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  __hip_atomic_store(p + 3, d, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#endif
}
CKGEN_DEVICE CKGEN_FORCEINLINE void add4(const float* p, float& a, float& b, float& c, float& d) {
#if defined(CKGEN_NVIDIA)
  const float4 v = __ldcg(reinterpret_cast<const float4*>(p));
  a += v.x;
  b += v.y;
  c += v.z;
  d += v.w;
#else
  a += __hip_atomic_load(p + 0, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  b += __hip_atomic_load(p + 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  c += __hip_atomic_load(p + 2, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  d += __hip_atomic_load(p + 3, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#endif
}
CKGEN_DEVICE CKGEN_FORCEINLINE void store1(float* p, float a) {
#if defined(CKGEN_NVIDIA)
  __stcg(p, a);
#else
  __hip_atomic_store(p, a, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#endif
}
CKGEN_DEVICE CKGEN_FORCEINLINE void add1(const float* p, float& a) {
#if defined(CKGEN_NVIDIA)
  a += __ldcg(p);
#else
  a += __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#endif
}

}  // namespace streamk_detail

// One block of a StreamK launch (non-wavelet pipelines: every thread is a math thread).
template <class Parts, Reduction R, bool Persistent>
struct StreamKBlock {
  using Tr = typename Parts::Tr;
  using View = typename Parts::View;
  using Acc = typename Parts::Acc;
  static constexpr int kRepM = Tr::RepM, kRepN = Tr::RepN;
  static constexpr int kAcc = int(sizeof(Acc) / sizeof(float)) / (kRepM * kRepN);
  static constexpr int kPerThread = kRepM * kRepN * kAcc;
  static constexpr int T = Tr::kThreads;
  static_assert(!Tr::kWavelet, "ckgen: StreamK runs on the basic / multistage pipelines");
  static_assert(kPerThread * T == Tr::BM * Tr::BN,
                "ckgen: a StreamK slot holds exactly one BM x BN tile of accumulators");

  // Tile t of the flattened (group, M tile, N tile) space.
  struct Where {
    int g, m0, n0;
  };
  CKGEN_DEVICE static Where where(const ConvArgs& p, int t) {
    const int g = t / p.sk.tiles_per_group;
    const int tile = t - g * p.sk.tiles_per_group;
    const int tm = tile / p.tiles_n;
    return {g, tm * Tr::BM, (tile - tm * p.tiles_n) * Tr::BN};
  }

  // streamk_schedule's operations on the accumulators of this block.
  struct Ops {
    const ConvArgs& p;
    unsigned char* smem;
    int tid;
    Acc acc;

    CKGEN_DEVICE float* slot(int b) const {
      return p.sk.partials + int64_t(b) * (Tr::BM * Tr::BN);
    }
    CKGEN_DEVICE void segment(int t, int it0, int it1, bool /*streamk*/) {
      const Where w = where(p, t);
      const View v(p, w.g, 0);
      const int kb = it0 * Tr::BK;
      const int ke = it1 * Tr::BK < v.K() ? it1 * Tr::BK : v.K();
      __syncthreads();  // shared memory of the previous segment / epilogue is free
      Parts::mainloop(v, acc, w.m0, w.n0, kb, ke, smem, tid);
    }
    CKGEN_DEVICE void publish(int b) {
      float* s = slot(b);
#pragma unroll
      for (int i = 0; i < kRepM; ++i)
#pragma unroll
        for (int j = 0; j < kRepN; ++j) {
          const int base = (i * kRepN + j) * kAcc;
          if constexpr (kAcc % 4 == 0) {
#pragma unroll
            for (int e = 0; e < kAcc; e += 4)
              streamk_detail::store4(s + ((base + e) / 4 * T + tid) * 4, acc[i][j][e],
                                     acc[i][j][e + 1], acc[i][j][e + 2], acc[i][j][e + 3]);
          } else {
#pragma unroll
            for (int e = 0; e < kAcc; ++e) streamk_detail::store1(s + (base + e) * T + tid, acc[i][j][e]);
          }
        }
      __threadfence();
      __syncthreads();
      if (tid == 0) streamk_detail::flag_release(p.sk.flags + b);
    }
    CKGEN_DEVICE void add(int c) {
      if (tid == 0) {
        while (streamk_detail::flag_acquire(p.sk.flags + c) == 0) streamk_detail::backoff();
        __threadfence();
      }
      __syncthreads();
      const float* s = slot(c);
#pragma unroll
      for (int i = 0; i < kRepM; ++i)
#pragma unroll
        for (int j = 0; j < kRepN; ++j) {
          const int base = (i * kRepN + j) * kAcc;
          if constexpr (kAcc % 4 == 0) {
#pragma unroll
            for (int e = 0; e < kAcc; e += 4)
              streamk_detail::add4(s + ((base + e) / 4 * T + tid) * 4, acc[i][j][e],
                                   acc[i][j][e + 1], acc[i][j][e + 2], acc[i][j][e + 3]);
          } else {
#pragma unroll
            for (int e = 0; e < kAcc; ++e) streamk_detail::add1(s + (base + e) * T + tid, acc[i][j][e]);
          }
        }
    }
    CKGEN_DEVICE void finish(int t) {
      const Where w = where(p, t);
      const View v(p, w.g, 0);
      Parts::epilogue(v, p, acc, w.m0, w.n0, smem, tid);
    }
  };

  CKGEN_DEVICE static void run(const ConvArgs& p, unsigned char* smem, int tid) {
    Ops ops{p, smem, tid, {}};
    streamk_schedule<R, Persistent>(p.sk, int(blockIdx.x), ops);
  }
};

#endif  // CKGEN_GPU_COMPILER

}  // namespace ckgen
