// How wavelet_tma runs a problem as forward launches (pipeline/tma_ws.hpp), in plain C++ so that the
// host checks (tests/cpp/tma_phase_check.cpp) run it without a GPU.
//
// forward: one launch, the problem itself.
// backward_data: dx = dy convolved with w flipped in space and transposed (K <-> C). A stride
// s > 1 splits dx into s_d x s_h x s_w phases (sub-pixel decomposition): the pixels hi = s*a + b of
// phase b take the taps y = r + s*j with r = (b + pad) mod s; with shift = (b + pad) div s,
//   dx[s*a + b] = sum_j dy[a + shift - j] * w[r + s*j],
// a stride-1 convolution of dy with a sub-filter of phase_taps(Y, s, r) taps, flipped
// (t = taps - 1 - j), padded by taps - 1 - shift on the left. A phase with dx pixels but no tap
// leaves them zero (the plan asks for dx to be cleared first). Stride 1 is the single phase with
// pads (filter extent - 1) * dilation - pads.
// No filter is rewritten: each phase names, per sub-filter tap (t_d, t_h, t_w), the tap of w it
// reads,
//   tap0 + t_d * tap_dd + t_h * tap_dh + t_w * tap_dw   (an index into w's Z * Y * X taps),
// and the kernel reads that tap's K x C slice as it lies (C contiguous: an N-major operand).
// 3D problems whose depth does not fold (the 5D maps): a phase's output map is 2D per image, its
// image index n * D' + a (D' = D / s_d depth rows a phase) being dx's image n * D + s_d * a + b_d;
// that index is linear only when s_d divides dx's depth D, so a depth stride > 1 needs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/problem.hpp"

namespace ckgen {
namespace tma_phases {

// Taps y < Y with y mod s == r (int: filter extents and strides are small).
CKGEN_HOST_DEVICE inline int phase_taps(int Y, int s, int r) { return r < Y ? (Y - 1 - r) / s + 1 : 0; }

// One forward launch: the problem, which tap of w each of its filter taps reads (w has w_taps
// taps), and where its output rows land: GEMM row (n, oh, ow) -> pixel
// n*out_sn + oh*out_sh + ow*out_sw + out_base.
struct Phase {
  ConvProblem q;
  int64_t tap0 = 0, tap_dd = 0, tap_dh = 0, tap_dw = 1, w_taps = 1;
  int64_t out_sn = 0, out_sh = 0, out_sw = 0, out_base = 0;
  bool dense = true;  // the identity map (forward, stride-1 backward_data)
};

constexpr int kMaxPhases = 64;

struct Plan {
  std::vector<Phase> phase;  // at most kMaxPhases
  bool zero_first = false;   // some dx pixels get no tap: clear dx before the launches
  std::string error;
};

// forward: the problem itself, w's taps in order.
inline Phase forward_phase(const ConvProblem& p) {
  Phase ph;
  ph.q = p;
  ph.tap_dh = p.filter[2];
  ph.tap_dd = p.filter[1] * p.filter[2];
  ph.w_taps = p.filter_spatial();
  return ph;
}

inline Plan forward_plan(const ConvProblem& p) {
  Plan pl;
  pl.phase.push_back(forward_phase(p));
  return pl;
}

// The backward_data problem p (in = dx, out = dy) as forward launches over dy.
inline Plan backward_data_plan(const ConvProblem& p) {
  Plan pl;
  if (p.stride[0] * p.stride[1] * p.stride[2] > kMaxPhases) {
    pl.error = "wavelet_tma backward_data: stride_d x stride_h x stride_w exceeds 64 phases";
    return pl;
  }
  if (p.in[0] % p.stride[0] != 0) {
    pl.error = "wavelet_tma backward_data: a depth stride > 1 needs it to divide the input depth (" +
               std::to_string(p.in[0]) + " % " + std::to_string(p.stride[0]) + " != 0)";
    return pl;
  }
  for (int i = 0; i < 3; ++i) {
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
  const int64_t sd = p.stride[0], sh = p.stride[1], sw = p.stride[2];
  pl.phase.reserve(std::size_t(sd * sh * sw));
  for (int64_t bd = 0; bd < sd; ++bd) {
    for (int64_t bh = 0; bh < sh; ++bh) {
      for (int64_t bw = 0; bw < sw; ++bw) {
        const int64_t b[3] = {bd, bh, bw};
        Phase ph;
        ph.q = p;
        ph.q.C = p.K;
        ph.q.K = p.C;
        int r[3] = {0, 0, 0};
        bool no_pixel = false, no_tap = false;
        for (int i = 0; i < 3; ++i) {
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
        // Sub-filter tap t reads filter tap r + s * (taps - 1 - t) (flipped) in each dimension.
        const int64_t X = p.filter[2], YX = p.filter[1] * X;
        ph.tap0 = (r[0] + sd * (ph.q.filter[0] - 1)) * YX + (r[1] + sh * (ph.q.filter[1] - 1)) * X + r[2] +
                  sw * (ph.q.filter[2] - 1);
        ph.tap_dd = -sd * YX;
        ph.tap_dh = -sh * X;
        ph.tap_dw = -sw;
        ph.w_taps = p.filter_spatial();
        ph.dense = sd == 1 && sh == 1 && sw == 1;
        ph.out_sn = sd * p.in[1] * p.in[2];
        ph.out_sh = sh * p.in[2];
        ph.out_sw = sw;
        ph.out_base = (bd * p.in[1] + bh) * p.in[2] + bw;
        pl.phase.push_back(ph);
      }
    }
  }
  return pl;
}

// dy's channels as backward_data / backward_weight read them: with K % 8 != 0 in one group dy's
// rows are not 16-byte multiples, which the copy engine needs, so a copy of dy pads K to a
// multiple of 8 (zeros); 0 = dy is read as it lies.
inline int64_t padded_dy_channels(const ConvProblem& p) { return p.K % 8 != 0 && p.G == 1 ? (p.K + 7) / 8 * 8 : 0; }

// backward_data with a gradient mask (drelu, ...) on an instance of tile_n dx channels a tile: the
// mask is applied in the kernel (y's tiles copied beside dy's) where each dy tile is read at most
// kMaskKernelReads times, dx's column tiles x the taps of a stride phase; there y's copies cost
// less than a masked copy of dy (three passes over dy's bytes). premask_dy: the call masks a copy
// of dy instead (elsewhere, and where dy's rows are padded), which the unmasked kernel reads.
inline constexpr int64_t kMaskKernelReads = 2;
inline bool premask_dy(const ConvProblem& p, int tile_n) {
  if (padded_dy_channels(p) > 0) return true;
  const Plan pl = backward_data_plan(p);
  int64_t taps = 0;
  for (const Phase& ph : pl.phase) taps = ph.q.filter_spatial() > taps ? ph.q.filter_spatial() : taps;
  return pl.error.empty() && (p.C + tile_n - 1) / tile_n * taps > kMaskKernelReads;
}

}  // namespace tma_phases
}  // namespace ckgen
