// Division by a run-time constant with a multiply-high and a shift (dividends < 2^31).
#pragma once

#include <cstdint>

#include "ckgen/core/portability.hpp"

namespace ckgen {

struct FastDiv {
  uint32_t d = 1, mul = 0, shr = 0;

  FastDiv() = default;
  CKGEN_HOST_DEVICE explicit FastDiv(int64_t divisor) { init(divisor); }

  CKGEN_HOST_DEVICE void init(int64_t divisor) {
    d = divisor < 1 ? 1u : uint32_t(divisor);
    mul = 0;
    shr = 0;
    if (d != 1) {
      uint32_t l = 0;
      while ((uint64_t(1) << l) < d) ++l;  // ceil(log2(d))
      const uint32_t p = 31 + l;
      mul = uint32_t(((uint64_t(1) << p) + d - 1) / d);
      shr = p - 32;
    }
  }

  // n must be in [0, 2^31).
  CKGEN_HOST_DEVICE int div(int n) const {
    const int q = int(uint32_t((uint64_t(uint32_t(n)) * mul) >> 32) >> shr);
    return d == 1 ? n : q;  // a select, no branch
  }
  CKGEN_HOST_DEVICE void divmod(int n, int& q, int& r) const {
    q = div(n);
    r = n - q * int(d);
  }
  CKGEN_HOST_DEVICE int value() const { return int(d); }
};

}  // namespace ckgen
