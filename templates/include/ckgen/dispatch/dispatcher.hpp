// Run-time kernel selection: select(problem, datatype, variant[, epilogue ops]) over the registry.
// Only instances whose fused operations (EpilogueOps, epilogue/fusion.hpp) are exactly the
// request's take part: a plain request never gets a fused instance and a fused one never a plain
// or differently fused one. The tuning database holds plain instances (ckgen tune skips fused
// ones); a fused request ranks its candidates exactly as their plain twins (the same instance
// without the fused operations: plain_twin_name) would be ranked for the problem, each database
// entry of a twin standing for the fused instance (the epilogue barely changes the time).
//
//   1. Tuning database (JSON written by `ckgen tune`; loaded from a path, or from the file named
//      by the environment variable CKGEN_TUNING_DB on first use):
//        exact problem match (variant, datatype, every problem field) first: the entry's
//        ranking is walked until an instance that is registered and supports the problem;
//        else the neighbour ranking, a cost model corrected by measurements: every tuned shape
//        of the same variant/datatype/ndim within kMaxDistance (problem_distance: |log| GEMM
//        M/N/K/batch, filter and stride) contributes one point per timed (instance, k_batch):
//        its residual log(measured time / cost-model estimate). A supported candidate
//        (instance, k_batch) of the problem scores log(its estimate) + the weighted mean residual
//        of the kNeighbourPoints points of the same instance nearest by
//          kShapeWeight * problem_distance + kBlocksWeight * |dlog(blocks per compute unit)|
//                                          + kSplitWeight * |dlog(reduction length per split)|
//        (split_features: the split count is matched by the parallelism and the work per split
//        it gives on each shape, not copied), weights exp(-distance / kBandwidth). An instance
//        no tuned shape timed takes the nearest points of any instance plus kUntimedPenalty.
//        The mean residual is shrunk towards 0 (the bare cost model) as the tuned shapes lie
//        farther away (kPriorWeight). The lowest score wins.
//      A database with no entry of the request's variant and datatype reads those of its
//      sibling datatype (fp16 for bf16 and back: sibling_datatype), each standing for its twin.
//   2. Cost model (dispatch/cost_model.hpp) when the database has nothing near.
//
// Every decision carries a one-line explanation (Selection::why).
//
// select_cached() answers a repeated (problem, variant, datatype, device) from the selection
// cache (dispatch/selection_cache.hpp), cleared whenever a decision could change (a tuning
// database loaded or cleared, the compute units or split candidates changed); cache_put() records
// a pick measured elsewhere (autotune). candidates() lists the best (instance, k_batch) pairs to
// time: the selection first, then the cost model's order.
#pragma once


#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ckgen/dispatch/cost_model.hpp"
#include "ckgen/dispatch/db_select.hpp"
#include "ckgen/dispatch/neighbours.hpp"
#include "ckgen/dispatch/selection_cache.hpp"
#include "ckgen/dispatch/tuning_db.hpp"
#include "ckgen/dispatch/twins.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// Dispatcher
// ------------------------------------------------------------------------------------------
class Dispatcher {
 public:
  explicit Dispatcher(const Registry& reg = registry()) : reg_(reg) {}

  // Loads a tuning database (replacing any). Throws std::runtime_error on a bad file.
  void load_tuning_db(const std::string& path) {
    std::lock_guard<std::mutex> g(mu_);
    auto db = std::make_shared<TuningDb>();
    db->load(path);
    db_ = db;
    env_checked_ = true;
    cache_.clear();
  }
  void clear_tuning_db() {
    std::lock_guard<std::mutex> g(mu_);
    db_.reset();
    env_checked_ = true;
    cache_.clear();
  }
  std::shared_ptr<const TuningDb> tuning_db() {
    std::lock_guard<std::mutex> g(mu_);
    if (!env_checked_) {
      env_checked_ = true;
      if (const char* e = std::getenv("CKGEN_TUNING_DB"); e && *e) {
        auto db = std::make_shared<TuningDb>();
        try {
          db->load(e);
          db_ = db;
        } catch (const std::exception& ex) {
          env_error_ = ex.what();
        }
      }
    }
    return db_;
  }
  const std::string& env_error() const { return env_error_; }

  void set_arch(const ArchNumbers& a) {
    arch_ = a;
    cache_.clear();
  }

  // Split counts the cost model tries for backward_weight instances whose k_batch is chosen per
  // call (0 = the instance's own choice). Default {0, 1, 2, 4, 8, 16, 32}.
  void set_k_batch_candidates(std::vector<int> kbs) {
    if (kbs.empty()) kbs.push_back(0);
    k_batch_candidates_ = std::move(kbs);
    cache_.clear();
  }
  const std::vector<int>& k_batch_candidates() const { return k_batch_candidates_; }
  const ArchNumbers& arch() const { return arch_; }

  int index_of(const std::string& name) const {
    const auto& all = reg_.all();
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i]->name() == name) return int(i);
    return -1;
  }

  // Best choice for (problem, datatype, variant); Selection::kernel is null when no registered
  // instance supports the problem (why = the reasons).
  Selection select(const ConvProblem& p, DataType dt, Variant v, const EpilogueOps& ops = {}) {
    Selection s;
    if (std::string e = p.validate(); !e.empty()) {
      s.why = "invalid problem: " + e;
      return s;
    }
    if (auto db = tuning_db(); db && !db->empty()) {
      if (from_db(*db, p, dt, v, s, ops)) return s;
    }
    return by_cost(p, dt, v, ops);
  }

  // Whether instance key k answers a request for (variant, datatype, fused operations).
  static bool serves(const KernelKey& k, Variant v, DataType dt, const EpilogueOps& ops = {}) {
    return serves_request(k, v, dt, ops);
  }

  using CostCandidate = ckgen::CostCandidate;

  // select() (cost_only: by_cost()) through the selection cache; `device` is part of the key (the
  // caller's current device). `hit` (may be null) tells whether the cache answered.
  CachedSelection select_cached(const ConvProblem& p, DataType dt, Variant v, int device, bool cost_only,
                                bool* hit = nullptr, const EpilogueOps& ops = {}) {
    const SelectionKey key(p, v, dt, device, cost_only ? 1 : 0, ops.code());
    CachedSelection c;
    if (cache_.get(key, c)) {
      if (hit) *hit = true;
      return c;
    }
    if (hit) *hit = false;
    const uint64_t epoch = cache_.epoch();  // before the state the selection reads
    const Selection s = cost_only ? by_cost(p, dt, v, ops) : select(p, dt, v, ops);
    c.index = s.index;
    c.k_batch = s.k_batch;
    c.text = s.kernel ? s.source + ": " + s.why : s.why;
    if (s.kernel) cache_.put(key, c, epoch);  // refusals are not cached: they carry the reasons
    return c;
  }

  // Records (index, k_batch) as the choice for (problem, variant, datatype, device), for select()
  // and select_cached(cost_only = false). `why` explains it (e.g. the measured times). Returns
  // the refusal ("" when stored): an index out of range, another variant / datatype, or an
  // instance that does not support the problem.
  std::string cache_put(const ConvProblem& p, DataType dt, Variant v, int device, int index, int k_batch,
                        const std::string& why) {
    const auto& all = reg_.all();
    if (index < 0 || size_t(index) >= all.size())
      return "kernel index " + std::to_string(index) + " out of range 0.." + std::to_string(int(all.size()) - 1);
    const KernelBase& k = *all[size_t(index)];
    if (!serves(k.key(), v, dt))
      return k.name() + " is a " + to_string(k.key().variant) + " " + to_string(k.key().datatype) +
             (epilogue_ops(k.key()).fused() ? " fused" : "") + " instance, not " + to_string(v) + " " +
             to_string(dt);
    RunOptions o;
    o.k_batch = k_batch;
    if (std::string r = k.is_supported(p, o); !r.empty()) return k.name() + ": " + r;
    CachedSelection c;
    c.index = index;
    c.k_batch = k_batch;
    c.text = why.empty() ? "recorded: " + k.name() : why;
    const SelectionKey key(p, v, dt, device, 0);
    if (!cache_.put(key, c, cache_.epoch()) && cache_.capacity() > 0)
      return "the selection cache was cleared meanwhile";
    return {};
  }

  SelectionCache& cache() { return cache_; }

  // Up to k (instance, k_batch) pairs worth timing for the problem, best guess first: the
  // selection (tuning database or cost model), an exact tuning-database entry's ranking, then
  // every supported pair by the cost model's estimate. Empty when no instance supports it.
  std::vector<CostCandidate> candidates(const ConvProblem& p, DataType dt, Variant v, int k,
                                        const EpilogueOps& ops = {}) {
    std::vector<CostCandidate> out;
    if (k <= 0 || !p.validate().empty()) return out;
    auto add = [&](int index, int kb) {
      if (int(out.size()) >= k) return;
      for (const CostCandidate& c : out)
        if (c.index == index && c.k_batch == kb) return;
      const KernelBase& kern = *reg_.all()[size_t(index)];
      out.push_back({index, kb, estimate_cost(kern.key(), p, effective_k_batch(kern.key(), p, kb), arch_)});
    };
    const Selection s = select(p, dt, v, ops);
    if (!s) return out;
    add(s.index, s.k_batch);
    if (auto db = tuning_db(); db && !db->empty()) {
      const TwinIndex twins(reg_, v, dt, ops);
      for (const TunedEntry& e : db->entries()) {
        if (e.variant != v || e.datatype != dt || !same_problem(e.problem, p)) continue;
        for (const TunedChoice& c : e.ranking) {
          const int i = twins(c.kernel);
          if (i < 0) continue;
          RunOptions o;
          o.k_batch = c.k_batch;
          if (reg_.all()[size_t(i)]->is_supported(p, o).empty()) add(i, c.k_batch);
        }
      }
    }
    std::vector<CostCandidate> cs = cost_candidates(p, dt, v, nullptr, nullptr, nullptr, ops);
    std::stable_sort(cs.begin(), cs.end(),
                     [](const CostCandidate& a, const CostCandidate& b) { return a.cost.us < b.cost.us; });
    for (const CostCandidate& c : cs) add(c.index, c.k_batch);
    return out;
  }

  // backward_weight's row form (wavelet_tma, specialization stride1) copies x once per filter
  // row instead of once per tap but pads each output-row segment to a multiple of 16 positions
  // and runs 64-row tiles: it wins where the copies bound the kernel (few output channels, long
  // rows) and loses up to 2.6x on small rows or many output channels.
  // The cost model has no term for either, so only a tuning database's exact ranking picks it.
  static bool measured_only(const KernelKey& key) { return tma_row_form(key); }

  // Every registered instance of (variant, datatype, ndim) that supports the problem, per split
  // count tried (backward_weight instances with k_batch 0: k_batch_candidates()), with its
  // estimate. `reasons` counts the refusals, `candidates` the instances of the right ndim.
  // `examples` (may be null) keeps, per reason, the first instance that gave it.
  std::vector<CostCandidate> cost_candidates(const ConvProblem& p, DataType dt, Variant v,
                                             std::map<std::string, int>* reasons = nullptr,
                                             int* candidates = nullptr,
                                             std::map<std::string, std::string>* examples = nullptr,
                                             const EpilogueOps& ops = {}) const {
    std::vector<CostCandidate> out;
    const auto& all = reg_.all();
    for (size_t i = 0; i < all.size(); ++i) {
      const KernelBase& k = *all[i];
      const KernelKey& key = k.key();
      if (!serves(key, v, dt, ops)) continue;
      if (key.ndim != p.ndim) {
        if (reasons) ++(*reasons)["ndim mismatch"];
        continue;
      }
      if (candidates) ++*candidates;
      if (measured_only(key)) {
        if (reasons) ++(*reasons)["chosen from measurements only (tuning database)"];
        continue;
      }
      std::vector<int> kbs = {0};
      if (v == Variant::BackwardWeight && key.k_batch == 0) kbs = k_batch_candidates_;
      for (int kb : kbs) {
        RunOptions o;
        o.k_batch = kb;
        const std::string r = k.is_supported(p, o);
        if (!r.empty()) {
          if (reasons) ++(*reasons)[r];
          if (examples) examples->emplace(r, k.name() + (kbs.size() > 1 ? " (k_batch " + std::to_string(kb) + ")" : ""));
          continue;
        }
        out.push_back({int(i), kb, estimate_cost(key, p, effective_k_batch(key, p, kb), arch_)});
      }
    }
    return out;
  }

  // The split count an instance runs with for RunOptions::k_batch = kb (1 for the variants
  // without split-K).
  int effective_k_batch(const KernelKey& key, const ConvProblem& p, int kb) const {
    if (key.variant != Variant::BackwardWeight && key.k_batch == 1) return 1;
    return kb > 0 ? kb : (key.k_batch > 0 ? key.k_batch : auto_k_batch(key, p));
  }

  // The cost model alone (also for tests and explanations).
  Selection by_cost(const ConvProblem& p, DataType dt, Variant v, const EpilogueOps& ops = {}) const {
    Selection best;
    best.source = "cost-model";
    std::map<std::string, int> reasons;
    std::map<std::string, std::string> examples;
    int candidates = 0;
    const std::vector<CostCandidate> cs = cost_candidates(p, dt, v, &reasons, &candidates, &examples, ops);
    const CostCandidate* b = nullptr;
    for (const CostCandidate& c : cs)
      if (!b || c.cost.us < b->cost.us) b = &c;
    if (b) {
      const CostEstimate& c = b->cost;
      best.kernel = reg_.all()[size_t(b->index)].get();
      best.index = b->index;
      best.k_batch = b->k_batch;
      best.estimate_us = c.us;
      std::ostringstream os;
      os << c.us << " us (tiles " << c.tiles << ", waves " << c.waves << ", blocks/CU " << c.blocks_per_cu
         << ", tile efficiency " << c.tile_efficiency << ", k_batch " << c.k_batch << ")";
      best.why = os.str();
    } else {
      best.why = no_kernel_message(p, dt, v, candidates, reasons, examples);
      if (ops.fused())
        best.why += " (fused epilogue requested: only instances with exactly its operations count)";
    }
    return best;
  }

  // Why nothing runs the problem: the refusals of the instances of its variant / datatype / ndim,
  // most frequent first, each with the first instance that gave it; without such instances, what
  // the library holds instead.
  std::string no_kernel_message(const ConvProblem& p, DataType dt, Variant v, int candidates,
                                const std::map<std::string, int>& reasons,
                                const std::map<std::string, std::string>& examples) const {
    std::ostringstream os;
    os << "no " << to_string(v) << " " << to_string(dt) << " instance supports the problem ("
       << candidates << " candidate(s) of ndim " << p.ndim << ")";
    if (candidates == 0) {
      std::set<std::string> held;
      for (const auto& k : reg_.all()) {
        const KernelKey& key = k->key();
        held.insert(std::string(to_string(key.variant)) + " " + to_string(key.datatype) + " " +
                    std::to_string(key.ndim) + "D");
      }
      os << "; the library holds ";
      if (held.empty()) os << "no instance";
      int n = 0;
      for (const std::string& h : held) {
        if (n == 8) {
          os << ", ... " << held.size() - 8 << " more";
          break;
        }
        os << (n++ ? ", " : "") << h;
      }
      os << " instances";
      return os.str();
    }
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [r, c] : reasons)
      if (r != "ndim mismatch") by_count.emplace_back(c, r);
    std::stable_sort(by_count.begin(), by_count.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    int n = 0;
    for (const auto& [c, r] : by_count) {
      if (n == 4) {
        os << "; ... " << by_count.size() - 4 << " more reason(s)";
        break;
      }
      os << (n++ ? "; " : ": ") << c << "x " << r;
      if (auto it = examples.find(r); it != examples.end()) os << " (e.g. " << it->second << ")";
    }
    return os.str();
  }

  // The split count resolve_k_batch would pick (kernel/conv_kernel.hpp), from the arch numbers; for a
  // wavelet_tma instance detail::tma_reduction_choice (pipeline/tma_ws.hpp, split_of), with the
  // cost model's blocks per compute unit for the resident slots. backward_data's stride phases
  // share the machine (side by side), so the tiles of every stride class count.
  int auto_k_batch(const KernelKey& key, const ConvProblem& p) const {
    if (key.pipeline == Pipeline::WaveletTma) {
      int64_t k_tiles, tiles, elems;
      if (tma_row_form(key)) {
        k_tiles = detail::tma_row_k_tiles(p, key.tile_n);  // the row form (pipeline/tma_ws.hpp)
        tiles = detail::tma_row_tiles(p, key.tile_m);
        elems = p.weight_elems();
      } else if (key.variant == Variant::BackwardWeight) {
        k_tiles = detail::ceil_div(p.N * p.out_spatial(), key.tile_k);
        tiles = detail::tma_weight_tiles(p, key.tile_m, key.tile_n);
        elems = p.weight_elems();
      } else {
        // the GEMM the kernel launches: the explicit im2col copy's 1x1 view for C % 8 != 0 stems
        const ConvProblem q = detail::tma_gemm_view(key.variant, p);
        const bool fwd = key.variant == Variant::Forward;
        const int64_t red_c = fwd ? q.C : q.K, out_c = fwd ? q.K : q.C;
        if (out_c % 2 != 0) return 1;  // the kernel adds column pairs: odd rows never split
        const GemmDims g = gemm_dims(key.variant, q);
        k_tiles = detail::ceil_div(g.K, red_c) * detail::ceil_div(red_c, key.tile_k);
        tiles = detail::ceil_div(g.M, key.tile_m) * detail::ceil_div(g.N, key.tile_n) * g.batch;
        elems = fwd ? p.output_elems() : p.input_elems();
      }
      k_tiles = std::max<int64_t>(1, k_tiles);
      const int64_t slots = int64_t(arch_.compute_units) * estimate_cost(key, p, 1, arch_).blocks_per_cu;
      if (key.variant != Variant::BackwardWeight)
        return std::min<int>(int(k_tiles), detail::tma_reduction_splits(k_tiles, tiles, slots, elems));
      // backward_weight may meet in clusters: clusters of c packed into the slots (the device's own
      // cluster occupancy is not known here; the kernel queries it).
      int64_t cluster_slots[9] = {};
      for (int c = 2; c <= 8; ++c) cluster_slots[c] = slots / c * c;
      return std::min<int>(int(k_tiles),
                           detail::tma_reduction_choice(k_tiles, tiles, slots, cluster_slots, elems).splits);
    }
    if (key.pipeline == Pipeline::Direct)  // pipeline/depthwise.hpp resolve_slices
      return key.variant == Variant::BackwardWeight
                 ? direct_auto_slices(direct_pixels(key.variant, p), key.tile_m,
                                      (p.G * p.C + key.tile_n - 1) / std::max(1, key.tile_n),
                                      std::max(1, key.wave_m) * arch_.warp_size, arch_.compute_units,
                                      key.warp_m > 1)
                 : 1;
    const GemmDims g = tiled_gemm_dims(key.variant, p, key.groups_to_merge);  // kernel/conv_kernel.hpp resolve_k_batch
    auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
    const int64_t tiles = g.batch * cdiv(g.M, key.tile_m) * cdiv(g.N, key.tile_n);
    int64_t kb = cdiv(2 * int64_t(arch_.compute_units), tiles);
    kb = std::min<int64_t>(kb, std::max<int64_t>(1, cdiv(g.K, 4 * key.tile_k)));
    return int(std::max<int64_t>(1, std::min<int64_t>(64, kb)));
  }

 private:
  // The tuning database's answer (dispatch/db_select.hpp) with this dispatcher's candidates.
  bool from_db(const TuningDb& db, const ConvProblem& p, DataType dt, Variant v, Selection& s,
               const EpilogueOps& ops) const {
    const DbContext c{reg_, arch_,
                      [this](const ConvProblem& q, DataType d, Variant w, const EpilogueOps& o) {
                        return cost_candidates(q, d, w, nullptr, nullptr, nullptr, o);
                      },
                      [this](const KernelKey& k, const ConvProblem& q, int kb) {
                        return effective_k_batch(k, q, kb);
                      }};
    return select_from_db(c, db, p, dt, v, s, ops);
  }

  const Registry& reg_;
  std::mutex mu_;
  std::shared_ptr<TuningDb> db_;
  bool env_checked_ = false;
  std::string env_error_;
  ArchNumbers arch_;
  std::vector<int> k_batch_candidates_ = {0, 1, 2, 4, 8, 16, 32};
  SelectionCache cache_;
};

// The process-wide dispatcher over registry() (compute units from the device when present).
inline Dispatcher& dispatcher() {
  static Dispatcher* d = [] {
    auto* x = new Dispatcher();  // never destroyed: usable from other static destructors
    ArchNumbers a;
    int dev = 0, v = 0;
    if (gpuGetDevice(&dev) == gpuSuccess &&
        gpuDeviceGetAttribute(&v, gpuDevAttrMultiProcessorCount, dev) == gpuSuccess && v > 0)
      a.compute_units = v;
    (void)gpuGetLastError();  // no device is not an error here
    x->set_arch(a);
    return x;
  }();
  return *d;
}

// select(problem, datatype, variant) on the process-wide dispatcher.
inline Selection select(const ConvProblem& p, DataType dt, Variant v, const EpilogueOps& ops = {}) {
  return dispatcher().select(p, dt, v, ops);
}

}  // namespace ckgen
