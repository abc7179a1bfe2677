// The per-variant views of one group (forward, backward_data by stride class, backward_weight);
// conv/conv_maps.hpp describes what a view answers.
#pragma once

#include <cstdint>

#include "ckgen/conv/conv_args.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/problem.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// forward: A[m,k] = x[n, o*s - pl + f*d, g, c] (k = (z,y,x,c)), B[k,n] = w[g,n,z,y,x,c],
//          C[m,n] = y[m, g, n]
// ------------------------------------------------------------------------------------------
template <typename Raw, Specialization S>
struct FwdView {
  static constexpr bool k1x1 = S != Specialization::Default;
  static constexpr bool k1x1s1 = S == Specialization::Filter1x1Stride1Pad0;
  const ConvArgs& p;
  int g;

  CKGEN_DEVICE FwdView(const ConvArgs& args, int group, int /*cls*/) : p(args), g(group) {}
  CKGEN_DEVICE int M() const { return p.M; }
  CKGEN_DEVICE int N() const { return p.Ng; }
  CKGEN_DEVICE int K() const { return p.Kred; }

  // The address splits into a row part (image, output position: `base` holds the offset of
  // the row's first tap, b* its input coordinates) and a reduction part (`off` = the tap's
  // offset from there plus the channel, o* the tap's coordinate offsets), so a_ptr adds two
  // offsets and checks the bounds: the loaders compute the reduction part once per k step.
  struct AFix { int64_t base; int b0, b1, b2; bool ok; };
  struct AK { int64_t off; int o0, o1, o2; bool ok; };
  CKGEN_DEVICE AFix a_fix(int m) const {
    AFix f;
    f.ok = m < p.M;
    if (!f.ok) m = 0;
    if constexpr (k1x1s1) {
      f.base = int64_t(m) * p.GC + int64_t(g) * p.C;
      f.b0 = f.b1 = f.b2 = 0;
    } else {
      int q, o0, o1, o2;
      p.fd_out[2].divmod(m, q, o2);
      p.fd_out[1].divmod(q, q, o1);
      p.fd_out[0].divmod(q, q, o0);
      f.b0 = o0 * p.s[0] - p.pl[0];
      f.b1 = o1 * p.s[1] - p.pl[1];
      f.b2 = o2 * p.s[2] - p.pl[2];
      f.base = int64_t(q) * p.in_spatial * p.GC + int64_t(g) * p.C +
               int64_t((f.b0 * p.in_[1] + f.b1) * p.in_[2] + f.b2) * p.GC;
    }
    return f;
  }
  CKGEN_DEVICE AK a_k(int k) const {
    AK r;
    r.ok = k < p.Kred;
    if constexpr (k1x1) {
      r.off = k;
      r.o0 = r.o1 = r.o2 = 0;
    } else {
      int q, c, x, y, z;
      p.fd_C.divmod(k, q, c);
      p.fd_fil[2].divmod(q, q, x);
      p.fd_fil[1].divmod(q, z, y);
      r.o0 = z * p.dil[0];
      r.o1 = y * p.dil[1];
      r.o2 = x * p.dil[2];
      r.off = int64_t((r.o0 * p.in_[1] + r.o1) * p.in_[2] + r.o2) * p.GC + c;
    }
    return r;
  }
  CKGEN_DEVICE const Raw* a_ptr(const AFix& f, const AK& k, bool& ok) const {
    ok = f.ok && k.ok;
    if constexpr (!k1x1)
      ok = ok && detail::in_range(f.b0 + k.o0, p.in_[0]) && detail::in_range(f.b1 + k.o1, p.in_[1]) &&
           detail::in_range(f.b2 + k.o2, p.in_[2]);
    return static_cast<const Raw*>(p.in) + (ok ? f.base + k.off : 0);
  }

  struct BFix { int64_t base; bool ok; };
  struct BK { int k; bool ok; };
  CKGEN_DEVICE BFix b_fix(int n) const {
    BFix f;
    f.ok = n < p.K;
    f.base = (int64_t(g) * p.K + (f.ok ? n : 0)) * p.ZYXC;
    return f;
  }
  CKGEN_DEVICE BK b_k(int k) const { return BK{k, k < p.Kred}; }
  CKGEN_DEVICE const Raw* b_ptr(const BFix& f, const BK& k, bool& ok) const {
    ok = f.ok && k.ok;
    return static_cast<const Raw*>(p.wei) + (ok ? f.base + k.k : 0);
  }

  CKGEN_DEVICE int64_t c_row(int m) const { return int64_t(m) * p.GK + int64_t(g) * p.K; }
  // The output channel of GEMM column n (a fused epilogue's per-channel index g * K + k).
  CKGEN_DEVICE int64_t c_chan(int n) const { return int64_t(g) * p.K + n; }
};

// ------------------------------------------------------------------------------------------
// backward_data, one stride residue class per block row (blockIdx.y = g * classes + class):
//   positions hi = r + s*i (per dim), taps f = f0 + j*fstep; ho = i + off0 - j*dstep.
//   A[m=(n,i), k=(j,kc)] = dy[n, ho, g, kc], B[k=(j,kc), c] = w[g, kc, f, c],
//   C[m, c] = dx[n, hi, g, c]. A class without taps has K()=0 and stores zeros.
// ------------------------------------------------------------------------------------------
template <typename Raw, Specialization S>
struct BwdDataView {
  const ConvArgs& p;
  int g;
  DimClass dc[3];
  FastDiv fd_cnt[3], fd_taps[3];
  int M_, K_;

  CKGEN_DEVICE BwdDataView(const ConvArgs& args, int group, int cls) : p(args), g(group) {
    int64_t mm = p.N, kk = p.K;
    load_dim_classes(p, cls, dc, fd_cnt, fd_taps);
    for (int i = 0; i < 3; ++i) {
      mm *= dc[i].cnt;
      kk *= dc[i].taps;
    }
    M_ = int(mm);
    K_ = int(kk);
  }
  CKGEN_DEVICE int M() const { return M_; }
  CKGEN_DEVICE int N() const { return p.C; }
  CKGEN_DEVICE int K() const { return K_; }

  // As in FwdView: `base` is the offset of the row's own output position, `aoff` the tap's
  // offset from there plus the channel, so a_ptr adds two offsets and checks the bounds.
  struct AFix { int64_t base; int i0, i1, i2; bool ok; };
  struct AK { int kc, o0, o1, o2; int64_t aoff, woff; bool ok; };

  CKGEN_DEVICE void split_m(int m, int& n, int& i0, int& i1, int& i2) const {
    int q;
    fd_cnt[2].divmod(m, q, i2);
    fd_cnt[1].divmod(q, q, i1);
    fd_cnt[0].divmod(q, n, i0);
  }
  CKGEN_DEVICE AFix a_fix(int m) const {
    AFix f;
    f.ok = m < M_;
    if (!f.ok) m = 0;
    int n;
    split_m(m, n, f.i0, f.i1, f.i2);
    f.base = int64_t(n) * p.out_spatial * p.GK + int64_t(g) * p.K +
             int64_t((f.i0 * p.out_[1] + f.i1) * p.out_[2] + f.i2) * p.GK;
    return f;
  }
  CKGEN_DEVICE AK a_k(int k) const {
    AK r;
    r.ok = k < K_;
    int q, j0, j1, j2;
    p.fd_K.divmod(k, q, r.kc);
    fd_taps[2].divmod(q, q, j2);
    fd_taps[1].divmod(q, j0, j1);
    r.o0 = dc[0].off0 - j0 * dc[0].dstep;
    r.o1 = dc[1].off0 - j1 * dc[1].dstep;
    r.o2 = dc[2].off0 - j2 * dc[2].dstep;
    const int f0 = dc[0].f0 + j0 * dc[0].fstep;
    const int f1 = dc[1].f0 + j1 * dc[1].fstep;
    const int f2 = dc[2].f0 + j2 * dc[2].fstep;
    r.woff = int64_t(r.kc) * p.ZYXC + int64_t((f0 * p.fil[1] + f1) * p.fil[2] + f2) * p.C;
    r.aoff = int64_t((r.o0 * p.out_[1] + r.o1) * p.out_[2] + r.o2) * p.GK + r.kc;
    return r;
  }
  CKGEN_DEVICE const Raw* a_ptr(const AFix& f, const AK& k, bool& ok) const {
    ok = f.ok && k.ok && detail::in_range(f.i0 + k.o0, p.out_[0]) &&
         detail::in_range(f.i1 + k.o1, p.out_[1]) && detail::in_range(f.i2 + k.o2, p.out_[2]);
    return static_cast<const Raw*>(p.out) + (ok ? f.base + k.aoff : 0);
  }

  // B is contiguous along n (= c): fix = the column, k = the row (tap, kc).
  struct BFix { int64_t base; bool ok; };
  using BK = AK;
  CKGEN_DEVICE BFix b_fix(int c) const {
    BFix f;
    f.ok = c < p.C;
    f.base = int64_t(g) * p.K * p.ZYXC + (f.ok ? c : 0);
    return f;
  }
  CKGEN_DEVICE BK b_k(int k) const { return a_k(k); }
  CKGEN_DEVICE const Raw* b_ptr(const BFix& f, const BK& k, bool& ok) const {
    ok = f.ok && k.ok;
    return static_cast<const Raw*>(p.wei) + (ok ? f.base + k.woff : 0);
  }

  CKGEN_DEVICE int64_t c_row(int m) const {
    int n, i0, i1, i2;
    split_m(m, n, i0, i1, i2);
    const int h0 = dc[0].r + p.s[0] * i0, h1 = dc[1].r + p.s[1] * i1, h2 = dc[2].r + p.s[2] * i2;
    return int64_t(n * p.in_spatial + (h0 * p.in_[1] + h1) * p.in_[2] + h2) * p.GC +
           int64_t(g) * p.C;
  }
};

// ------------------------------------------------------------------------------------------
// backward_weight: M = K, N = (z,y,x,c), Kred = (n, o).
//   A[kr, m] = dy[kr, g, m] (contiguous along m), B[kr, (f,c)] = x[n, o*s - pl + f*d, g, c]
//   (contiguous along c), C[m, (f,c)] = dw[g, m, f, c].
// ------------------------------------------------------------------------------------------
template <typename Raw, Specialization S>
struct BwdWeightView {
  static constexpr bool k1x1 = S != Specialization::Default;
  static constexpr bool k1x1s1 = S == Specialization::Filter1x1Stride1Pad0;
  const ConvArgs& p;
  int g;

  CKGEN_DEVICE BwdWeightView(const ConvArgs& args, int group, int /*cls*/) : p(args), g(group) {}
  CKGEN_DEVICE int M() const { return p.K; }
  CKGEN_DEVICE int N() const { return p.ZYXC; }
  CKGEN_DEVICE int K() const { return p.Kred; }

  struct AFix { int64_t base; bool ok; };
  struct AK { int64_t off; bool ok; };
  CKGEN_DEVICE AFix a_fix(int m) const {
    AFix f;
    f.ok = m < p.K;
    f.base = int64_t(g) * p.K + (f.ok ? m : 0);
    return f;
  }
  CKGEN_DEVICE AK a_k(int k) const { return AK{int64_t(k) * p.GK, k < p.Kred}; }
  CKGEN_DEVICE const Raw* a_ptr(const AFix& f, const AK& k, bool& ok) const {
    ok = f.ok && k.ok;
    return static_cast<const Raw*>(p.out) + (ok ? f.base + k.off : 0);
  }

  struct BFix { int64_t cbase; int o0, o1, o2; bool ok; };
  struct BK { int64_t nbase; int b0, b1, b2; bool ok; };
  CKGEN_DEVICE BFix b_fix(int n) const {
    BFix f;
    f.ok = n < p.ZYXC;
    if (!f.ok) n = 0;
    if constexpr (k1x1) {
      f.cbase = int64_t(g) * p.C + n;
      f.o0 = f.o1 = f.o2 = 0;
    } else {
      int q, c, x, y, z;
      p.fd_C.divmod(n, q, c);
      p.fd_fil[2].divmod(q, q, x);
      p.fd_fil[1].divmod(q, z, y);
      f.cbase = int64_t(g) * p.C + c;
      f.o0 = z * p.dil[0] - p.pl[0];
      f.o1 = y * p.dil[1] - p.pl[1];
      f.o2 = x * p.dil[2] - p.pl[2];
    }
    return f;
  }
  CKGEN_DEVICE BK b_k(int k) const {
    BK r;
    r.ok = k < p.Kred;
    if (!r.ok) k = 0;
    if constexpr (k1x1s1) {
      r.nbase = int64_t(k) * p.GC;
      r.b0 = r.b1 = r.b2 = 0;
    } else {
      int q, o0, o1, o2;
      p.fd_out[2].divmod(k, q, o2);
      p.fd_out[1].divmod(q, q, o1);
      p.fd_out[0].divmod(q, q, o0);
      r.nbase = int64_t(q) * p.in_spatial;
      r.b0 = o0 * p.s[0];
      r.b1 = o1 * p.s[1];
      r.b2 = o2 * p.s[2];
    }
    return r;
  }
  CKGEN_DEVICE const Raw* b_ptr(const BFix& f, const BK& k, bool& ok) const {
    const Raw* base = static_cast<const Raw*>(p.in);
    int64_t off;
    ok = f.ok && k.ok;
    if constexpr (k1x1s1) {
      off = k.nbase + f.cbase;
    } else {
      const int d = k.b0 + f.o0, h = k.b1 + f.o1, w = k.b2 + f.o2;
      if constexpr (!k1x1)
        ok = ok && detail::in_range(d, p.in_[0]) && detail::in_range(h, p.in_[1]) &&
             detail::in_range(w, p.in_[2]);
      off = (k.nbase + (d * p.in_[1] + h) * p.in_[2] + w) * p.GC + f.cbase;
    }
    return base + (ok ? off : 0);
  }

  CKGEN_DEVICE int64_t c_row(int m) const { return (int64_t(g) * p.K + m) * p.ZYXC; }
};

}  // namespace ckgen
