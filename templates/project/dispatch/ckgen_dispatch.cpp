// C API over the registry and the dispatcher (ckgen_dispatch.h); compiled into
// lib/libckgen_dispatch.so with the kernels (dispatcher.cmake). The arguments' conversions and
// checks are in ckgen_dispatch_args.cpp.
#include "ckgen_dispatch.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ckgen/dispatch/dispatcher.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen_dispatch_args.hpp"

// Built against a GPU runtime (CUDA, or HIP with its headers): the device calls below are real.
#if defined(CKGEN_NVIDIA) || (defined(CKGEN_AMD) && !defined(CKGEN_AMD_NOGPUINC))
#define CKGEN_DISPATCH_GPU 1
#endif

namespace {

using ckgen::capi::check_run_args;
using ckgen::capi::dtype_bytes;
using ckgen::capi::tensor_elems;
using ckgen::capi::to_ops;
using ckgen::capi::to_problem;

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
    t.ep.stats = ep->stats;
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
  // A conversion to the inputs' own datatype converts nothing: the plain request.
  ckgen::DataType d;
  if (o.out_datatype != 0 && datatype && ckgen::datatype_from_string(datatype, d) &&
      o.out_datatype == 1 + int(d))
    o.out_datatype = 0;
  return do_select(p, variant, datatype, k_batch_out, source_out, false, o);
}

int ckgen_kernel_epilogue(int index, ckgen_epilogue* ops_out) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return fail(CKGEN_E_INDEX, index_error(index));
  if (!ops_out) return fail(CKGEN_E_INVALID, "ops_out is NULL");
  const ckgen::EpilogueOps ops = ckgen::epilogue_ops(k->key());
  *ops_out = ckgen_epilogue{int32_t(ops.channel_op), int32_t(ops.activation), ops.residual ? 1 : 0,
                            ops.stats ? 1 : 0, int32_t(ops.out_datatype)};
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
