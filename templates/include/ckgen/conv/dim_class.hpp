// backward_data stride classes of one spatial dimension: the input positions hi = r + s*i of
// residue r, the filter taps that reach them and the output positions they read. The host fills
// a table of them per call (ConvArgs::cls), so a block reads its class instead of deriving it
// (a gcd, remainders and two divisor set-ups per dimension).
#pragma once

#include "ckgen/core/fast_div.hpp"
#include "ckgen/core/portability.hpp"

namespace ckgen {

//   positions hi = r + s*i (i < cnt), taps f = f0 + j*fstep (j < taps); ho = i + off0 - j*dstep.
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

// A class with its divisors (positions, taps). Strides up to kClassTableStride are tabled.
struct DimClassEntry {
  DimClass dc;
  FastDiv cnt, taps;
};
inline constexpr int kClassTableStride = 4;

CKGEN_HOST_DEVICE inline DimClassEntry make_dim_class_entry(int r, int in, int fil, int s, int d, int pl) {
  DimClassEntry e;
  e.dc = make_dim_class(r, in, fil, s, d, pl);
  e.cnt.init(e.dc.cnt);
  e.taps.init(e.dc.taps);
  return e;
}

}  // namespace ckgen
