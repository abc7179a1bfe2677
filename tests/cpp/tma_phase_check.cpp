// wavelet_tma's backward_data plan (ckgen/tma_phases.hpp) checked on the host, without a GPU:
// for random problems (strides 1-4, pads, filters 1-7, dilation on stride-1 dims, groups; 3D with
// depth strides 1-3 dividing the depth) each
// phase runs as the forward convolution the TMA kernel computes (stride 1, pads possibly
// negative, zero outside the input), reading w's taps through the phase's tap map (no filter
// tap read twice), and writes through its output map into a NaN-poisoned dx
// (every pixel written once, or cleared when the plan says so); dx must match a direct
// backward_data in double precision. Built and run by tests/test_tma_phases.py; prints
// "phases: ok <n> problems" or FAIL lines (exit 1).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "ckgen/schedule/tma_phases.hpp"

namespace {

using ckgen::ConvProblem;
namespace tp = ckgen::tma_phases;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
int g_fail = 0;

#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      std::printf("FAIL " __VA_ARGS__);   \
      std::printf("\n");                  \
      ++g_fail;                           \
      return false;                       \
    }                                     \
  } while (0)

// x: N,D,H,W,G,C  w: G,K,Z,Y,X,C  y: N,Do,P,Q,G,K (channels last, as the library lays them
// out; 1D / 2D problems have D = Do = Z = 1)
bool check(const ConvProblem& p, std::mt19937& rng, const char* label) {
  const int64_t N = p.N, G = p.G, C = p.C, K = p.K;
  const int64_t D = p.in[0], H = p.in[1], W = p.in[2], Do = p.out[0], P = p.out[1], Q = p.out[2];
  const int64_t Z = p.filter[0], Y = p.filter[1], X = p.filter[2], T = Z * Y * X;
  std::normal_distribution<double> nd;
  std::vector<double> dy(std::size_t(N * Do * P * Q * G * K)), w(std::size_t(G * K * T * C));
  for (double& v : dy) v = nd(rng);
  for (double& v : w) v = nd(rng);
  auto dy_at = [&](int64_t n, int64_t od, int64_t oh, int64_t ow, int64_t g, int64_t k) {
    return dy[std::size_t(((((n * Do + od) * P + oh) * Q + ow) * G + g) * K + k)];
  };

  // Direct backward_data: dx[n, di, hi, wi, g, c] += dy[n, od, oh, ow, g, k] * w[g, k, z, y, x, c].
  std::vector<double> ref(std::size_t(N * D * H * W * G * C), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t od = 0; od < Do; ++od)
      for (int64_t ho = 0; ho < P; ++ho)
        for (int64_t wo = 0; wo < Q; ++wo)
          for (int64_t z = 0; z < Z; ++z)
            for (int64_t y = 0; y < Y; ++y)
              for (int64_t x = 0; x < X; ++x) {
                const int64_t di = od * p.stride[0] - p.pad_l[0] + z * p.dilation[0];
                const int64_t hi = ho * p.stride[1] - p.pad_l[1] + y * p.dilation[1];
                const int64_t wi = wo * p.stride[2] - p.pad_l[2] + x * p.dilation[2];
                if (di < 0 || di >= D || hi < 0 || hi >= H || wi < 0 || wi >= W) continue;
                for (int64_t g = 0; g < G; ++g)
                  for (int64_t k = 0; k < K; ++k)
                    for (int64_t c = 0; c < C; ++c)
                      ref[std::size_t(((((n * D + di) * H + hi) * W + wi) * G + g) * C + c)] +=
                          dy_at(n, od, ho, wo, g, k) * w[std::size_t((((g * K + k) * T + (z * Y + y) * X + x)) * C + c)];
              }

  const tp::Plan pl = tp::backward_data_plan(p);
  CHECK(pl.error.empty(), "%s: plan refused: %s", label, pl.error.c_str());
  const int count = int(pl.phase.size());
  CHECK(count >= 1 && count <= p.stride[0] * p.stride[1] * p.stride[2], "%s: %d phases", label, count);

  std::vector<int> tap_reads(std::size_t(T), 0);
  std::vector<double> dx(ref.size(), pl.zero_first ? 0.0 : kNaN);
  std::vector<int> written(ref.size(), 0);
  for (int i = 0; i < count; ++i) {
    const tp::Phase& ph = pl.phase[i];
    const ConvProblem& q = ph.q;
    CHECK(q.C == K && q.K == C && q.in[0] == Do && q.in[1] == P && q.in[2] == Q && q.stride[0] == 1 &&
              q.stride[1] == 1 && q.stride[2] == 1,
          "%s: phase %d is not a stride-1 convolution of dy", label, i);
    for (int d = 0; d < 3; ++d)
      CHECK(q.out[d] == q.in[d] + q.pad_l[d] + q.pad_r[d] - (q.filter[d] - 1) * q.dilation[d],
            "%s: phase %d output size (dimension %d) does not follow from its pads", label, i, d);
    CHECK(ph.w_taps == T, "%s: phase %d reads a filter of %lld taps", label, i, (long long)ph.w_taps);
    auto wtap = [&](int64_t tz, int64_t ty, int64_t tx) {
      return ph.tap0 + tz * ph.tap_dd + ty * ph.tap_dh + tx * ph.tap_dw;
    };
    for (int64_t tz = 0; tz < q.filter[0]; ++tz)
      for (int64_t ty = 0; ty < q.filter[1]; ++ty)
        for (int64_t tx = 0; tx < q.filter[2]; ++tx) {
          const int64_t t = wtap(tz, ty, tx);
          CHECK(t >= 0 && t < T, "%s: phase %d tap (%lld, %lld, %lld) reads filter tap %lld", label, i,
                (long long)tz, (long long)ty, (long long)tx, (long long)t);
          ++tap_reads[std::size_t(t)];
        }
    // GEMM row (n * Do' + od, oh, ow): the kernel's image index is n and the depth together
    for (int64_t n = 0; n < N; ++n)
      for (int64_t od = 0; od < q.out[0]; ++od)
        for (int64_t oh = 0; oh < q.out[1]; ++oh)
          for (int64_t ow = 0; ow < q.out[2]; ++ow) {
            const int64_t img = n * q.out[0] + od;
            const int64_t row = (img * q.out[1] + oh) * q.out[2] + ow;
            const int64_t pix =
                ph.dense ? row : img * ph.out_sn + oh * ph.out_sh + ow * ph.out_sw + ph.out_base;
            CHECK(pix >= 0 && pix < N * D * H * W, "%s: phase %d writes pixel %lld", label, i, (long long)pix);
            for (int64_t g = 0; g < G; ++g)
              for (int64_t c = 0; c < C; ++c) {
                double acc = 0;
                for (int64_t tz = 0; tz < q.filter[0]; ++tz)
                  for (int64_t ty = 0; ty < q.filter[1]; ++ty)
                    for (int64_t tx = 0; tx < q.filter[2]; ++tx) {
                      const int64_t id = od - q.pad_l[0] + tz * q.dilation[0];
                      const int64_t ih = oh - q.pad_l[1] + ty * q.dilation[1];
                      const int64_t iw = ow - q.pad_l[2] + tx * q.dilation[2];
                      if (id < 0 || id >= Do || ih < 0 || ih >= P || iw < 0 || iw >= Q) continue;
                      for (int64_t k = 0; k < K; ++k)  // w[g][k][tap][c] as it lies
                        acc += dy_at(n, id, ih, iw, g, k) *
                               w[std::size_t(((g * K + k) * T + wtap(tz, ty, tx)) * C + c)];
                    }
                dx[std::size_t((pix * G + g) * C + c)] = acc;
                ++written[std::size_t((pix * G + g) * C + c)];
              }
          }
  }
  // (a tap of a residue with no dx pixels is read by none)
  for (int r : tap_reads) CHECK(r <= 1, "%s: a filter tap read by %d phase taps", label, r);
  for (std::size_t e = 0; e < dx.size(); ++e) {
    CHECK(written[e] <= 1, "%s: dx element %zu written %d times", label, e, written[e]);
    CHECK(!std::isnan(dx[e]), "%s: dx element %zu never written (zero_first %d)", label, e,
          int(pl.zero_first));
    CHECK(std::fabs(dx[e] - ref[e]) <= 1e-9 * (1.0 + std::fabs(ref[e])),
          "%s: dx element %zu = %g, direct backward_data %g", label, e, dx[e], ref[e]);
  }
  return true;
}

ConvProblem make(int64_t G, int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t Y,
                 int64_t X, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t plh, int64_t plw,
                 int64_t prh, int64_t prw) {
  ConvProblem p;
  p.ndim = 2;
  p.G = G, p.N = N, p.C = C, p.K = K;
  p.in[1] = H, p.in[2] = W, p.filter[1] = Y, p.filter[2] = X;
  p.stride[1] = sh, p.stride[2] = sw, p.dilation[1] = dh, p.dilation[2] = dw;
  p.pad_l[1] = plh, p.pad_l[2] = plw, p.pad_r[1] = prh, p.pad_r[2] = prw;
  p.compute_output();
  return p;
}

// A 3D problem with depth stride 1 (the 5D maps' backward_data; D, Z, depth dilation and pads).
ConvProblem make3d(int64_t D, int64_t Z, int64_t dd, int64_t pld, int64_t prd, ConvProblem p, int64_t sd = 1) {
  p.ndim = 3;
  p.in[0] = D, p.filter[0] = Z, p.stride[0] = sd, p.dilation[0] = dd, p.pad_l[0] = pld, p.pad_r[0] = prd;
  p.compute_output();
  return p;
}

}  // namespace

int main() {
  std::mt19937 rng(20261123);
  int n = 0;
  // Named cases: the RetinaNet stride-2 layers in miniature, and the corners.
  struct Named {
    const char* label;
    ConvProblem p;
  } named[] = {
      {"3x3s2 pad1", make(1, 2, 3, 4, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)},
      {"1x1s2 pad0 (three empty phases)", make(1, 2, 3, 4, 8, 8, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0)},
      {"7x7s2 pad3", make(1, 1, 2, 3, 12, 12, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3)},
      {"3x3s2 odd sizes", make(2, 1, 2, 3, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)},
      {"3x3 stride 1", make(1, 2, 3, 4, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)},
      {"3x3 stride 1 dilation 2", make(1, 1, 2, 2, 9, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2)},
      {"5x3 stride 3x2", make(1, 1, 2, 3, 11, 8, 5, 3, 3, 2, 1, 1, 2, 1, 2, 1)},
      {"2x2s2 pad0", make(1, 2, 2, 2, 8, 8, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0)},
      {"4x4s2 asymmetric pads", make(1, 1, 2, 2, 9, 10, 4, 4, 2, 2, 1, 1, 1, 1, 2, 2)},
      {"1D 3 s2", make(1, 2, 3, 2, 1, 16, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1)},
  };
  for (const Named& c : named) n += check(c.p, rng, c.label) ? 1 : 0;
  // Random problems.
  std::uniform_int_distribution<int> u(0, 1 << 30);
  auto pick = [&](int lo, int hi) { return int64_t(lo + u(rng) % (hi - lo + 1)); };
  int tried = 0;
  while (tried < 300) {
    const int64_t Y = pick(1, 7), X = pick(1, 7), sh = pick(1, 4), sw = pick(1, 4);
    const int64_t dh = sh == 1 ? pick(1, 2) : 1, dw = sw == 1 ? pick(1, 2) : 1;
    const int64_t eh = (Y - 1) * dh, ew = (X - 1) * dw;
    const int64_t plh = pick(0, int(eh)), prh = pick(0, int(eh)), plw = pick(0, int(ew)), prw = pick(0, int(ew));
    const int64_t H = pick(int(std::max<int64_t>(1, eh + 1 - plh - prh)), 13);
    const int64_t W = pick(int(std::max<int64_t>(1, ew + 1 - plw - prw)), 13);
    const ConvProblem p = make(pick(1, 2), pick(1, 2), pick(1, 3), pick(1, 3), H, W, Y, X, sh, sw,
                               dh, dw, plh, plw, prh, prw);
    if (!p.validate().empty()) continue;
    ++tried;
    char label[160];
    std::snprintf(label, sizeof label, "random H%lld W%lld f%lldx%lld s%lldx%lld d%lldx%lld pl%lldx%lld pr%lldx%lld",
                  (long long)H, (long long)W, (long long)Y, (long long)X, (long long)sh, (long long)sw,
                  (long long)dh, (long long)dw, (long long)plh, (long long)plw, (long long)prh,
                  (long long)prw);
    n += check(p, rng, label) ? 1 : 0;
  }
  // 3D (flipped like the other dimensions; every stride split into phases, depth strides dividing D).
  const Named named3d[] = {
      {"3D 3x3x3 stride 1", make3d(4, 3, 1, 1, 1, make(1, 2, 3, 2, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1))},
      {"3D 3x3x3 H/W stride 2", make3d(3, 3, 1, 1, 1, make(1, 1, 2, 3, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1))},
      {"3D 2x3x3 depth dilation 2, asymmetric", make3d(5, 2, 2, 1, 0, make(2, 1, 2, 2, 6, 7, 3, 3, 1, 1, 1, 2, 1, 2, 1, 2))},
      {"3D 3x3x3 stride 2 (r3d)", make3d(8, 3, 1, 1, 1, make(1, 2, 3, 2, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), 2)},
      {"3D 1x1x1 stride 2 (r3d downsample)", make3d(6, 1, 1, 0, 0, make(1, 1, 2, 3, 6, 6, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0), 2)},
      {"3D 3x1x1 depth stride 2 only", make3d(6, 3, 1, 1, 1, make(1, 2, 2, 2, 3, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0), 2)},
      {"3D 3x3x3 depth stride 3", make3d(9, 3, 1, 0, 2, make(1, 1, 2, 2, 5, 5, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1), 3)},
  };
  for (const Named& c : named3d) n += check(c.p, rng, c.label) ? 1 : 0;
  for (int i = 0; i < 40;) {
    const int64_t sd = i % 2 == 0 ? 1 : pick(2, 3);
    const int64_t Z = pick(1, 3), dd = sd == 1 ? pick(1, 2) : 1, ed = (Z - 1) * dd;
    const int64_t pld = pick(0, int(ed)), prd = pick(0, int(ed));
    const int64_t D = sd == 1 ? pick(int(std::max<int64_t>(1, ed + 1 - pld - prd)), 5) : sd * pick(1, 3);
    const int64_t Y = pick(1, 3), X = pick(1, 3), sh = pick(1, 3), sw = pick(1, 3);
    const int64_t plh = pick(0, int(Y - 1)), plw = pick(0, int(X - 1));
    const ConvProblem p = make3d(D, Z, dd, pld, prd,
                                 make(pick(1, 2), pick(1, 2), pick(1, 2), pick(1, 2), pick(int(Y), 7), pick(int(X), 7),
                                      Y, X, sh, sw, 1, 1, plh, plw, pick(0, int(Y - 1)), pick(0, int(X - 1))),
                                 sd);
    if (!p.validate().empty()) continue;
    ++i;
    char label[160];
    std::snprintf(label, sizeof label, "random 3D D%lld f%lldx%lldx%lld s%lldx%lldx%lld dd%lld pd%lld/%lld",
                  (long long)D, (long long)Z, (long long)Y, (long long)X, (long long)sd, (long long)sh, (long long)sw,
                  (long long)dd, (long long)pld, (long long)prd);
    n += check(p, rng, label) ? 1 : 0;
  }
  // Refusals: stride with dilation, stride-1 pads past the filter extent, a depth stride not dividing D.
  if (tp::backward_data_plan(make(1, 1, 1, 1, 9, 9, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1)).error.empty()) {
    std::printf("FAIL stride 2 with dilation 2 accepted\n");
    ++g_fail;
  }
  if (tp::backward_data_plan(make(1, 1, 1, 1, 9, 9, 3, 3, 1, 1, 1, 1, 3, 3, 0, 0)).error.empty()) {
    std::printf("FAIL stride 1 with pad 3 > filter extent 2 accepted\n");
    ++g_fail;
  }
  {
    ConvProblem p = make3d(7, 3, 1, 1, 1, make(1, 1, 1, 1, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1));
    p.stride[0] = 2;
    p.compute_output();
    if (tp::backward_data_plan(p).error.empty()) {
      std::printf("FAIL depth stride 2 of depth 7 accepted\n");
      ++g_fail;
    }
  }
  if (g_fail) return 1;
  std::printf("phases: ok %d problems\n", n);
  return 0;
}
