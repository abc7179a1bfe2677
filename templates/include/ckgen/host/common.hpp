// Host harness basics: datatype facts and bit-exact 16-bit float conversions (written here on
// raw bits, independent of the kernels' half_t / bf16_t), GPU runtime helpers (device buffers,
// availability check, errors), a tiny command-line parser and an fnmatch-style glob.
//
// Header-only; compile as CUDA (nvcc -x cu) or HIP (hipcc).
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/names.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen::host {

// ------------------------------------------------------------------------------------------
// Datatypes
// ------------------------------------------------------------------------------------------
inline constexpr DataType kAllDataTypes[] = {DataType::FP16, DataType::BF16, DataType::FP32};
inline constexpr Variant kAllVariants[] = {Variant::Forward, Variant::BackwardData,
                                           Variant::BackwardWeight};

inline std::size_t dtype_bytes(DataType t) { return std::size_t(elem_bytes(t)); }

// Explicit mantissa bits (without the implicit one).
inline int mantissa_bits(DataType t) {
  switch (t) {
    case DataType::FP16: return 10;
    case DataType::BF16: return 7;
    case DataType::FP32: return 23;
  }
  return 23;
}

inline bool parse_datatype(const std::string& s, DataType& out) {
  return parse_name(s, kAllDataTypes, out);
}

inline bool parse_variant(const std::string& s, Variant& out) {
  return parse_name(s, kAllVariants, out);
}

// ------------------------------------------------------------------------------------------
// Bit conversions (round to nearest even), host and device
// ------------------------------------------------------------------------------------------
CKGEN_HOST_DEVICE inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
CKGEN_HOST_DEVICE inline float bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

CKGEN_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0) {
    const float v = float(m) * 5.9604644775390625e-8f;  // m * 2^-24
    return (h & 0x8000u) ? -v : v;
  }
  if (e == 31) return bits_to_f32(sign | 0x7f800000u | (m << 13));
  return bits_to_f32(sign | ((e + 112u) << 23) | (m << 13));
}

CKGEN_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                   // below 2^-14: subnormal / zero
    const uint32_t e = ax >> 23;
    if (e < 102) return uint16_t(sign);
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t h = (ax - 0x38000000u) >> 13;
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

CKGEN_HOST_DEVICE inline float bf16_bits_to_float(uint16_t b) {
  return bits_to_f32(uint32_t(b) << 16);
}

CKGEN_HOST_DEVICE inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// Typed element access by a compile-time datatype code (0 fp16, 1 bf16, 2 fp32).
template <DataType DT>
struct Elem;
template <>
struct Elem<DataType::FP16> {
  using storage = uint16_t;
  CKGEN_HOST_DEVICE static float load(const void* p, int64_t i) {
    return half_bits_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  CKGEN_HOST_DEVICE static void store(void* p, int64_t i, float v) {
    static_cast<uint16_t*>(p)[i] = float_to_half_bits(v);
  }
};
template <>
struct Elem<DataType::BF16> {
  using storage = uint16_t;
  CKGEN_HOST_DEVICE static float load(const void* p, int64_t i) {
    return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  CKGEN_HOST_DEVICE static void store(void* p, int64_t i, float v) {
    static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(v);
  }
};
template <>
struct Elem<DataType::FP32> {
  using storage = float;
  CKGEN_HOST_DEVICE static float load(const void* p, int64_t i) {
    return static_cast<const float*>(p)[i];
  }
  CKGEN_HOST_DEVICE static void store(void* p, int64_t i, float v) {
    static_cast<float*>(p)[i] = v;
  }
};

// Runtime-dispatched host access (slow path; fine for host copies).
inline double load_host(const void* p, int64_t i, DataType t) {
  switch (t) {
    case DataType::FP16: return Elem<DataType::FP16>::load(p, i);
    case DataType::BF16: return Elem<DataType::BF16>::load(p, i);
    case DataType::FP32: return Elem<DataType::FP32>::load(p, i);
  }
  return 0;
}
inline void store_host(void* p, int64_t i, DataType t, float v) {
  switch (t) {
    case DataType::FP16: Elem<DataType::FP16>::store(p, i, v); break;
    case DataType::BF16: Elem<DataType::BF16>::store(p, i, v); break;
    case DataType::FP32: Elem<DataType::FP32>::store(p, i, v); break;
  }
}
// Raw bits of element i (for poison detection).
inline uint32_t bits_host(const void* p, int64_t i, DataType t) {
  if (t == DataType::FP32) return static_cast<const uint32_t*>(p)[i];
  return static_cast<const uint16_t*>(p)[i];
}

// Calls f.template operator()<DT>() with the datatype as a compile-time constant.
template <typename F>
auto dispatch_datatype(DataType t, F&& f) {
  switch (t) {
    case DataType::FP16: return f(std::integral_constant<DataType, DataType::FP16>{});
    case DataType::BF16: return f(std::integral_constant<DataType, DataType::BF16>{});
    default: return f(std::integral_constant<DataType, DataType::FP32>{});
  }
}

// ------------------------------------------------------------------------------------------
// GPU runtime helpers
// ------------------------------------------------------------------------------------------
class GpuFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline std::string gpu_error_string(gpuError_t e) {
  const char* s = gpuGetErrorString(e);
  return s ? s : "unknown error";
}

// Throws GpuFailure naming the call when e is not success.
inline void gpu_check(gpuError_t e, const char* what) {
  if (e != gpuSuccess) throw GpuFailure(std::string(what) + ": " + gpu_error_string(e));
}
#define CKGEN_GPU_CHECK(call) ::ckgen::host::gpu_check((call), #call)

// True when a usable GPU exists; else false with the reason in *why. Cached.
inline bool gpu_available(std::string* why = nullptr) {
  static int state = -1;
  static std::string reason;
  if (state < 0) {
    int n = 0;
    const gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess) {
      reason = "device query failed: " + gpu_error_string(e);
      (void)gpuGetLastError();
      state = 0;
    } else if (n <= 0) {
      reason = "no GPU device found";
      state = 0;
    } else {
      state = 1;
    }
  }
  if (why) *why = reason;
  return state == 1;
}

inline std::string gpu_name() {
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess) return "unknown";
  gpuDeviceProp prop;
  if (gpuGetDeviceProperties(&prop, dev) != gpuSuccess) return "unknown";
  return prop.name;
}

// Owning device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) { resize(bytes); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(ptr_, o.ptr_);
      std::swap(bytes_, o.bytes_);
    }
    return *this;
  }
  // Reallocates only when growing; contents are not preserved.
  void resize(std::size_t bytes) {
    if (bytes <= bytes_ && ptr_) return;
    reset();
    if (bytes == 0) return;
    void* p = nullptr;
    gpu_check(gpuMalloc(&p, bytes), "gpuMalloc");
    ptr_ = p;
    bytes_ = bytes;
  }
  void reset() {
    if (ptr_) (void)gpuFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { gpu_check(gpuStreamCreate(&s_), "gpuStreamCreate"); }
  ~Stream() {
    if (s_) (void)gpuStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  gpuStream_t get() const { return s_; }

 private:
  gpuStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { gpu_check(gpuEventCreate(&e_), "gpuEventCreate"); }
  ~Event() {
    if (e_) (void)gpuEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  gpuEvent_t get() const { return e_; }

 private:
  gpuEvent_t e_ = nullptr;
};

// Stream capture into a graph (used to time back-to-back launches without host overhead, the
// way the cuDNN peer is timed). Unavailable -> false.
class GraphTimer {
 public:
  GraphTimer() = default;
  ~GraphTimer() { reset(); }
  GraphTimer(const GraphTimer&) = delete;
  GraphTimer& operator=(const GraphTimer&) = delete;

  // Captures enqueue() (which must only enqueue work on s) into an executable graph.
  // Returns an empty string on success, else why capture failed (the stream is left usable).
  template <typename F>
  std::string capture(gpuStream_t s, F&& enqueue) {
    reset();
#if defined(CKGEN_NVIDIA)
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess)
      return "begin capture: " + std::string(cudaGetErrorString(cudaGetLastError()));
    std::string err;
    try {
      enqueue();
    } catch (const std::exception& e) {
      err = e.what();
    }
    cudaGraph_t g = nullptr;
    const cudaError_t e = cudaStreamEndCapture(s, &g);
    if (err.empty() && e != cudaSuccess) err = "end capture: " + std::string(cudaGetErrorString(e));
    if (err.empty() && cudaGraphInstantiate(&exec_, g, 0) != cudaSuccess) {
      err = "instantiate failed";
      exec_ = nullptr;
    }
    if (g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
    return err;
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
    if (hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed) != hipSuccess)
      return "begin capture: " + std::string(hipGetErrorString(hipGetLastError()));
    std::string err;
    try {
      enqueue();
    } catch (const std::exception& e) {
      err = e.what();
    }
    hipGraph_t g = nullptr;
    const hipError_t e = hipStreamEndCapture(s, &g);
    if (err.empty() && e != hipSuccess) err = "end capture: " + std::string(hipGetErrorString(e));
    if (err.empty() && hipGraphInstantiate(&exec_, g, nullptr, nullptr, 0) != hipSuccess) {
      err = "instantiate failed";
      exec_ = nullptr;
    }
    if (g) (void)hipGraphDestroy(g);
    (void)hipGetLastError();
    return err;
#else
    (void)s;
    (void)enqueue;
    return "graphs not available on this platform";
#endif
  }

  gpuError_t launch(gpuStream_t s) {
#if defined(CKGEN_NVIDIA)
    return cudaGraphLaunch(exec_, s);
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
    return hipGraphLaunch(exec_, s);
#else
    (void)s;
    return gpuError_t(1);
#endif
  }

  void reset() {
#if defined(CKGEN_NVIDIA)
    if (exec_) cudaGraphExecDestroy(exec_);
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
    if (exec_) (void)hipGraphExecDestroy(exec_);
#endif
    exec_ = nullptr;
  }

 private:
#if defined(CKGEN_NVIDIA)
  cudaGraphExec_t exec_ = nullptr;
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
  hipGraphExec_t exec_ = nullptr;
#else
  void* exec_ = nullptr;
#endif
};

// ------------------------------------------------------------------------------------------
// Small string helpers
// ------------------------------------------------------------------------------------------
inline std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

// Strict integer parse: the whole string must be an integer.
inline bool parse_int64(const std::string& s, int64_t& out) {
  const std::string t = trim(s);
  if (t.empty()) return false;
  std::size_t i = 0;
  if (t[0] == '+' || t[0] == '-') i = 1;
  if (i >= t.size()) return false;
  for (std::size_t j = i; j < t.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(t[j]))) return false;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  out = v;
  return true;
}

// fnmatch-style glob: '*' any run, '?' one char, '[abc]' / '[a-z]' / '[!a]' classes.
// Several patterns separated by ',' match when any does.
inline bool glob_match_one(const char* p, const char* s) {
  while (*p) {
    if (*p == '*') {
      while (*p == '*') ++p;
      if (!*p) return true;
      for (; *s; ++s)
        if (glob_match_one(p, s)) return true;
      return false;
    }
    if (!*s) return false;
    if (*p == '?') {
      ++p;
      ++s;
      continue;
    }
    if (*p == '[') {
      const char* q = p + 1;
      bool negate = false;
      if (*q == '!' || *q == '^') {
        negate = true;
        ++q;
      }
      bool matched = false;
      bool first = true;
      while (*q && (first || *q != ']')) {
        first = false;
        if (q[1] == '-' && q[2] && q[2] != ']') {
          if (*s >= q[0] && *s <= q[2]) matched = true;
          q += 3;
        } else {
          if (*s == *q) matched = true;
          ++q;
        }
      }
      if (*q != ']') {  // no closing bracket: treat '[' literally
        if (*s != '[') return false;
        ++p;
        ++s;
        continue;
      }
      if (matched == negate) return false;
      p = q + 1;
      ++s;
      continue;
    }
    if (*p != *s) return false;
    ++p;
    ++s;
  }
  return *s == 0;
}

inline bool glob_match(const std::string& patterns, const std::string& s) {
  if (patterns.empty()) return true;
  for (const std::string& p : split(patterns, ','))
    if (!p.empty() && glob_match_one(p.c_str(), s.c_str())) return true;
  return false;
}

// Thrown for bad command-line arguments (callers exit 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "--key value", "--key=value" and bare "--flag" options. Flags must be declared.
class Args {
 public:
  Args(int argc, char** argv, const std::set<std::string>& value_options,
       const std::set<std::string>& flag_options) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.size() < 3 || a.compare(0, 2, "--") != 0)
        throw UsageError("unexpected argument '" + a + "' (options start with --)");
      std::string key = a.substr(2), val;
      bool has_val = false;
      const std::size_t eq = key.find('=');
      if (eq != std::string::npos) {
        val = key.substr(eq + 1);
        key = key.substr(0, eq);
        has_val = true;
      }
      if (flag_options.count(key)) {
        if (has_val) throw UsageError("option --" + key + " takes no value");
        flags_.insert(key);
        continue;
      }
      if (!value_options.count(key)) throw UsageError("unknown option --" + key + " (see --help)");
      if (!has_val) {
        if (i + 1 >= argc) throw UsageError("option --" + key + " needs a value");
        val = argv[++i];
      }
      if (values_.count(key)) throw UsageError("option --" + key + " given twice");
      values_[key] = val;
    }
  }
  bool flag(const std::string& k) const { return flags_.count(k) != 0; }
  bool has(const std::string& k) const { return values_.count(k) != 0; }
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = values_.find(k);
    return it == values_.end() ? def : it->second;
  }
  int64_t get_int(const std::string& k, int64_t def, int64_t lo = INT64_MIN,
                  int64_t hi = INT64_MAX) const {
    auto it = values_.find(k);
    if (it == values_.end()) return def;
    int64_t v;
    if (!parse_int64(it->second, v))
      throw UsageError("option --" + k + ": '" + it->second + "' is not an integer");
    if (v < lo || v > hi)
      throw UsageError("option --" + k + ": " + it->second + " is out of range [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
};

}  // namespace ckgen::host
