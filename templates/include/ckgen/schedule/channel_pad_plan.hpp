// Channel padding (kernel/channel_pad.hpp): a problem whose channels are not a whole number of
// 16-byte vectors runs on an instance of whole vectors, on the problem with its channels rounded
// up to the quantum. Implicit-GEMM and wavelet_tma instances pad C and K per group; direct
// instances (C = K = Cg per group, a pixel's G * Cg channels one vector row) add whole groups
// instead, and run a depthwise channel multiplier as more groups. Before the instance runs, the tensors it
// reads are copied into workspace with zeros in the added channels (zero products in every reduction); after
// it, the tensor it wrote is copied back without them. channel_pad_plan lists those copies, for the launch
// and for the cost model (dispatch/cost_model.hpp).
#pragma once

#include <cstdint>
#include <numeric>

#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// Operands of a convolution call, as ConvTensors names them.
enum class PadOperand { In, Wei, Out };

// One copy between a tensor and its padded twin, both seen as `outer` blocks of rows x cols
// (row-major, cols contiguous): the small (user's) shape and the padded one. Rows and columns
// past the small shape are the added channels. spread > 1 (a read copy of one block, rows
// alike): the user's column c is repeated into the twin's columns c * spread ... c * spread +
// spread - 1 (a depthwise channel multiplier, direct_pad_plan).
struct PadCopy {
  PadOperand operand;
  bool read;  // true: the instance reads it (copied in, zero-filled); false: written (copied out)
  int64_t outer, rows, cols, rows_padded, cols_padded;
  int64_t spread = 1;
  int64_t elems() const { return outer * rows * cols; }
  int64_t padded_elems() const { return outer * rows_padded * cols_padded; }
};

struct ChannelPadPlan {
  ConvProblem padded;
  PadCopy copies[3];
  int count = 0;
};

inline int64_t round_up_to(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

// Channels of one 16-byte vector.
constexpr int channel_pad_quantum(DataType d) { return 16 / elem_bytes(d); }

// The padded problem and its copies, for variant v with channels rounded up to q. The weight is
// always copied (one of C and K is padded); x only when C is, y only when K is.
//   x (N, spatial, G, C):  rows N * spatial * G of C
//   w (G, K, taps, C):     G blocks of K * taps rows of C (a filter row k * taps + t keeps its index)
//   y (N, spatial, G, K):  rows N * spatial * G of K
inline ChannelPadPlan channel_pad_plan(Variant v, const ConvProblem& p, int q) {
  ChannelPadPlan plan;
  ConvProblem& r = plan.padded;
  r = p;
  r.C = round_up_to(p.C, q);
  r.K = round_up_to(p.K, q);
  const int64_t taps = p.filter_spatial();
  const bool reads_in = v != Variant::BackwardData, reads_out = v != Variant::Forward;
  const bool reads_wei = v != Variant::BackwardWeight;
  if (r.C != p.C) plan.copies[plan.count++] = {PadOperand::In, reads_in, 1, p.N * p.in_spatial() * p.G, p.C,
                                               p.N * p.in_spatial() * p.G, r.C};
  plan.copies[plan.count++] = {PadOperand::Wei, reads_wei, p.G, p.K * taps, p.C, r.K * taps, r.C};
  if (r.K != p.K) plan.copies[plan.count++] = {PadOperand::Out, reads_out, 1, p.N * p.out_spatial() * p.G, p.K,
                                               p.N * p.out_spatial() * p.G, r.K};
  return plan;
}

// Direct instances serve C = K = Cg per group: G grows to G', the least multiple of
// q / gcd(q, C) (so G' * C is whole vectors), C and K unchanged. A depthwise layer with a channel
// multiplier (C = 1, K = M > 1: output channel g * M + m reads input channel g) runs as the
// depthwise layer of G * M groups over x with each channel repeated M times, G' the least
// multiple of q from G * M; its filter and y are those groups' already (forward and
// backward_weight: backward_data's dx would be the sum of each channel's M rounded repeats,
// which the face refuses). Copies that would change nothing are left out (the instance reads or
// writes the user's tensor):
//   x (N, spatial, G * C):  rows N * spatial of G * C -> G' * C (multiplier: G -> G', spread M)
//   w (G, K * taps * C):    G rows -> G' (multiplier: G * M rows of taps -> G')
//   y (N, spatial, G * K):  rows N * spatial of G * K -> G' * K (multiplier: G * M -> G')
inline ChannelPadPlan direct_pad_plan(Variant v, const ConvProblem& p, int q) {
  ChannelPadPlan plan;
  ConvProblem& r = plan.padded;
  r = p;
  const bool mult = p.C == 1 && p.K > 1 && v != Variant::BackwardData;
  if (mult) {
    r.G = round_up_to(p.G * p.K, q);
    r.K = 1;
  } else {
    r.G = round_up_to(p.G, q / std::gcd(int64_t(q), p.C));
  }
  const int64_t taps = p.filter_spatial();
  const bool reads_in = v != Variant::BackwardData, reads_out = v != Variant::Forward;
  const bool reads_wei = v != Variant::BackwardWeight;
  const int64_t in_rows = p.N * p.in_spatial(), out_rows = p.N * p.out_spatial();
  const int64_t w_rows = mult ? p.G * p.K : p.G, w_cols = mult ? taps : p.K * taps * p.C;
  auto add = [&](const PadCopy& c) {
    if (c.spread > 1 || c.rows != c.rows_padded || c.cols != c.cols_padded) plan.copies[plan.count++] = c;
  };
  add({PadOperand::In, reads_in, 1, in_rows, p.G * p.C, in_rows, r.G * r.C, mult ? p.K : 1});
  add({PadOperand::Wei, reads_wei, 1, w_rows, w_cols, r.G, w_cols});
  add({PadOperand::Out, reads_out, 1, out_rows, p.G * p.K, out_rows, r.G * r.K});
  return plan;
}

// The plan of a face over an instance of pipeline `pl`.
inline ChannelPadPlan pad_plan(Pipeline pl, Variant v, const ConvProblem& p, int q) {
  return pl == Pipeline::Direct ? direct_pad_plan(v, p, q) : channel_pad_plan(v, p, q);
}

// Bytes the copies move (each reads one twin and writes the other).
inline double channel_pad_bytes(const ChannelPadPlan& plan, int elem_bytes) {
  double b = 0;
  for (int i = 0; i < plan.count; ++i)
    b += double(plan.copies[i].elems() + plan.copies[i].padded_elems()) * elem_bytes;
  return b;
}

}  // namespace ckgen
