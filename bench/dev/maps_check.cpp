// Host-only check of the implicit-GEMM index maps (conv_maps.hpp) and FastDiv: evaluates every
// view's GEMM element by element on the CPU and compares with a direct fp64 convolution.
//   g++ -std=c++17 -O2 -I templates/include -I /usr/local/cuda/include bench/dev/maps_check.cpp
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "ckgen/conv_maps.hpp"

using namespace ckgen;

static ConvProblem mk(int nd, int64_t G, int64_t N, int64_t C, int64_t K, std::vector<int64_t> in,
                      std::vector<int64_t> fil, std::vector<int64_t> s, std::vector<int64_t> d,
                      std::vector<int64_t> pl, std::vector<int64_t> pr) {
  ConvProblem p;
  p.ndim = nd; p.G = G; p.N = N; p.C = C; p.K = K;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    p.in[j] = in[i]; p.filter[j] = fil[i]; p.stride[j] = s[i]; p.dilation[j] = d[i];
    p.pad_l[j] = pl[i]; p.pad_r[j] = pr[i];
  }
  p.compute_output();
  return p;
}

static ConvArgs args_of(const ConvProblem& p, const void* x, const void* w, const void* y) {
  ConvArgs a{};
  a.in = x; a.wei = w; a.out = y;
  a.G = p.G; a.N = p.N; a.C = p.C; a.K = p.K;
  for (int i = 0; i < 3; ++i) {
    a.in_[i] = p.in[i]; a.out_[i] = p.out[i]; a.fil[i] = p.filter[i]; a.s[i] = p.stride[i];
    a.dil[i] = p.dilation[i]; a.pl[i] = p.pad_l[i];
    a.fd_fil[i].init(p.filter[i]); a.fd_out[i].init(p.out[i]);
  }
  a.in_spatial = p.in_spatial(); a.out_spatial = p.out_spatial(); a.ZYX = p.filter_spatial();
  a.ZYXC = p.filter_spatial() * p.C; a.GC = p.G * p.C; a.GK = p.G * p.K;
  a.fd_C.init(p.C); a.fd_K.init(p.K);
  return a;
}

template <class View>
static void emulate(const ConvArgs& a, int classes, const float* base_a_check, std::vector<double>& dst) {
  for (int g = 0; g < a.G; ++g)
    for (int cls = 0; cls < classes; ++cls) {
      View v(a, g, cls);
      const int M = v.M(), N = v.N(), K = v.K();
      for (int m = 0; m < M; ++m) {
        auto af = v.a_fix(m);
        const int64_t row = v.c_row(m);
        for (int n = 0; n < N; ++n) {
          auto bf = v.b_fix(n);
          double s = 0;
          for (int k = 0; k < K; ++k) {
            bool oka, okb;
            const float* pa = v.a_ptr(af, v.a_k(k), oka);
            const float* pb = v.b_ptr(bf, v.b_k(k), okb);
            if (oka && okb) s += double(*pa) * *pb;
          }
          dst[row + n] = s;
        }
      }
    }
}

static void reference(int v, const ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w,
                      const std::vector<float>& y, std::vector<double>& ref) {
  const int64_t G = p.G, N = p.N, C = p.C, K = p.K;
  const int64_t *In = p.in, *Out = p.out, *F = p.filter;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t od = 0; od < Out[0]; ++od) for (int64_t oh = 0; oh < Out[1]; ++oh)
    for (int64_t ow = 0; ow < Out[2]; ++ow) for (int64_t z = 0; z < F[0]; ++z)
    for (int64_t fy = 0; fy < F[1]; ++fy) for (int64_t fx = 0; fx < F[2]; ++fx) {
      const int64_t id = od * p.stride[0] - p.pad_l[0] + z * p.dilation[0];
      const int64_t ih = oh * p.stride[1] - p.pad_l[1] + fy * p.dilation[1];
      const int64_t iw = ow * p.stride[2] - p.pad_l[2] + fx * p.dilation[2];
      if (id < 0 || id >= In[0] || ih < 0 || ih >= In[1] || iw < 0 || iw >= In[2]) continue;
      for (int64_t g = 0; g < G; ++g) for (int64_t k = 0; k < K; ++k) for (int64_t c = 0; c < C; ++c) {
        const int64_t ix = (((n * In[0] + id) * In[1] + ih) * In[2] + iw) * G * C + g * C + c;
        const int64_t iy = (((n * Out[0] + od) * Out[1] + oh) * Out[2] + ow) * G * K + g * K + k;
        const int64_t iwt = ((((g * K + k) * F[0] + z) * F[1] + fy) * F[2] + fx) * C + c;
        if (v == 0) ref[iy] += double(x[ix]) * w[iwt];
        else if (v == 1) ref[ix] += double(y[iy]) * w[iwt];
        else ref[iwt] += double(y[iy]) * x[ix];
      }
    }
}

int main() {
  // FastDiv
  std::mt19937 rng(1);
  int fd_bad = 0;
  for (int d : {1, 2, 3, 5, 7, 12, 13, 100, 1000, 65535, 65537, 1 << 20, 123456789, (1 << 30) + 1, 2147483647}) {
    FastDiv f(d);
    for (int t = 0; t < 200000; ++t) {
      int n = t < 1000 ? t : int(rng() & 0x7fffffff);
      if (t == 1001) n = 0x7fffffff;
      if (f.div(n) != n / d) { if (fd_bad++ < 5) std::printf("fastdiv %d/%d = %d\n", n, d, f.div(n)); }
    }
  }
  std::printf("FastDiv: %s\n", fd_bad ? "FAIL" : "PASS");
  std::vector<ConvProblem> ps = {
      mk(2, 2, 2, 3, 5, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
      mk(2, 2, 2, 3, 4, {9, 8}, {3, 3}, {2, 2}, {2, 2}, {2, 1}, {1, 2}),
      mk(2, 1, 2, 2, 3, {10, 11}, {3, 2}, {3, 3}, {2, 2}, {2, 0}, {1, 3}),
      mk(1, 2, 3, 3, 2, {17}, {5}, {3}, {2}, {3}, {1}),
      mk(3, 1, 2, 2, 3, {7, 6, 8}, {3, 2, 3}, {2, 2, 3}, {2, 1, 2}, {2, 1, 1}, {1, 0, 2}),
      mk(2, 1, 1, 2, 2, {8, 8}, {4, 4}, {4, 2}, {3, 2}, {3, 1}, {0, 2}),
      mk(2, 1, 1, 2, 2, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}),
      mk(2, 1, 1, 2, 2, {5, 9}, {2, 3}, {6, 4}, {3, 1}, {0, 5}, {4, 0}),
  };
  int bad_total = 0;
  for (auto& p : ps) {
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(p.input_elems()), w(p.weight_elems()), y(p.output_elems());
    for (auto& e : x) e = dist(rng);
    for (auto& e : w) e = dist(rng);
    for (auto& e : y) e = dist(rng);
    ConvArgs a = args_of(p, x.data(), w.data(), y.data());
    for (int v = 0; v < 3; ++v) {
      std::vector<double> ref(v == 0 ? y.size() : v == 1 ? x.size() : w.size(), 0.0);
      std::vector<double> got(ref.size(), NAN);
      reference(v, p, x, w, y, ref);
      a.M = v == 0 ? int(p.N * p.out_spatial()) : 0;
      a.Ng = int(p.K);
      a.Kred = v == 0 ? int(p.filter_spatial() * p.C) : int(p.N * p.out_spatial());
      if (v == 0) emulate<FwdView<float, Specialization::Default>>(a, 1, nullptr, got);
      if (v == 1) emulate<BwdDataView<float, Specialization::Default>>(a, int(p.stride[0] * p.stride[1] * p.stride[2]), nullptr, got);
      if (v == 2) emulate<BwdWeightView<float, Specialization::Default>>(a, 1, nullptr, got);
      int bad = 0;
      for (size_t i = 0; i < ref.size(); ++i)
        if (!(std::fabs(got[i] - ref[i]) < 1e-9)) ++bad;
      std::printf("%s variant %d ndim %d s(%ld,%ld,%ld): %d/%zu bad\n", bad ? "FAIL" : "PASS", v, p.ndim,
                  (long)p.stride[0], (long)p.stride[1], (long)p.stride[2], bad, ref.size());
      bad_total += bad;
    }
  }
  return bad_total || fd_bad;
}
