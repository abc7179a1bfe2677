// Implicit-GEMM index maps, one "view" per variant (DESIGN's implicit-GEMM table).
//
// A view is built per block on the device from ConvArgs (host-filled once per call) and the
// block's group / class index. It answers, for the block's GEMM (per group, per class):
//   M(), N(), K()                 the GEMM sizes
//   a_fix(mn) / a_k(k) / a_ptr(fix, k, ok)  where element A[m, k..] (or A[m.., k]) lives;
//                                 ok = false for a structural zero (padding, outside the GEMM),
//                                 and then the pointer is the tensor base (always a valid
//                                 address, so loads can be issued unconditionally: no branch)
//   b_fix(mn) / b_k(k) / b_ptr()  same for B[k, n]
//   c_row(m)                      element offset of C[m, 0] (C is contiguous along n)
// The `fix` part depends only on the M/N coordinate (computed once per block), the `k` part
// only on the reduction coordinate (computed every k step), so loaders split the index math.
// A vector of V elements along the contiguous dim never crosses a channel run: is_supported
// checks the channel counts are multiples of V, and the tile starts are V aligned.
//
// All tensor offsets are 64-bit; GEMM coordinates and per-image spatial products are < 2^31
// (is_supported refuses larger problems).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/fast_div.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/schedule/streamk_plan.hpp"

namespace ckgen {

// Output mode of the epilogue.
enum class OutMode : int {
  Direct = 0,      // convert and store to the output tensor
  AtomicF32 = 1,   // fp32 atomicAdd into the workspace (split-K, one stage)
  PartialF32 = 2,  // fp32 store into the split's slice of the workspace (split-K, two stages)
};

struct ConvArgs {
  const void* in = nullptr;
  const void* wei = nullptr;
  const void* out = nullptr;
  void* dst = nullptr;  // the written tensor (one of the three, non-const)
  float* ws = nullptr;

  int G, N, C, K;
  int in_[3], out_[3], fil[3], s[3], dil[3], pl[3];
  int in_spatial, out_spatial, ZYX, ZYXC;
  int64_t GC, GK;
  FastDiv fd_C, fd_K, fd_fil[3], fd_out[3];

  int M, Ng, Kred;   // GEMM sizes per group (backward_data: of the largest class)
  int tiles_n;       // blocks along GEMM N
  int num_classes;   // backward_data stride classes (1 otherwise)
  int k_batch;       // splits of Kred (backward_weight), 1 otherwise
  int k_chunk;       // Kred elements per split (a multiple of the block tile K)
  OutMode out_mode;
  int64_t ws_split_stride;  // elements per split slice (PartialF32)
  // groups_to_merge (kGroupsToMerge > 1): gm groups per block; fd_gmC / fd_gmK divide by
  // gm*C / gm*K (the merged channel runs, contiguous in NDHWGC / NDHWGK).
  int gm = 1;
  FastDiv fd_gmC, fd_gmK;
  // StreamK (backward_weight, Reduction::StreamKLinear / StreamKTree): see schedule/streamk_plan.hpp.
  StreamKArgs sk;
};

namespace detail {
CKGEN_HOST_DEVICE inline bool in_range(int v, int n) { return unsigned(v) < unsigned(n); }
}  // namespace detail

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
};

// ------------------------------------------------------------------------------------------
// backward_data, one stride residue class per block row (blockIdx.y = g * classes + class):
//   positions hi = r + s*i (per dim), taps f = f0 + j*fstep; ho = i + off0 - j*dstep.
//   A[m=(n,i), k=(j,kc)] = dy[n, ho, g, kc], B[k=(j,kc), c] = w[g, kc, f, c],
//   C[m, c] = dx[n, hi, g, c]. A class without taps has K()=0 and stores zeros.
// ------------------------------------------------------------------------------------------
struct DimClass {
  int r, cnt, taps, f0, fstep, off0, dstep;
};

CKGEN_HOST_DEVICE inline DimClass make_dim_class(int r, int in, int fil, int s, int d, int pl) {
  DimClass c;
  c.r = r;
  c.cnt = r < in ? (in - r + s - 1) / s : 0;
  int a = s, b = d;
  while (b != 0) {
    const int t = a % b;
    a = b;
    b = t;
  }
  c.fstep = s / a;
  c.dstep = d / a;
  c.f0 = -1;
  const int lim = fil < c.fstep ? fil : c.fstep;
  for (int f = 0; f < lim; ++f) {
    const int t = r + pl - f * d;
    if (((t % s) + s) % s == 0) {
      c.f0 = f;
      break;
    }
  }
  if (c.f0 < 0) {
    c.taps = 0;
    c.off0 = 0;
    c.f0 = 0;
  } else {
    c.taps = (fil - 1 - c.f0) / c.fstep + 1;
    c.off0 = (r + pl - c.f0 * d) / s;  // exact
  }
  return c;
}

template <typename Raw, Specialization S>
struct BwdDataView {
  const ConvArgs& p;
  int g;
  DimClass dc[3];
  FastDiv fd_cnt[3], fd_taps[3];
  int M_, K_;

  CKGEN_DEVICE BwdDataView(const ConvArgs& args, int group, int cls) : p(args), g(group) {
    int r2 = cls % p.s[2];
    int q = cls / p.s[2];
    int r1 = q % p.s[1];
    int r0 = q / p.s[1];
    const int rr[3] = {r0, r1, r2};
    int64_t mm = p.N, kk = p.K;
    for (int i = 0; i < 3; ++i) {
      dc[i] = make_dim_class(rr[i], p.in_[i], p.fil[i], p.s[i], p.dil[i], p.pl[i]);
      fd_cnt[i].init(dc[i].cnt);
      fd_taps[i].init(dc[i].taps);
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
    int r2 = cls % p.s[2];
    int q = cls / p.s[2];
    int r1 = q % p.s[1];
    int r0 = q / p.s[1];
    const int rr[3] = {r0, r1, r2};
    int64_t mm = p.N, kk = int64_t(p.K) * GM;
    for (int i = 0; i < 3; ++i) {
      dc[i] = make_dim_class(rr[i], p.in_[i], p.fil[i], p.s[i], p.dil[i], p.pl[i]);
      fd_cnt[i].init(dc[i].cnt);
      fd_taps[i].init(dc[i].taps);
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

// Whether the A operand's cp.async copies go through L1 (async_copy_zfill<.., L1>): an
// optional Config::kCacheA (1 / 0) decides, else the view's kL1A (merged views: true).
template <class C, class = void> struct config_cache_a { static constexpr int value = -1; };
template <class C> struct config_cache_a<C, std::void_t<decltype(C::kCacheA)>> {
  static constexpr int value = C::kCacheA == 0 ? 0 : C::kCacheA == 1 ? 1 : -1;
};
template <class V, class = void> struct view_l1_a { static constexpr bool value = false; };
template <class V> struct view_l1_a<V, std::void_t<decltype(V::kL1A)>> {
  static constexpr bool value = V::kL1A;
};
template <class C, class V>
constexpr bool cache_a_l1() {
  return config_cache_a<C>::value == 1 || (config_cache_a<C>::value == -1 && view_l1_a<V>::value);
}

// GM: groups merged per block (kGroupsToMerge); GM > 1 selects the merged views
// (forward / backward_data only).
template <Variant V, typename Raw, Specialization S, int GM = 1> struct ViewFor;
template <typename Raw, Specialization S> struct ViewFor<Variant::Forward, Raw, S, 1> {
  using type = FwdView<Raw, S>;
};
template <typename Raw, Specialization S> struct ViewFor<Variant::BackwardData, Raw, S, 1> {
  using type = BwdDataView<Raw, S>;
};
template <typename Raw, Specialization S> struct ViewFor<Variant::BackwardWeight, Raw, S, 1> {
  using type = BwdWeightView<Raw, S>;
};
template <typename Raw, Specialization S, int GM> struct ViewFor<Variant::Forward, Raw, S, GM> {
  using type = FwdMergedView<Raw, GM>;
};
template <typename Raw, Specialization S, int GM> struct ViewFor<Variant::BackwardData, Raw, S, GM> {
  using type = BwdDataMergedView<Raw, GM>;
};

}  // namespace ckgen
