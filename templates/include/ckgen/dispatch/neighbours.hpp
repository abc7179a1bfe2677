// The neighbour ranking's geometry: how far two problems are apart, what a split count means
// on a shape, and the weighted mean residual of the nearest measured points.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ckgen/conv/gemm_dims.hpp"
#include "ckgen/core/problem.hpp"

namespace ckgen {

// Distance between two problems of one variant, for the neighbour ranking: |log| differences of
// the per-group GEMM M, N, K and the batch (groups x stride classes), which set the tile fit and
// the parallelism, plus half the |log| differences of the filter size and the stride (a 1x1
// borrows from a 3x3 of the same GEMM only when nothing closer exists). These features rank
// neighbours better than raw G/N/C/K/spatial sizes with per-component penalties.
inline double problem_distance(Variant v, const ConvProblem& a, const ConvProblem& b) {
  auto l = [](int64_t x, int64_t y) {
    return std::fabs(std::log(double(std::max<int64_t>(x, 1))) - std::log(double(std::max<int64_t>(y, 1))));
  };
  const GemmDims ga = gemm_dims(v, a), gb = gemm_dims(v, b);
  double d = l(ga.M, gb.M) + l(ga.N, gb.N) + l(ga.K, gb.K) + l(ga.batch, gb.batch);
  int64_t sa = 1, sb = 1;
  for (int i = 0; i < 3; ++i) {
    sa *= a.stride[i];
    sb *= b.stride[i];
  }
  d += 0.5 * (l(a.filter_spatial(), b.filter_spatial()) + l(sa, sb));
  return d;
}

// What a split count means on a problem, for matching measured split counts across shapes:
// log(blocks launched / compute units) (the parallelism: tiles of the per-group GEMM x batch
// x splits) and log(reduction length per split) (the work a block does, what the split-K
// finish work is traded against). The same k_batch is a different choice on a shape with 4x
// the tiles, so the neighbour ranking compares these, not the raw k_batch.
struct SplitFeatures {
  double log_blocks_per_cu = 0;
  double log_k_per_split = 0;
};
inline SplitFeatures split_features(Variant v, int tile_m, int tile_n, int groups_to_merge, const ConvProblem& p,
                                    int k_batch, int compute_units) {
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const GemmDims g = tiled_gemm_dims(v, p, groups_to_merge);
  const int kb = std::max(1, k_batch);
  const double blocks = double(g.batch * cdiv(g.M, std::max(1, tile_m)) * cdiv(g.N, std::max(1, tile_n)) * kb);
  SplitFeatures f;
  f.log_blocks_per_cu = std::log(blocks / double(std::max(1, compute_units)));
  f.log_k_per_split = std::log(std::max(1.0, double(g.K) / kb));
  return f;
}

// One measured point of the neighbour ranking and the calibrated score of a candidate: the
// weighted mean residual of the `k` points nearest to (shape_distance, features), weights
// exp(-distance / bandwidth), shrunk towards the cost model's own estimate (residual 0) by how far
// the points' shapes are: times S / (S + prior_w), S the sum of their shape weights
// exp(-shape_w * shape_distance / bandwidth). Points of the problem's own neighbourhood keep
// their say; a few shapes far away correct the estimate little. Ties in distance break on the
// smaller residual. `used` (optional) gets the number of points averaged. Returns 0 with used = 0
// when there are no points.
struct ResidualPoint {
  double shape_distance = 0;
  SplitFeatures f;
  double residual = 0;  // log(measured / estimated)
};
inline double residual_estimate(const std::vector<ResidualPoint>& pts, const SplitFeatures& f, int k,
                                double bandwidth, double shape_w, double blocks_w, double split_w,
                                double prior_w, int* used = nullptr) {
  struct Near {
    double distance, residual, shape;
    bool operator<(const Near& o) const {
      return distance != o.distance ? distance < o.distance : residual < o.residual;
    }
  };
  std::vector<Near> d;
  d.reserve(pts.size());
  for (const ResidualPoint& q : pts)
    d.push_back({shape_w * q.shape_distance + blocks_w * std::fabs(q.f.log_blocks_per_cu - f.log_blocks_per_cu) +
                     split_w * std::fabs(q.f.log_k_per_split - f.log_k_per_split),
                 q.residual, shape_w * q.shape_distance});
  const size_t n = std::min(d.size(), size_t(std::max(0, k)));
  std::partial_sort(d.begin(), d.begin() + std::ptrdiff_t(n), d.end());
  double sw = 0, sr = 0, ss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = std::exp(-d[i].distance / bandwidth);
    sw += w;
    sr += w * d[i].residual;
    ss += std::exp(-d[i].shape / bandwidth);
  }
  if (used) *used = int(n);
  return sw > 0 ? sr / sw * ss / (ss + prior_w) : 0.0;
}

}  // namespace ckgen
