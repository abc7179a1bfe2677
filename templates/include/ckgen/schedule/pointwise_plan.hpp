// The pointwise kernel's plan (pipeline/pointwise.hpp), shared by the kernel, its host face and
// the cost model: which problems it takes and its shared-memory layout per problem.
#pragma once

#include "ckgen/core/portability.hpp"

#include <cstdint>

#include "ckgen/core/limits.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Shared memory, in bytes from the block's base: two mbarriers, the filter (G * K rows of C, as
// in global memory, and 16 rows of slack: the last chunk's dead columns read up to 8 rows, or 8
// elements, past it), then the source stages (BM rows of G * R elements) and the output buffers
// (BM rows of G * Nn), each 128-byte aligned. Every tile is laid out as in global memory, so it
// moves as one bulk copy; rows of an even number of 16-byte units put an ldmatrix's 8 rows on the
// same banks (pointwise_bank_ways; the cost model prices it).
struct PointwiseLayout {
  int64_t w, w_rows, w_row_bytes;  // the filter
  int64_t src_row_bytes, src, src_stage;
  int64_t dst_row_bytes, dst, dst_stage;
  int64_t total;
};

CKGEN_HOST_DEVICE constexpr int64_t pointwise_align(int64_t b) { return (b + 127) / 128 * 128; }

CKGEN_HOST_DEVICE inline PointwiseLayout pointwise_layout(bool fwd, int64_t G, int64_t R, int64_t Nn,
                                                          int BM) {
  PointwiseLayout L{};
  L.w = 128;
  L.w_rows = G * (fwd ? Nn : R);
  L.w_row_bytes = (fwd ? R : Nn) * 2;
  L.src_row_bytes = G * R * 2;
  L.src = L.w + pointwise_align((L.w_rows + 16) * L.w_row_bytes);
  L.src_stage = pointwise_align(int64_t(BM) * L.src_row_bytes);
  L.dst_row_bytes = G * Nn * 2;
  L.dst = L.src + kPointwiseStages * L.src_stage;
  L.dst_stage = pointwise_align(int64_t(BM) * L.dst_row_bytes);
  L.total = L.dst + kPointwiseStages * L.dst_stage;
  return L;
}

// The most rows of an ldmatrix (8 rows of 16 bytes, `stride` bytes apart) that share banks: 1
// where stride / 16 is odd, up to 8 where stride is a multiple of 128.
CKGEN_HOST_DEVICE constexpr int pointwise_bank_ways(int64_t stride) {
  const int64_t units = stride / 16;
  int64_t odd = units;
  int ways = 1;
  while (odd % 2 == 0 && ways < 8) {
    odd /= 2;
    ways *= 2;
  }
  return ways;
}

// The reduction and output channels per group of variant v: forward C -> K, backward_data K -> C.
inline int64_t pointwise_reduction(Variant v, const ConvProblem& p) {
  return v == Variant::Forward ? p.C : p.K;
}
inline int64_t pointwise_outputs(Variant v, const ConvProblem& p) {
  return v == Variant::Forward ? p.K : p.C;
}

// Why the pointwise kernel cannot take p (empty: it can): a 1x1 filter at unit strides without
// padding (dilation is then moot), forward or backward_data, channels in whole 16-byte rows.
inline const char* pointwise_refusal(Variant v, const ConvProblem& p) {
  if (v == Variant::BackwardWeight) return "the pointwise kernel computes forward and backward_data";
  for (int i = 0; i < 3; ++i) {
    if (p.filter[i] != 1) return "the pointwise kernel needs a 1x1 filter";
    if (p.stride[i] != 1) return "the pointwise kernel needs unit strides";
    if (p.pad_l[i] != 0 || p.pad_r[i] != 0) return "the pointwise kernel needs zero padding";
  }
  if (p.C % kPointwiseChannelStep != 0 || p.K % kPointwiseChannelStep != 0)
    return "the pointwise kernel needs C and K per group multiples of 8";
  return nullptr;
}

}  // namespace ckgen
