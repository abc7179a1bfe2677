// C API over the registry and the dispatcher (ckgen_dispatch.h); compiled into
// lib/libckgen_dispatch.so with the kernels (dispatcher.cmake).
#include "ckgen_dispatch.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ckgen/dispatch/dispatcher.hpp"
#include "ckgen/kernel/kernel_base.hpp"

// Built against a GPU runtime (CUDA, or HIP with its headers): the device calls below are real.
#if defined(CKGEN_NVIDIA) || (defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC))
#define CKGEN_DISPATCH_GPU 1
#endif

namespace {

thread_local std::string g_error;
thread_local std::string g_text;

const char* keep(std::string s) {
  g_text = std::move(s);
  return g_text.c_str();
}

int fail(int code, std::string why) {
  g_error = std::move(why);
  return code;
}

#ifdef CKGEN_DISPATCH_GPU
// A failed runtime call: its error cleared (not left for the next call to see), then
// CKGEN_E_DEVICE with what and the runtime's message.
int device_fail(std::string what, gpuError_t e) {
  (void)gpuGetLastError();
  return fail(CKGEN_E_DEVICE, std::move(what) + gpuGetErrorString(e));
}
#else
int no_gpu_runtime() { return fail(CKGEN_E_DEVICE, "built without a GPU runtime"); }
#endif

// A field past 2^31-1 is refused before any arithmetic on it (the output size, the element
// counts) can overflow.
std::string field_overflow(const ckgen_problem* c) {
  auto big = [](int64_t v) { return v > int64_t(INT32_MAX); };
  const char* names[4] = {"G", "N", "C", "K"};
  const int64_t vals[4] = {c->G, c->N, c->C, c->K};
  for (int i = 0; i < 4; ++i)
    if (big(vals[i])) return std::string(names[i]) + " = " + std::to_string(vals[i]) + " exceeds 2^31-1";
  const char* arr_names[6] = {"in", "filter", "stride", "dilation", "pad_l", "pad_r"};
  const int64_t* arrs[6] = {c->in, c->filter, c->stride, c->dilation, c->pad_l, c->pad_r};
  for (int a = 0; a < 6; ++a)
    for (int i = 0; i < 3; ++i)
      if (big(arrs[a][i]))
        return std::string(arr_names[a]) + "[" + std::to_string(i) + "] = " + std::to_string(arrs[a][i]) +
               " exceeds 2^31-1";
  return {};
}

// x * y * ... without int64 overflow (false on overflow).
bool mul_ok(int64_t& acc, int64_t v) { return !__builtin_mul_overflow(acc, v, &acc); }

// Element counts of x, w, y; false (and why) when one overflows int64 or its bytes do.
bool tensor_elems(const ckgen::ConvProblem& p, int64_t elem_bytes, int64_t e[3], std::string& why) {
  int64_t x = p.N, w = p.G, y = p.N;
  bool ok = true;
  for (int i = 0; i < 3; ++i) ok = ok && mul_ok(x, p.in[i]) && mul_ok(y, p.out[i]) && mul_ok(w, p.filter[i]);
  ok = ok && mul_ok(x, p.G) && mul_ok(x, p.C) && mul_ok(w, p.K) && mul_ok(w, p.C) && mul_ok(y, p.G) &&
       mul_ok(y, p.K);
  int64_t bx = x, bw = w, by = y;
  ok = ok && mul_ok(bx, elem_bytes) && mul_ok(bw, elem_bytes) && mul_ok(by, elem_bytes);
  if (!ok) {
    why = "invalid problem: a tensor's size overflows int64";
    return false;
  }
  e[0] = x;
  e[1] = w;
  e[2] = y;
  return true;
}

bool to_problem(const ckgen_problem* c, ckgen::ConvProblem& p, std::string& why) {
  if (!c) {
    why = "problem is NULL";
    return false;
  }
  if (std::string o = field_overflow(c); !o.empty()) {
    why = "invalid problem: " + o;
    return false;
  }
  p.ndim = c->ndim;
  p.G = c->G;
  p.N = c->N;
  p.C = c->C;
  p.K = c->K;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = c->in[i];
    p.filter[i] = c->filter[i];
    p.stride[i] = c->stride[i];
    p.dilation[i] = c->dilation[i];
    p.pad_l[i] = c->pad_l[i];
    p.pad_r[i] = c->pad_r[i];
  }
  // validate() first: compute_output divides by the strides
  why = p.validate();
  if (!why.empty()) {
    why = "invalid problem: " + why;
    return false;
  }
  p.compute_output();
  int64_t e[3];
  return tensor_elems(p, 4, e, why);
}

int64_t dtype_bytes(ckgen::DataType d) { return d == ckgen::DataType::FP32 ? 4 : 2; }

int current_device() {
  int dev = -1;
  if (gpuGetDevice(&dev) != gpuSuccess) {
    (void)gpuGetLastError();  // no device is an answer here, not an error for the next call
    return -1;
  }
  return dev;
}

// The process-wide dispatcher, with CKGEN_SELECT_CACHE_SIZE applied once.
ckgen::Dispatcher& disp() {
  static ckgen::Dispatcher& d = [] () -> ckgen::Dispatcher& {
    ckgen::Dispatcher& x = ckgen::dispatcher();
    if (const char* e = std::getenv("CKGEN_SELECT_CACHE_SIZE"); e && *e) {
      char* end = nullptr;
      const long long n = std::strtoll(e, &end, 10);
      if (end && *end == '\0' && n >= 0) x.cache().set_capacity(size_t(n));
    }
    return x;
  }();
  return d;
}

bool parse_words(const char* variant, const char* datatype, ckgen::Variant& v, ckgen::DataType& d) {
  if (!variant || !ckgen::variant_from_string(variant, v)) {
    fail(CKGEN_E_INVALID, std::string("variant '") + (variant ? variant : "(null)") +
                              "' is not forward, backward_data or backward_weight");
    return false;
  }
  if (!datatype || !ckgen::datatype_from_string(datatype, d)) {
    fail(CKGEN_E_INVALID, std::string("datatype '") + (datatype ? datatype : "(null)") +
                              "' is not fp16, bf16 or fp32");
    return false;
  }
  return true;
}

// What the kernel reads and writes through each pointer of ckgen_run: the vector width it
// uses on it (the A / B / C operands of its GEMM view, by variant).
struct TensorUse {
  const char* name;
  void* ptr;
  int64_t have_bytes;
  int vec;
};

// Refusal of a run's arguments before any launch ("" when fine).
std::string check_run_args(const ckgen::KernelBase& k, const ckgen::ConvProblem& p, void* in, int64_t in_bytes,
                           void* wei, int64_t wei_bytes, void* out, int64_t out_bytes, void* workspace,
                           int64_t workspace_have, int64_t workspace_need) {
  const ckgen::KernelKey& key = k.key();
  const int64_t eb = dtype_bytes(key.datatype);
  int64_t elems[3];
  std::string why;
  if (!tensor_elems(p, eb, elems, why)) return why;
  int vin = key.vec_a, vwei = key.vec_b, vout = key.vec_c;  // forward: A = x, B = w, C = y
  if (key.variant == ckgen::Variant::BackwardData) {        // A = dy, B = w, C = dx
    vout = key.vec_a;
    vwei = key.vec_b;
    vin = key.vec_c;
  } else if (key.variant == ckgen::Variant::BackwardWeight) {  // A = dy, B = x, C = dw
    vout = key.vec_a;
    vin = key.vec_b;
    vwei = key.vec_c;
  }
  const TensorUse uses[3] = {{"in (x / dx)", in, in_bytes, vin},
                             {"wei (w / dw)", wei, wei_bytes, vwei},
                             {"out (y / dy)", out, out_bytes, vout}};
  for (int i = 0; i < 3; ++i) {
    const TensorUse& u = uses[i];
    if (!u.ptr) return std::string(u.name) + " pointer is NULL";
    // a vector access is at most 16 bytes; every access is at least one element
    const int64_t align = std::min<int64_t>(16, std::max<int64_t>(1, u.vec) * eb);
    if (reinterpret_cast<uintptr_t>(u.ptr) % uintptr_t(align) != 0) {
      std::ostringstream os;
      os << u.name << " pointer " << u.ptr << " is not " << align << "-byte aligned (vector width "
         << std::max(1, u.vec) << " x " << eb << "-byte " << ckgen::to_string(key.datatype)
         << " elements); pass an aligned buffer or choose a narrower-vector kernel";
      return os.str();
    }
    if (u.have_bytes >= 0 && u.have_bytes < elems[i] * eb)
      return std::string(u.name) + " buffer holds " + std::to_string(u.have_bytes) + " bytes, the problem needs " +
             std::to_string(elems[i] * eb) + " (" + std::to_string(elems[i]) + " elements)";
  }
  if (workspace_need > 0) {
    if (!workspace)
      return "needs " + std::to_string(workspace_need) + " bytes of workspace, got NULL";
    if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return "workspace pointer is not 16-byte aligned";
    if (workspace_have >= 0 && workspace_have < workspace_need)
      return "workspace holds " + std::to_string(workspace_have) + " bytes, needs " + std::to_string(workspace_need);
  }
  return {};
}

// A launch's error: the kernel's own return, else the runtime's last error after it.
int launch_status(const ckgen::KernelBase& k, gpuError_t e) {
  if (e == gpuSuccess) e = gpuGetLastError();
  else (void)gpuGetLastError();
  if (e != gpuSuccess) return fail(CKGEN_E_LAUNCH, k.name() + ": launch failed: " + gpuGetErrorString(e));
  return CKGEN_OK;
}

const ckgen::KernelBase* kernel_at(int i) {
  const auto& all = ckgen::registry().all();
  if (i < 0 || size_t(i) >= all.size()) return nullptr;
  return all[size_t(i)].get();
}

std::string index_error(int i) {
  return "kernel index " + std::to_string(i) + " out of range 0.." +
         std::to_string(int(ckgen::registry().all().size()) - 1);
}

// The operations of a ckgen_epilogue (NULL: none); false (and why) for a code out of range.
bool to_ops(const ckgen_epilogue* c, ckgen::EpilogueOps& ops, std::string& why) {
  ops = {};
  if (!c) return true;
  if (c->channel_op < 0 || c->channel_op > int(ckgen::ChannelOp::BiasGrad) || c->activation < 0 ||
      c->activation > int(ckgen::Activation::DLeakyRelu) || c->residual < 0 || c->residual > 1) {
    why = "invalid epilogue: channel_op " + std::to_string(c->channel_op) + ", activation " +
          std::to_string(c->activation) + ", residual " + std::to_string(c->residual) + " out of range";
    return false;
  }
  ops.channel_op = ckgen::ChannelOp(c->channel_op);
  ops.activation = ckgen::Activation(c->activation);
  ops.residual = c->residual != 0;
  return true;
}

int do_select(const ckgen_problem* cp, const char* variant, const char* datatype, int* kb_out,
              const char** src_out, bool cost_only, const ckgen::EpilogueOps& ops = {}) {
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return -(fail(CKGEN_E_INVALID, why), 1);
  ckgen::Variant v;
  ckgen::DataType d;
  if (!parse_words(variant, datatype, v, d)) return -1;
  if (const std::string r = ckgen::epilogue_variant_refusal(v, ops); !r.empty())
    return -(fail(CKGEN_E_INVALID, std::string("fusion not for ") + variant + ": " + r), 1);
  auto& dsp = disp();
  const ckgen::CachedSelection s = dsp.select_cached(p, d, v, current_device(), cost_only, nullptr, ops);
  if (s.index < 0) {
    std::string w = s.text;
    if (!dsp.env_error().empty()) w += " (CKGEN_TUNING_DB: " + dsp.env_error() + ")";
    return -(fail(CKGEN_E_NOT_FOUND, w), 1);
  }
  if (kb_out) *kb_out = s.k_batch;
  if (src_out) *src_out = keep(s.text);
  return s.index;
}

}  // namespace

extern "C" {

int ckgen_api_version(void) { return CKGEN_C_API_VERSION; }
const char* ckgen_arch(void) { return ckgen::arch_params::kArch; }
int ckgen_num_kernels(void) { return int(ckgen::registry().all().size()); }

const char* ckgen_kernel_name(int index) {
  const ckgen::KernelBase* k = kernel_at(index);
  return k ? k->name().c_str() : nullptr;
}

const char* ckgen_kernel_info(int index) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return nullptr;
  const ckgen::KernelKey& key = k->key();
  std::ostringstream os;
  os << ckgen::to_string(key.variant) << ' ' << ckgen::to_string(key.datatype) << ' ' << key.ndim
     << ' ' << key.tile_m << ' ' << key.tile_n << ' ' << key.tile_k << ' ' << key.k_batch;
  return keep(os.str());
}

const char* ckgen_is_supported(int index, const ckgen_problem* cp, int k_batch) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return keep(index_error(index));
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return keep(why);
  ckgen::RunOptions o;
  o.k_batch = k_batch;
  return keep(k->is_supported(p, o));
}

int64_t ckgen_workspace_bytes(int index, const ckgen_problem* cp, int k_batch) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return (fail(CKGEN_E_INDEX, index_error(index)), -1);
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return (fail(CKGEN_E_INVALID, why), -1);
  ckgen::RunOptions o;
  o.k_batch = k_batch;
  return int64_t(k->workspace_bytes(p, o));
}

int ckgen_run(int index, const ckgen_problem* cp, void* in, void* wei, void* out, void* workspace,
              void* stream, int k_batch) {
  return ckgen_run_checked(index, cp, in, -1, wei, -1, out, -1, workspace, -1, stream, k_batch);
}

int ckgen_run_checked(int index, const ckgen_problem* cp, void* in, int64_t in_bytes, void* wei,
                      int64_t wei_bytes, void* out, int64_t out_bytes, void* workspace,
                      int64_t workspace_bytes, void* stream, int k_batch) {
  return ckgen_run_fused(index, cp, in, in_bytes, wei, wei_bytes, out, out_bytes, nullptr, workspace,
                         workspace_bytes, stream, k_batch);
}

int ckgen_run_fused(int index, const ckgen_problem* cp, void* in, int64_t in_bytes, void* wei, int64_t wei_bytes,
                    void* out, int64_t out_bytes, const ckgen_epilogue_args* ep, void* workspace,
                    int64_t workspace_bytes, void* stream, int k_batch) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return fail(CKGEN_E_INDEX, index_error(index));
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return fail(CKGEN_E_INVALID, k->name() + ": " + why);
  ckgen::RunOptions o;
  o.k_batch = k_batch;
  if (std::string r = k->is_supported(p, o); !r.empty())
    return fail(CKGEN_E_UNSUPPORTED, k->name() + ": " + r);
  const int64_t ws = int64_t(k->workspace_bytes(p, o));
  if (std::string r = check_run_args(*k, p, in, in_bytes, wei, wei_bytes, out, out_bytes, workspace,
                                     workspace_bytes, ws);
      !r.empty())
    return fail(CKGEN_E_INVALID, k->name() + ": " + r);
  ckgen::ConvTensors t;
  t.in = in;
  t.wei = wei;
  t.out = out;
  if (ep) {
    t.ep.bias = ep->bias;
    t.ep.scale = ep->scale;
    t.ep.residual = ep->residual;
    t.ep.beta = ep->beta;
    t.ep.alpha = ep->alpha;
    t.ep.y = ep->y;
    t.ep.db = ep->db;
  }
  const ckgen::EpilogueOps ops = ckgen::epilogue_ops(k->key());
  if (std::string r = ckgen::epilogue_operands_refusal(ops, t.ep); !r.empty())
    return fail(CKGEN_E_INVALID, k->name() + ": " + r + (ops.fused() && !ep ? " (a fused kernel: ckgen_run_fused)" : ""));
  return launch_status(*k, k->run(p, t, workspace, static_cast<gpuStream_t>(stream), o));
}

int ckgen_tensor_bytes(const ckgen_problem* cp, const char* datatype, int64_t* in_bytes, int64_t* wei_bytes,
                       int64_t* out_bytes) {
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return fail(CKGEN_E_INVALID, why);
  ckgen::DataType d;
  if (!datatype || !ckgen::datatype_from_string(datatype, d))
    return fail(CKGEN_E_INVALID, std::string("datatype '") + (datatype ? datatype : "(null)") +
                                     "' is not fp16, bf16 or fp32");
  int64_t e[3];
  if (!tensor_elems(p, dtype_bytes(d), e, why)) return fail(CKGEN_E_INVALID, why);
  if (in_bytes) *in_bytes = e[0] * dtype_bytes(d);
  if (wei_bytes) *wei_bytes = e[1] * dtype_bytes(d);
  if (out_bytes) *out_bytes = e[2] * dtype_bytes(d);
  return CKGEN_OK;
}

int ckgen_select(const ckgen_problem* p, const char* variant, const char* datatype,
                 int* k_batch_out, const char** source_out) {
  return do_select(p, variant, datatype, k_batch_out, source_out, false);
}

int ckgen_select_cost_model(const ckgen_problem* p, const char* variant, const char* datatype,
                            int* k_batch_out, const char** source_out) {
  return do_select(p, variant, datatype, k_batch_out, source_out, true);
}

int ckgen_select_fused(const ckgen_problem* p, const char* variant, const char* datatype, const ckgen_epilogue* ops,
                       int* k_batch_out, const char** source_out) {
  ckgen::EpilogueOps o;
  std::string why;
  if (!to_ops(ops, o, why)) return -(fail(CKGEN_E_INVALID, why), 1);
  return do_select(p, variant, datatype, k_batch_out, source_out, false, o);
}

int ckgen_kernel_epilogue(int index, ckgen_epilogue* ops_out) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return fail(CKGEN_E_INDEX, index_error(index));
  if (!ops_out) return fail(CKGEN_E_INVALID, "ops_out is NULL");
  const ckgen::EpilogueOps ops = ckgen::epilogue_ops(k->key());
  *ops_out = ckgen_epilogue{int32_t(ops.channel_op), int32_t(ops.activation), ops.residual ? 1 : 0, 0};
  return CKGEN_OK;
}

double ckgen_estimate_us(int index, const ckgen_problem* cp, int k_batch) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return (fail(CKGEN_E_INDEX, index_error(index)), -1.0);
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return (fail(CKGEN_E_INVALID, why), -1.0);
  ckgen::RunOptions o;
  o.k_batch = k_batch;
  if (std::string r = k->is_supported(p, o); !r.empty()) return (fail(CKGEN_E_UNSUPPORTED, r), -1.0);
  auto& dsp = disp();
  return ckgen::estimate_cost(k->key(), p, dsp.effective_k_batch(k->key(), p, k_batch), dsp.arch()).us;
}

int ckgen_load_tuning_db(const char* path) {
  auto& dsp = disp();
  if (!path || !*path) {
    dsp.clear_tuning_db();
    return 0;
  }
  try {
    dsp.load_tuning_db(path);
  } catch (const std::exception& e) {
    return (fail(CKGEN_E_INVALID, e.what()), -1);
  }
  return int(dsp.tuning_db()->entries().size());
}

void ckgen_set_k_batch_candidates(const int* k_batches, int n) {
  std::vector<int> v;
  for (int i = 0; k_batches && i < n; ++i)
    if (k_batches[i] >= 0 && k_batches[i] <= 64) v.push_back(k_batches[i]);
  disp().set_k_batch_candidates(n > 0 ? v : std::vector<int>{0, 1, 2, 4, 8, 16, 32});
}

void ckgen_set_compute_units(int compute_units) {
  auto& dsp = disp();
  ckgen::ArchNumbers a = dsp.arch();
  a.compute_units = compute_units > 0 ? compute_units : ckgen::arch_params::kComputeUnits;
  dsp.set_arch(a);
}

const char* ckgen_last_error(void) { return g_error.c_str(); }

int ckgen_current_device(void) { return current_device(); }
int64_t ckgen_cache_epoch(void) { return int64_t(disp().cache().epoch()); }
void ckgen_cache_clear(void) { disp().cache().clear(); }
void ckgen_cache_set_capacity(int64_t entries) { disp().cache().set_capacity(size_t(entries < 0 ? 0 : entries)); }

void ckgen_cache_stats(int64_t* size, int64_t* hits, int64_t* misses) {
  const ckgen::SelectionCache& c = disp().cache();
  if (size) *size = int64_t(c.size());
  if (hits) *hits = int64_t(c.hits());
  if (misses) *misses = int64_t(c.misses());
}

int ckgen_cache_put(const ckgen_problem* cp, const char* variant, const char* datatype, int index, int k_batch,
                    const char* why) {
  ckgen::ConvProblem p;
  std::string w;
  if (!to_problem(cp, p, w)) return fail(CKGEN_E_INVALID, w);
  ckgen::Variant v;
  ckgen::DataType d;
  if (!parse_words(variant, datatype, v, d)) return CKGEN_E_INVALID;
  if (!kernel_at(index)) return fail(CKGEN_E_INDEX, index_error(index));
  const std::string r = disp().cache_put(p, d, v, current_device(), index, k_batch, why ? why : "");
  return r.empty() ? CKGEN_OK : fail(CKGEN_E_UNSUPPORTED, r);
}

int ckgen_candidates(const ckgen_problem* cp, const char* variant, const char* datatype, int k, int* out_index,
                     int* out_k_batch, double* out_estimate_us) {
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return -(fail(CKGEN_E_INVALID, why), 1);
  ckgen::Variant v;
  ckgen::DataType d;
  if (!parse_words(variant, datatype, v, d)) return -1;
  if (k < 0 || (k > 0 && (!out_index || !out_k_batch)))
    return -(fail(CKGEN_E_INVALID, "candidates: k must be >= 0 with non-NULL out_index and out_k_batch"), 1);
  auto& dsp = disp();
  const std::vector<ckgen::Dispatcher::CostCandidate> cs = dsp.candidates(p, d, v, k);
  if (cs.empty() && k > 0) {
    const ckgen::Selection s = dsp.select(p, d, v);
    return -(fail(CKGEN_E_NOT_FOUND, s.why), 1);
  }
  for (size_t i = 0; i < cs.size(); ++i) {
    out_index[i] = cs[i].index;
    out_k_batch[i] = cs[i].k_batch;
    if (out_estimate_us) out_estimate_us[i] = cs[i].cost.us;
  }
  return int(cs.size());
}

int ckgen_stream_is_capturing(void* stream, int* capturing) {
  if (!capturing) return fail(CKGEN_E_INVALID, "capturing is NULL");
  *capturing = 0;
#if defined(CKGEN_NVIDIA)
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &st);
  if (e != cudaSuccess) {
    *capturing = 1;  // e.g. the legacy stream while another stream captures: do not time
    return device_fail("cudaStreamIsCapturing: ", e);
  }
  *capturing = st != cudaStreamCaptureStatusNone;
  return CKGEN_OK;
#elif defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC)
  hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
  const hipError_t e = hipStreamIsCapturing(static_cast<hipStream_t>(stream), &st);
  if (e != hipSuccess) {
    *capturing = 1;
    return device_fail("hipStreamIsCapturing: ", e);
  }
  *capturing = st != hipStreamCaptureStatusNone;
  return CKGEN_OK;
#else
  (void)stream;
  return no_gpu_runtime();
#endif
}

int ckgen_time_run(int index, const ckgen_problem* cp, void* in, void* wei, void* out, void* workspace,
                   void* stream, int k_batch, int warmup, int iters, float* ms_out) {
  if (!ms_out) return fail(CKGEN_E_INVALID, "ms_out is NULL");
  if (iters < 1 || warmup < 0) return fail(CKGEN_E_INVALID, "time_run: iters must be >= 1 and warmup >= 0");
  int capturing = 1;
  if (int rc = ckgen_stream_is_capturing(stream, &capturing); rc != CKGEN_OK) return rc;
  if (capturing) return fail(CKGEN_E_INVALID, "the stream is capturing a graph: kernels are not timed during capture");
#ifdef CKGEN_DISPATCH_GPU
  for (int i = 0; i < warmup; ++i)
    if (int rc = ckgen_run(index, cp, in, wei, out, workspace, stream, k_batch); rc != CKGEN_OK) return rc;
  gpuEvent_t a = nullptr, b = nullptr;
  if (gpuEventCreate(&a) != gpuSuccess || gpuEventCreate(&b) != gpuSuccess) {
    (void)gpuGetLastError();
    if (a) gpuEventDestroy(a);
    return fail(CKGEN_E_DEVICE, "cannot create timing events");
  }
  int rc = CKGEN_OK;
  gpuEventRecord(a, static_cast<gpuStream_t>(stream));
  for (int i = 0; i < iters && rc == CKGEN_OK; ++i)
    rc = ckgen_run(index, cp, in, wei, out, workspace, stream, k_batch);
  gpuEventRecord(b, static_cast<gpuStream_t>(stream));
  float ms = 0;
  if (rc == CKGEN_OK) {
    gpuError_t e = gpuEventSynchronize(b);
    if (e == gpuSuccess) e = gpuEventElapsedTime(&ms, a, b);
    if (e != gpuSuccess) rc = fail(CKGEN_E_LAUNCH, kernel_at(index)->name() + ": " + gpuGetErrorString(e));
  }
  gpuEventDestroy(a);
  gpuEventDestroy(b);
  if (rc == CKGEN_OK) *ms_out = ms / float(iters);
  return rc;
#else
  (void)index, (void)cp, (void)in, (void)wei, (void)out, (void)workspace, (void)k_batch;
  return no_gpu_runtime();
#endif
}

int ckgen_device_alloc(int64_t bytes, void** ptr) {
  if (!ptr || bytes < 0) return fail(CKGEN_E_INVALID, "device_alloc: ptr is NULL or bytes < 0");
  *ptr = nullptr;
#ifdef CKGEN_DISPATCH_GPU
  if (bytes == 0) return CKGEN_OK;
  if (gpuError_t e = gpuMalloc(ptr, size_t(bytes)); e != gpuSuccess) {
    *ptr = nullptr;
    return device_fail("cannot allocate " + std::to_string(bytes) + " bytes: ", e);
  }
  return CKGEN_OK;
#else
  return no_gpu_runtime();
#endif
}

int ckgen_device_free(void* ptr) {
#ifdef CKGEN_DISPATCH_GPU
  if (!ptr) return CKGEN_OK;
  if (gpuError_t e = gpuFree(ptr); e != gpuSuccess) return device_fail("gpuFree: ", e);
  return CKGEN_OK;
#else
  (void)ptr;
  return no_gpu_runtime();
#endif
}

int ckgen_device_info(int device, char* name, int name_len, int* sm_count, int* driver_version,
                      int* runtime_version) {
#ifdef CKGEN_DISPATCH_GPU
  gpuDeviceProp prop;
  if (gpuError_t e = gpuGetDeviceProperties(&prop, device); e != gpuSuccess)
    return device_fail("device " + std::to_string(device) + ": ", e);
  if (name && name_len > 0) {
    std::strncpy(name, prop.name, size_t(name_len) - 1);
    name[name_len - 1] = '\0';
  }
  if (sm_count) *sm_count = prop.multiProcessorCount;
  int dv = 0, rv = 0;
#if defined(CKGEN_NVIDIA)
  (void)cudaDriverGetVersion(&dv);
  (void)cudaRuntimeGetVersion(&rv);
#else
  (void)hipDriverGetVersion(&dv);
  (void)hipRuntimeGetVersion(&rv);
#endif
  if (driver_version) *driver_version = dv;
  if (runtime_version) *runtime_version = rv;
  return CKGEN_OK;
#else
  (void)device, (void)name, (void)name_len, (void)sm_count, (void)driver_version, (void)runtime_version;
  return no_gpu_runtime();
#endif
}

}  // extern "C"
