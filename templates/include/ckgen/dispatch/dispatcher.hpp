// Run-time kernel selection: select(problem, datatype, variant) over the registry.
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
//        Instances the database timed that were never the best on any of its shapes (of the
//        variant / datatype / ndim) are left out while another candidate remains.
//        The lowest score wins.
//   2. Cost model when the database has nothing near: per instance (and per k_batch for
//      backward_weight) an estimated time from
//        tile efficiency  = useful / padded M*N*K (what the tile wastes at the edges),
//        waves            = ceil(tiles / (compute units * resident blocks per CU)); the busiest
//                           CU's tiles run in rounds of the resident blocks, a partial last round
//                           as slow as a full one while its warps cannot hide the latency,
//        occupancy        = resident blocks per CU from threads, shared memory, registers,
//        a roofline       = max(compute at peak * utilisation, bytes / bandwidth) + launch,
//        split-K          = fp32 workspace traffic in the main kernel, the memset / finish
//                           kernels after it (serial) and their launches for k_batch > 1 (every
//                           variant: forward / backward_data instances with k_batch != 1 split too).
//      The arch numbers come from ckgen/generated/arch_params.hpp (rendered from
//      arch_specs.json); the compute-unit count is the device's when a device is present.
//
// Every decision carries a one-line explanation (Selection::why).
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ckgen/schedule/direct_plan.hpp"
#include "ckgen/generated/arch_params.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/core/names.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// A small JSON reader (objects, arrays, strings, numbers, true/false/null): enough for the
// tuning database; throws std::runtime_error with the byte offset on malformed input.
// ------------------------------------------------------------------------------------------
struct JsonValue {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<JsonValue> arr;
  std::vector<std::pair<std::string, JsonValue>> obj;

  const JsonValue* get(const std::string& k) const {
    for (const auto& kv : obj)
      if (kv.first == k) return &kv.second;
    return nullptr;
  }
  double number_or(const std::string& k, double d) const {
    const JsonValue* v = get(k);
    return v && v->kind == Number ? v->num : d;
  }
  std::string string_or(const std::string& k, const std::string& d) const {
    const JsonValue* v = get(k);
    return v && v->kind == String ? v->str : d;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  JsonValue parse() {
    JsonValue v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at byte " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool lit(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(i_, n, w) == 0) {
      i_ += n;
      return true;
    }
    return false;
  }
  JsonValue value() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    JsonValue v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = JsonValue::Object;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return v;
      }
      for (;;) {
        ws();
        if (i_ >= s_.size() || s_[i_] != '"') fail("expected a key");
        std::string k = string();
        ws();
        if (i_ >= s_.size() || s_[i_] != ':') fail("expected ':'");
        ++i_;
        v.obj.emplace_back(std::move(k), value());
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
          return v;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.kind = JsonValue::Array;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return v;
      }
      for (;;) {
        v.arr.push_back(value());
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') {
          ++i_;
          return v;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.kind = JsonValue::String;
      v.str = string();
      return v;
    }
    if (lit("true")) {
      v.kind = JsonValue::Bool;
      v.b = true;
      return v;
    }
    if (lit("false")) {
      v.kind = JsonValue::Bool;
      return v;
    }
    if (lit("null")) return v;
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    v.num = std::strtod(start, &end);
    if (end == start) fail("unexpected character");
    v.kind = JsonValue::Number;
    i_ += size_t(end - start);
    return v;
  }
  std::string string() {
    ++i_;  // opening quote
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) fail("bad escape");
        char e = s_[i_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {  // names and shapes are ASCII; keep BMP code points < 0x80, else '?'
            if (i_ + 4 > s_.size()) fail("bad \\u escape");
            const unsigned cp = unsigned(std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16));
            i_ += 4;
            out += cp < 0x80 ? char(cp) : '?';
            break;
          }
          default: out += e;
        }
      } else {
        out += c;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
};

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

// Per-group GEMM sizes of a problem for a variant (DESIGN's implicit-GEMM table; backward_data
// counts the largest stride class and `classes` sub-problems).
struct GemmDims {
  int64_t M = 1, N = 1, K = 1, batch = 1;  // batch: G x stride classes
};
inline GemmDims gemm_dims(Variant v, const ConvProblem& p) {
  GemmDims d;
  const int64_t zyx = p.filter_spatial();
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (v == Variant::Forward) {
    d.M = p.N * p.out_spatial();
    d.N = p.K;
    d.K = zyx * p.C;
    d.batch = p.G;
  } else if (v == Variant::BackwardData) {
    d.M = p.N;
    d.K = p.K;
    int64_t classes = 1;
    for (int i = 0; i < 3; ++i) {
      int64_t a = p.stride[i], b = p.dilation[i];
      while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
      }
      const int64_t fstep = p.stride[i] / a;
      d.M *= cdiv(p.in[i], p.stride[i]);
      d.K *= cdiv(p.filter[i], fstep);
      classes *= p.stride[i];
    }
    d.N = p.C;
    d.batch = p.G * classes;
  } else {
    d.M = p.K;
    d.N = zyx * p.C;
    d.K = p.N * p.out_spatial();
    d.batch = p.G;
  }
  return d;
}
// The GEMM a kernel's blocks tile: with groups_to_merge gm > 1 (forward / backward_data) a block
// runs gm groups as one block-diagonal GEMM whose N and K are gm times the group's (conv/conv_maps.hpp
// merged views, kernel/conv_kernel.hpp gemm_dims: gm times the useful MACs), over G / gm group blocks.
inline GemmDims tiled_gemm_dims(Variant v, const ConvProblem& p, int gm) {
  GemmDims d = gemm_dims(v, p);
  if (gm > 1) {
    d.N *= gm;
    d.K *= gm;
    d.batch = std::max<int64_t>(1, d.batch / gm);
  }
  return d;
}

// Distance between two problems of one variant, for the neighbour ranking: |log| differences of
// the per-group GEMM M, N, K and the batch (groups x stride classes), which set the tile fit and
// the parallelism, plus half the |log| differences of the filter size and the stride (a 1x1
// borrows from a 3x3 of the same GEMM only when nothing closer exists). Leave-one-out over the
// even RetinaNet rows of the H200 v2 profile preferred these features to raw G/N/C/K/spatial
// sizes with per-component penalties (bench/NOTES.md, "Neighbour ranking").
inline double problem_distance(Variant v, const ConvProblem& a, const ConvProblem& b) {
  auto l = [](int64_t x, int64_t y) {
    return std::fabs(std::log(double(std::max<int64_t>(x, 1))) - std::log(double(std::max<int64_t>(y, 1))));
  };
  const GemmDims ga = gemm_dims(v, a), gb = gemm_dims(v, b);
  double d = l(ga.M, gb.M) + l(ga.N, gb.N) + l(ga.K, gb.K) + l(ga.batch, gb.batch);
  int64_t sa = 1, sb = 1;
  for (int i = 0; i < 3; ++i) {
    sa *= a.stride[i];
    sb *= b.stride[i];
  }
  d += 0.5 * (l(a.filter_spatial(), b.filter_spatial()) + l(sa, sb));
  return d;
}

// What a split count means on a problem, for matching measured split counts across shapes:
// log(blocks launched / compute units) (the parallelism: tiles of the per-group GEMM x batch
// x splits) and log(reduction length per split) (the work a block does, what the split-K
// finish work is traded against). The same k_batch is a different choice on a shape with 4x
// the tiles, so the neighbour ranking compares these, not the raw k_batch.
struct SplitFeatures {
  double log_blocks_per_cu = 0;
  double log_k_per_split = 0;
};
inline SplitFeatures split_features(Variant v, int tile_m, int tile_n, int groups_to_merge, const ConvProblem& p,
                                    int k_batch, int compute_units) {
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const GemmDims g = tiled_gemm_dims(v, p, groups_to_merge);
  const int kb = std::max(1, k_batch);
  const double blocks = double(g.batch * cdiv(g.M, std::max(1, tile_m)) * cdiv(g.N, std::max(1, tile_n)) * kb);
  SplitFeatures f;
  f.log_blocks_per_cu = std::log(blocks / double(std::max(1, compute_units)));
  f.log_k_per_split = std::log(std::max(1.0, double(g.K) / kb));
  return f;
}

// One measured point of the neighbour ranking and the calibrated score of a candidate: the
// weighted mean residual of the `k` points nearest to (shape_distance, features), weights
// exp(-distance / bandwidth); ties in distance break on the smaller residual. `used` (optional)
// gets the number of points averaged. Returns 0 with used = 0 when there are no points.
struct ResidualPoint {
  double shape_distance = 0;
  SplitFeatures f;
  double residual = 0;  // log(measured / estimated)
};
inline double residual_estimate(const std::vector<ResidualPoint>& pts, const SplitFeatures& f, int k,
                                double bandwidth, double shape_w, double blocks_w, double split_w,
                                int* used = nullptr) {
  std::vector<std::pair<double, double>> d;  // (distance, residual)
  d.reserve(pts.size());
  for (const ResidualPoint& q : pts)
    d.emplace_back(shape_w * q.shape_distance + blocks_w * std::fabs(q.f.log_blocks_per_cu - f.log_blocks_per_cu) +
                       split_w * std::fabs(q.f.log_k_per_split - f.log_k_per_split),
                   q.residual);
  const size_t n = std::min(d.size(), size_t(std::max(0, k)));
  std::partial_sort(d.begin(), d.begin() + std::ptrdiff_t(n), d.end());
  double sw = 0, sr = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = std::exp(-d[i].first / bandwidth);
    sw += w;
    sr += w * d[i].second;
  }
  if (used) *used = int(n);
  return sw > 0 ? sr / sw : 0.0;
}

class TuningDb {
 public:
  // Chosen by leave-one-out over the even RetinaNet rows of the H200 dispatch profile
  // (bench/NOTES.md, "Residual neighbour ranking"): a plateau of settings reaches the same
  // quality; this one is in its middle.
  static constexpr double kMaxDistance = 6.0;     // farther tuned shapes are not neighbours
  static constexpr int kNeighbourPoints = 12;     // measured points that calibrate one candidate
  static constexpr double kBandwidth = 2.0;       // weight exp(-distance / kBandwidth)
  static constexpr double kShapeWeight = 1.0;     // problem_distance of the tuned shape
  static constexpr double kBlocksWeight = 3.0;    // |dlog| blocks per compute unit
  static constexpr double kSplitWeight = 0.5;     // |dlog| reduction length per split
  static constexpr double kUntimedPenalty = 0.1;  // log-time handicap of an instance nobody timed
  // Instances the database timed but that were never within this fraction of the best on any
  // of its shapes (of the variant / datatype / ndim) are dominated: not candidates while a winner
  // supports the problem.
  static constexpr double kWinnerSlack = 0.0;

  // Loads `path`; throws std::runtime_error with the reason.
  void load(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot read tuning database " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    JsonValue root = JsonParser(text).parse();
    if (root.kind != JsonValue::Object || !root.get("entries"))
      throw std::runtime_error(path + ": not a ckgen tuning database (no 'entries')");
    std::vector<TunedEntry> out;
    for (const JsonValue& e : root.get("entries")->arr) {
      TunedEntry t;
      if (!variant_from_string(e.string_or("variant", ""), t.variant) ||
          !datatype_from_string(e.string_or("datatype", ""), t.datatype))
        continue;
      t.shape = e.string_or("shape", "");
      const JsonValue* p = e.get("problem");
      if (!p) continue;
      ConvProblem& q = t.problem;
      q.ndim = int(p->number_or("ndim", 2));
      q.G = int64_t(p->number_or("G", 1));
      q.N = int64_t(p->number_or("N", 1));
      q.C = int64_t(p->number_or("C", 1));
      q.K = int64_t(p->number_or("K", 1));
      auto arr3 = [&](const char* k, int64_t* dst) {
        const JsonValue* a = p->get(k);
        if (a && a->kind == JsonValue::Array && a->arr.size() == 3)
          for (int i = 0; i < 3; ++i) dst[i] = int64_t(a->arr[size_t(i)].num);
      };
      arr3("in", q.in);
      arr3("filter", q.filter);
      arr3("stride", q.stride);
      arr3("dilation", q.dilation);
      arr3("pad_l", q.pad_l);
      arr3("pad_r", q.pad_r);
      q.compute_output();
      if (const JsonValue* r = e.get("ranking"))
        for (const JsonValue& c : r->arr)
          t.ranking.push_back({c.string_or("kernel", ""), int(c.number_or("k_batch", 0)),
                               c.number_or("ms", 0)});
      if (t.ranking.empty() && !e.string_or("kernel", "").empty())
        t.ranking.push_back({e.string_or("kernel", ""), int(e.number_or("k_batch", 0)),
                             e.number_or("ms", 0)});
      if (!t.ranking.empty()) out.push_back(std::move(t));
    }
    entries_ = std::move(out);
    path_ = path;
    // The winner set, once per load: per (variant, datatype, ndim), the instances timed on some
    // shape and those within kWinnerSlack of a shape's best.
    std::map<std::tuple<Variant, DataType, int>, std::pair<std::set<std::string>, std::set<std::string>>> sets;
    for (const TunedEntry& e : entries_) {
      auto& [timed, won] = sets[{e.variant, e.datatype, e.problem.ndim}];
      double best = 0;
      for (const TunedChoice& c : e.ranking)
        if (c.ms > 0 && (best == 0 || c.ms < best)) best = c.ms;
      for (const TunedChoice& c : e.ranking) {
        if (!(c.ms > 0)) continue;
        timed.insert(c.kernel);
        if (c.ms <= best * (1.0 + kWinnerSlack)) won.insert(c.kernel);
      }
    }
    dominated_.clear();
    for (const auto& [key, tw] : sets)
      for (const std::string& n : tw.first)
        if (!tw.second.count(n)) dominated_[key].insert(n);
  }
  const std::vector<TunedEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  bool empty() const { return entries_.empty(); }
  // Timed on some shape of (variant, datatype, ndim) and never within kWinnerSlack of its best.
  bool dominated(Variant v, DataType dt, int ndim, const std::string& name) const {
    auto it = dominated_.find({v, dt, ndim});
    return it != dominated_.end() && it->second.count(name) > 0;
  }

 private:
  std::vector<TunedEntry> entries_;
  std::string path_;
  std::map<std::tuple<Variant, DataType, int>, std::set<std::string>> dominated_;
};

// ------------------------------------------------------------------------------------------
// Cost model
// ------------------------------------------------------------------------------------------
struct CostEstimate {
  double us = 1e30;           // estimated time
  double tile_efficiency = 0; // useful / padded M*N*K
  int64_t tiles = 0;          // blocks launched (all groups, classes and splits)
  int blocks_per_cu = 0;      // resident blocks per compute unit (occupancy)
  int64_t waves = 0;          // ceil(tiles / (CUs * blocks_per_cu))
  int k_batch = 1;
};

struct ArchNumbers {
  int compute_units = arch_params::kComputeUnits;
  int lds_bytes = arch_params::kLdsBytes;
  int warp_size = arch_params::kWarpSize;
  int register_file_bytes_per_cu = arch_params::kRegisterFileBytesPerCu;
  double bandwidth_gbs = arch_params::kBandwidthGBs;
  double peak_tflops(DataType d) const {
    const double v = d == DataType::FP16   ? arch_params::kPeakTflopsFp16
                     : d == DataType::BF16 ? arch_params::kPeakTflopsBf16
                                           : arch_params::kPeakTflopsFp32;
    return v > 0 ? v : 1.0;
  }
};

inline int elem_bytes(DataType d) { return d == DataType::FP32 ? 4 : 2; }

// Direct instances (pipeline/depthwise.hpp): a bandwidth estimate. Bytes: the read and written tensors
// once, the source re-read by the filter rows that miss L1 (taps / filter width, half of them
// from L2), channel tiles that overhang G * C counted as traffic; threads: one channel vector x
// pixels per thread, too few resident warps to hide the memory latency slow it down (latency
// bound below ~16 warps per SM). backward_weight adds its workspace traffic and the reduce
// launch. On FMA: the larger of the memory time and the issue time of the threads' instructions
// (direct_fma_issue / direct_fma_bwd_issue: loads with their addressing, conversions, FMAs;
// these kernels are issue- and latency-bound, bench/NOTES.md). The matrix path (warp tile
// 16x8x16, pipeline/direct_mma.hpp) has no FMA term: its mma.sync work is far below the memory time; its
// forward / backward_data blocks take the bands the launch gives them (fewer blocks, each source
// row staged once per band), its backward_weight blocks add a fixed time per unit they run.
// Instructions a thread of the forward / backward_data FMA path issues (pipeline/depthwise.hpp), for pp
// pixels a thread and vectors of vec channels: its source loads (the window path: pp + X - 1
// columns per filter row; the row pairs: pp / 2 + X - 1 columns of Y + 1 rows; else one per tap
// and pixel), each kDirectLoadIssue instructions (the load, its 64-bit address, its bound test,
// its zeroed destination: the window kernel's SASS,
// bench/NOTES.md "Depthwise window: weights in shared memory") plus one conversion per 16-bit
// element, and taps x pp x vec x C fp32 FMAs. On the H200 profiles of the depthwise 56x56 rows
// the ranking it gives (PP 8 < 4 < 2 < 1 < the v1 tile) is the measured one.
inline constexpr double kDirectLoadIssue = 4.0;
// The backward_weight matrix path (pipeline/direct_mma_bwd_weight.hpp) runs the row segments of its slice
// one after another, each a chain of copy, wait and a short MMA: on the H100 ~0.7-0.85 us a unit
// beyond the bandwidth time (depthwise 56x56: 16 / 32 / 64-pixel units, 28 / 14 / 7 a block,
// 31.4 / 19.1 / 15.6 us; ResNeXt c4 / c8 alike), which the bytes alone estimated equal.
inline constexpr double kDirectMmaBwdUnitUs = 0.75;
inline constexpr double kDirectIssueEfficiency = 0.55;  // issue slots busy (Nsight Compute, window kernel)
inline double direct_fma_issue(Variant v, const ConvProblem& p, int pp, int vec, int elem_bytes) {
  const double taps = double(p.filter_spatial());
  const double loads = direct_fma_row_pair(v, p, pp) ? double(p.filter[1] + 1) * double(pp / 2 + p.filter[2] - 1)
                       : direct_fma_window(v, p, pp) ? double(p.filter[0] * p.filter[1] * (pp + p.filter[2] - 1))
                                                     : taps * pp;
  const double convert = elem_bytes == 2 ? double(vec) : 0.0;
  return loads * (kDirectLoadIssue + convert) + taps * pp * vec * double(p.C);
}

// Instructions a thread of the backward_weight FMA path (pipeline/depthwise.hpp bwd_weight) issues for
// `ppt` pixels of its slice, pp at a time, vectors of vec channels: per pixel group the dy loads
// and the source loads of its path (direct_fma_bwd_path: the window's (pp - 1) * s + X columns of
// each filter row, the nine taps at once, or one pass per tap that re-reads dy), each
// kDirectLoadIssue instructions plus one conversion per 16-bit element, and taps x pp x vec x Cg
// fp32 FMAs; then the block's combine of its taps x Cg x vec sums through shared memory (a store,
// a load and an add each), once for all taps or (Generic) once per tap.
inline double direct_fma_bwd_issue(const ConvProblem& p, double ppt, int pp, int vec, int elem_bytes) {
  const double taps = double(p.filter_spatial());
  double loads = 0;
  switch (direct_fma_bwd_path(p, int(p.C), pp)) {
    case DirectBwdPath::Window: loads = pp + 3.0 * (pp + 2); break;
    case DirectBwdPath::WindowS2: loads = pp + 3.0 * (2 * pp + 1); break;
    case DirectBwdPath::Linear9: loads = pp + 9.0 * pp; break;
    case DirectBwdPath::Generic: loads = 2.0 * taps * pp; break;
  }
  const double convert = elem_bytes == 2 ? double(vec) : 0.0;
  const double combine = 3.0 * taps * double(p.C) * vec;
  return ppt / pp * (loads * (kDirectLoadIssue + convert) + taps * pp * vec * double(p.C)) + combine;
}

inline CostEstimate estimate_direct_cost(const KernelKey& k, const ConvProblem& p, int k_batch,
                                         const ArchNumbers& a) {
  CostEstimate c;
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const int eb = elem_bytes(k.datatype);
  const int64_t pixels = direct_pixels(k.variant, p);
  const int64_t chans = p.G * p.C;
  const int64_t gtiles = cdiv(chans, k.tile_n);
  const double overhang = double(gtiles * k.tile_n) / double(chans);
  const double taps = double(p.filter_spatial());
  double rows_reread = std::max(1.0, taps / double(std::max<int64_t>(1, p.filter[2])));
  const double src = double(k.variant == Variant::BackwardData ? p.output_elems() : p.input_elems());
  const double dst = double(k.variant == Variant::BackwardData ? p.input_elems() : p.output_elems());
  double extra_us = 3.0;  // launch
  const int threads = std::max(1, k.wave_m) * a.warp_size;
  c.blocks_per_cu = std::max(1, 2048 / threads);
  int64_t active_threads;
  const bool matrix = k.warp_m > 1;  // a block per row segment or band (schedule/direct_plan.hpp)
  double bytes = 0;
  // backward_weight: the slices of the launch, read by the split, the FMA issue and the unit terms
  DirectSlices sl{};
  if (k.variant == Variant::BackwardWeight) {
    sl = direct_weight_slices(p, k.tile_m, matrix, std::max(1, k_batch));
    c.k_batch = sl.count;
    c.tiles = int64_t(sl.count) * gtiles;
    active_threads = c.tiles * threads;
    if (sl.count > 1) {
      const double ws = double(p.weight_elems()) * 4.0;
      bytes += (k.stage == Stage::One ? 2.0 : 1.0) * sl.count * ws;  // atomics / partial writes
      bytes += (k.stage == Stage::One ? 1.0 : sl.count) * ws;        // the reduce reads
      extra_us += k.stage == Stage::One ? 4.0 : 2.0;
    }
  } else if (matrix) {
    // The launch's bands (pipeline/depthwise.hpp run, direct_mma_band_rows): a block of `band` rows stages
    // its band + Y - 1 source rows once each.
    const int stages = direct_mma_ring(k.tile_m, k.tile_n, eb).stages;
    const int band = direct_mma_band_rows(p, stages, direct_row_segments(k.variant, p, k.tile_m) * gtiles,
                                          a.compute_units);
    if (band > 1) rows_reread = double(band + p.filter[1] - 1) / band;
    c.tiles = direct_band_segments(k.variant, p, k.tile_m, band) * gtiles;
    active_threads = c.tiles * threads;
    c.k_batch = 1;
  } else {
    c.tiles = cdiv(pixels, k.tile_m) * gtiles;
    active_threads = c.tiles * threads;
    c.k_batch = 1;
    rows_reread = 1.0;  // the taps' re-reads are loads the issue term counts (L1 / L2 hits)
  }
  bytes += (src * (1.0 + 0.5 * (rows_reread - 1.0)) + dst + double(p.weight_elems())) * eb;
  c.waves = cdiv(c.tiles, int64_t(a.compute_units) * c.blocks_per_cu);
  c.tile_efficiency = 1.0 / overhang;
  if (matrix)  // idle pixels past each row's last segment
    c.tile_efficiency *= double(pixels) /
                         double(direct_row_segments(k.variant, p, k.tile_m) * k.tile_m);
  const double warps_per_cu = double(active_threads) / a.warp_size / a.compute_units;
  const double latency = std::max(1.0, 16.0 / std::max(1.0, std::min(64.0, warps_per_cu)));
  const double mem_us = bytes * overhang / (a.bandwidth_gbs * 1e9) * 1e6 * std::sqrt(latency);
  double fma_us = 0.0;  // the matrix path: none
  // warp instructions issued per second at every scheduler busy: the fp32 peak / (2 x warp size)
  const double issue_rate = a.peak_tflops(DataType::FP32) * 1e12 / (2.0 * a.warp_size) * kDirectIssueEfficiency;
  if (!matrix && k.variant == Variant::BackwardWeight) {
    const int vec = std::max(1, k.vec_a);
    const int pp = std::max(1, direct_fma_pixels_per_thread(k.tile_m, k.tile_n, vec, threads));
    const double warp_instr = double(active_threads) / a.warp_size *
                              direct_fma_bwd_issue(p, double(sl.chunk) * pp / k.tile_m, pp, vec, eb);
    fma_us = warp_instr / issue_rate * 1e6 * std::sqrt(latency);
  } else if (!matrix) {
    const int pp = std::max(1, direct_fma_pixels_per_thread(k.tile_m, k.tile_n, std::max(1, k.vec_a), threads));
    const double warp_instr = double(active_threads) / a.warp_size *
                              direct_fma_issue(k.variant, p, pp, std::max(1, k.vec_a), eb);
    fma_us = warp_instr / issue_rate * 1e6 * std::sqrt(latency);
  }
  c.us = std::max(mem_us, fma_us) + extra_us;
  if (matrix && k.variant == Variant::BackwardWeight)  // its units in sequence (kDirectMmaBwdUnitUs)
    c.us += kDirectMmaBwdUnitUs * double(sl.chunk);
  return c;
}

// Write bandwidth of a register epilogue against the cshuffle one (H100 profiles of 575b9d9: the
// same 128 x 64 ring on r50_l1_1x1_64_64, 10 MB written, 14.0-14.5 us against 6.4-7.2: the
// register epilogue's writes at ~1 TB/s).
inline constexpr double kRegisterStoreEfficiency = 0.3;
// Fixed time of a round of copy-engine tiles on a compute unit, microseconds (fitted on the
// RetinaNet profiles of both GPUs, bench/NOTES.md "The dispatcher's cost model on the RetinaNet
// set": 0.5-1.5 pick alike, 0 leaves many-k-tile narrow tiles behind short ones).
inline constexpr double kTmaRoundUs = 0.75;

// The window forms (pipeline/tma_window.hpp, pipeline/tma_window_weight.hpp): the busiest block
// runs ceil(G / groups side by side) groups x ceil(windows / blocks a group) windows, each taps x
// 64 x 64 x window MACs from shared memory at a rate of the compute unit's peak; forward adds one
// filter copy a group (kTmaWindowFilterUs), backward_weight its cluster's sums
// (detail::kTmaWindowSumUs / cluster, the grid of detail::tma_window_weight_grid) and the clear
// and conversion launches. Or the bytes, whichever is longer: x's patches, y (dy), and a filter
// a block and group (forward: its copy) or a cluster (backward_weight: its fp32 sums); plus the
// launch. Forward fitted on the probe of bench/NOTES.md "Forward windows" (H200: g4 100x100,
// 56x56 G40, 37x45 G3, 20x20 G200; rate 0.71-0.85 of peak), backward_weight on the rows of
// "backward_weight windows" (H200: 0.45-0.56 of peak besides the sums).
inline constexpr double kTmaWindowRate = 0.8;
inline constexpr double kTmaWindowFilterUs = 0.5;
inline constexpr double kTmaWindowWeightRate = 0.5;
inline constexpr double kTmaWindowWeightLaunchUs = 2.0;
inline CostEstimate estimate_window_cost(const KernelKey& k, const ConvProblem& p, const ArchNumbers& a) {
  CostEstimate c;
  const bool weight_grad = k.variant == Variant::BackwardWeight;
  const detail::TmaWindowShape ws = detail::tma_window_shape(p, k.tile_m);
  const int64_t windows = ws.tiles_group;
  // The launch's grid; forward: tma_window_grid's blocks, each copying the filter (a cluster of one).
  const detail::TmaWindowWeightGrid wg = [&] {
    if (weight_grad) return detail::tma_window_weight_grid(p.G, a.compute_units, nullptr, windows, k.tile_m);
    const detail::TmaWindowGrid gr = detail::tma_window_grid(p.G, a.compute_units);
    return detail::TmaWindowWeightGrid{gr.bpg, gr.group_stride, 1};
  }();
  const int64_t groups_per_block = (p.G + wg.group_stride - 1) / wg.group_stride;
  const int64_t per_block = groups_per_block * ((windows + wg.bpg - 1) / wg.bpg);
  c.tiles = windows * p.G;
  c.blocks_per_cu = 1;
  c.waves = per_block;
  c.tile_efficiency = double(p.N * p.out[1] * p.out[2]) / double(windows * k.tile_m);
  const double window_flops = 2.0 * 64 * k.tile_m * double(p.filter_spatial()) * 64;
  const double peak_cu = a.peak_tflops(k.datatype) * 1e12 / a.compute_units;
  const double rate = weight_grad ? kTmaWindowWeightRate : kTmaWindowRate;
  const double per_group_us = weight_grad ? detail::kTmaWindowSumUs / wg.cluster : kTmaWindowFilterUs;
  const double compute_us = double(per_block) * window_flops / (peak_cu * rate) * 1e6 +
                            double(groups_per_block) * per_group_us + (weight_grad ? kTmaWindowWeightLaunchUs : 0.0);
  const int eb = elem_bytes(k.datatype);
  const double filter_bytes = double(p.filter_spatial()) * 64 * 64 * (weight_grad ? 4 : eb);
  const int64_t adders = wg.bpg / wg.cluster;  // blocks (clusters) of a group copying or adding its filter
  const double bytes = (double(c.tiles) * double(ws.pw * ws.ph) * 64 + double(p.output_elems())) * eb +
                       double(adders * wg.group_stride * groups_per_block) * filter_bytes;
  c.us = std::max(compute_us, bytes / (a.bandwidth_gbs * 1e9) * 1e6) + 3.0;
  return c;
}

// Estimated time of one instance on one problem with a given split count.
inline CostEstimate estimate_cost(const KernelKey& k, const ConvProblem& p, int k_batch,
                                  const ArchNumbers& a = {}) {
  if (k.pipeline == Pipeline::Direct) return estimate_direct_cost(k, p, k_batch, a);
  if (tma_window_form(k)) return estimate_window_cost(k, p, a);
  CostEstimate c;
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const GemmDims g = tiled_gemm_dims(k.variant, p, k.groups_to_merge);
  // forward / backward_data instances with k_batch 1 never split (kernel/conv_kernel.hpp resolve_k_batch).
  const bool splits = k.variant == Variant::BackwardWeight || k.k_batch != 1;
  const int kb = std::max(1, splits ? k_batch : 1);
  c.k_batch = kb;
  const int64_t mt = cdiv(g.M, k.tile_m), nt = cdiv(g.N, k.tile_n);
  const int64_t k_per_split = cdiv(g.K, kb);
  const int64_t kt = cdiv(k_per_split, k.tile_k);
  // wavelet_tma backward_weight runs its own grid (pipeline/tma_ws.hpp): taps x (K / BM) x (C / BN)
  // tiles a group unless the taps pack into the columns or x goes through the im2col copy
  // (detail::tma_weight_tiles of detail::tma_gemm_view). With few channels a group that is far
  // more tiles than the GEMM view's (ResNeXt 5x5 c8: 800 against 64, 317 us measured on an H100
  // where the GEMM view estimated 25).
  const int64_t grid =
      k.pipeline == Pipeline::WaveletTma && k.variant == Variant::BackwardWeight && !tma_row_form(k)
          ? detail::tma_weight_tiles(detail::tma_gemm_view(Variant::BackwardWeight, p), k.tile_m, k.tile_n)
          : mt * nt * g.batch;
  c.tiles = grid * kb;
  // a merged block's useful MACs: its gm groups' diagonal blocks (1 / gm of its GEMM)
  const double useful = double(g.M) * double(g.N) * double(g.K) * double(g.batch);
  const double padded = double(grid) * k.tile_m * k.tile_n * double(kt * k.tile_k * kb) * std::max(1, k.groups_to_merge);
  c.tile_efficiency = useful / padded;

  // Occupancy: threads, shared memory (as core/config_traits.hpp lays it out, rows padded by 16 bytes),
  // registers (fp32 accumulators per math thread plus a fixed overhead; a kernel's register
  // count holds for every warp, the wavelet's load warps included).
  const int eb = elem_bytes(k.datatype);
  const int warps = std::max(1, k.wave_m * k.wave_n * k.wave_k);  // math warps
  // wavelet: load waves come on top of the math waves (LaunchBlockSize = load + math threads).
  // wavelet_tma (pipeline/tma_ws.hpp): detail::tma_smem_bytes (unpadded 128-byte rows).
  const bool tma = k.pipeline == Pipeline::WaveletTma;
  const bool specialized = k.pipeline == Pipeline::Wavelet || tma;
  // wavelet_tma ping-pong: two warpgroups of the tile's warps take turns on units (math waves
  // = 2 x waves M): twice the math threads and cshuffle slabs, the same accumulators a thread.
  const int math_warps = specialized ? std::max(warps, k.math_waves) : warps;
  const int threads = (math_warps + (specialized ? k.load_waves : 0)) * a.warp_size;
  const int stages = k.pipeline != Pipeline::Basic ? std::max(1, k.stages) : 1;
  const int pad = std::max(16 / eb, 1);
  const double smem = tma ? double(detail::tma_smem_bytes(k.tile_m, k.tile_n, stages, math_warps, eb,
                                                         k.epilogue == Epilogue::CShuffle))
                          : double(stages) * double((k.tile_m + k.tile_n) * (k.tile_k + pad)) * eb;
  const int acc_regs = (k.tile_m * k.tile_n) / (warps * a.warp_size);
  const int regs = std::min(255, acc_regs + 48);
  const int by_threads = std::max(1, 2048 / threads);
  const int by_smem = smem > 0 ? std::max(1, int(double(a.lds_bytes) / smem)) : 32;
  const int by_regs = std::max(1, a.register_file_bytes_per_cu / (4 * regs * threads));
  c.blocks_per_cu = std::max(1, std::min({by_threads, by_smem, by_regs, 32}));
  const int64_t slots = int64_t(a.compute_units) * c.blocks_per_cu;
  c.waves = cdiv(c.tiles, slots);

  // Compute: the busiest CU works through ceil(tiles / CUs) tiles in rounds of blocks_per_cu
  // resident blocks, the last round holding the remainder; the r blocks of a round share the CU.
  // Utilisation grows with the warps resident (latency hiding: below 8 resident warps a round
  // takes as long whatever its block count) and with the warp tile's operand reuse;
  // narrow global accesses (vector bytes < 16) and the single-buffer pipeline stall the math.
  // The constants were fitted to the H200 kernel-check PERF lines
  // (bench/dev/kernel_check_2026-11-22_H200.log): basic ~1.6x slower than multistage, ~20 % of
  // peak at best for mma.sync tiles.
  const double tile_flops = 2.0 * k.tile_m * k.tile_n * double(kt * k.tile_k);
  const double peak_cu = a.peak_tflops(k.datatype) * 1e12 / a.compute_units;
  const int64_t per_cu = cdiv(c.tiles, a.compute_units);
  // wavelet_tma: a warpgroup (4 warps along M) owns a 64-row wgmma slice of the whole tile N.
  const double wm = double(k.tile_m) / std::max(1, tma ? k.wave_m / 4 : k.wave_m);
  const double wn = double(k.tile_n) / std::max(1, k.wave_n);
  const double reuse = 2.0 * wm * wn / (wm + wn);  // harmonic mean of a warp's C tile sides
  const double vec_bytes = double(std::min(k.vec_a, k.vec_b) * eb);
  const double feed = (0.5 + 0.5 * std::min(16.0, vec_bytes) / 16.0) *
                      (k.pipeline != Pipeline::Basic ? 1.0 : 0.6);  // prefetching pipelines
  // wavelet: the math warps wait on the load waves at every stage; with fewer than 4 math warps a
  // block cannot keep the math going through those waits (the H200 v2 profile: the 2-math-warp
  // 64x64 wavelet runs 1.3-1.6x slower than the 4-warp multistage 64x64 on the same shapes).
  const double handoff = k.pipeline == Pipeline::Wavelet ? std::min(1.0, warps / 4.0) : 1.0;
  // wavelet_tma: the copy engine feeds asynchronous wgmma; at the same operand reuse it ran ~2x
  // the mma.sync pipelines' rate (bench/dev/tma_check, H100: 615 TFLOPS on head_cls 100x100).
  const double async_math = tma ? 2.0 : 1.0;
  const double tile_util = (reuse / (reuse + 32.0)) * 0.4 * feed * handoff * async_math;
  // Latency hiding counts every resident math warp: a ping-pong block's two warpgroups (one's
  // epilogue beside the other's MMA) hide as two blocks of one would.
  // wavelet_tma: a round also pays a fixed time (the ring's first copies, the drain of the last
  // wgmma group, the epilogue): kTmaRoundUs.
  auto round_us = [&](int64_t r) {
    return double(r) * tile_flops / (peak_cu * std::min(1.0, double(r) * math_warps / 8.0) * tile_util) * 1e6 +
           (tma ? kTmaRoundUs : 0.0);
  };
  const int64_t full_rounds = per_cu / c.blocks_per_cu, last_round = per_cu % c.blocks_per_cu;
  const double compute_us = double(full_rounds) * round_us(c.blocks_per_cu) + (last_round ? round_us(last_round) : 0.0);

  // Memory: the unique bytes once, plus operand re-reads per tile (L2 catches half). A tile
  // stored from registers (epilogue default: a warp's store covers 8 rows x 16 bytes, half
  // sectors) writes at a fraction of the bandwidth that the cshuffle epilogue's whole-sector
  // 16-byte stores reach (kRegisterStoreEfficiency).
  const int64_t written = written_elems(k.variant, p);
  const double unique = double(p.input_elems() + p.weight_elems() + p.output_elems()) * eb;
  const double reread =
      double(c.tiles) * double(k.tile_m + k.tile_n) * double(kt * k.tile_k) * eb * 0.5;
  double bytes = unique + reread;
  if (kb == 1 && k.epilogue != Epilogue::CShuffle)
    bytes += double(written) * eb * (1.0 / kRegisterStoreEfficiency - 1.0);
  double extra_us = 3.0;  // launch
  double serial_bytes = 0;  // split-K work outside the main kernel (memset, finish kernel)
  if (kb > 1) {
    const double ws = double(written) * 4.0;  // the fp32 workspace holds the written tensor
    if (k.stage == Stage::One) {
      // zero-fill, kb fp32 atomic read-modify-writes of the workspace inside the main kernel,
      // then a convert kernel: three launches.
      // (the atomics contend on the same addresses: not hidden under the math)
      serial_bytes += 2.0 * kb * ws + ws + ws + double(written) * eb;
      extra_us += 4.0;
    } else {
      // kb partial writes, then a reduce that reads them all and writes the result: two launches.
      bytes += kb * ws;
      serial_bytes += kb * ws + double(written) * eb;
      extra_us += 2.0;
    }
  }
  const double mem_us = bytes / (a.bandwidth_gbs * 1e9) * 1e6;
  c.us = std::max(compute_us, mem_us) + serial_bytes / (a.bandwidth_gbs * 1e9) * 1e6 + extra_us;
  return c;
}

// ------------------------------------------------------------------------------------------
// Dispatcher
// ------------------------------------------------------------------------------------------
struct Selection {
  const KernelBase* kernel = nullptr;
  int index = -1;       // index into registry().all()
  int k_batch = 0;      // what to pass as RunOptions::k_batch
  std::string source;   // "tuning-db-exact", "tuning-db-nearest", "cost-model"
  std::string why;      // explanation, or the reason nothing was selected
  double estimate_us = 0;
  explicit operator bool() const { return kernel != nullptr; }
};

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
  }
  void clear_tuning_db() {
    std::lock_guard<std::mutex> g(mu_);
    db_.reset();
    env_checked_ = true;
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

  void set_arch(const ArchNumbers& a) { arch_ = a; }

  // Split counts the cost model tries for backward_weight instances whose k_batch is chosen per
  // call (0 = the instance's own choice). Default {0, 1, 2, 4, 8, 16, 32}.
  void set_k_batch_candidates(std::vector<int> kbs) {
    if (kbs.empty()) kbs = {0};
    k_batch_candidates_ = std::move(kbs);
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
  Selection select(const ConvProblem& p, DataType dt, Variant v) {
    Selection s;
    if (std::string e = p.validate(); !e.empty()) {
      s.why = "invalid problem: " + e;
      return s;
    }
    if (auto db = tuning_db(); db && !db->empty()) {
      if (from_db(*db, p, dt, v, s)) return s;
    }
    return by_cost(p, dt, v);
  }

  // One supported (instance, k_batch) and the cost model's estimate for it.
  struct CostCandidate {
    int index = -1;
    int k_batch = 0;
    CostEstimate cost;
  };

  // backward_weight's row form (wavelet_tma, specialization stride1) copies x once per filter
  // row instead of once per tap but pads each output-row segment to a multiple of 16 positions
  // and runs 64-row tiles: it wins where the copies bound the kernel (K=36 box head at 100x100
  // 23.8 -> 19.1 us on the H100) and loses up to 2.6x on small rows or many output channels.
  // The cost model has no term for either, so only a tuning database's exact ranking picks it.
  static bool measured_only(const KernelKey& key) { return tma_row_form(key); }

  // Every registered instance of (variant, datatype, ndim) that supports the problem, per split
  // count tried (backward_weight instances with k_batch 0: k_batch_candidates()), with its
  // estimate. `reasons` counts the refusals, `candidates` the instances of the right ndim.
  std::vector<CostCandidate> cost_candidates(const ConvProblem& p, DataType dt, Variant v,
                                             std::map<std::string, int>* reasons = nullptr,
                                             int* candidates = nullptr) const {
    std::vector<CostCandidate> out;
    const auto& all = reg_.all();
    for (size_t i = 0; i < all.size(); ++i) {
      const KernelBase& k = *all[i];
      const KernelKey& key = k.key();
      if (key.variant != v || key.datatype != dt) continue;
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
  Selection by_cost(const ConvProblem& p, DataType dt, Variant v) const {
    Selection best;
    best.source = "cost-model";
    std::map<std::string, int> reasons;
    int candidates = 0;
    const std::vector<CostCandidate> cs = cost_candidates(p, dt, v, &reasons, &candidates);
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
      std::ostringstream os;
      os << "no " << to_string(v) << " " << to_string(dt) << " instance supports the problem ("
         << candidates << " candidate(s) of ndim " << p.ndim << ")";
      int n = 0;
      for (const auto& [r, c] : reasons) {
        os << (n++ ? "; " : ": ") << c << "x " << r;
        if (n == 4) break;
      }
      best.why = os.str();
    }
    return best;
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
        const bool fwd = key.variant == Variant::Forward;
        const int64_t red_c = fwd ? p.C : p.K, out_c = fwd ? p.K : p.C;
        if (out_c % 2 != 0) return 1;  // the kernel adds column pairs: odd rows never split
        const GemmDims g = gemm_dims(key.variant, p);
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
  bool try_entry(const TunedEntry& e, const ConvProblem& p, Selection& s) const {
    for (const TunedChoice& c : e.ranking) {
      const int i = index_of(c.kernel);
      if (i < 0) continue;
      const KernelBase& k = *reg_.all()[size_t(i)];
      RunOptions o;
      o.k_batch = c.k_batch;
      if (!k.is_supported(p, o).empty()) continue;
      s.kernel = &k;
      s.index = i;
      s.k_batch = c.k_batch;
      return true;
    }
    return false;
  }

  bool from_db(const TuningDb& db, const ConvProblem& p, DataType dt, Variant v, Selection& s) const {
    std::vector<std::pair<double, const TunedEntry*>> near;
    for (const TunedEntry& e : db.entries()) {
      if (e.variant != v || e.datatype != dt || e.problem.ndim != p.ndim) continue;
      if (same_problem(e.problem, p)) {
        if (try_entry(e, p, s)) {
          s.source = "tuning-db-exact";
          s.why = "tuning db " + db.path() + ": exact match '" + e.shape + "'";
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
    return rank_by_neighbours(db, near, p, dt, v, s);
  }

  SplitFeatures features_of(const KernelKey& k, const ConvProblem& p, int kb) const {
    return split_features(k.variant, k.tile_m, k.tile_n, k.groups_to_merge, p, effective_k_batch(k, p, kb),
                          arch_.compute_units);
  }

  // Neighbour ranking (see the header comment): the cost model's estimate of each supported
  // (instance, k_batch), corrected by the residuals measured for that instance on the tuned
  // shapes nearby. False when no candidate supports the problem.
  // Instances the database marks dominated (TuningDb::dominated) lose to any other candidate.
  bool rank_by_neighbours(const TuningDb& db, const std::vector<std::pair<double, const TunedEntry*>>& near,
                          const ConvProblem& p, DataType dt, Variant v, Selection& s) const {
    const auto& all = reg_.all();
    std::map<int, std::vector<ResidualPoint>> points;  // registry index -> measured points
    std::vector<ResidualPoint> any;                      // every point (for untimed instances)
    std::vector<std::pair<int, int>> timed_pairs;        // (index, k_batch) timed nearby
    std::map<std::string, int> index_cache;
    for (const auto& [d, e] : near) {
      for (const TunedChoice& c : e->ranking) {
        if (c.ms <= 0) continue;
        auto it = index_cache.find(c.kernel);
        if (it == index_cache.end()) it = index_cache.emplace(c.kernel, index_of(c.kernel)).first;
        if (it->second < 0) continue;
        const KernelKey& k = all[size_t(it->second)]->key();
        if (k.variant != v || k.datatype != dt || k.ndim != p.ndim) continue;
        const int kb = effective_k_batch(k, e->problem, c.k_batch);
        const double est = estimate_cost(k, e->problem, kb, arch_).us;
        if (!(est > 0)) continue;
        ResidualPoint q;
        q.shape_distance = d;
        q.f = split_features(k.variant, k.tile_m, k.tile_n, k.groups_to_merge, e->problem, kb, arch_.compute_units);
        q.residual = std::log(c.ms * 1e3 / est);
        points[it->second].push_back(q);
        any.push_back(q);
        timed_pairs.emplace_back(it->second, c.k_batch);
      }
    }
    // Candidates: every supported (instance, k_batch) the cost model tries, plus the split counts
    // the neighbours timed.
    std::vector<CostCandidate> cs = cost_candidates(p, dt, v);
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
      cs.push_back({i, kb, estimate_cost(k.key(), p, effective_k_batch(k.key(), p, kb), arch_)});
    }
    double best_score = 0, best_est = 0, best_r = 0;
    int best_used = 0;
    bool best_timed = false, best_dominated = false;
    for (const CostCandidate& c : cs) {
      if (!(c.cost.us > 0) || c.cost.us >= 1e29) continue;
      const bool dominated = db.dominated(v, dt, p.ndim, all[size_t(c.index)]->name());
      if (s.kernel && dominated && !best_dominated) continue;
      const KernelKey& k = all[size_t(c.index)]->key();
      const SplitFeatures f = features_of(k, p, c.k_batch);
      auto pit = points.find(c.index);
      const bool timed = pit != points.end() && !pit->second.empty();
      int used = 0;
      double r = residual_estimate(timed ? pit->second : any, f, TuningDb::kNeighbourPoints, TuningDb::kBandwidth,
                                   TuningDb::kShapeWeight, TuningDb::kBlocksWeight, TuningDb::kSplitWeight, &used);
      if (!timed) r += TuningDb::kUntimedPenalty;
      const double score = std::log(c.cost.us) + r;
      if (s.kernel && dominated == best_dominated && score >= best_score) continue;
      s.kernel = all[size_t(c.index)].get();
      s.index = c.index;
      s.k_batch = c.k_batch;
      s.estimate_us = c.cost.us * std::exp(r);
      best_score = score;
      best_est = c.cost.us;
      best_r = r;
      best_used = used;
      best_timed = timed;
      best_dominated = dominated;
    }
    if (!s.kernel) return false;
    s.source = "tuning-db-nearest";
    std::ostringstream os;
    os << "tuning db " << db.path() << ": " << near.size() << " tuned shape(s) within distance "
       << TuningDb::kMaxDistance << ", nearest";
    for (size_t i = 0; i < near.size() && i < 3; ++i)
      os << " '" << near[i].second->shape << "' (" << near[i].first << ")";
    os << "; cost model " << best_est << " us x " << std::exp(best_r) << " = " << s.estimate_us << " us";
    if (best_timed)
      os << " (calibrated by " << best_used << " measured point(s) of this instance)";
    else
      os << " (untimed by the neighbours: calibrated by " << best_used << " point(s) of other instances + penalty "
         << TuningDb::kUntimedPenalty << ")";
    os << ", k_batch " << s.k_batch;
    if (best_dominated) os << "; no instance that won a tuned shape supports the problem";
    s.why = os.str();
    return true;
  }

  const Registry& reg_;
  std::mutex mu_;
  std::shared_ptr<TuningDb> db_;
  bool env_checked_ = false;
  std::string env_error_;
  ArchNumbers arch_;
  std::vector<int> k_batch_candidates_ = {0, 1, 2, 4, 8, 16, 32};
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
inline Selection select(const ConvProblem& p, DataType dt, Variant v) {
  return dispatcher().select(p, dt, v);
}

}  // namespace ckgen
