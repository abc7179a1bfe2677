// Warp-level MMA backend for NVIDIA sm_80+: mma.sync.m16n8k16 (fp16/bf16 in, fp32 accumulate)
// fed by ldmatrix (.trans where the shared-memory tile is contiguous along M or N).
//
// Backend interface (shared by every math unit, see warp/warp_mma.hpp):
//   kAccPerTile  accumulators per lane per IM x IN instruction tile
//   kAccVec      consecutive output columns a lane holds (epilogue store width)
//   acc_coord(lane, i, r, c)  row/col of accumulator i inside the instruction tile
//   tile(acc, sA, sB, wm0, wn0, lane)  acc[RepM][RepN][kAccPerTile] += A(sA) * B(sB) over one
//       block tile K (BK), for the warp whose C sub-tile starts at (wm0, wn0).
// Shared-memory tiles: A is [BM][LdA] (K-major) or [BK][LdA] (M-major); B is [BN][LdB]
// (K-major) or [BK][LdB] (N-major), see ConfigTraits.
#pragma once

#include <cstdint>

#include "ckgen/core/config_traits.hpp"

namespace ckgen {

// The instructions, free of any tile configuration (the direct kernel's matrix path uses them too).
#if defined(CKGEN_NVIDIA)
namespace nvmma {
CKGEN_DEVICE inline uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
CKGEN_DEVICE inline void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
CKGEN_DEVICE inline void ldsm_x4_t(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
CKGEN_DEVICE inline void ldsm_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
CKGEN_DEVICE inline void ldsm_x2_t(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
CKGEN_DEVICE inline void ldsm_x1(uint32_t& r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(addr));
}
CKGEN_DEVICE inline void ldsm_x1_t(uint32_t& r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(addr));
}
// ldmatrix of N (1, 2 or 4) 8x8 matrices, transposed when kTrans.
template <int N, bool kTrans = false>
CKGEN_DEVICE inline void ldsm(uint32_t (&r)[N], uint32_t addr) {
  static_assert(N == 1 || N == 2 || N == 4, "ckgen: ldmatrix loads 1, 2 or 4 matrices");
  if constexpr (N == 4 && kTrans)
    ldsm_x4_t(r, addr);
  else if constexpr (N == 4)
    ldsm_x4(r, addr);
  else if constexpr (N == 2 && kTrans)
    ldsm_x2_t(r, addr);
  else if constexpr (N == 2)
    ldsm_x2(r, addr);
  else if constexpr (kTrans)
    ldsm_x1_t(r[0], addr);
  else
    ldsm_x1(r[0], addr);
}
// c += a * b: one m16n8k8 (fp16 / bf16 in, fp32 accumulate).
template <DataType D>
CKGEN_DEVICE inline void mma_m16n8k8(float (&c)[4], const uint32_t (&a)[2], uint32_t b) {
  static_assert(D == DataType::FP16 || D == DataType::BF16, "ckgen: mma.sync takes fp16 / bf16");
  if constexpr (D == DataType::FP16) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
  } else {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
  }
}
// c += a * b: one m16n8k16 (fp16 / bf16 in, fp32 accumulate).
template <DataType D>
CKGEN_DEVICE inline void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  static_assert(D == DataType::FP16 || D == DataType::BF16, "ckgen: mma.sync takes fp16 / bf16");
  if constexpr (D == DataType::FP16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}
}  // namespace nvmma
#endif

template <class Tr>
struct WarpMmaSync {
  using Raw = typename Tr::Raw;
  static constexpr int kAccPerTile = 4;
  static constexpr int kAccVec = 2;
  static constexpr int RepM = Tr::RepM, RepN = Tr::RepN, RepK = Tr::RepK;
  static_assert(Tr::IM == 16 && Tr::IN == 8 && Tr::IK == 16,
                "ckgen: MmaSync needs WarpTile<16, 8, 16>");
  static_assert(Tr::kDataType == DataType::FP16 || Tr::kDataType == DataType::BF16,
                "ckgen: MmaSync supports fp16 and bf16 (use Fma for fp32)");
  static_assert(Tr::kWarpSize == 32, "ckgen: MmaSync needs warp size 32");

  CKGEN_DEVICE static void acc_coord(int lane, int i, int& r, int& c) {
    r = (lane >> 2) + ((i >> 1) << 3);
    c = ((lane & 3) << 1) + (i & 1);
  }

#if defined(CKGEN_NVIDIA)
  CKGEN_DEVICE static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    nvmma::mma_m16n8k16<Tr::kDataType>(c, a, b0, b1);
  }

  // A fragment (16 x 16) of rows [m, m+16), k [kk, kk+16).
  CKGEN_DEVICE static void load_a(uint32_t (&a)[4], const Raw* sA, int m, int kk, int lane) {
    const int j = lane >> 3, r = lane & 7;
    if constexpr (Tr::kAKMajor) {
      const Raw* p = sA + (m + ((j & 1) << 3) + r) * Tr::kLdA + kk + ((j >> 1) << 3);
      nvmma::ldsm_x4(a, nvmma::smem_addr(p));
    } else {
      const Raw* p = sA + (kk + ((j >> 1) << 3) + r) * Tr::kLdA + m + ((j & 1) << 3);
      nvmma::ldsm_x4_t(a, nvmma::smem_addr(p));
    }
  }
  // B fragments of two n8 blocks [n, n+16) x k [kk, kk+16): b = {b0(n), b1(n), b0(n+8), b1(n+8)}.
  CKGEN_DEVICE static void load_b2(uint32_t (&b)[4], const Raw* sB, int n, int kk, int lane) {
    const int j = lane >> 3, r = lane & 7;
    if constexpr (Tr::kBKMajor) {
      const Raw* p = sB + (n + ((j >> 1) << 3) + r) * Tr::kLdB + kk + ((j & 1) << 3);
      nvmma::ldsm_x4(b, nvmma::smem_addr(p));
    } else {
      const Raw* p = sB + (kk + ((j & 1) << 3) + r) * Tr::kLdB + n + ((j >> 1) << 3);
      nvmma::ldsm_x4_t(b, nvmma::smem_addr(p));
    }
  }
  // B fragment of one n8 block.
  CKGEN_DEVICE static void load_b1(uint32_t (&b)[2], const Raw* sB, int n, int kk, int lane) {
    const int j = (lane >> 3) & 1, r = lane & 7;
    if constexpr (Tr::kBKMajor) {
      const Raw* p = sB + (n + r) * Tr::kLdB + kk + (j << 3);
      nvmma::ldsm_x2(b, nvmma::smem_addr(p));
    } else {
      const Raw* p = sB + (kk + (j << 3) + r) * Tr::kLdB + n;
      nvmma::ldsm_x2_t(b, nvmma::smem_addr(p));
    }
  }

  CKGEN_DEVICE static void tile(float (&acc)[RepM][RepN][4], const Raw* sA, const Raw* sB,
                                int wm0, int wn0, int lane) {
#pragma unroll
    for (int kr = 0; kr < RepK; ++kr) {
      const int kk = kr * 16;
      uint32_t a[RepM][4];
      uint32_t b[RepN][2];
#pragma unroll
      for (int i = 0; i < RepM; ++i) load_a(a[i], sA, wm0 + i * 16, kk, lane);
#pragma unroll
      for (int j = 0; j + 1 < RepN; j += 2) {
        uint32_t t[4];
        load_b2(t, sB, wn0 + j * 8, kk, lane);
        b[j][0] = t[0];
        b[j][1] = t[1];
        b[j + 1][0] = t[2];
        b[j + 1][1] = t[3];
      }
      if constexpr (RepN % 2 == 1) load_b1(b[RepN - 1], sB, wn0 + (RepN - 1) * 8, kk, lane);
#pragma unroll
      for (int i = 0; i < RepM; ++i)
#pragma unroll
        for (int j = 0; j < RepN; ++j) mma(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
#else
  template <class... Ts>
  CKGEN_DEVICE static void tile(Ts&&...) {
    static_assert(sizeof...(Ts) == 0, "ckgen: MmaSync is an NVIDIA math unit");
  }
#endif
};

}  // namespace ckgen
