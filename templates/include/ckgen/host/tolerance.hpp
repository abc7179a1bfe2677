// Error thresholds (CK's calculate_rtol_atol idea) and result comparison.
//
// Thresholds, with eps(m) = 2^-m / 2 (half an ulp at 1.0 for m mantissa bits):
//   rtol = max(eps(compute), eps(out), eps(acc) * ceil(R / k_batch), eps(acc) * k_batch)
//   atol = the same terms scaled by 2^floor(log2(max |ref|))
// where R is the number of accumulations per output element (reduction length). The split
// term uses the accumulator type because every split-K / StreamK reduction goes through an
// fp32 workspace; an fp32 GPU reference adds its own accumulation term (the eps(acc) terms
// are doubled). A value fails when |out - ref| > atol + rtol * |ref|, or when it is NaN / inf,
// or when it still holds the poison pattern (never written).
//
// Compute type for fp32 data: fp32 (arch_specs.json: FMA on NVIDIA, fp32 MFMA on AMD). Set
// CKGEN_FP32_COMPUTE=tf32 when fp32 instances run on tf32/xf32 matrix units (10 mantissa bits).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/host/init.hpp"
#include "ckgen/host/reference.hpp"

namespace ckgen::host {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

inline int fp32_compute_mantissa() {
  const char* e = std::getenv("CKGEN_FP32_COMPUTE");
  if (e && std::string(e) == "tf32") return 10;
  return 23;
}

inline int compute_mantissa(DataType t) {
  return t == DataType::FP32 ? fp32_compute_mantissa() : mantissa_bits(t);
}

// Number of products summed into one output element (upper bound).
inline int64_t reduction_length(Variant v, const ConvProblem& p) {
  switch (v) {
    case Variant::Forward: return p.C * p.filter_spatial();
    case Variant::BackwardData: return p.K * p.filter_spatial();
    case Variant::BackwardWeight: return p.N * p.out_spatial();
  }
  return 1;
}

// CK's calculate_rtol_atol with explicit mantissa bits.
inline Tolerance calculate_rtol_atol(int compute_mant, int out_mant, int acc_mant,
                                     int64_t reduction, int k_batch, double max_abs_value,
                                     bool fp32_reference = false) {
  const int kb = k_batch > 0 ? k_batch : 1;
  const double per_split = double((reduction + kb - 1) / kb);
  auto eps = [](int m) { return std::ldexp(0.5, -m); };
  const double acc_terms = (fp32_reference ? 2.0 : 1.0) *
                           std::max(eps(acc_mant) * per_split, eps(acc_mant) * double(kb));
  const double unit = std::max({eps(compute_mant), eps(out_mant), acc_terms});
  Tolerance t;
  t.rtol = unit;
  const double m = max_abs_value > 0 ? max_abs_value : 1.0;
  t.atol = std::ldexp(unit, int(std::floor(std::log2(m))));
  return t;
}

// Thresholds for one check. k_batch 0 (automatic) is counted as 64 splits in the split term.
inline Tolerance tolerance_for(Variant v, DataType dt, const ConvProblem& p, int k_batch,
                               double max_abs_ref, bool fp32_reference) {
  const int64_t red = reduction_length(v, p);
  Tolerance t = calculate_rtol_atol(compute_mantissa(dt), mantissa_bits(dt), 23, red,
                                    k_batch > 0 ? k_batch : 1, max_abs_ref, fp32_reference);
  if (k_batch <= 0) {
    const Tolerance s = calculate_rtol_atol(compute_mantissa(dt), mantissa_bits(dt), 23, red,
                                            64, max_abs_ref, fp32_reference);
    t.rtol = std::max(t.rtol, s.rtol);
    t.atol = std::max(t.atol, s.atol);
  }
  return t;
}

struct CompareResult {
  bool ok = true;
  int64_t count = 0;
  int64_t n_bad = 0;       // outside tolerance (finite)
  int64_t n_nan = 0;       // NaN / inf that are not the poison pattern
  int64_t n_poison = 0;    // never written
  double max_abs_err = 0;  // over finite values
  double max_rel_err = 0;  // |err| / |ref| over finite values with ref != 0
  int64_t first_bad = -1;
  double first_bad_ref = 0, first_bad_val = 0;
  int64_t worst = -1;  // index of max_abs_err
  Tolerance tol;
  std::string label;  // what was compared when it is not the written tensor (indices plain)

  // One line: "PASS max_abs_err=... " or "FAIL 12 bad, 3 NaN, 0 unwritten of N; first bad ...".
  std::string summary(Variant v, const ConvProblem& p) const {
    std::ostringstream os;
    os.precision(3);
    if (ok) {
      os << "PASS max_abs_err=" << max_abs_err << " (atol=" << tol.atol << " rtol=" << tol.rtol
         << ")";
      return os.str();
    }
    os << "FAIL " << (label.empty() ? "" : label + ": ") << n_bad << " wrong, " << n_nan << " NaN/inf, "
       << n_poison << " unwritten of " << count;
    if (first_bad >= 0) {
      os.precision(7);
      os << "; first at " << first_bad << " " << (label.empty() ? describe_index(v, p, first_bad) : "")
         << ": got " << first_bad_val << " expected " << first_bad_ref;
    }
    os.precision(3);
    os << "; max_abs_err=" << max_abs_err << " atol=" << tol.atol << " rtol=" << tol.rtol;
    return os.str();
  }
};

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Compares `out` (host copy of the device result, datatype dt) to ref.
inline CompareResult compare_result(const std::vector<double>& ref, const void* out, DataType dt,
                                    const Tolerance& tol) {
  CompareResult r;
  r.tol = tol;
  r.count = int64_t(ref.size());
  const uint32_t poison = poison_bits(dt);
  for (int64_t i = 0; i < r.count; ++i) {
    const double e = ref[size_t(i)];
    bool bad = false;
    if (bits_host(out, i, dt) == poison) {
      ++r.n_poison;
      bad = true;
    } else {
      const double o = load_host(out, i, dt);
      if (!std::isfinite(o)) {
        ++r.n_nan;
        bad = true;
      } else {
        const double err = std::fabs(o - e);
        if (err > r.max_abs_err) {
          r.max_abs_err = err;
          r.worst = i;
        }
        if (e != 0) r.max_rel_err = std::max(r.max_rel_err, err / std::fabs(e));
        if (err > tol.atol + tol.rtol * std::fabs(e)) {
          ++r.n_bad;
          bad = true;
        }
      }
    }
    if (bad && r.first_bad < 0) {
      r.first_bad = i;
      r.first_bad_ref = e;
      r.first_bad_val = load_host(out, i, dt);
    }
  }
  r.ok = r.n_bad == 0 && r.n_nan == 0 && r.n_poison == 0;
  return r;
}

}  // namespace ckgen::host
