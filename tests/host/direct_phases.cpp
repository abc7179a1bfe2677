// Host-only checks of the direct matrix path's phased backward_data plan (the stride classes of
// conv/dim_class.hpp it walks, pipeline/direct_mma.hpp mma_staged_cols, schedule/direct_plan.hpp bands; tests/test_direct.py compiles this
// like tests/test_dispatch.py's host tests): over every small stride, dilation, filter width and
// padding, a W phase's walk holds exactly the taps that reach its pixels, its dy columns fit the
// staged columns the host checks, and the bands of H and W phases cover every dx row and phase
// exactly once. Prints "ok <check>" per passed check, "FAIL <check>: ..." and exits 1 on the first
// failure.
#include <cstdio>
#include <string>
#include <vector>

#include "ckgen/pipeline/direct_mma.hpp"
#include "ckgen/schedule/direct_plan.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen;
using namespace ckgen_test;

int main() {
  // --- the walk of one dimension: exactly the taps k with (i + pl - k * dil) % s == 0 ----------
  {
    bool ok = true;
    std::string what;
    for (int s = 1; s <= 4 && ok; ++s)
      for (int dil = 1; dil <= 3 && ok; ++dil)
        for (int f = 1; f <= 11 && ok; ++f)
          for (int ipl = 0; ipl <= 12 && ok; ++ipl) {
            const DimClass w = make_dim_class(ipl, ipl + 1, f, s, dil, 0);
            std::vector<int> want, got;
            for (int k = 0; k < f; ++k)
              if ((ipl - k * dil) % s == 0) want.push_back(k);
            for (int j = 0; j < w.taps; ++j) got.push_back(w.f0 + j * w.fstep);
            // walked tap j reads dy coordinate off0 - j * dstep
            bool col_ok = true;
            for (int j = 0; j < w.taps; ++j) col_ok = col_ok && (ipl - got[size_t(j)] * dil) == (w.off0 - j * w.dstep) * s;
            if (want != got || !col_ok) {
              ok = false;
              what = "s " + std::to_string(s) + " dil " + std::to_string(dil) + " f " + std::to_string(f) +
                     " i+pl " + std::to_string(ipl);
            }
          }
    check(ok, "stride class: exactly the taps that reach a coordinate, at dy columns off0 - j * dstep", what);
  }
  // --- a phase's staged dy columns fit what is_supported checks ---------------------------------
  {
    bool ok = true;
    for (int s = 1; s <= 4; ++s)
      for (int dil = 1; dil <= 3; ++dil)
        for (int f = 1; f <= 9; ++f)
          for (int ph = 0; ph < s; ++ph) {
            const DimClass w = make_dim_class(ph, s, f, s, dil, 0);
            const int64_t cols = 16 + (w.taps > 0 ? (w.taps - 1) * w.dstep : 0);
            ok = ok && cols <= direct::mma_staged_cols(false, 16, s, dil, f);
          }
    check(ok, "mma_staged_cols bounds every phase's staged columns");
  }
  // --- bands of H and W phases: every dx row and W phase once ----------------------------------
  {
    bool ok = true;
    std::string what;
    for (int sy = 1; sy <= 3 && ok; ++sy)
      for (int sx = 1; sx <= 3 && ok; ++sx)
        for (int hi = 1; hi <= 13 && ok; ++hi)
          for (int band_rows : {1, 2, 4}) {
            if (sy == 1 && sx == 1) continue;
            ConvProblem p;
            p.ndim = 2;
            p.N = 1, p.G = 1, p.C = 8, p.K = 8;
            p.in[0] = 1, p.in[1] = hi, p.in[2] = 5;
            p.filter[0] = 1, p.filter[1] = 3, p.filter[2] = 3;
            p.stride[0] = 1, p.stride[1] = sy, p.stride[2] = sx;
            p.pad_l[1] = p.pad_l[2] = p.pad_r[1] = p.pad_r[2] = 1;
            p.compute_output();
            const int64_t bands = direct_bands_per_plane(Variant::BackwardData, p, band_rows);
            std::vector<int> seen(size_t(hi * sx), 0);
            for (int64_t hb = 0; hb < bands; ++hb) {  // the kernel's split of a band index
              const int ph = int(hb % sx), hq = int(hb / sx), rho = hq % sy, bi = hq / sy;
              const int h0 = rho + bi * band_rows * sy;
              const int rows = std::min(band_rows, (hi - h0 + sy - 1) / sy);
              for (int o = 0; o < rows; ++o) ++seen[size_t((h0 + o * sy) * sx + ph)];
            }
            for (int v : seen) ok = ok && v == 1;
            if (!ok)
              what = "sy " + std::to_string(sy) + " sx " + std::to_string(sx) + " H " + std::to_string(hi) +
                     " band " + std::to_string(band_rows);
          }
    check(ok, "phased bands cover every dx row and W phase exactly once", what);
  }
  // --- the FMA path's estimate: a launch of fewer blocks than compute units issues on those alone
  {
    KernelKey k = fake_key("dw", Variant::Forward, 16, 32, 1);
    k.ndim = 3;
    k.pipeline = Pipeline::Direct;
    k.wave_m = 4, k.wave_n = 1;
    k.warp_m = k.warp_n = k.warp_k = 1;
    k.vec_a = k.vec_b = k.vec_c = 1;
    ConvProblem p;  // 3D depthwise, 11x11x11 filter, 16 output pixels an image, 39 channels
    p.ndim = 3;
    p.N = 2, p.G = 39, p.C = 1, p.K = 1;
    p.in[0] = 26, p.in[1] = p.in[2] = 11;
    p.filter[0] = p.filter[1] = p.filter[2] = 11;
    p.compute_output();
    ConvProblem wide = p;  // 66x the images: 264 blocks, every compute unit busy
    wide.N = 132;
    const double few = estimate_cost(k, p, 0).us, full = estimate_cost(k, wide, 0).us;
    check(few > 0 && full < 4.0 * few,
          "4 blocks of taps: 66x the images cost at most 4x (the 4 blocks use 4 units)",
          std::to_string(few) + " / " + std::to_string(full));
  }
  std::printf("all passed\n");
  return 0;
}
