// Host-only checks of the pointwise kernel's plan (schedule/pointwise_plan.hpp) and its cost
// estimate (dispatch/cost_model.hpp; tests/test_pointwise.py compiles this like
// tests/test_dispatch.py's host tests): which problems it takes, its shared-memory layout, the
// bank conflicts of a row stride, and an estimate that is the memory time for a skinny layer and
// grows with the conflicts. Prints "ok <check>" per passed check, "FAIL <check>: ..." and exits 1 on
// the first failure.
#include <cstdio>
#include <string>

#include "ckgen/dispatch/cost_model.hpp"
#include "ckgen/schedule/pointwise_plan.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen;
using namespace ckgen_test;

static int fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  return 1;
}

int main() {
  // --- refusals: 1x1, unit strides, no padding, channels multiples of 8, not backward_weight ---
  {
    const ConvProblem ok = conv(32, 24, 144, 56, 1);
    if (pointwise_refusal(Variant::Forward, ok) || pointwise_refusal(Variant::BackwardData, ok))
      return fail("refusal: a 24 -> 144 1x1 layer is taken");
    if (!pointwise_refusal(Variant::BackwardWeight, ok)) return fail("refusal: backward_weight");
    if (!pointwise_refusal(Variant::Forward, conv(32, 24, 144, 56, 3))) return fail("refusal: a 3x3 filter");
    ConvProblem s2 = ok;
    s2.stride[1] = s2.stride[2] = 2;
    s2.compute_output();
    if (!pointwise_refusal(Variant::Forward, s2)) return fail("refusal: stride 2");
    if (!pointwise_refusal(Variant::Forward, conv(32, 58, 144, 56, 1))) return fail("refusal: C = 58");
    std::printf("ok refusals\n");
  }
  // --- layout: the filter as in global memory, source and output tiles, 128-byte aligned ---
  {
    const PointwiseLayout f = pointwise_layout(true, 2, 24, 40, 64);   // forward: G = 2, C = 24, K = 40
    const PointwiseLayout b = pointwise_layout(false, 2, 40, 24, 64);  // backward_data of the same layer
    if (f.w_rows != 80 || f.w_row_bytes != 48 || b.w_rows != 80 || b.w_row_bytes != 48)
      return fail("layout: the filter is G * K rows of C either way");
    if (f.src_row_bytes != 96 || f.dst_row_bytes != 160 || f.src_stage < 64 * 96 || f.dst_stage < 64 * 160)
      return fail("layout: tile rows");
    if (f.src % 128 || f.dst % 128 || f.src_stage % 128 || f.dst_stage % 128 ||
        f.src < f.w + (80 + 16) * 48 || f.total != f.dst + 2 * f.dst_stage)
      return fail("layout: alignment, slack and total");
    std::printf("ok layout\n");
  }
  // --- bank conflicts of a row stride ---
  {
    if (pointwise_bank_ways(48) != 1 || pointwise_bank_ways(32) != 2 || pointwise_bank_ways(64) != 4 ||
        pointwise_bank_ways(128) != 8 || pointwise_bank_ways(1024) != 8 || pointwise_bank_ways(144) != 1)
      return fail("bank ways");
    std::printf("ok bank ways\n");
  }
  // --- the estimate: a skinny layer at the memory time; conflicting rows cost more ---
  {
    KernelKey k = key("pw", Variant::Forward, 64, 64, 16);
    k.pipeline = Pipeline::Pointwise;
    k.wave_m = 4, k.wave_n = 1, k.wave_k = 1;
    k.stages = 2;
    const ArchNumbers a;
    const ConvProblem skinny = conv(32, 24, 144, 56, 1);
    const CostEstimate e = estimate_pointwise_cost(k, skinny, a);
    const double mem = double(skinny.input_elems() + skinny.output_elems()) * 2 /
                       (a.bandwidth_gbs * kPointwiseBandwidthShare * 1e9) * 1e6;
    if (!(e.us >= mem && e.us < mem * 1.6 + kPointwiseFixedUs)) return fail("estimate: skinny layer");
    const CostEstimate c64 = estimate_pointwise_cost(k, conv(32, 64, 64, 56, 1), a);
    const CostEstimate c72 = estimate_pointwise_cost(k, conv(32, 72, 72, 56, 1), a);
    if (!(c64.us > c72.us)) return fail("estimate: 64-channel rows (8-way conflicts) cost more than 72");
    if (estimate_cost(k, skinny, 1, a).us != e.us * a.calibration(Variant::Forward, Pipeline::Pointwise))
      return fail("estimate: estimate_cost dispatches to the pointwise estimate");
    std::printf("ok estimate\n");
  }
  std::printf("all passed\n");
  return 0;
}
