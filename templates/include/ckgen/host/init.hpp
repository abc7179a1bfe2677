// Tensor initialisation: counter-based random fill (identical on host and device for the same
// seed) and NaN poisoning of output buffers.
//
// Modes (never all zeros; no element is exactly zero):
//   random    uniform in [-1, 1)                (default)
//   int       integer values in {-3..3} \ {0}   (exact products, exact small sums)
//   positive  uniform in (0, 1]                  (no cancellation)
#pragma once

#include <string>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/core/names.hpp"

namespace ckgen::host {

enum class InitMode { Random, Int, Positive };

inline const char* to_string(InitMode m) {
  switch (m) {
    case InitMode::Random: return "random";
    case InitMode::Int: return "int";
    case InitMode::Positive: return "positive";
  }
  return "?";
}

inline bool parse_init_mode(const std::string& s, InitMode& m) {
  return parse_name(s, {InitMode::Random, InitMode::Int, InitMode::Positive}, m);
}

// splitmix64 finaliser: a good 64-bit mixer; hash(seed, i) is the counter-based generator.
CKGEN_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

CKGEN_HOST_DEVICE inline uint64_t hash2(uint64_t seed, uint64_t i) {
  return mix64(mix64(seed) ^ (i * 0xd1b54a32d192ed03ull));
}

// Value of element i for (mode, seed), before rounding to the datatype.
CKGEN_HOST_DEVICE inline float init_value(InitMode mode, uint64_t seed, uint64_t i) {
  const uint64_t h = hash2(seed, i);
  const float u = float(h >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
  switch (mode) {
    case InitMode::Int: {
      const int v = int((h >> 8) % 6u);  // 0..5 -> -3,-2,-1,1,2,3
      return float(v < 3 ? v - 3 : v - 2);
    }
    case InitMode::Positive: return 1.0f - u;  // (0, 1]
    default: {
      const float v = 2.0f * u - 1.0f;  // [-1, 1)
      return v == 0.0f ? 0.5f : v;
    }
  }
}

// Poison pattern: a quiet NaN with a recognisable payload (never produced by arithmetic).
inline uint32_t poison_bits(DataType t) {
  switch (t) {
    case DataType::FP16: return 0x7e5au;
    case DataType::BF16: return 0x7fa5u;
    case DataType::FP32: return 0x7fc5a5a5u;
  }
  return 0;
}

inline void fill_host(void* p, int64_t n, DataType t, InitMode mode, uint64_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    float v = init_value(mode, seed, uint64_t(i));
    store_host(p, i, t, v);
    if (load_host(p, i, t) == 0.0) store_host(p, i, t, v < 0 ? -0.5f : 0.5f);  // underflow guard
  }
}

template <DataType DT>
CKGEN_GLOBAL void fill_kernel(void* p, int64_t n, InitMode mode, uint64_t seed) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = init_value(mode, seed, uint64_t(i));
    Elem<DT>::store(p, i, v);
    if (Elem<DT>::load(p, i) == 0.0f) Elem<DT>::store(p, i, v < 0 ? -0.5f : 0.5f);
  }
}

template <typename T>
CKGEN_GLOBAL void pattern_kernel(T* p, int64_t n, T value) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = value;
}

inline unsigned grid_for(int64_t n, unsigned block) {
  int64_t g = (n + block - 1) / block;
  if (g > 65535 * 16) g = 65535 * 16;
  return unsigned(g < 1 ? 1 : g);
}

// Same values as fill_host for the same (mode, seed).
inline gpuError_t fill_device(void* p, int64_t n, DataType t, InitMode mode, uint64_t seed,
                              gpuStream_t stream) {
  if (n <= 0) return gpuSuccess;
  const unsigned block = 256, grid = grid_for(n, block);
  dispatch_datatype(t, [&](auto dt) {
    fill_kernel<decltype(dt)::value><<<grid, block, 0, stream>>>(p, n, mode, seed);
    return 0;
  });
  return gpuGetLastError();
}

// Fills n elements of datatype t with the poison NaN pattern.
inline gpuError_t poison_device(void* p, int64_t n, DataType t, gpuStream_t stream) {
  if (n <= 0) return gpuSuccess;
  const unsigned block = 256, grid = grid_for(n, block);
  if (t == DataType::FP32)
    pattern_kernel<uint32_t><<<grid, block, 0, stream>>>(static_cast<uint32_t*>(p), n,
                                                         poison_bits(t));
  else
    pattern_kernel<uint16_t><<<grid, block, 0, stream>>>(static_cast<uint16_t*>(p), n,
                                                         uint16_t(poison_bits(t)));
  return gpuGetLastError();
}

// Fills n floats with value (used for the fp32 reference buffer).
inline gpuError_t fill_device_f32(float* p, int64_t n, float value, gpuStream_t stream) {
  if (n <= 0) return gpuSuccess;
  const unsigned block = 256, grid = grid_for(n, block);
  pattern_kernel<float><<<grid, block, 0, stream>>>(p, n, value);
  return gpuGetLastError();
}

}  // namespace ckgen::host
