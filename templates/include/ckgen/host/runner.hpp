// Shared by the profiler and the tests: one problem x datatype on the GPU ("Workbench"):
// device tensors, fresh random inputs, a reference result, verification of an instance
// (poison -> run -> compare) and event timing of back-to-back launches. A fused instance runs
// with operands made on first use (host/fused_reference.hpp) and is compared with the operations
// applied to the unfused reference (backward fusions: the convolution of the masked dy).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/core/names.hpp"
#include "ckgen/host/fused_reference.hpp"
#include "ckgen/host/init.hpp"
#include "ckgen/host/reference.hpp"
#include "ckgen/host/shapes.hpp"
#include "ckgen/host/tolerance.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen::host {

enum class RefKind { None, Cpu, Gpu };

inline const char* to_string(RefKind r) {
  switch (r) {
    case RefKind::None: return "none";
    case RefKind::Cpu: return "cpu";
    case RefKind::Gpu: return "gpu";
  }
  return "?";
}

inline bool parse_ref_kind(const std::string& s, RefKind& r) {
  return parse_name(s, {RefKind::None, RefKind::Cpu, RefKind::Gpu}, r);
}

// Problems up to this many FLOPs use the CPU fp64 reference when "auto" is asked for.
inline constexpr double kCpuReferenceMaxFlops = 2.0e9;

// Minimum bytes moved: each tensor once, y (a forward's output, or dy) in y_dt.
inline double min_bytes(const ConvProblem& p, DataType dt, DataType y_dt) {
  return double(p.input_elems() + p.weight_elems()) * double(dtype_bytes(dt)) +
         double(p.output_elems()) * double(dtype_bytes(y_dt));
}

struct VerifyOutcome {
  bool ran = false;        // the launch succeeded
  bool verified = false;   // a comparison was made
  bool ok = false;         // ran && (not verified || comparison passed)
  std::string error;       // launch / runtime error
  CompareResult cmp;
  std::string summary(Variant v, const ConvProblem& p) const {
    if (!ran) return "ERROR " + error;
    if (!verified) return "not verified";
    return cmp.summary(v, p);
  }
  // "pass", "fail", "error" or "none".
  const char* word() const {
    if (!ran) return "error";
    if (!verified) return "none";
    return cmp.ok ? "pass" : "fail";
  }
};

struct TimingResult {
  bool ok = false;
  std::string error;
  double ms = 0;      // median over repeats of (sample time / iters)
  double ms_min = 0;  // fastest sample
  int iters = 0;
  int repeat = 0;
  std::string mode;  // "graph" or "loop"
  std::string note;  // e.g. why graph capture was not used
};

class Workbench {
 public:
  Workbench(Variant v, gpuStream_t stream) : v_(v), stream_(stream) {}

  Variant variant() const { return v_; }
  DataType datatype() const { return dt_; }
  const ConvProblem& problem() const { return p_; }
  uint64_t seed() const { return seed_; }
  RefKind ref_kind() const { return ref_kind_; }
  double ref_max_abs() const { return ref_max_; }
  bool has_reference() const { return ref_kind_ != RefKind::None; }

  // Allocates the tensors and fills the two the variant reads with fresh random values.
  void setup(DataType dt, const ConvProblem& p, InitMode init, uint64_t seed) {
    dt_ = dt;
    p_ = p;
    init_ = init;
    seed_ = seed;
    ref_kind_ = RefKind::None;
    ref_.clear();
    ep_ready_ = false;
    residuals_.clear();
    masked_refs_.clear();
    masked_host_.clear();
    const std::size_t eb = dtype_bytes(dt);
    x_.resize(std::size_t(p.input_elems()) * eb);
    w_.resize(std::size_t(p.weight_elems()) * eb);
    y_.resize(std::size_t(p.output_elems()) * eb);
    const int tensor_ids[3] = {0, 1, 2};  // x, w, y
    void* ptrs[3] = {x_.get(), w_.get(), y_.get()};
    const int64_t counts[3] = {p.input_elems(), p.weight_elems(), p.output_elems()};
    for (int t : tensor_ids) {
      if (ptrs[t] == written_ptr()) continue;
      gpu_check(fill_device(ptrs[t], counts[t], dt, init, tensor_seed(t), stream_), "fill");
    }
    gpu_check(gpuStreamSynchronize(stream_), "fill (synchronize)");
  }

  // Seed of tensor t (0 x, 1 w, 2 y): fill_host(..., tensor_seed(t)) reproduces it.
  uint64_t tensor_seed(int t) const { return hash2(seed_, uint64_t(t) + 1); }

  // Computes the reference of the written tensor. kind Cpu: fp64 on the host; Gpu: fp32
  // kernel. Throws GpuFailure.
  void compute_reference(RefKind kind) {
    ref_kind_ = RefKind::None;
    ref_.clear();
    if (kind == RefKind::None) return;
    ref_ = reference_of(kind, y_.get());
    ref_kind_ = kind;
    ref_max_ = max_abs(ref_);
  }

  // Device tensors for run().
  ConvTensors tensors() const { return ConvTensors{x_.get(), w_.get(), y_.get()}; }
  // The datatype instance key k writes its tensor in (a forward's fused conversion).
  DataType written_datatype(const KernelKey& k) const { return v_ == Variant::Forward ? k.out_datatype : dt_; }

  // The tensors for instance k: a fused one's operands too (made on first use); a converting
  // forward's output buffer grown to its datatype.
  ConvTensors tensors(const KernelBase& k) {
    const KernelKey& key = k.key();
    const DataType odt = written_datatype(key);
    if (v_ == Variant::Forward) y_.resize(std::size_t(p_.output_elems()) * dtype_bytes(odt));
    ConvTensors t = tensors();
    if (!is_fused(key)) return t;
    make_epilogue_operands();
    if (key.channel_op == ChannelOp::Bias || key.channel_op == ChannelOp::ScaleShift)
      t.ep.bias = static_cast<const float*>(bias_.get());
    if (key.channel_op == ChannelOp::ScaleShift) t.ep.scale = static_cast<const float*>(scale_.get());
    if (key.residual) t.ep.residual = residual(odt).dev.get();
    if (is_grad_mask(key.activation)) t.ep.y = saved_.get();
    if (key.channel_op == ChannelOp::BiasGrad) t.ep.db = static_cast<float*>(db_.get());
    if (key.stats) t.ep.stats = static_cast<float*>(stats_.get());
    t.ep.beta = kTestResidualBeta;
    t.ep.alpha = kTestLeakySlope;
    return t;
  }
  void* written_ptr() const {
    switch (v_) {
      case Variant::Forward: return y_.get();
      case Variant::BackwardData: return x_.get();
      default: return w_.get();
    }
  }

  // Poisons the written tensor, runs once, compares with the reference (when there is one).
  VerifyOutcome verify(const KernelBase& k, const RunOptions& opts) {
    VerifyOutcome r;
    try {
      const int64_t n = written_elems(v_, p_);
      const DataType odt = written_datatype(k.key());
      ws_.resize(k.workspace_bytes(p_, opts));
      const ConvTensors t = tensors(k);
      gpu_check(poison_device(written_ptr(), n, odt, stream_), "poison");
      if (t.ep.stats) gpu_check(poison_device(t.ep.stats, 2 * p_.G * p_.K, DataType::FP32, stream_), "poison stats");
      gpu_check(k.run(p_, t, ws_.get(), stream_, opts), "run");
      gpu_check(gpuStreamSynchronize(stream_), "run (synchronize)");
      gpu_check(gpuGetLastError(), "run (last error)");
      r.ran = true;
      if (ref_kind_ == RefKind::None) {
        r.ok = true;
        return r;
      }
      std::vector<unsigned char> out(std::size_t(n) * dtype_bytes(odt));
      gpu_check(gpuMemcpy(out.data(), written_ptr(), out.size(), gpuMemcpyDeviceToHost),
                "result download");
      const bool fused = is_fused(k.key());
      std::vector<double> fused_ref;
      if (fused && is_backward_fused(k.key())) {
        fused_ref = backward_fused_reference(k.key());
      } else if (fused) {
        fused_ref = ref_;
        const std::vector<double> none;
        apply_fused_reference(k.key(), p_, fused_ref, hbias_, hscale_, k.key().residual ? residual(odt).host : none,
                              kTestResidualBeta, kTestLeakySlope);
      }
      const double scale = fused ? std::max(ref_max_, max_abs(fused_ref)) : ref_max_;
      Tolerance tol = tolerance_for(v_, dt_, p_, opts.k_batch, scale, ref_kind_ == RefKind::Gpu);
      if (odt != dt_) {  // the output's rounding when it is coarser than the inputs'
        const Tolerance o = tolerance_for(v_, odt, p_, opts.k_batch, scale, ref_kind_ == RefKind::Gpu);
        tol.rtol = std::max(tol.rtol, o.rtol);
        tol.atol = std::max(tol.atol, o.atol);
      }
      if (fused) {  // the activations' slopes (up to 1.13) on the convolution's error
        tol.rtol *= 1.25;
        tol.atol *= 1.25;
      }
      r.cmp = compare_result(fused ? fused_ref : ref_, out.data(), odt, tol);
      if (r.cmp.ok && k.key().channel_op == ChannelOp::BiasGrad) r.cmp = compare_bias_grad(k.key());
      if (r.cmp.ok && k.key().stats) r.cmp = compare_stats(out, odt);
      r.verified = true;
      r.ok = r.cmp.ok;
    } catch (const GpuFailure& e) {
      r.error = e.what();
      r.ok = false;
    }
    return r;
  }

  // Events around `iters` back-to-back launches, `repeat` samples, median. iters 0: chosen so
  // that a sample lasts about target_ms. With use_graph the iters launches are captured into
  // one graph and replayed (no host overhead between launches, as the cuDNN peer is timed);
  // when capture fails the launch loop is used and t.note says why.
  TimingResult time(const KernelBase& k, const RunOptions& opts, int warmup, int repeat,
                    int iters, bool use_graph = true, double target_ms = 2.0) {
    TimingResult t;
    try {
      ws_.resize(k.workspace_bytes(p_, opts));
      const ConvTensors ts = tensors(k);
      auto launch = [&] { gpu_check(k.run(p_, ts, ws_.get(), stream_, opts), "run"); };
      for (int i = 0; i < warmup; ++i) launch();
      gpu_check(gpuStreamSynchronize(stream_), "warm-up");
      Event a, b;
      auto elapsed = [&](auto&& body, int n) {
        gpu_check(gpuEventRecord(a.get(), stream_), "event record");
        body();
        gpu_check(gpuEventRecord(b.get(), stream_), "event record");
        gpu_check(gpuEventSynchronize(b.get()), "event synchronize");
        float ms = 0;
        gpu_check(gpuEventElapsedTime(&ms, a.get(), b.get()), "event elapsed");
        return double(ms) / n;
      };
      auto loop_sample = [&](int n) {
        return elapsed([&] { for (int i = 0; i < n; ++i) launch(); }, n);
      };
      if (iters <= 0) {
        const double est = std::max(loop_sample(3), 1e-4);
        iters = int(std::min(10000.0, std::max(1.0, std::ceil(target_ms / est))));
      }
      GraphTimer graph;
      bool graphed = false;
      if (use_graph) {
        iters = std::min(iters, 1000);
        const std::string why = graph.capture(stream_, [&] {
          for (int i = 0; i < iters; ++i) launch();
        });
        if (why.empty()) {
          gpu_check(graph.launch(stream_), "graph launch");  // warm the graph
          gpu_check(gpuStreamSynchronize(stream_), "graph warm-up");
          graphed = true;
        } else {
          (void)gpuStreamSynchronize(stream_);
          (void)gpuGetLastError();
          t.note = "graph capture failed (" + why + "); timed with a launch loop";
        }
      }
      std::vector<double> s;
      for (int r = 0; r < std::max(1, repeat); ++r)
        s.push_back(graphed ? elapsed([&] { gpu_check(graph.launch(stream_), "graph launch"); },
                                      iters)
                            : loop_sample(iters));
      std::sort(s.begin(), s.end());
      const std::size_t m = s.size();
      t.ms = m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
      t.ms_min = s.front();
      t.iters = iters;
      t.repeat = int(m);
      t.mode = graphed ? "graph" : "loop";
      gpu_check(gpuGetLastError(), "timing (last error)");
      t.ok = true;
    } catch (const GpuFailure& e) {
      t.error = e.what();
    }
    return t;
  }

  const std::vector<double>& reference() const { return ref_; }

  // Host copy of a device tensor of datatype dt (the workbench's by default) as doubles.
  std::vector<double> download(const void* dev, int64_t n) const { return download(dev, n, dt_); }
  std::vector<double> download(const void* dev, int64_t n, DataType dt) const {
    std::vector<unsigned char> raw(std::size_t(n) * dtype_bytes(dt));
    gpu_check(gpuMemcpy(raw.data(), dev, raw.size(), gpuMemcpyDeviceToHost), "download");
    return to_doubles(raw.data(), n, dt);
  }
  // n values of datatype dt in host memory, as doubles.
  std::vector<double> to_doubles(const unsigned char* raw, int64_t n, DataType dt) const {
    std::vector<double> out(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = load_host(raw, i, dt);
    return out;
  }

 private:
  // The reference of the written tensor with dy read from `dy` (the workbench's own, or a
  // masked copy of it).
  std::vector<double> reference_of(RefKind kind, void* dy) {
    const int64_t n = written_elems(v_, p_);
    if (kind == RefKind::Cpu) {
      std::vector<double> hx, hw, hy;
      if (v_ != Variant::BackwardData) hx = download(x_.get(), p_.input_elems());
      if (v_ != Variant::BackwardWeight) hw = download(w_.get(), p_.weight_elems());
      if (v_ != Variant::Forward) hy = download(dy, p_.output_elems());
      return reference_cpu(v_, p_, hx, hw, hy);
    }
    ref32_.resize(std::size_t(n) * sizeof(float));
    gpu_check(fill_device_f32(static_cast<float*>(ref32_.get()), n, NAN, stream_), "ref fill");
    void* px = v_ == Variant::BackwardData ? ref32_.get() : x_.get();
    void* pw = v_ == Variant::BackwardWeight ? ref32_.get() : w_.get();
    void* py = v_ == Variant::Forward ? ref32_.get() : dy;
    gpu_check(reference_gpu(v_, dt_, p_, px, pw, py, stream_, true), "reference kernel launch");
    gpu_check(gpuStreamSynchronize(stream_), "reference kernel");
    std::vector<float> h(static_cast<std::size_t>(n));
    gpu_check(gpuMemcpy(h.data(), ref32_.get(), std::size_t(n) * sizeof(float), gpuMemcpyDeviceToHost),
              "reference download");
    std::vector<double> ref(h.begin(), h.end());
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(ref[size_t(i)]))
        throw GpuFailure("GPU reference left a non-finite value at " + describe_index(v_, p_, i));
    return ref;
  }

  // A backward fusion's reference (host/fused_reference.hpp): the masked dy (kept in masked_,
  // its host copy in hmasked_) convolved by the reference of this workbench's kind, per mask.
  std::vector<double> backward_fused_reference(const KernelKey& k) {
    make_epilogue_operands();
    const int id = int(k.activation);
    if (auto it = masked_refs_.find(id); it != masked_refs_.end()) {
      hmasked_ = masked_host_.at(id);
      return it->second;
    }
    const std::vector<unsigned char> m = masked_dy(k, dt_, download(y_.get(), p_.output_elems()), hsaved_, kTestLeakySlope);
    masked_.resize(m.size());
    gpu_check(gpuMemcpy(masked_.get(), m.data(), m.size(), gpuMemcpyHostToDevice), "masked dy upload");
    hmasked_ = download(masked_.get(), p_.output_elems());
    masked_host_[id] = hmasked_;
    return masked_refs_[id] = reference_of(ref_kind_, masked_.get());
  }

  // bias_grad: db against the sums of the masked dy (backward_fused_reference ran first), each
  // within 2e-4 of the sum of |dy| over the channel (fp32 accumulation in a different order).
  CompareResult compare_bias_grad(const KernelKey&) {
    return compare_sums(db_, bias_grad_reference(p_, hmasked_), bias_grad_reference(p_, hmasked_, true), 2e-4,
                        "bias gradient db");
  }

  // stats: the sums and sums of squares against those of the output the kernel wrote (already
  // compared with the reference), each within 2e-5 of its scale (fp32 sums in another order). The
  // buffer is poisoned first (run() must clear it).
  CompareResult compare_stats(const std::vector<unsigned char>& out, DataType odt) {
    const std::vector<double> y = to_doubles(out.data(), p_.output_elems(), odt);
    return compare_sums(stats_, stats_reference(p_, y), stats_reference(p_, y, true), 2e-5,
                        "statistics (sums, sums of squares)");
  }

  // The fp32 sums a fusion wrote into `buf` (db, stats) against `ref`, each within `rel` of the
  // largest of `scale` (the sums of magnitudes).
  CompareResult compare_sums(const DeviceBuffer& buf, const std::vector<double>& ref, const std::vector<double>& scale,
                             double rel, const char* label) {
    std::vector<float> got(ref.size());
    gpu_check(gpuMemcpy(got.data(), buf.get(), got.size() * sizeof(float), gpuMemcpyDeviceToHost), label);
    CompareResult r = compare_result(ref, got.data(), DataType::FP32, Tolerance{0.0, rel * max_abs(scale) + 1e-6});
    r.label = label;
    return r;
  }

  // The residual of a fused forward writing datatype odt (the output's shape and type), filled
  // from the residual's seed in odt, with its host copy (made on first use per datatype).
  struct Residual {
    DeviceBuffer dev;
    std::vector<double> host;
  };
  Residual& residual(DataType odt) {
    Residual& r = residuals_[int(odt)];
    if (!r.host.empty()) return r;
    const int64_t n = p_.output_elems();
    r.dev.resize(std::size_t(n) * dtype_bytes(odt));
    gpu_check(fill_device(r.dev.get(), n, odt, init_, tensor_seed(5), stream_), "fill residual");
    gpu_check(gpuStreamSynchronize(stream_), "fill residual (synchronize)");
    r.host = download(r.dev.get(), n, odt);
    return r;
  }

  // A fused instance's operands for the current problem: bias and scale (G*K fp32; scale in
  // (0, 1]) and the residual (the output's shape and type), with their host copies.
  void make_epilogue_operands() {
    if (ep_ready_) return;
    const int64_t gk = p_.G * p_.K, n = p_.output_elems();
    bias_.resize(std::size_t(gk) * sizeof(float));
    scale_.resize(std::size_t(gk) * sizeof(float));
    gpu_check(fill_device(bias_.get(), gk, DataType::FP32, InitMode::Random, tensor_seed(3), stream_),
              "fill bias");
    gpu_check(fill_device(scale_.get(), gk, DataType::FP32, InitMode::Positive, tensor_seed(4), stream_),
              "fill scale");
    saved_.resize(std::size_t(n) * dtype_bytes(dt_));
    db_.resize(std::size_t(gk) * sizeof(float));
    stats_.resize(std::size_t(2 * gk) * sizeof(float));
    gpu_check(fill_device(saved_.get(), n, dt_, InitMode::Random, tensor_seed(6), stream_), "fill saved y");
    gpu_check(gpuStreamSynchronize(stream_), "fill epilogue operands (synchronize)");
    auto floats = [&](const DeviceBuffer& b, int64_t count) {
      std::vector<float> h(static_cast<std::size_t>(count));
      gpu_check(gpuMemcpy(h.data(), b.get(), h.size() * sizeof(float), gpuMemcpyDeviceToHost), "download");
      return std::vector<double>(h.begin(), h.end());
    };
    hbias_ = floats(bias_, gk);
    hscale_ = floats(scale_, gk);
    hsaved_ = download(saved_.get(), n);
    ep_ready_ = true;
  }

  Variant v_;
  gpuStream_t stream_;
  DataType dt_ = DataType::FP16;
  ConvProblem p_;
  InitMode init_ = InitMode::Random;
  uint64_t seed_ = 0;
  RefKind ref_kind_ = RefKind::None;
  double ref_max_ = 0;
  std::vector<double> ref_;
  DeviceBuffer x_, w_, y_, ws_, ref32_;
  DeviceBuffer bias_, scale_;
  std::vector<double> hbias_, hscale_;
  std::map<int, Residual> residuals_;  // by the written datatype
  // Backward fusions: the saved forward output y, db, the masked dy of the last mask asked for
  // (device and host) and the references per mask (Activation code).
  DeviceBuffer saved_, db_, masked_;
  DeviceBuffer stats_;  // forward stats: 2*G*K fp32
  std::vector<double> hsaved_, hmasked_;
  std::map<int, std::vector<double>> masked_refs_, masked_host_;
  bool ep_ready_ = false;
};

}  // namespace ckgen::host
