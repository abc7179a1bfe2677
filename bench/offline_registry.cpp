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
// CKGEN_OFFLINE_KEY(name, k.<field> = <value>, ...): bench/offline_dispatch.py key_line
#define CKGEN_OFFLINE_KEY(NAME, ...) \
  {                                  \
    KernelKey k{};                   \
    k.name = NAME;                   \
    k.arch = "sm_90a";               \
    __VA_ARGS__;                     \
    add(std::move(k));               \
  }
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
