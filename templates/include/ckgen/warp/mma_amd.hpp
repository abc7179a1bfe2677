// Warp-level MMA backends for AMD: MFMA (CDNA, wave64) and WMMA (RDNA3 / RDNA4, wave32).
// Same interface as warp/mma_nvidia.hpp (see warp/warp_mma.hpp): kAccPerTile, kAccVec, acc_coord(),
// tile(acc, sA, sB, wm0, wn0, lane).
//
// Operand lane maps (S = instruction M = N, E = operand elements per lane, K = instruction K):
//   MFMA  S x S x K, wave64:  lane l holds row/col (l % S) and k = (l / S) * E + [0, E),
//                             E = S * K / 64 (32x32x8 f16: 4; 16x16x16: 4; 32x32x2 f32: 1;
//                             16x16x4 f32: 1; gfx950 32x32x16 / 16x16x32: 8).
//         D (S*S/64 floats): element e sits at row 4*G*(e/4) + 4*(l/S) + e%4, col l % S,
//                            G = 64 / S.
//   WMMA RDNA3 (gfx11, _w32): lane l holds row/col (l % 16) and all 16 k; lanes 16..31
//                             repeat lanes 0..15. D (8 floats): e at row 2e + l/16, col l%16.
//   WMMA RDNA4 (gfx12, _w32_gfx12): lane l holds row/col (l % 16) and k = (l/16)*8 + [0, 8).
//                             D (8 floats): e at row 8*(l/16) + e, col l % 16.
// MFMA and RDNA4 WMMA are issued with A and B swapped (D^T = B^T A^T), so each lane owns
// runs of consecutive output *columns* (N), which the epilogue stores as vectors
// (kAccVec = 4 for MFMA, 8 for RDNA4). RDNA3's D is interleaved by row pairs either way, so it
// runs unswapped with kAccVec = 1.
//
// Shared-memory tiles as in ConfigTraits: A is [BM][LdA] (K-major) or [BK][LdA] (M-major); B is
// [BN][LdB] (K-major) or [BK][LdB] (N-major). K-major fragments are read as 16-byte (or
// E-element) vectors; M/N-major ones element by element.
//
// Nothing here assumes a lane count: the wave size comes from the Config (kWarpSize, 64 on CDNA,
// 32 on RDNA) and is checked against the compiler's __AMDGCN_WAVEFRONT_SIZE in the device pass.
#pragma once

#include <cstdint>

#include "ckgen/core/config_traits.hpp"

namespace ckgen {

namespace amd {

// "gfx1201" starts with "gfx12": the WMMA generation comes from the Config's target name, so
// host and device passes agree on the lane map.
constexpr bool starts_with(const char* s, const char* p) {
  for (; *p; ++s, ++p)
    if (*s != *p) return false;
  return true;
}

template <int N> using f32x = float __attribute__((ext_vector_type(N)));
template <int N> using f16x = _Float16 __attribute__((ext_vector_type(N)));
template <int N> using i16x = short __attribute__((ext_vector_type(N)));

// The operand vector a builtin takes for E elements of data type D.
template <DataType D, int E> struct OperandVec;
template <int E> struct OperandVec<DataType::FP16, E> { using type = f16x<E>; };
template <int E> struct OperandVec<DataType::BF16, E> { using type = i16x<E>; };
template <> struct OperandVec<DataType::FP32, 1> { using type = float; };

// Reads E consecutive-k elements of one operand row/col `mn` starting at k0 from shared memory.
//   KMajor: element (mn, k) at s[mn * Ld + k] (vector loads of up to 16 bytes)
//   else:   element (mn, k) at s[k * Ld + mn]
template <class Raw, int E, int Ld, bool KMajor>
CKGEN_DEVICE CKGEN_FORCEINLINE void load_operand(Raw (&out)[E], const Raw* s, int mn, int k0) {
  if constexpr (KMajor) {
    constexpr int kChunk = (16 / int(sizeof(Raw))) < E ? (16 / int(sizeof(Raw))) : E;
    static_assert(E % kChunk == 0, "ckgen: operand chunking");
    static_assert(Ld % kChunk == 0, "ckgen: LDS row stride must keep fragment loads aligned");
    using V = Vec<Raw, kChunk>;
    const Raw* p = s + mn * Ld + k0;
#pragma unroll
    for (int c = 0; c < E / kChunk; ++c) {
      const V v = *reinterpret_cast<const V*>(p + c * kChunk);
#pragma unroll
      for (int t = 0; t < kChunk; ++t) out[c * kChunk + t] = v.v[t];
    }
  } else {
#pragma unroll
    for (int t = 0; t < E; ++t) out[t] = s[(k0 + t) * Ld + mn];
  }
}

template <DataType D, int E, class Raw>
CKGEN_DEVICE CKGEN_FORCEINLINE typename OperandVec<D, E>::type to_operand(const Raw (&r)[E]) {
  typename OperandVec<D, E>::type v;
  static_assert(sizeof(v) == sizeof(r), "ckgen: operand vector size");
  __builtin_memcpy(&v, &r, sizeof(v));
  return v;
}

}  // namespace amd

// ------------------------------------------------------------------------------------------
// MFMA (CDNA: gfx90a, gfx942, gfx950), wave64
// ------------------------------------------------------------------------------------------
template <class Tr>
struct WarpMfma {
  using Raw = typename Tr::Raw;
  static constexpr DataType D = Tr::kDataType;
  static constexpr int S = Tr::IM;                    // instruction M = N
  static constexpr int G = 64 / S;                    // lane groups along K
  static constexpr int E = S * Tr::IK / 64;           // operand elements per lane
  static constexpr int kAccPerTile = S * S / 64;      // 16 (32x32) or 4 (16x16)
  static constexpr int kAccVec = 4;
  static constexpr int RepM = Tr::RepM, RepN = Tr::RepN, RepK = Tr::RepK;

  static_assert(Tr::kWarpSize == 64, "ckgen: MFMA needs wave64 (kWarpSize 64)");
  static_assert(Tr::IM == Tr::IN && (S == 32 || S == 16), "ckgen: MFMA warp tile must be 32x32xK or 16x16xK");
  static_assert((D == DataType::FP32 && Tr::IK * S == 64) ||
                    (D != DataType::FP32 && (Tr::IK * S == 256 || Tr::IK * S == 512)),
                "ckgen: MFMA warp tiles: fp16/bf16 32x32x8, 16x16x16 (gfx950: 32x32x16, 16x16x32); "
                "fp32 32x32x2, 16x16x4");
  using AccV = amd::f32x<kAccPerTile>;
  using OpV = typename amd::OperandVec<D, E>::type;

  // Output (r, c) of accumulator i: lane owns column-runs of 4 (operands are swapped).
  CKGEN_DEVICE static void acc_coord(int lane, int i, int& r, int& c) {
    r = lane % S;
    c = 4 * G * (i / 4) + 4 * (lane / S) + (i % 4);
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE static AccV mfma(OpV x, OpV y, AccV c) {
#if CKGEN_DEVICE_PASS
    if constexpr (D == DataType::FP32) {
      if constexpr (S == 32) return __builtin_amdgcn_mfma_f32_32x32x2f32(x, y, c, 0, 0, 0);
      else return __builtin_amdgcn_mfma_f32_16x16x4f32(x, y, c, 0, 0, 0);
    } else if constexpr (E == 4) {
      if constexpr (D == DataType::FP16) {
        if constexpr (S == 32) return __builtin_amdgcn_mfma_f32_32x32x8f16(x, y, c, 0, 0, 0);
        else return __builtin_amdgcn_mfma_f32_16x16x16f16(x, y, c, 0, 0, 0);
      } else {
        if constexpr (S == 32) return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(x, y, c, 0, 0, 0);
        else return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(x, y, c, 0, 0, 0);
      }
    } else {
#if defined(__gfx950__)
      // gfx950 (CDNA4) double-K MFMA; clang >= 20 takes bf16 vectors for the bf16 forms.
      if constexpr (D == DataType::FP16) {
        if constexpr (S == 32) return __builtin_amdgcn_mfma_f32_32x32x16_f16(x, y, c, 0, 0, 0);
        else return __builtin_amdgcn_mfma_f32_16x16x32_f16(x, y, c, 0, 0, 0);
      } else {
        using BV = __bf16 __attribute__((ext_vector_type(8)));
        if constexpr (S == 32)
          return __builtin_amdgcn_mfma_f32_32x32x16_bf16(__builtin_bit_cast(BV, x), __builtin_bit_cast(BV, y), c, 0, 0, 0);
        else
          return __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(BV, x), __builtin_bit_cast(BV, y), c, 0, 0, 0);
      }
#else
      static_assert(E == 4 || sizeof(OpV) == 0,
                    "ckgen: MFMA 32x32x16 / 16x16x32 need gfx950 (compile with --offload-arch=gfx950)");
      return c;
#endif
    }
#else
    (void)x;
    (void)y;
    return c;
#endif
  }

  CKGEN_DEVICE static void tile(float (&acc)[RepM][RepN][kAccPerTile], const Raw* sA, const Raw* sB,
                                int wm0, int wn0, int lane) {
#if CKGEN_DEVICE_PASS && defined(__AMDGCN_WAVEFRONT_SIZE)
    static_assert(Tr::kWarpSize == __AMDGCN_WAVEFRONT_SIZE, "ckgen: MFMA instance compiled for a wave32 target");
#endif
    const int idx = lane % S;
    const int kg = (lane / S) * E;
#pragma unroll
    for (int kr = 0; kr < RepK; ++kr) {
      const int k0 = kr * Tr::IK + kg;
      OpV a[RepM], b[RepN];
#pragma unroll
      for (int i = 0; i < RepM; ++i) {
        Raw t[E];
        amd::load_operand<Raw, E, Tr::kLdA, Tr::kAKMajor>(t, sA, wm0 + i * S + idx, k0);
        a[i] = amd::to_operand<D, E>(t);
      }
#pragma unroll
      for (int j = 0; j < RepN; ++j) {
        Raw t[E];
        amd::load_operand<Raw, E, Tr::kLdB, Tr::kBKMajor>(t, sB, wn0 + j * S + idx, k0);
        b[j] = amd::to_operand<D, E>(t);
      }
#pragma unroll
      for (int i = 0; i < RepM; ++i)
#pragma unroll
        for (int j = 0; j < RepN; ++j) {
          AccV c;
#pragma unroll
          for (int e = 0; e < kAccPerTile; ++e) c[e] = acc[i][j][e];
          c = mfma(b[j], a[i], c);  // swapped: D^T = B^T A^T
#pragma unroll
          for (int e = 0; e < kAccPerTile; ++e) acc[i][j][e] = c[e];
        }
    }
  }
};

// ------------------------------------------------------------------------------------------
// WMMA (RDNA3 gfx11: _w32; RDNA4 gfx12: _w32_gfx12), wave32, 16x16x16 fp16/bf16
// ------------------------------------------------------------------------------------------
template <class Tr>
struct WarpWmma {
  using Raw = typename Tr::Raw;
  static constexpr DataType D = Tr::kDataType;
  static constexpr bool kGfx12 = amd::starts_with(Tr::Config::kArch, "gfx12");
  static constexpr int E = kGfx12 ? 8 : 16;  // operand elements per lane
  static constexpr int kAccPerTile = 8;
  static constexpr int kAccVec = kGfx12 ? 8 : 1;
  static constexpr int RepM = Tr::RepM, RepN = Tr::RepN, RepK = Tr::RepK;

  static_assert(Tr::kWarpSize == 32, "ckgen: WMMA needs wave32 (kWarpSize 32)");
  static_assert(Tr::IM == 16 && Tr::IN == 16 && Tr::IK == 16, "ckgen: WMMA needs WarpTile<16, 16, 16>");
  static_assert(D == DataType::FP16 || D == DataType::BF16, "ckgen: WMMA takes fp16 or bf16 (fp32 uses Fma)");
  using AccV = amd::f32x<8>;
  using OpV = typename amd::OperandVec<D, E>::type;

  CKGEN_DEVICE static void acc_coord(int lane, int i, int& r, int& c) {
    if constexpr (kGfx12) {  // swapped operands: lane owns row l%16, columns 8*(l/16) + i
      r = lane % 16;
      c = 8 * (lane / 16) + i;
    } else {
      r = 2 * i + lane / 16;
      c = lane % 16;
    }
  }

  CKGEN_DEVICE CKGEN_FORCEINLINE static AccV wmma(OpV x, OpV y, AccV c) {
#if CKGEN_DEVICE_PASS
    if constexpr (kGfx12) {
#if defined(__GFX12__)
      if constexpr (D == DataType::FP16) return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(x, y, c);
      else return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(x, y, c);
#else
      static_assert(sizeof(OpV) == 0, "ckgen: a gfx12 WMMA instance needs a gfx12 target");
      return c;
#endif
    } else {
#if defined(__GFX11__)
      if constexpr (D == DataType::FP16) return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(x, y, c);
      else return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(x, y, c);
#else
      static_assert(sizeof(OpV) == 0, "ckgen: a gfx11 WMMA instance needs a gfx11 target");
      return c;
#endif
    }
#else
    (void)x;
    (void)y;
    return c;
#endif
  }

  CKGEN_DEVICE static void tile(float (&acc)[RepM][RepN][kAccPerTile], const Raw* sA, const Raw* sB,
                                int wm0, int wn0, int lane) {
#if CKGEN_DEVICE_PASS && defined(__AMDGCN_WAVEFRONT_SIZE)
    static_assert(Tr::kWarpSize == __AMDGCN_WAVEFRONT_SIZE, "ckgen: WMMA instance compiled for a wave64 target");
#endif
    const int idx = lane % 16;
    const int kg = kGfx12 ? (lane / 16) * 8 : 0;
#pragma unroll
    for (int kr = 0; kr < RepK; ++kr) {
      const int k0 = kr * 16 + kg;
      OpV a[RepM], b[RepN];
#pragma unroll
      for (int i = 0; i < RepM; ++i) {
        Raw t[E];
        amd::load_operand<Raw, E, Tr::kLdA, Tr::kAKMajor>(t, sA, wm0 + i * 16 + idx, k0);
        a[i] = amd::to_operand<D, E>(t);
      }
#pragma unroll
      for (int j = 0; j < RepN; ++j) {
        Raw t[E];
        amd::load_operand<Raw, E, Tr::kLdB, Tr::kBKMajor>(t, sB, wn0 + j * 16 + idx, k0);
        b[j] = amd::to_operand<D, E>(t);
      }
#pragma unroll
      for (int i = 0; i < RepM; ++i)
#pragma unroll
        for (int j = 0; j < RepN; ++j) {
          AccV c;
#pragma unroll
          for (int e = 0; e < kAccPerTile; ++e) c[e] = acc[i][j][e];
          if constexpr (kGfx12)
            c = wmma(b[j], a[i], c);  // swapped: D^T = B^T A^T
          else
            c = wmma(a[i], b[j], c);
#pragma unroll
          for (int e = 0; e < kAccPerTile; ++e) acc[i][j][e] = c[e];
        }
    }
  }
};

}  // namespace ckgen
