// Merged-group views (groups_to_merge GM > 1, forward / backward_data): GM groups of one block
// as one block-diagonal GEMM.
#pragma once

#include <cstdint>

#include "ckgen/conv/views.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// groups_to_merge (GM > 1), forward: one block computes GM consecutive groups g0 = blk*GM ..
// as one block-diagonal GEMM. Reduction order k = (z, y, x, g', c) so that A runs over the
// merged channel run (g', c) contiguous in NDHWGC (vector width divides GM*C); columns
// n = (g, k) are contiguous in NDHWGK. B[k, n] = w[g0+g, k, z, y, x, c] when g' == g, else a
// structural zero (the off-diagonal blocks: GM times the useful MACs, cheap where C, K are
// tiny and the problem is memory/latency bound).
//   M = N*Do*Ho*Wo, N = GM*K, K = Z*Y*X*GM*C.
// ------------------------------------------------------------------------------------------
template <typename Raw, int GM>
struct FwdMergedView {
  static constexpr bool kL1A = true;  // taps re-read A within a block: keep it in L1
  const ConvArgs& p;
  int g0;

  CKGEN_DEVICE FwdMergedView(const ConvArgs& args, int blk, int /*cls*/) : p(args), g0(blk * GM) {}
  CKGEN_DEVICE int M() const { return p.M; }
  CKGEN_DEVICE int N() const { return p.Ng; }
  CKGEN_DEVICE int K() const { return p.Kred; }

  struct AFix { int64_t base; int b0, b1, b2; bool ok; };
  struct AK { int c, o0, o1, o2; bool ok; };
  CKGEN_DEVICE AFix a_fix(int m) const {
    AFix f;
    f.ok = m < p.M;
    if (!f.ok) m = 0;
    int q, o0, o1, o2;
    p.fd_out[2].divmod(m, q, o2);
    p.fd_out[1].divmod(q, q, o1);
    p.fd_out[0].divmod(q, q, o0);
    f.base = int64_t(q) * p.in_spatial * p.GC + int64_t(g0) * p.C;
    f.b0 = o0 * p.s[0] - p.pl[0];
    f.b1 = o1 * p.s[1] - p.pl[1];
    f.b2 = o2 * p.s[2] - p.pl[2];
    return f;
  }
  CKGEN_DEVICE AK a_k(int k) const {
    AK r;
    r.ok = k < p.Kred;
    int q, x, y, z;
    p.fd_gmC.divmod(k, q, r.c);  // r.c = g'*C + c
    p.fd_fil[2].divmod(q, q, x);
    p.fd_fil[1].divmod(q, z, y);
    r.o0 = z * p.dil[0];
    r.o1 = y * p.dil[1];
    r.o2 = x * p.dil[2];
    return r;
  }
  CKGEN_DEVICE const Raw* a_ptr(const AFix& f, const AK& k, bool& ok) const {
    const int d = f.b0 + k.o0, h = f.b1 + k.o1, w = f.b2 + k.o2;
    ok = f.ok && k.ok && detail::in_range(d, p.in_[0]) && detail::in_range(h, p.in_[1]) &&
         detail::in_range(w, p.in_[2]);
    const int64_t off = f.base + int64_t((d * p.in_[1] + h) * p.in_[2] + w) * p.GC + k.c;
    return static_cast<const Raw*>(p.in) + (ok ? off : 0);
  }

  struct BFix { int64_t base; int g; bool ok; };
  struct BK { int off, g; bool ok; };
  CKGEN_DEVICE BFix b_fix(int n) const {
    BFix f;
    f.ok = n < p.Ng;
    if (!f.ok) n = 0;
    int g, kk;
    p.fd_K.divmod(n, g, kk);
    f.g = g;
    f.base = (int64_t(g0 + g) * p.K + kk) * p.ZYXC;
    return f;
  }
  CKGEN_DEVICE BK b_k(int k) const {
    BK r;
    r.ok = k < p.Kred;
    if (!r.ok) k = 0;
    int t, gc, gp, c;
    p.fd_gmC.divmod(k, t, gc);  // t = tap (z,y,x)
    p.fd_C.divmod(gc, gp, c);
    r.g = gp;
    r.off = t * p.C + c;
    return r;
  }
  CKGEN_DEVICE const Raw* b_ptr(const BFix& f, const BK& k, bool& ok) const {
    ok = f.ok && k.ok && f.g == k.g;
    return static_cast<const Raw*>(p.wei) + (ok ? f.base + k.off : 0);
  }

  CKGEN_DEVICE int64_t c_row(int m) const { return int64_t(m) * p.GK + int64_t(g0) * p.K; }
  // The output channel of GEMM column n (a fused epilogue's per-channel index g * K + k).
  CKGEN_DEVICE int64_t c_chan(int n) const { return int64_t(g0) * p.K + n; }
};

// ------------------------------------------------------------------------------------------
// groups_to_merge (GM > 1), backward_data: GM groups per block, per stride class.
// Reduction order k = (taps, g', kc): A runs over (g', kc), contiguous in NDHWGK; columns
// n = (g, c) are contiguous in NDHWGC. B[k, n] = w[g0+g, kc, f, c] when g' == g, else zero.
//   M = N * class positions, N = GM*C, K = taps*GM*K.
// ------------------------------------------------------------------------------------------
template <typename Raw, int GM>
struct BwdDataMergedView {
  static constexpr bool kL1A = true;
  const ConvArgs& p;
  int g0;
  DimClass dc[3];
  FastDiv fd_cnt[3], fd_taps[3];
  int M_, K_;

  CKGEN_DEVICE BwdDataMergedView(const ConvArgs& args, int blk, int cls) : p(args), g0(blk * GM) {
    int64_t mm = p.N, kk = int64_t(p.K) * GM;
    load_dim_classes(p, cls, dc, fd_cnt, fd_taps);
    for (int i = 0; i < 3; ++i) {
      mm *= dc[i].cnt;
      kk *= dc[i].taps;
    }
    M_ = int(mm);
    K_ = int(kk);
  }
  CKGEN_DEVICE int M() const { return M_; }
  CKGEN_DEVICE int N() const { return p.Ng; }
  CKGEN_DEVICE int K() const { return K_; }

  struct AFix { int64_t base; int i0, i1, i2; bool ok; };
  struct AK { int gk, g, o0, o1, o2; int64_t woff; bool ok; };

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
    f.base = int64_t(n) * p.out_spatial * p.GK + int64_t(g0) * p.K;
    return f;
  }
  CKGEN_DEVICE AK a_k(int k) const {
    AK r;
    r.ok = k < K_;
    if (!r.ok) k = 0;
    int q, j0, j1, j2, kc;
    p.fd_gmK.divmod(k, q, r.gk);  // gk = g'*K + kc
    p.fd_K.divmod(r.gk, r.g, kc);
    fd_taps[2].divmod(q, q, j2);
    fd_taps[1].divmod(q, j0, j1);
    r.o0 = dc[0].off0 - j0 * dc[0].dstep;
    r.o1 = dc[1].off0 - j1 * dc[1].dstep;
    r.o2 = dc[2].off0 - j2 * dc[2].dstep;
    const int f0 = dc[0].f0 + j0 * dc[0].fstep;
    const int f1 = dc[1].f0 + j1 * dc[1].fstep;
    const int f2 = dc[2].f0 + j2 * dc[2].fstep;
    r.woff = int64_t(kc) * p.ZYXC + int64_t((f0 * p.fil[1] + f1) * p.fil[2] + f2) * p.C;
    return r;
  }
  CKGEN_DEVICE const Raw* a_ptr(const AFix& f, const AK& k, bool& ok) const {
    const int d = f.i0 + k.o0, h = f.i1 + k.o1, w = f.i2 + k.o2;
    ok = f.ok && k.ok && detail::in_range(d, p.out_[0]) && detail::in_range(h, p.out_[1]) &&
         detail::in_range(w, p.out_[2]);
    const int64_t off = f.base + int64_t((d * p.out_[1] + h) * p.out_[2] + w) * p.GK + k.gk;
    return static_cast<const Raw*>(p.out) + (ok ? off : 0);
  }

  struct BFix { int64_t base; int g; bool ok; };
  using BK = AK;
  CKGEN_DEVICE BFix b_fix(int n) const {
    BFix f;
    f.ok = n < p.Ng;
    if (!f.ok) n = 0;
    int g, c;
    p.fd_C.divmod(n, g, c);
    f.g = g;
    f.base = int64_t(g0 + g) * p.K * p.ZYXC + c;
    return f;
  }
  CKGEN_DEVICE BK b_k(int k) const { return a_k(k); }
  CKGEN_DEVICE const Raw* b_ptr(const BFix& f, const BK& k, bool& ok) const {
    ok = f.ok && k.ok && f.g == k.g;
    return static_cast<const Raw*>(p.wei) + (ok ? f.base + k.woff : 0);
  }

  CKGEN_DEVICE int64_t c_row(int m) const {
    int n, i0, i1, i2;
    split_m(m, n, i0, i1, i2);
    const int h0 = dc[0].r + p.s[0] * i0, h1 = dc[1].r + p.s[1] * i1, h2 = dc[2].r + p.s[2] * i2;
    return int64_t(n * p.in_spatial + (h0 * p.in_[1] + h1) * p.in_[2] + h2) * p.GC +
           int64_t(g0) * p.C;
  }
};

}  // namespace ckgen
