// The registry of an offline dispatch library (bench/offline_dispatch.py): one entry per instance
// (or channel-padding face) named in profiler CSVs, its KernelKey spelled from the name
// (offline_keys.inc), and "supported" exactly where the profiles timed it (offline_measured.tsv:
// instance, problem signature). Linked with the real C API (dispatch/ckgen_dispatch.cpp) and
// compiled by the host compiler, it lets bench/heuristic_eval.py score the real cost model and
// neighbour ranking against measured times without a GPU or the compiled kernels.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ckgen/kernel/kernel_base.hpp"

#ifndef CKGEN_OFFLINE_DIR
#error "define CKGEN_OFFLINE_DIR: the folder holding offline_measured.tsv"
#endif

using namespace ckgen;

namespace {

// ndim|G|N|C|K|in|filter|stride|dilation|pad_l|pad_r, every triple as D,H,W (as
// bench/offline_dispatch.py writes it).
std::string signature(const ConvProblem& p) {
  std::ostringstream s;
  auto tri = [&](const int64_t* v) { s << '|' << v[0] << ',' << v[1] << ',' << v[2]; };
  s << p.ndim << '|' << p.G << '|' << p.N << '|' << p.C << '|' << p.K;
  tri(p.in);
  tri(p.filter);
  tri(p.stride);
  tri(p.dilation);
  tri(p.pad_l);
  tri(p.pad_r);
  return s.str();
}

struct MeasuredKernel : KernelBase {
  KernelKey k;
  std::unordered_set<std::string> measured;
  explicit MeasuredKernel(KernelKey key) : k(std::move(key)) {}
  const KernelKey& key() const override { return k; }
  std::string is_supported(const ConvProblem& p, const RunOptions&) const override {
    if (p.ndim != k.ndim) return "ndim mismatch";
    return measured.count(signature(p)) ? "" : "not measured";
  }
  std::size_t workspace_bytes(const ConvProblem&, const RunOptions&) const override { return 0; }
  gpuError_t run(const ConvProblem&, const ConvTensors&, void*, gpuStream_t, const RunOptions&) const override {
    return gpu_invalid_value();
  }
};

KernelKey make_key(const char* name, Variant v, DataType d, int ndim, int tm, int tn, int tk, int wm, int wn, int wk,
                   int im, int in, int ik, Pipeline pipe, int stages, Scheduler sched, int lw, int mw, Epilogue ep,
                   bool swap_ab, int va, int vb, int vc, Specialization spec, int gm, int kb, Reduction red,
                   bool persistent, Stage stage, ChannelOp op, Activation act, bool res, bool stats,
                   int channel_pad) {
  KernelKey k{};
  k.name = name;
  k.variant = v, k.datatype = d, k.ndim = ndim;
  k.tile_m = tm, k.tile_n = tn, k.tile_k = tk;
  k.wave_m = wm, k.wave_n = wn, k.wave_k = wk;
  k.warp_m = im, k.warp_n = in, k.warp_k = ik;
  k.pipeline = pipe, k.stages = stages, k.scheduler = sched, k.load_waves = lw, k.math_waves = mw;
  k.epilogue = ep, k.swap_ab = swap_ab;
  k.vec_a = va, k.vec_b = vb, k.vec_c = vc;
  k.specialization = spec, k.groups_to_merge = gm, k.k_batch = kb, k.reduction = red, k.persistent = persistent;
  k.stage = stage, k.channel_op = op, k.activation = act, k.residual = res, k.stats = stats;
  k.arch = "sm_90a";
  k.channel_pad = channel_pad;
  return k;
}

}  // namespace

namespace ckgen {
Registry& registry() {
  static Registry r = [] {
    Registry x;
    std::unordered_map<std::string, MeasuredKernel*> by_name;
    auto add = [&](KernelKey k) {
      auto m = std::make_unique<MeasuredKernel>(std::move(k));
      by_name[m->k.name] = m.get();
      x.add(std::move(m));
    };
#define CKGEN_OFFLINE_KEY(...) add(make_key(__VA_ARGS__));
#include "offline_keys.inc"
#undef CKGEN_OFFLINE_KEY
    std::ifstream f(std::string(CKGEN_OFFLINE_DIR) + "/offline_measured.tsv");
    std::string line;
    while (std::getline(f, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      auto it = by_name.find(line.substr(0, tab));
      if (it != by_name.end()) it->second->measured.insert(line.substr(tab + 1));
    }
    return x;
  }();
  return r;
}
}  // namespace ckgen
