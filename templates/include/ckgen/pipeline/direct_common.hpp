// What the direct kernel's two paths (pipeline/depthwise.hpp: FMA; pipeline/direct_mma.hpp: mma.sync) share:
// the launch arguments, packet loads / stores with fp32 conversion, pixel and gather coordinates.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/core/fast_div.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

struct DirectArgs {
  const void* x = nullptr;  // input (forward, backward_weight)
  const void* w = nullptr;  // weight (forward, backward_data)
  const void* y = nullptr;  // output / its gradient (backward_data, backward_weight)
  void* dst = nullptr;      // the written tensor
  float* ws = nullptr;      // backward_weight workspace
  int chans;  // channels per pixel: G * Cg (depthwise: G)
  int in_[3], out_[3], fil[3], s[3], dil[3], pl[3];
  int taps;                     // Z * Y * X
  int in_spatial, out_spatial;  // Di*Hi*Wi, Do*Ho*Wo
  int pixels;                   // the iterated pixel indices (direct_fma_pixels; QuadS2: quads)
  FastDiv fd_pix[3];            // the iterated tensor's D, H, W sizes (RowPair: Do, ceil(Ho / 2), Wo / PC)
  FastDiv fd_s[3];              // strides (backward_data)
  int slice_pixels;             // backward_weight: pixels per slice (a multiple of P; matrix path: row segments)
  int band_rows = 1;            // forward / backward_data matrix path: rows of the iterated tensor a block takes
  bool band_shares_rows = false;  // ... staging each source row once for the band (direct_mma_band_shares_rows)
  FastDiv fd_bands;             // ... and bands per plane (n, d), ceil(H / band_rows)
  int64_t ws_stride;            // backward_weight two-stage: floats per slice (G * taps)
  OutMode mode;
  EpilogueArgs ep;              // forward FMA: the fused epilogue's operands
};

namespace direct {

// V elements as loaded: 16-bit pairs as 32-bit words (the conversions then select halves of a
// register instead of permuting bytes), else the raw elements.
template <DataType D, int V>
struct Packet {
  using Raw = typename DataTypeTraits<D>::raw;
  static constexpr bool kPairs = sizeof(Raw) == 2 && V % 2 == 0;
  using Word = std::conditional_t<kPairs, uint32_t, Raw>;
  static constexpr int N = kPairs ? V / 2 : V;
  using type = Vec<Word, N>;
};
template <DataType D, int V>
using packet_t = typename Packet<D, V>::type;

// V floats from a packet (NVIDIA fp16: one HADD2.F32 per element; bf16: a byte permute / mask).
template <DataType D, int V>
CKGEN_DEVICE CKGEN_FORCEINLINE void to_floats(const packet_t<D, V>& r, float (&f)[V]) {
  if constexpr (!Packet<D, V>::kPairs) {
#pragma unroll
    for (int k = 0; k < V; ++k) f[k] = raw_to_float<D>(r.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < V / 2; ++k) {
      const uint32_t u = r.v[k];
      if constexpr (D == DataType::BF16) {
#if defined(CKGEN_NVIDIA)
        // The low half moved up by a byte permute: ptxas otherwise shifts it with SHF / IMAD.SHL,
        // which makes bf16 slower than fp16 in the depthwise window kernels.
        uint32_t lo;
        asm("prmt.b32 %0, %1, 0, 0x1044;" : "=r"(lo) : "r"(u));
        const uint32_t hi = u & 0xffff0000u;
#else
        const uint32_t lo = u << 16, hi = u & 0xffff0000u;
#endif
        memcpy(&f[2 * k], &lo, 4);
        memcpy(&f[2 * k + 1], &hi, 4);
      } else {
#if defined(CKGEN_NVIDIA)
        __half2 h;
        memcpy(&h, &u, 4);
        const float2 t = __half22float2(h);
        f[2 * k] = t.x;
        f[2 * k + 1] = t.y;
#else
        f[2 * k] = raw_to_float<D>(uint16_t(u));
        f[2 * k + 1] = raw_to_float<D>(uint16_t(u >> 16));
#endif
      }
    }
  }
}

template <DataType D, int V>
CKGEN_DEVICE CKGEN_FORCEINLINE void load(const typename DataTypeTraits<D>::raw* __restrict__ p,
                                         float (&f)[V]) {
  const packet_t<D, V> r = *reinterpret_cast<const packet_t<D, V>*>(p);
  to_floats<D, V>(r, f);
}

// V floats -> V raw elements (NVIDIA 16-bit: one F2FP pack per pair, round to nearest even).
template <DataType D, int V>
CKGEN_DEVICE CKGEN_FORCEINLINE void store(typename DataTypeTraits<D>::raw* __restrict__ p,
                                          const float (&f)[V]) {
  using Raw = typename DataTypeTraits<D>::raw;
#if defined(CKGEN_NVIDIA)
  constexpr bool kPack = Packet<D, V>::kPairs;
  if constexpr (kPack) {
    packet_t<D, V> r;
#pragma unroll
    for (int k = 0; k < V / 2; ++k) {
      if constexpr (D == DataType::FP16) {
        const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
        memcpy(&r.v[k], &h, 4);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
        memcpy(&r.v[k], &h, 4);
      }
    }
    *reinterpret_cast<packet_t<D, V>*>(p) = r;
  }
#else
  constexpr bool kPack = false;
#endif
  if constexpr (!kPack) {
    Vec<Raw, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = float_to_raw<D>(f[k]);
    *reinterpret_cast<Vec<Raw, V>*>(p) = r;
  }
}

// Pixel m of the iterated tensor -> (n, d, h, w).
CKGEN_DEVICE CKGEN_FORCEINLINE void split_pixel(const DirectArgs& a, int m, int& n, int& d, int& h,
                                                int& w) {
  int q;
  a.fd_pix[2].divmod(m, q, w);
  a.fd_pix[1].divmod(q, q, h);
  a.fd_pix[0].divmod(q, n, d);
}

// backward_data: the output coordinate o with o * s == i + pl - f * dil, if it exists in range.
CKGEN_DEVICE CKGEN_FORCEINLINE bool gather_coord(int t, const FastDiv& fs, int s, int size, int& o) {
  const bool nonneg = t >= 0;
  const int tc = nonneg ? t : 0;
  o = fs.div(tc);
  return nonneg && o * s == tc && o < size;
}

}  // namespace direct
}  // namespace ckgen
