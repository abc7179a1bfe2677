// ckgen.torch's native eager path: the convolution's autograd node and its launches in C++.
//
// A prepared launch (kernel index, k_batch, workspace bytes, the C problem struct, the output's
// shape and strides) is made once per signature by Python (ckgen.torch.ops._prepared: the
// argument checks and the selection) through the `miss` callback, then kept here. A repeated
// call builds its key from the tensors' sizes, looks the launch up and calls ckgen_run on the
// current stream: no Python in the forward launch, none at all in the backward pass.
//
// Keys: variant, both tensors' sizes, dtypes and devices, the extra operand (bias sizes and dtype,
// or the gradient's size), the parameters (an id per distinct parameter tuple from the eager
// path, the values from the registered ops) and the autotune flag.

#include <torch/extension.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <torch/library.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using RunFn = int (*)(int, const void*, void*, void*, void*, void*, void*, int);
using ErrorFn = const char* (*)();

enum Variant : int64_t { kForward = 0, kBackwardData = 1, kBackwardWeight = 2 };

struct Prepared {
  RunFn run = nullptr;
  ErrorFn last_error = nullptr;
  int index = 0;
  int k_batch = 0;
  int64_t ws_bytes = 0;
  std::string problem;  // the ckgen_problem struct's bytes
  std::vector<int64_t> out_shape, out_strides;
  bool empty = false;
  int dev_index = 0;
  std::string name;
};
using PreparedPtr = std::shared_ptr<const Prepared>;

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ uint64_t(v)) * 1099511628211ull;
    return size_t(h);
  }
};

std::mutex g_mutex;
std::unordered_map<std::vector<int64_t>, PreparedPtr, KeyHash> g_cache;
// (variant, a, b, c, conf id, conf values, autotune) -> tuple, or raises; never destroyed (it would outlive
// the interpreter at exit)
py::object* g_miss = nullptr;

void put_tensor(std::vector<int64_t>& k, const at::Tensor& t) {
  k.push_back(t.dim());
  for (int64_t s : t.sizes()) k.push_back(s);
  k.push_back(int64_t(t.scalar_type()));
  k.push_back(t.device().index());
}

// The call's parameters: the eager path's conf id (ckgen.torch.native.conf_id), or the registered
// op's values (stride, padding_left, padding_right, dilation, then groups and library) with id -1.
struct Conf {
  int64_t id = -1;
  std::vector<int64_t> values;
};

std::vector<int64_t> make_key(Variant v, const at::Tensor& a, const at::Tensor& b,
                              const c10::optional<at::Tensor>& bias, at::IntArrayRef size,
                              const Conf& conf, bool autotune) {
  std::vector<int64_t> k;
  k.reserve(24);
  k.push_back(v);
  put_tensor(k, a);
  put_tensor(k, b);
  if (v == kForward) {
    if (bias && bias->defined())
      put_tensor(k, *bias);
    else
      k.push_back(-1);
  } else {
    k.push_back(int64_t(size.size()));
    for (int64_t s : size) k.push_back(s);
  }
  k.push_back(conf.id);
  if (conf.id < 0) k.insert(k.end(), conf.values.begin(), conf.values.end());
  k.push_back(autotune ? 1 : 0);
  return k;
}

PreparedPtr from_python(const py::tuple& t) {
  auto p = std::make_shared<Prepared>();
  p->run = reinterpret_cast<RunFn>(t[0].cast<uintptr_t>());
  p->last_error = reinterpret_cast<ErrorFn>(t[1].cast<uintptr_t>());
  p->index = t[2].cast<int>();
  p->k_batch = t[3].cast<int>();
  p->ws_bytes = t[4].cast<int64_t>();
  p->problem = t[5].cast<std::string>();
  p->out_shape = t[6].cast<std::vector<int64_t>>();
  p->out_strides = t[7].cast<std::vector<int64_t>>();
  p->empty = t[8].cast<bool>();
  p->dev_index = t[9].cast<int>();
  p->name = t[10].cast<std::string>();
  return p;
}

// The prepared launch of this signature: the cache's, else Python's (which checks the arguments
// and raises the ops' errors). `c` is what Python's _prepared takes third: the bias or the size.
PreparedPtr prepared(Variant v, const at::Tensor& a, const at::Tensor& b,
                     const c10::optional<at::Tensor>& bias, at::IntArrayRef size, const Conf& conf,
                     bool autotune) {
  std::vector<int64_t> key = make_key(v, a, b, bias, size, conf, autotune);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) return it->second;
  }
  py::gil_scoped_acquire gil;
  if (!g_miss) throw std::runtime_error("ckgen native path: not initialised (set_miss)");
  py::object c = py::none();
  if (v == kForward) {
    if (bias && bias->defined()) c = py::cast(*bias);
  } else {
    c = py::cast(std::vector<int64_t>(size.begin(), size.end()));
  }
  py::tuple t = (*g_miss)(int64_t(v), a, b, c, conf.id, conf.values, autotune);
  PreparedPtr p = from_python(t);
  if (t[11].cast<bool>()) {  // Python cached it too (not an autotuned pick made while capturing)
    std::lock_guard<std::mutex> lock(g_mutex);
    g_cache.emplace(std::move(key), p);
  }
  return p;
}

// t as the kernel reads it: dense channels-last (1D: N, W, C memory), 16-byte aligned.
at::Tensor ready(const at::Tensor& t) {
  at::Tensor r;
  if (t.dim() == 4 || t.dim() == 5) {
    const auto fmt = t.dim() == 4 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::ChannelsLast3d;
    r = t.is_contiguous(fmt) ? t : t.contiguous(fmt);
  } else {
    r = t.transpose(1, 2).is_contiguous() ? t : t.transpose(1, 2).contiguous().transpose(1, 2);
  }
  if (reinterpret_cast<uintptr_t>(r.data_ptr()) & 15) {
    at::Tensor c = at::empty_strided(r.sizes(), r.strides(), r.options());
    c.copy_(r);
    return c;
  }
  return r;
}

at::Tensor empty_out(const Prepared& p, const at::Tensor& like) {
  return at::empty_strided(p.out_shape, p.out_strides, like.options());
}

void launch(const Prepared& p, void* in, void* wei, void* out, const at::Tensor& like) {
  c10::cuda::CUDAGuard guard(c10::Device(c10::DeviceType::CUDA, c10::DeviceIndex(p.dev_index)));
  at::Tensor ws;
  void* pws = nullptr;
  if (p.ws_bytes) {
    ws = at::empty({p.ws_bytes}, like.options().dtype(at::kByte));
    pws = ws.data_ptr();
  }
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(p.dev_index)).stream();
  const int rc = p.run(p.index, p.problem.data(), in, wei, out, pws, stream, p.k_batch);
  if (rc) {
    const char* msg = p.last_error ? p.last_error() : nullptr;
    throw std::runtime_error(std::string("ckgen ") + p.name + " (error " + std::to_string(rc) +
                             "): " + (msg ? msg : "launch failed"));
  }
}

at::Tensor run_forward(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b,
                       const Conf& conf, bool autotune) {
  PreparedPtr p = prepared(kForward, x, w, b, {}, conf, autotune);
  at::Tensor y = empty_out(*p, x);
  if (p->empty) return y;
  at::Tensor xr = ready(x), wr = ready(w);
  launch(*p, xr.data_ptr(), wr.data_ptr(), y.data_ptr(), x);
  if (b && b->defined()) {
    std::vector<int64_t> view(size_t(y.dim()), 1);
    view[1] = -1;
    y.add_(b->view(view));
  }
  return y;
}

at::Tensor run_backward_data(const at::Tensor& dy, const at::Tensor& w, at::IntArrayRef input_size,
                             const Conf& conf, bool autotune) {
  PreparedPtr p = prepared(kBackwardData, dy, w, {}, input_size, conf, autotune);
  at::Tensor dx = empty_out(*p, dy);
  if (p->empty) return dx;
  at::Tensor dyr = ready(dy), wr = ready(w);
  launch(*p, dx.data_ptr(), wr.data_ptr(), dyr.data_ptr(), dy);
  return dx;
}

at::Tensor run_backward_weight(const at::Tensor& x, const at::Tensor& dy, at::IntArrayRef weight_size,
                               const Conf& conf, bool autotune) {
  PreparedPtr p = prepared(kBackwardWeight, x, dy, {}, weight_size, conf, autotune);
  if (p->empty) return empty_out(*p, x).zero_();
  at::Tensor dw = empty_out(*p, x);
  at::Tensor xr = ready(x), dyr = ready(dy);
  launch(*p, xr.data_ptr(), dw.data_ptr(), dyr.data_ptr(), x);
  return dw;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A gradient computed while a graph of the backward pass is built (create_graph=True): its value,
// and an error if anything differentiates through it (no second derivative of a convolution).
struct FirstOrderOnly : public torch::autograd::Function<FirstOrderOnly> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& value, const at::Tensor& a,
                            const at::Tensor& b) {
    (void)ctx;
    (void)a;
    (void)b;
    return value;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    (void)ctx;
    (void)grads;
    throw std::runtime_error(
        "ckgen convolution gradients have no derivative (no second derivative of a convolution)");
  }
};

// dy summed over everything but the channels (the bias gradient, in dy's dtype), as
// ckgen.torch.layout.channel_sum: a product of ones and the (N * spatial, C) view where dy is an
// fp16 / bf16 CUDA tensor laid out channels-last (cuBLAS, bandwidth-bound), else the sum.
at::Tensor channel_sum(const at::Tensor& dy) {
  std::vector<int64_t> perm{0}, dims{0};
  for (int64_t i = 2; i < dy.dim(); ++i) {
    perm.push_back(i);
    dims.push_back(i);
  }
  perm.push_back(1);
  const at::Tensor flat = dy.permute(perm);
  const auto st = dy.scalar_type();
  if (dy.is_cuda() && (st == at::kHalf || st == at::kBFloat16) && dy.numel() > 0 &&
      flat.is_contiguous()) {
    const int64_t c = dy.size(1);
    const at::Tensor ones = at::ones({1, dy.numel() / c}, dy.options());
    return at::mm(ones, flat.view({-1, c})).view({c});
  }
  return dy.sum(dims);
}

struct ConvFunction : public torch::autograd::Function<ConvFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const c10::optional<at::Tensor>& b, int64_t conf_id, bool autotune) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["conf"] = conf_id;
    ctx->saved_data["autotune"] = autotune;
    ctx->saved_data["bias"] = bool(b && b->defined());
    return run_forward(x, w, b, Conf{conf_id, {}}, autotune);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const Conf conf{ctx->saved_data["conf"].toInt(), {}};
    const bool autotune = ctx->saved_data["autotune"].toBool();
    const at::Tensor& dy = grads[0];
    const bool graph = at::GradMode::is_enabled();  // create_graph
    at::Tensor dx, dw, db;
    {
      at::NoGradGuard no_grad;
      if (ctx->needs_input_grad(0)) dx = run_backward_data(dy, w, x.sizes(), conf, autotune);
      if (ctx->needs_input_grad(1)) dw = run_backward_weight(x, dy, w.sizes(), conf, autotune);
    }
    if (graph) {
      if (dx.defined()) dx = FirstOrderOnly::apply(dx, dy, w);
      if (dw.defined()) dw = FirstOrderOnly::apply(dw, x, dy);
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = channel_sum(dy);
    return {dx, dw, db, at::Tensor(), at::Tensor()};
  }
};

// The eager forward: ConvFunction where a gradient is needed, else the launch alone.
at::Tensor conv(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b,
                int64_t conf_id, bool autotune) {
  const bool grad = at::GradMode::is_enabled() &&
                    (x.requires_grad() || w.requires_grad() || (b && b->defined() && b->requires_grad()));
  if (grad) return ConvFunction::apply(x, w, b, conf_id, autotune);
  return run_forward(x, w, b, Conf{conf_id, {}}, autotune);
}

void set_miss(py::object fn) {
  if (!g_miss) g_miss = new py::object();
  *g_miss = std::move(fn);
}

// ---------------------------------------------------------------- the registered ops' kernels
// ckgen::conv_forward / conv_backward_data / conv_backward_weight for CUDA tensors, registered for
// the CUDA and AutogradCUDA dispatch keys when this module loads (they take precedence over the
// Python kernels that ckgen.torch.registration registers for CompositeExplicitAutograd and
// Autograd, which keep serving other devices and a Python-only setup). A compiled graph's call
// thus runs no Python but the autotune flag's lookup. Where a gradient is needed the Autograd
// kernel calls back into Python (registration.grad_forward / grad_backward: the ops' autograd
// functions, as tracing and the fake kernels see them); elsewhere it redispatches below autograd.
using SymInts = c10::SymIntArrayRef;
using ForwardSig = at::Tensor(const at::Tensor&, const at::Tensor&, const c10::optional<at::Tensor>&,
                              SymInts, SymInts, SymInts, SymInts, c10::SymInt, int64_t);
using BackwardSig = at::Tensor(const at::Tensor&, const at::Tensor&, SymInts, SymInts, SymInts,
                               SymInts, SymInts, c10::SymInt, int64_t);

// Python callables, set once by ckgen.torch.native (set_python); never destroyed (see g_miss).
py::object* g_autotune = nullptr;       // ckgen.torch.ops.autotune_enabled
py::object* g_grad_forward = nullptr;   // registration.grad_forward
py::object* g_grad_backward = nullptr;  // registration.grad_backward

void set_python(py::object autotune, py::object grad_forward, py::object grad_backward) {
  g_autotune = new py::object(std::move(autotune));
  g_grad_forward = new py::object(std::move(grad_forward));
  g_grad_backward = new py::object(std::move(grad_backward));
}

bool autotune_now() {
  py::gil_scoped_acquire gil;
  return g_autotune && (*g_autotune)().cast<bool>();
}

std::vector<int64_t> ints(SymInts s) {
  std::vector<int64_t> v;
  v.reserve(s.size());
  for (const c10::SymInt& i : s) v.push_back(i.guard_int(__FILE__, __LINE__));
  return v;
}

// The registered op's parameters as its schema passes them (stride, padding_left, padding_right,
// dilation, then groups and library): a Conf with id -1.
Conf sym_conf(SymInts stride, SymInts pl, SymInts pr, SymInts dil, const c10::SymInt& groups,
              int64_t library) {
  Conf c;
  for (SymInts v : {stride, pl, pr, dil}) {
    c.values.push_back(int64_t(v.size()));
    for (const c10::SymInt& i : v) c.values.push_back(i.guard_int(__FILE__, __LINE__));
  }
  c.values.push_back(groups.guard_int(__FILE__, __LINE__));
  c.values.push_back(library);
  return c;
}

at::Tensor cuda_forward(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b,
                        SymInts stride, SymInts pl, SymInts pr, SymInts dil, c10::SymInt groups,
                        int64_t library) {
  return run_forward(x, w, b, sym_conf(stride, pl, pr, dil, groups, library), autotune_now());
}

at::Tensor cuda_backward_data(const at::Tensor& dy, const at::Tensor& w, SymInts size, SymInts stride,
                              SymInts pl, SymInts pr, SymInts dil, c10::SymInt groups, int64_t library) {
  return run_backward_data(dy, w, ints(size), sym_conf(stride, pl, pr, dil, groups, library),
                           autotune_now());
}

at::Tensor cuda_backward_weight(const at::Tensor& x, const at::Tensor& dy, SymInts size, SymInts stride,
                                SymInts pl, SymInts pr, SymInts dil, c10::SymInt groups,
                                int64_t library) {
  return run_backward_weight(x, dy, ints(size), sym_conf(stride, pl, pr, dil, groups, library),
                             autotune_now());
}

bool needs_grad(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& c = {}) {
  return at::GradMode::is_enabled() &&
         (a.requires_grad() || b.requires_grad() || (c && c->defined() && c->requires_grad()));
}

at::Tensor autograd_forward(c10::DispatchKeySet ks, const at::Tensor& x, const at::Tensor& w,
                            const c10::optional<at::Tensor>& b, SymInts stride, SymInts pl, SymInts pr,
                            SymInts dil, c10::SymInt groups, int64_t library) {
  if (needs_grad(x, w, b)) {
    py::gil_scoped_acquire gil;
    if (!g_grad_forward) throw std::runtime_error("ckgen native path: not initialised (set_python)");
    return (*g_grad_forward)(x, w, b, stride, pl, pr, dil, groups, library).cast<at::Tensor>();
  }
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("ckgen::conv_forward", "").typed<ForwardSig>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, x, w, b, stride, pl, pr, dil, groups,
                       library);
}

template <const char* Name>
at::Tensor autograd_backward(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                             SymInts size, SymInts stride, SymInts pl, SymInts pr, SymInts dil,
                             c10::SymInt groups, int64_t library) {
  if (needs_grad(a, b)) {
    py::gil_scoped_acquire gil;
    if (!g_grad_backward) throw std::runtime_error("ckgen native path: not initialised (set_python)");
    return (*g_grad_backward)(Name, a, b, size, stride, pl, pr, dil, groups, library)
        .cast<at::Tensor>();
  }
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(Name, "").typed<BackwardSig>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, a, b, size, stride, pl, pr, dil, groups,
                       library);
}

constexpr char kBackwardDataOp[] = "ckgen::conv_backward_data";
constexpr char kBackwardWeightOp[] = "ckgen::conv_backward_weight";

void clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_cache.clear();
}

size_t cache_size() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_cache.size();
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "ckgen.torch's native eager path (autograd node and launches in C++)";
  m.def("conv", &conv, "forward (differentiable) through the prepared launch");
  m.def("set_miss", &set_miss);
  m.def("set_python", &set_python, "autotune flag, grad_forward, grad_backward (Python callables)");
  m.def("clear", &clear);
  m.def("cache_size", &cache_size);
}

TORCH_LIBRARY_IMPL(ckgen, CUDA, m) {
  m.impl("conv_forward", &cuda_forward);
  m.impl("conv_backward_data", &cuda_backward_data);
  m.impl("conv_backward_weight", &cuda_backward_weight);
}

TORCH_LIBRARY_IMPL(ckgen, AutogradCUDA, m) {
  m.impl("conv_forward", &autograd_forward);
  m.impl("conv_backward_data", &autograd_backward<kBackwardDataOp>);
  m.impl("conv_backward_weight", &autograd_backward<kBackwardWeightOp>);
}
