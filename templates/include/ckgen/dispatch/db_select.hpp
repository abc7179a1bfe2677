// The tuning database's side of the dispatcher (dispatch/dispatcher.hpp, whose header comment
// describes the rules): an exact entry's ranking walked until a registered instance supports the
// problem, else the neighbour ranking (dispatch/neighbours.hpp) over the candidates the
// dispatcher's cost model lists. A fused request ranks its instances as their plain twins
// (dispatch/twins.hpp); a database without entries of the request's datatype reads its sibling's.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ckgen/dispatch/cost_model.hpp"
#include "ckgen/dispatch/neighbours.hpp"
#include "ckgen/dispatch/tuning_db.hpp"
#include "ckgen/dispatch/twins.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen {

struct Selection {
  const KernelBase* kernel = nullptr;
  int index = -1;       // index into registry().all()
  int k_batch = 0;      // what to pass as RunOptions::k_batch
  std::string source;   // "tuning-db-exact", "tuning-db-nearest", "cost-model"
  std::string why;      // explanation, or the reason nothing was selected
  double estimate_us = 0;
  explicit operator bool() const { return kernel != nullptr; }
};

// One supported (instance, k_batch) and the cost model's estimate for it.
struct CostCandidate {
  int index = -1;
  int k_batch = 0;
  CostEstimate cost;
};

// What the database's answer takes from the dispatcher: the registry, the arch numbers, the
// supported (instance, k_batch) candidates of a request and the split count an instance runs with.
struct DbContext {
  const Registry& reg;
  const ArchNumbers& arch;
  std::function<std::vector<CostCandidate>(const ConvProblem&, DataType, Variant, const EpilogueOps&)> candidates;
  std::function<int(const KernelKey&, const ConvProblem&, int)> effective_k_batch;
};

namespace db_select {

// The key of instance k's plain twin: k without its fused operations.
inline KernelKey plain_twin_key(const KernelKey& k) {
  KernelKey t = k;
  t.name = plain_twin_name(k);
  t.channel_op = ChannelOp::Identity;
  t.activation = Activation::Identity;
  t.residual = t.stats = t.mask_copy = false;
  t.out_datatype = k.datatype;
  return t;
}

// What instance k's fused operations add to its plain twin's time on p by the cost model (a
// gradient mask's y tiles or masked copy of dy, an epilogue's operands): a twin's measurement
// plus this stands for the fused instance. 0 for a plain instance.
inline double fused_extra_us(const DbContext& ctx, const KernelKey& k, const ConvProblem& p, int kb) {
  if (epilogue_ops(k) == EpilogueOps{}) return 0.0;
  const int ekb = ctx.effective_k_batch(k, p, kb);
  return std::max(0.0, estimate_cost(k, p, ekb, ctx.arch).us - estimate_cost(plain_twin_key(k), p, ekb, ctx.arch).us);
}

// An exact entry's ranking walked until a registered instance (or its fused twin) supports p; a
// fused request takes the least measured time plus fused_extra_us among them.
inline bool try_entry(const DbContext& ctx, const TunedEntry& e, const ConvProblem& p, const TwinIndex& twins,
                      const EpilogueOps& ops, Selection& s) {
  double best = 0;
  for (const TunedChoice& c : e.ranking) {
    const int i = twins(c.kernel);
    if (i < 0) continue;
    const KernelBase& k = *ctx.reg.all()[size_t(i)];
    RunOptions o;
    o.k_batch = c.k_batch;
    if (!k.is_supported(p, o).empty()) continue;
    const bool in_order = !ops.fused() || !(c.ms > 0);  // plain, or no time: the ranking's order
    const double us = in_order ? 0.0 : c.ms * 1e3 + fused_extra_us(ctx, k.key(), p, c.k_batch);
    if (s.kernel && (in_order || us >= best)) continue;
    s.kernel = &k;
    s.index = i;
    s.k_batch = c.k_batch;
    best = us;
    if (in_order) return true;
  }
  return s.kernel != nullptr;
}

// The split features of instance k on p at RunOptions::k_batch kb.
inline SplitFeatures features_of(const DbContext& ctx, const KernelKey& k, const ConvProblem& p, int kb) {
  return split_features(k.variant, k.tile_m, k.tile_n, k.groups_to_merge, p, ctx.effective_k_batch(k, p, kb),
                        ctx.arch.compute_units);
}

// Neighbour ranking (dispatch/dispatcher.hpp's header comment): the cost model's estimate of each
// supported (instance, k_batch), corrected by the residuals measured for that instance on the
// tuned shapes nearby. False when no candidate supports the problem.
// A fused request (ops) ranks its instances by their plain twins' measurements (TwinIndex).
inline bool rank_by_neighbours(const DbContext& ctx, const TuningDb& db,
                               const std::vector<std::pair<double, const TunedEntry*>>& near, const ConvProblem& p,
                               DataType dt, Variant v, const EpilogueOps& ops, const TwinIndex& twins, Selection& s) {
  const auto& all = ctx.reg.all();
  std::map<int, std::vector<ResidualPoint>> points;  // registry index -> measured points
  std::vector<ResidualPoint> any;                      // every point (for untimed instances)
  std::vector<std::pair<int, int>> timed_pairs;        // (index, k_batch) timed nearby
  std::map<std::string, int> index_cache;
  for (const auto& [d, e] : near) {
    for (const TunedChoice& c : e->ranking) {
      if (c.ms <= 0) continue;
      auto it = index_cache.find(c.kernel);
      if (it == index_cache.end()) it = index_cache.emplace(c.kernel, twins(c.kernel)).first;
      if (it->second < 0) continue;
      const KernelKey& k = all[size_t(it->second)]->key();
      if (k.ndim != p.ndim) continue;
      const int kb = ctx.effective_k_batch(k, e->problem, c.k_batch);
      const double est = estimate_cost(plain_twin_key(k), e->problem, kb, ctx.arch).us;  // what was timed
      if (!(est > 0)) continue;
      ResidualPoint q;
      q.shape_distance = d;
      q.f = split_features(k.variant, k.tile_m, k.tile_n, k.groups_to_merge, e->problem, kb, ctx.arch.compute_units);
      q.residual = std::log(c.ms * 1e3 / est);
      points[it->second].push_back(q);
      any.push_back(q);
      timed_pairs.emplace_back(it->second, c.k_batch);
    }
  }
  // Candidates: every supported (instance, k_batch) the cost model tries, plus the split counts
  // the neighbours timed.
  std::vector<CostCandidate> cs = ctx.candidates(p, dt, v, ops);
  std::sort(timed_pairs.begin(), timed_pairs.end());
  timed_pairs.erase(std::unique(timed_pairs.begin(), timed_pairs.end()), timed_pairs.end());
  for (const auto& [i, kb] : timed_pairs) {
    bool have = false;
    for (const CostCandidate& c : cs)
      if (c.index == i && c.k_batch == kb) have = true;
    if (have) continue;
    const KernelBase& k = *all[size_t(i)];
    RunOptions o;
    o.k_batch = kb;
    if (!k.is_supported(p, o).empty()) continue;
    cs.push_back({i, kb, estimate_cost(k.key(), p, ctx.effective_k_batch(k.key(), p, kb), ctx.arch)});
  }
  double best_score = 0, best_est = 0, best_r = 0, best_extra = 0;
  int best_used = 0;
  bool best_timed = false;
  for (const CostCandidate& c : cs) {
    if (!(c.cost.us > 0) || c.cost.us >= 1e29) continue;
    const KernelKey& k = all[size_t(c.index)]->key();
    const SplitFeatures f = features_of(ctx, k, p, c.k_batch);
    auto pit = points.find(c.index);
    const bool timed = pit != points.end() && !pit->second.empty();
    int used = 0;
    double r = residual_estimate(timed ? pit->second : any, f, TuningDb::kNeighbourPoints, TuningDb::kBandwidth,
                                 TuningDb::kShapeWeight, TuningDb::kBlocksWeight, TuningDb::kSplitWeight,
                                 TuningDb::kPriorWeight, &used);
    if (!timed) r += TuningDb::kUntimedPenalty;
    // a fused candidate: its plain twin's calibrated estimate plus what its operations add
    const double extra = fused_extra_us(ctx, k, p, c.k_batch);
    const double score = std::log((c.cost.us - extra) * std::exp(r) + extra);
    if (s.kernel && score >= best_score) continue;
    s.kernel = all[size_t(c.index)].get();
    s.index = c.index;
    s.k_batch = c.k_batch;
    s.estimate_us = std::exp(score);
    best_score = score;
    best_est = c.cost.us - extra;
    best_extra = extra;
    best_r = r;
    best_used = used;
    best_timed = timed;
  }
  if (!s.kernel) return false;
  s.source = "tuning-db-nearest";
  std::ostringstream os;
  os << "tuning db " << db.path() << ": " << near.size() << " tuned shape(s) within distance "
     << TuningDb::kMaxDistance << ", nearest";
  for (size_t i = 0; i < near.size() && i < 3; ++i)
    os << " '" << near[i].second->shape << "' (" << near[i].first << ")";
  os << "; cost model " << best_est << " us x " << std::exp(best_r);
  if (best_extra > 0) os << " + " << best_extra << " us of its fused operations";
  os << " = " << s.estimate_us << " us";
  if (best_timed)
    os << " (calibrated by " << best_used << " measured point(s) of this instance)";
  else
    os << " (untimed by the neighbours: calibrated by " << best_used << " point(s) of other instances + penalty "
       << TuningDb::kUntimedPenalty << ")";
  os << ", k_batch " << s.k_batch;
  if (ops.fused()) os << "; ranked as its plain twin " << plain_twin_name(s.kernel->key());
  s.why = os.str();
  return true;
}

}  // namespace db_select

// The tuning database's answer for (p, dt, v, ops): an exact entry's ranking, else the neighbour
// ranking (dispatch/dispatcher.hpp's header comment); false when it has none (the caller then
// asks the cost model).
inline bool select_from_db(const DbContext& ctx, const TuningDb& db, const ConvProblem& p, DataType dt, Variant v,
                           Selection& s, const EpilogueOps& ops) {
  // entries of dt, else of its sibling (fp16 / bf16) standing for dt's twins
  const DataType named = db.has(v, dt) ? dt : sibling_datatype(dt);
  const TwinIndex twins(ctx.reg, v, dt, ops, named);
  const std::string as =
      named == dt ? "" : std::string(" (") + to_string(named) + " measurements for " + to_string(dt) + ")";
  std::vector<std::pair<double, const TunedEntry*>> near;
  for (const TunedEntry& e : db.entries()) {
    if (e.variant != v || e.datatype != named || e.problem.ndim != p.ndim) continue;
    if (same_problem(e.problem, p)) {
      if (db_select::try_entry(ctx, e, p, twins, ops, s)) {
        s.source = "tuning-db-exact";
        s.why = "tuning db " + db.path() + ": exact match '" + e.shape + "'" + as;
        if (ops.fused()) s.why += " (ranked as its plain twin " + plain_twin_name(s.kernel->key()) + ")";
        return true;
      }
      continue;
    }
    const double d = problem_distance(v, e.problem, p);
    if (d <= TuningDb::kMaxDistance) near.emplace_back(d, &e);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (near.empty()) return false;
  if (!db_select::rank_by_neighbours(ctx, db, near, p, dt, v, ops, twins, s)) return false;
  s.why += as;
  return true;
}

}  // namespace ckgen
