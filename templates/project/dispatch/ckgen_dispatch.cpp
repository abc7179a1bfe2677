// C API over the registry and the dispatcher (ckgen_dispatch.h); compiled into
// lib/libckgen_dispatch.so with the kernels (dispatcher.cmake).
#include "ckgen_dispatch.h"

#include <sstream>
#include <string>

#include "ckgen/dispatch/dispatcher.hpp"
#include "ckgen/kernel/kernel_base.hpp"

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

bool to_problem(const ckgen_problem* c, ckgen::ConvProblem& p, std::string& why) {
  if (!c) {
    why = "problem is NULL";
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
  p.compute_output();
  why = p.validate();
  if (!why.empty()) {
    why = "invalid problem: " + why;
    return false;
  }
  return true;
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
              const char** src_out, bool cost_only) {
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return -(fail(CKGEN_E_INVALID, why), 1);
  ckgen::Variant v;
  ckgen::DataType d;
  if (!variant || !ckgen::variant_from_string(variant, v))
    return -(fail(CKGEN_E_INVALID, std::string("variant '") + (variant ? variant : "(null)") +
                                       "' is not forward, backward_data or backward_weight"), 1);
  if (!datatype || !ckgen::datatype_from_string(datatype, d))
    return -(fail(CKGEN_E_INVALID, std::string("datatype '") + (datatype ? datatype : "(null)") +
                                       "' is not fp16, bf16 or fp32"), 1);
  auto& disp = ckgen::dispatcher();
  const ckgen::Selection s = cost_only ? disp.by_cost(p, d, v) : disp.select(p, d, v);
  if (!s) {
    std::string w = s.why;
    if (!disp.env_error().empty()) w += " (CKGEN_TUNING_DB: " + disp.env_error() + ")";
    return -(fail(CKGEN_E_NOT_FOUND, w), 1);
  }
  if (kb_out) *kb_out = s.k_batch;
  if (src_out) *src_out = keep(s.source + ": " + s.why);
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
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return fail(CKGEN_E_INDEX, index_error(index));
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return fail(CKGEN_E_INVALID, why);
  ckgen::RunOptions o;
  o.k_batch = k_batch;
  if (std::string r = k->is_supported(p, o); !r.empty())
    return fail(CKGEN_E_UNSUPPORTED, k->name() + ": " + r);
  if (k->workspace_bytes(p, o) > 0 && !workspace)
    return fail(CKGEN_E_INVALID, k->name() + ": needs " + std::to_string(k->workspace_bytes(p, o)) +
                                     " bytes of workspace, got NULL");
  ckgen::ConvTensors t;
  t.in = in;
  t.wei = wei;
  t.out = out;
  const gpuError_t e = k->run(p, t, workspace, static_cast<gpuStream_t>(stream), o);
  if (e != gpuSuccess) return fail(CKGEN_E_LAUNCH, k->name() + ": " + gpuGetErrorString(e));
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

double ckgen_estimate_us(int index, const ckgen_problem* cp, int k_batch) {
  const ckgen::KernelBase* k = kernel_at(index);
  if (!k) return (fail(CKGEN_E_INDEX, index_error(index)), -1.0);
  ckgen::ConvProblem p;
  std::string why;
  if (!to_problem(cp, p, why)) return (fail(CKGEN_E_INVALID, why), -1.0);
  ckgen::RunOptions o;
  o.k_batch = k_batch;
  if (std::string r = k->is_supported(p, o); !r.empty()) return (fail(CKGEN_E_UNSUPPORTED, r), -1.0);
  auto& disp = ckgen::dispatcher();
  return ckgen::estimate_cost(k->key(), p, disp.effective_k_batch(k->key(), p, k_batch), disp.arch()).us;
}

int ckgen_load_tuning_db(const char* path) {
  auto& disp = ckgen::dispatcher();
  if (!path || !*path) {
    disp.clear_tuning_db();
    return 0;
  }
  try {
    disp.load_tuning_db(path);
  } catch (const std::exception& e) {
    return (fail(CKGEN_E_INVALID, e.what()), -1);
  }
  return int(disp.tuning_db()->entries().size());
}

void ckgen_set_k_batch_candidates(const int* k_batches, int n) {
  std::vector<int> v;
  for (int i = 0; k_batches && i < n; ++i)
    if (k_batches[i] >= 0 && k_batches[i] <= 64) v.push_back(k_batches[i]);
  ckgen::dispatcher().set_k_batch_candidates(n > 0 ? v : std::vector<int>{0, 1, 2, 4, 8, 16, 32});
}

void ckgen_set_compute_units(int compute_units) {
  auto& disp = ckgen::dispatcher();
  ckgen::ArchNumbers a = disp.arch();
  a.compute_units = compute_units > 0 ? compute_units : ckgen::arch_params::kComputeUnits;
  disp.set_arch(a);
}

const char* ckgen_last_error(void) { return g_error.c_str(); }

}  // extern "C"
