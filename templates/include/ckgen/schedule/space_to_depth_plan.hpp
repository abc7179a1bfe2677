// Space to depth (kernel/space_to_depth.hpp): a forward convolution with stride s > 1 and few
// input channels (the C = 3 stems) runs as a stride-1 convolution over a copy of its input whose
// pixels are s x s blocks of the original. Along a dimension of stride s, filter F and left pad pl:
//   output o reads input i = s o + t - pl (tap t < F); with t = s tq + r (r < s) and
//   j = o + tq, i = s j + r - pl,
// so x'[j][(r, c)] = x[s j + r - pl][c] (zero outside x) and w'[tq][(r, c)] = w[s tq + r][c]
// (zero past F) give the same output on Fq = ceil(F / s) taps, J = O + Fq - 1 pixels, no padding
// and unit stride. Dimensions of stride 1 keep their size, filter and pads. The channels of a
// pixel (r_d, r_h, r_w, c), C' = s_d s_h s_w C, are rounded up to the inner instance's vector
// (zero channels: zero products). The output and its fused operands are the user's: nothing is
// copied back.
#pragma once

#include <cstdint>
#include <string>

#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Largest C' (before rounding) a face takes: beyond it the taps the copy drops no longer pay for
// the zero channels and taps it adds.
inline constexpr int64_t kSpaceToDepthMaxChannels = 32;

struct SpaceToDepthPlan {
  ConvProblem inner;   // the stride-1 problem the instance runs
  int64_t factor[3];   // s per dimension (1: unchanged)
  int64_t packed = 0;  // C' = prod(factor) * C, before rounding to the vector
};

inline int64_t s2d_round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

// Why p has no space-to-depth form ("" when it has): forward only, some stride above 1, unit
// dilation along strided dimensions, C' = prod(stride) * C at most kSpaceToDepthMaxChannels.
inline std::string space_to_depth_refusal(const ConvProblem& p) {
  int64_t prod = 1;
  for (int d = 0; d < 3; ++d) {
    if (p.stride[d] > 1 && p.dilation[d] != 1) return "space_to_depth: a strided dimension is dilated";
    prod *= p.stride[d];
  }
  if (prod == 1) return "space_to_depth: stride 1 (the instance itself runs the problem)";
  if (prod * p.C > kSpaceToDepthMaxChannels)
    return "space_to_depth: stride x C = " + std::to_string(prod * p.C) + " channels a block (at most " +
           std::to_string(kSpaceToDepthMaxChannels) + ")";
  return {};
}

// The stride-1 problem of p with its packed channels rounded up to q.
inline SpaceToDepthPlan space_to_depth_plan(const ConvProblem& p, int q) {
  SpaceToDepthPlan s;
  ConvProblem& r = s.inner;
  r = p;
  ConvProblem full = p;
  full.compute_output();
  int64_t prod = 1;
  for (int d = 0; d < 3; ++d) {
    s.factor[d] = p.stride[d];
    prod *= p.stride[d];
    if (p.stride[d] == 1) continue;
    const int64_t fq = (p.filter[d] + p.stride[d] - 1) / p.stride[d];
    r.filter[d] = fq;
    r.in[d] = full.out[d] + fq - 1;
    r.stride[d] = 1;
    r.pad_l[d] = r.pad_r[d] = 0;
  }
  s.packed = prod * p.C;
  r.C = s2d_round_up(s.packed, q);
  r.compute_output();
  return s;
}

// The channel ch < C' of a packed pixel as (r_d, r_h, r_w) (mixed radix of the strides, r_w
// fastest) and c.
template <class I>
CKGEN_HOST_DEVICE inline I space_to_depth_split(I ch, const ConvProblem& p, I (&r)[3]) {
  const I c = ch % I(p.C);
  ch /= I(p.C);
  for (int d = 2; d >= 0; --d) {
    r[d] = ch % I(p.stride[d]);
    ch /= I(p.stride[d]);
  }
  return c;
}

// x' vector v (N, J..., G, C' rounded, V channels a vector; I: the index type, 32 bits where x'
// fits) into out: x[s j + r - pl] along strided dimensions (j along the others, whose pads the
// inner problem keeps), 0 outside x and in the rounding channels. The pixel's coordinates are
// divided out once; the channels step through (r, c) by counting.
template <int V, class T, class I>
CKGEN_HOST_DEVICE inline void space_to_depth_input(const T* x, I v, const ConvProblem& p,
                                                   const ConvProblem& q, int64_t packed, T (&out)[V]) {
  const I vecs = I(q.C / V);
  const I ch0 = (v % vecs) * I(V);
  I t = v / vecs;
  const I g = t % I(p.G);
  t /= I(p.G);
  I j[3];
  for (int d = 2; d >= 0; --d) {
    j[d] = t % I(q.in[d]);
    t /= I(q.in[d]);
  }
  const I n = t;
  I r[3];
  I c = ch0 < I(packed) ? space_to_depth_split(ch0, p, r) : I(0);
  for (int e = 0; e < V; ++e) {
    out[e] = T(0);
    if (ch0 + I(e) >= I(packed)) continue;
    I src = n;
    bool in = true;
    for (int d = 0; d < 3; ++d) {
      const I i = p.stride[d] == 1 ? j[d] : I(p.stride[d]) * j[d] + r[d] - I(p.pad_l[d]);
      in = in && i >= 0 && i < I(p.in[d]);
      src = src * I(p.in[d]) + i;
    }
    if (in) out[e] = x[(src * I(p.G) + g) * I(p.C) + c];
    if (++c == I(p.C)) {  // the next (r, c): c, then r_w, r_h, r_d
      c = 0;
      for (int d = 2; d >= 0; --d) {
        if (++r[d] < I(p.stride[d])) break;
        r[d] = 0;
      }
    }
  }
}

// w' element e (G, K, Fq..., C' rounded): w[s tq + r] along strided dimensions (tq along the
// others), 0 past the filter and in the rounding channels.
template <class T, class I>
CKGEN_HOST_DEVICE inline T space_to_depth_weight(const T* w, I e, const ConvProblem& p, const ConvProblem& q,
                                                 int64_t packed) {
  const I ch = e % I(q.C);
  I t = e / I(q.C);
  I tq[3];
  for (int d = 2; d >= 0; --d) {
    tq[d] = t % I(q.filter[d]);
    t /= I(q.filter[d]);
  }
  if (ch >= I(packed)) return T(0);
  I r[3];
  const I c = space_to_depth_split(ch, p, r);
  I src = t;  // g * K + k
  for (int d = 0; d < 3; ++d) {
    const I f = p.stride[d] == 1 ? tq[d] : I(p.stride[d]) * tq[d] + r[d];
    if (f >= I(p.filter[d])) return T(0);
    src = src * I(p.filter[d]) + f;
  }
  return w[src * I(p.C) + c];
}

}  // namespace ckgen
