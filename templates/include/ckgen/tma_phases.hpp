// How wavelet_tma runs a problem as forward launches (pipeline_tma.hpp), in plain C++ so that the
// host checks (tests/cpp/tma_phase_check.cpp) run it without a GPU.
//
// forward: one launch, the problem itself.
// backward_data: dx = dy convolved with w flipped in space and transposed (K <-> C). A stride
// s > 1 splits dx into s_h x s_w phases (sub-pixel decomposition): the pixels hi = s*a + b of
// phase b take the taps y = r + s*j with r = (b + pad) mod s; with shift = (b + pad) div s,
//   dx[s*a + b] = sum_j dy[a + shift - j] * w[r + s*j],
// a stride-1 convolution of dy with a sub-filter of phase_taps(Y, s, r) taps, flipped
// (t = taps - 1 - j), padded by taps - 1 - shift on the left. Every tap belongs to one residue r,
// so the sub-filters together fill a workspace the size of w. A phase with dx pixels but no tap
// leaves them zero (the plan asks for dx to be cleared first). Stride 1 is the single phase with
// pads (filter extent - 1) * dilation - pads.
#pragma once

#include <cstdint>
#include <string>

#include "ckgen/portability.hpp"
#include "ckgen/problem.hpp"

namespace ckgen {
namespace tma_phases {

// Taps y < Y with y mod s == r (int: filter extents and strides are small).
CKGEN_HOST_DEVICE inline int phase_taps(int Y, int s, int r) { return r < Y ? (Y - 1 - r) / s + 1 : 0; }

// Taps y < Y with y mod s < r.
CKGEN_HOST_DEVICE inline int phase_taps_below(int Y, int s, int r) {
  int n = 0;
  for (int q = 0; q < r; ++q) n += phase_taps(Y, s, q);
  return n;
}

// Where filter tap (fy, fx) of group g lands in the workspace: element
//   base + c * taps_hw * K + k     for input channel c (dx's) and output channel k (dy's),
// sub-filters in residue order (r_h, r_w) row-major, each G x C x J_h x J_w x K.
struct FlipDst {
  int64_t base;
  int64_t taps_hw;  // J_h * J_w of the tap's sub-filter
};
CKGEN_HOST_DEVICE inline FlipDst flip_dst(int G, int K, int C, int Y, int X, int s_h, int s_w, int g,
                                          int fy, int fx) {
  if (s_h == 1 && s_w == 1) {  // the whole filter, flipped
    const int taps = Y * X;
    return {(int64_t(g) * C * taps + (taps - 1 - (fy * X + fx))) * K, taps};
  }
  const int r_h = fy % s_h, r_w = fx % s_w;
  const int jh = phase_taps(Y, s_h, r_h), jw = phase_taps(X, s_w, r_w);
  const int t = (jh - 1 - fy / s_h) * jw + (jw - 1 - fx / s_w);
  const int64_t block = int64_t(phase_taps_below(Y, s_h, r_h)) * X + int64_t(jh) * phase_taps_below(X, s_w, r_w);
  const int64_t taps_hw = int64_t(jh) * jw;
  return {int64_t(G) * C * K * block + (int64_t(g) * C * taps_hw + t) * K, taps_hw};
}

// One forward launch: the problem, where its filter starts in the workspace, and where its
// output rows land: GEMM row (n, oh, ow) -> pixel n*out_sn + oh*out_sh + ow*out_sw + out_base.
struct Phase {
  ConvProblem q;
  int64_t w_offset = 0;
  int64_t out_sn = 0, out_sh = 0, out_sw = 0, out_base = 0;
  bool dense = true;  // the identity map (forward, stride-1 backward_data)
};

constexpr int kMaxPhases = 64;

struct Plan {
  Phase phase[kMaxPhases];
  int count = 0;
  bool zero_first = false;  // some dx pixels get no tap: clear dx before the launches
  std::string error;
};

inline Plan forward_plan(const ConvProblem& p) {
  Plan pl;
  pl.phase[0].q = p;
  pl.count = 1;
  return pl;
}

// The backward_data problem p (in = dx, out = dy) as forward launches over dy.
inline Plan backward_data_plan(const ConvProblem& p) {
  Plan pl;
  if (p.stride[1] * p.stride[2] > kMaxPhases) {
    pl.error = "wavelet_tma backward_data: stride_h x stride_w exceeds 64 phases";
    return pl;
  }
  for (int i = 1; i < 3; ++i) {
    const int64_t ext = (p.filter[i] - 1) * p.dilation[i];
    if (p.stride[i] > 1 && p.dilation[i] != 1) {
      pl.error = "wavelet_tma backward_data: stride > 1 needs dilation 1";
      return pl;
    }
    if (p.stride[i] == 1 && (p.pad_l[i] > ext || p.pad_r[i] > ext)) {
      pl.error = "wavelet_tma backward_data: stride 1 needs pads <= (filter - 1) * dilation";
      return pl;
    }
  }
  const int64_t sh = p.stride[1], sw = p.stride[2];
  for (int64_t bh = 0; bh < sh; ++bh) {
    for (int64_t bw = 0; bw < sw; ++bw) {
      const int64_t b[3] = {0, bh, bw};
      Phase ph;
      ph.q = p;
      ph.q.C = p.K;
      ph.q.K = p.C;
      int r[3] = {0, 0, 0};
      bool no_pixel = false, no_tap = false;
      for (int i = 1; i < 3; ++i) {
        const int64_t s = p.stride[i], d = p.dilation[i];
        r[i] = int((b[i] + p.pad_l[i]) % s);
        const int64_t shift = (b[i] + p.pad_l[i]) / s;
        const int64_t taps = phase_taps(int(p.filter[i]), int(s), r[i]);
        const int64_t rows = p.in[i] > b[i] ? (p.in[i] - 1 - b[i]) / s + 1 : 0;
        no_pixel = no_pixel || rows == 0;
        no_tap = no_tap || taps == 0;
        ph.q.in[i] = p.out[i];
        ph.q.filter[i] = taps;
        ph.q.stride[i] = 1;
        ph.q.pad_l[i] = (taps - 1) * d - shift;
        ph.q.pad_r[i] = rows - p.out[i] - ph.q.pad_l[i] + (taps - 1) * d;
        ph.q.out[i] = rows;
      }
      if (no_pixel) continue;
      if (no_tap) {
        pl.zero_first = true;
        continue;
      }
      ph.w_offset = int64_t(p.G) * p.C * p.K *
                    (int64_t(phase_taps_below(int(p.filter[1]), int(sh), r[1])) * p.filter[2] +
                     int64_t(phase_taps(int(p.filter[1]), int(sh), r[1])) *
                         phase_taps_below(int(p.filter[2]), int(sw), r[2]));
      ph.dense = sh == 1 && sw == 1;
      ph.out_sn = p.in[1] * p.in[2];
      ph.out_sh = sh * p.in[2];
      ph.out_sw = sw;
      ph.out_base = bh * p.in[2] + bw;
      pl.phase[pl.count++] = ph;
    }
  }
  return pl;
}

}  // namespace tma_phases
}  // namespace ckgen
