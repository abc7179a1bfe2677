// The cost model's estimate of a pointwise instance (pipeline/pointwise.hpp), before the
// target's calibration (dispatch/cost_model.hpp estimate_cost).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ckgen/dispatch/cost_estimate.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/schedule/pointwise_plan.hpp"

namespace ckgen {

// Pointwise instances (pipeline/pointwise.hpp): a block per SM slot walks its row tiles, each a
// bulk copy in, the mma.sync work, a bulk copy out, the next tile's copy in flight. Time: the
// unique bytes (each block also reads the whole filter once, from L2 at half price) at a share of
// the bandwidth, or the busiest slot's tiles one after the other, whichever is longer, plus a
// fixed time (launch, the first copy in, the last one out). A tile costs kPointwiseTileUs plus
// its warps' instructions: mma.sync (k16 steps), ldmatrix of A and B and the 4-byte stores of the
// output rows, each of the last two times the bank conflicts of its rows (pointwise_bank_ways),
// slowed by the blocks that share an SM. Fitted on the H200 over the profiler's 460 fp16 (layer,
// tile) times of the model-zoo corpus's 1x1 layers: mean |log(estimate / measured)| 0.07, 98 %
// within 25 % (bench/results/2026-12-03_H200_pointwise.md); the calibration (arch_specs.json)
// stays 1.
inline constexpr double kPointwiseBandwidthShare = 0.92;
inline constexpr double kPointwiseTileUs = 0.23;
inline constexpr double kPointwiseMmaNs = 13.6;   // a warp's mma.sync k16 step (m16 x n8)
inline constexpr double kPointwiseLdsmNs = 6.4;   // a warp's ldmatrix.x4, per conflicting row
inline constexpr double kPointwiseStoreNs = 2.3;  // a warp's 4-byte output store, per conflicting row
inline constexpr double kPointwiseFixedUs = 1.5;
inline CostEstimate estimate_pointwise_cost(const KernelKey& k, const ConvProblem& p, const ArchNumbers& a) {
  CostEstimate c;
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const bool fwd = k.variant == Variant::Forward;
  const int64_t R = pointwise_reduction(k.variant, p), Nn = pointwise_outputs(k.variant, p);
  const PointwiseLayout L = pointwise_layout(fwd, p.G, R, Nn, k.tile_m);
  const int64_t rows = p.N * p.out_spatial();
  c.tiles = cdiv(rows, k.tile_m);
  c.k_batch = 1;
  const int threads = std::max(1, k.wave_m) * a.warp_size;
  const int m_tiles = std::max(1, k.tile_m / (16 * std::max(1, k.wave_m)));  // a warp's (kernel: MT)
  const int regs = kPointwiseAccPerMTile * m_tiles + kPointwiseRegisterBase;
  c.blocks_per_cu =
      int(std::max<int64_t>(1, std::min<int64_t>({a.lds_bytes / (L.total + 1024), 2048 / threads,
                                                  a.register_file_bytes_per_cu / (4 * regs * threads)})));
  const int64_t slots = std::min<int64_t>(c.tiles, int64_t(a.compute_units) * c.blocks_per_cu);
  c.waves = cdiv(c.tiles, slots);
  // a warp's instructions a tile (n8 tiles, k8 halves of k16 steps, 64-column chunks)
  const double n8 = double(cdiv(Nn, 8)), k16 = double(cdiv(R, 8)) / 2.0, chunks = double(cdiv(Nn, 64));
  const double G = double(p.G), mt = double(m_tiles);
  const double mma = G * mt * n8 * k16;
  const double ldsm = G * chunks * mt * k16 * pointwise_bank_ways(L.src_row_bytes) +
                      G * double(cdiv(Nn, 16)) * k16 * pointwise_bank_ways(L.w_row_bytes);
  const double stores = G * mt * n8 * 2.0 * pointwise_bank_ways(L.dst_row_bytes);
  const double sharing = std::max(1.0, std::min(double(c.blocks_per_cu), double(c.tiles) / a.compute_units));
  const double tile_us =
      kPointwiseTileUs +
      (kPointwiseMmaNs * mma + kPointwiseLdsmNs * ldsm + kPointwiseStoreNs * stores) * 1e-3 * sharing;
  c.tile_efficiency = double(R * Nn) / (double(cdiv(Nn, 8) * 8) * double(cdiv(R, 8) * 8));
  const int eb = elem_bytes(k.datatype);
  const double bytes =
      double(rows) * G * double(R + Nn) * eb + 0.5 * double(slots) * double(L.w_rows * L.w_row_bytes);
  const double mem_us = bytes / (a.bandwidth_gbs * kPointwiseBandwidthShare * 1e9) * 1e6;
  c.us = std::max(mem_us, double(c.waves) * tile_us) + kPointwiseFixedUs;
  return c;
}

}  // namespace ckgen
