// The tuning database (JSON written by `ckgen tune`): per tuned problem, a ranking of
// (instance, k_batch, measured time).
#pragma once

#include <cstdint>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ckgen/core/names.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"
#include "ckgen/third_party/nlohmann/json.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// Names <-> enums (the vocabulary's words).
// ------------------------------------------------------------------------------------------
inline bool variant_from_string(const std::string& s, Variant& v) {
  return parse_name(s, {Variant::Forward, Variant::BackwardData, Variant::BackwardWeight}, v);
}
inline bool datatype_from_string(const std::string& s, DataType& d) {
  return parse_name(s, {DataType::FP16, DataType::BF16, DataType::FP32}, d);
}

// ------------------------------------------------------------------------------------------
// Tuning database
// ------------------------------------------------------------------------------------------
struct TunedChoice {
  std::string kernel;
  int k_batch = 0;
  double ms = 0;
};

struct TunedEntry {
  Variant variant = Variant::Forward;
  DataType datatype = DataType::FP16;
  std::string shape;
  ConvProblem problem;
  std::vector<TunedChoice> ranking;  // best first
};

inline bool same_problem(const ConvProblem& a, const ConvProblem& b) {
  if (a.ndim != b.ndim || a.G != b.G || a.N != b.N || a.C != b.C || a.K != b.K) return false;
  for (int i = 0; i < 3; ++i)
    if (a.in[i] != b.in[i] || a.filter[i] != b.filter[i] || a.stride[i] != b.stride[i] ||
        a.dilation[i] != b.dilation[i] || a.pad_l[i] != b.pad_l[i] || a.pad_r[i] != b.pad_r[i])
      return false;
  return true;
}

// Reading the database's JSON (nlohmann/json): a missing key or one of another type reads as its
// default, as the database format allows optional fields.
namespace tuning_json {
using Json = nlohmann::json;
inline const Json* get(const Json& o, const char* k) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}
inline double number_or(const Json& o, const char* k, double d) {
  const Json* v = get(o, k);
  return v && v->is_number() ? v->get<double>() : d;
}
inline std::string string_or(const Json& o, const char* k, const std::string& d) {
  const Json* v = get(o, k);
  return v && v->is_string() ? v->get<std::string>() : d;
}
// The elements of an array value (none for any other kind).
inline const Json& elements(const Json* v) {
  static const Json kEmpty = Json::array();
  return v && v->is_array() ? *v : kEmpty;
}
}  // namespace tuning_json

class TuningDb {
 public:
  // Chosen by leave-one-model-out over the corpus profiles (docs/performance.md, "Neighbour
  // ranking: the blocks weight"); kBlocksWeight the largest value of its plateau that still
  // scales a measured split count by blocks per compute unit (tests/host/neighbour_ranking.cpp).
  static constexpr double kMaxDistance = 6.0;     // farther tuned shapes are not neighbours
  static constexpr int kNeighbourPoints = 12;     // measured points that calibrate one candidate
  static constexpr double kBandwidth = 2.0;       // weight exp(-distance / kBandwidth)
  static constexpr double kShapeWeight = 1.0;     // problem_distance of the tuned shape
  static constexpr double kBlocksWeight = 1.5;    // |dlog| blocks per compute unit
  static constexpr double kSplitWeight = 0.5;     // |dlog| reduction length per split
  static constexpr double kUntimedPenalty = 0.1;  // log-time handicap of an instance nobody timed
  // Shape weight of the cost model's own estimate (residual 0) against the measured points'
  // (residual_estimate): tuned shapes far from the problem correct its estimate only a little.
  static constexpr double kPriorWeight = 1.0;

  // Loads `path`; throws std::runtime_error with the reason.
  void load(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot read tuning database " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    using tuning_json::Json;
    Json root;
    try {
      root = Json::parse(ss.str());
    } catch (const Json::exception& ex) {
      throw std::runtime_error(path + ": JSON: " + ex.what());
    }
    const Json* entries = tuning_json::get(root, "entries");
    if (!entries) throw std::runtime_error(path + ": not a ckgen tuning database (no 'entries')");
    std::vector<TunedEntry> out;
    std::size_t index = 0;
    try {
      for (const Json& e : tuning_json::elements(entries)) {
        read_entry(e, out);
        ++index;
      }
    } catch (const Json::exception& ex) {
      throw std::runtime_error(path + ": entries[" + std::to_string(index) + "]: " + ex.what());
    }
    entries_ = std::move(out);
    path_ = path;
    measured_.clear();
    for (const TunedEntry& e : entries_) measured_.insert({e.variant, e.datatype});
  }
  // Whether some entry is of (variant, datatype).
  bool has(Variant v, DataType dt) const { return measured_.count({v, dt}) > 0; }
  const std::vector<TunedEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  bool empty() const { return entries_.empty(); }

 private:
  // Appends entry e (a tuned problem and its ranking) to out; entries of an unknown variant or
  // datatype, without a valid problem or without a timed instance are skipped.
  static void read_entry(const tuning_json::Json& e, std::vector<TunedEntry>& out) {
    using namespace tuning_json;
    TunedEntry t;
    if (!variant_from_string(string_or(e, "variant", ""), t.variant) ||
        !datatype_from_string(string_or(e, "datatype", ""), t.datatype))
      return;
    t.shape = string_or(e, "shape", "");
    const Json* p = get(e, "problem");
    if (!p) return;
    ConvProblem& q = t.problem;
    q.ndim = int(number_or(*p, "ndim", 2));
    q.G = int64_t(number_or(*p, "G", 1));
    q.N = int64_t(number_or(*p, "N", 1));
    q.C = int64_t(number_or(*p, "C", 1));
    q.K = int64_t(number_or(*p, "K", 1));
    auto arr3 = [&](const char* k, int64_t* dst) {
      const Json& a = elements(get(*p, k));
      if (a.size() == 3)
        for (int i = 0; i < 3; ++i) {
          const Json& x = a[std::size_t(i)];
          dst[i] = x.is_number() ? int64_t(x.get<double>()) : 0;
        }
    };
    arr3("in", q.in);
    arr3("filter", q.filter);
    arr3("stride", q.stride);
    arr3("dilation", q.dilation);
    arr3("pad_l", q.pad_l);
    arr3("pad_r", q.pad_r);
    if (!q.validate().empty()) return;  // (a zero stride would divide by zero below)
    q.compute_output();
    for (const Json& c : elements(get(e, "ranking")))
      t.ranking.push_back({string_or(c, "kernel", ""), int(number_or(c, "k_batch", 0)), number_or(c, "ms", 0)});
    if (t.ranking.empty() && !string_or(e, "kernel", "").empty())
      t.ranking.push_back({string_or(e, "kernel", ""), int(number_or(e, "k_batch", 0)), number_or(e, "ms", 0)});
    if (!t.ranking.empty()) out.push_back(std::move(t));
  }

  std::vector<TunedEntry> entries_;
  std::string path_;
  std::set<std::pair<Variant, DataType>> measured_;
};

}  // namespace ckgen
