// Problems from a shapes CSV or from command-line options, and back to text.
//
// CSV format (header required, columns by name, any order):
//   name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right
// Spatial columns hold ndim values separated by 'x' (outermost first: DxHxW / HxW / W).
// Blank lines and lines starting with '#' are skipped. Errors name file:line.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/core/problem.hpp"

namespace ckgen::host {

struct NamedProblem {
  std::string name;
  ConvProblem problem;
  std::string origin;  // "file:line" or "command line"
};

class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline const char* const kShapeColumns[] = {"name",  "ndim",   "G",      "N",
                                            "C",     "K",      "input",  "filter",
                                            "stride", "dilation", "pad_left", "pad_right"};

// "56x56" -> {56, 56}; exactly `ndim` positive (or, with allow_zero, non-negative) integers.
inline std::vector<int64_t> parse_dims(const std::string& text, int ndim, const char* what,
                                       bool allow_zero) {
  const std::vector<std::string> parts = split(trim(text), 'x');
  if (int(parts.size()) != ndim)
    throw ShapeError(std::string(what) + " '" + text + "' has " + std::to_string(parts.size()) +
                     " value(s), ndim is " + std::to_string(ndim) +
                     " (write e.g. 56x56 for 2D, 16x56x56 for 3D)");
  std::vector<int64_t> v;
  for (const std::string& p : parts) {
    int64_t x;
    if (!parse_int64(p, x))
      throw ShapeError(std::string(what) + " '" + text + "': '" + p + "' is not an integer");
    if (x < (allow_zero ? 0 : 1))
      throw ShapeError(std::string(what) + " '" + text + "': values must be " +
                       (allow_zero ? "non-negative" : "positive"));
    v.push_back(x);
  }
  return v;
}

// Builds a validated ConvProblem (3D internally, leading dims padded with 1 / 0).
inline ConvProblem make_problem(int ndim, int64_t G, int64_t N, int64_t C, int64_t K,
                                const std::vector<int64_t>& input,
                                const std::vector<int64_t>& filter,
                                const std::vector<int64_t>& stride,
                                const std::vector<int64_t>& dilation,
                                const std::vector<int64_t>& pad_left,
                                const std::vector<int64_t>& pad_right) {
  if (ndim < 1 || ndim > 3) throw ShapeError("ndim must be 1, 2 or 3, got " + std::to_string(ndim));
  const std::vector<int64_t>* all[] = {&input, &filter, &stride, &dilation, &pad_left, &pad_right};
  for (auto* v : all)
    if (int(v->size()) != ndim) throw ShapeError("spatial vectors must have ndim values");
  ConvProblem p;
  p.ndim = ndim;
  p.G = G;
  p.N = N;
  p.C = C;
  p.K = K;
  const int off = 3 - ndim;
  for (int i = 0; i < ndim; ++i) {
    p.in[off + i] = input[i];
    p.filter[off + i] = filter[i];
    p.stride[off + i] = stride[i];
    p.dilation[off + i] = dilation[i];
    p.pad_l[off + i] = pad_left[i];
    p.pad_r[off + i] = pad_right[i];
  }
  const std::string err = p.validate();
  if (!err.empty()) throw ShapeError("invalid problem: " + err);
  p.compute_output();
  return p;
}

// "56x56" for the ndim trailing dims of a 3-vector.
inline std::string dims_string(const int64_t v[3], int ndim) {
  std::string s;
  for (int i = 3 - ndim; i < 3; ++i) {
    if (!s.empty()) s += 'x';
    s += std::to_string(v[i]);
  }
  return s;
}

// One-line human summary.
inline std::string problem_summary(const ConvProblem& p) {
  std::ostringstream os;
  os << p.ndim << "D G=" << p.G << " N=" << p.N << " C=" << p.C << " K=" << p.K
     << " in=" << dims_string(p.in, p.ndim) << " filter=" << dims_string(p.filter, p.ndim)
     << " stride=" << dims_string(p.stride, p.ndim)
     << " dil=" << dims_string(p.dilation, p.ndim)
     << " pad=" << dims_string(p.pad_l, p.ndim) << "/" << dims_string(p.pad_r, p.ndim)
     << " -> out=" << dims_string(p.out, p.ndim);
  return os.str();
}

// Command-line options that reproduce the problem in the profiler.
inline std::string problem_args(const ConvProblem& p) {
  std::ostringstream os;
  os << "--ndim " << p.ndim << " --G " << p.G << " --N " << p.N << " --C " << p.C << " --K "
     << p.K << " --input " << dims_string(p.in, p.ndim) << " --filter "
     << dims_string(p.filter, p.ndim) << " --stride " << dims_string(p.stride, p.ndim)
     << " --dilation " << dims_string(p.dilation, p.ndim) << " --pad-left "
     << dims_string(p.pad_l, p.ndim) << " --pad-right " << dims_string(p.pad_r, p.ndim);
  return os.str();
}

// The problem as a shapes-CSV row (without a trailing newline).
inline std::string problem_csv_row(const std::string& name, const ConvProblem& p) {
  std::ostringstream os;
  os << name << ',' << p.ndim << ',' << p.G << ',' << p.N << ',' << p.C << ',' << p.K << ','
     << dims_string(p.in, p.ndim) << ',' << dims_string(p.filter, p.ndim) << ','
     << dims_string(p.stride, p.ndim) << ',' << dims_string(p.dilation, p.ndim) << ','
     << dims_string(p.pad_l, p.ndim) << ',' << dims_string(p.pad_r, p.ndim);
  return os.str();
}

// Parses CSV text; `file` names the source in errors.
inline std::vector<NamedProblem> parse_shapes_csv_text(const std::string& text,
                                                       const std::string& file) {
  std::vector<NamedProblem> out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::vector<int> col;  // column index of each kShapeColumns entry
  std::set<std::string> names;
  auto fail = [&](const std::string& msg) -> ShapeError {
    return ShapeError(file + ":" + std::to_string(lineno) + ": " + msg);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> cells = split(t, ',');
    for (auto& c : cells) c = trim(c);
    if (col.empty()) {
      col.assign(12, -1);
      for (int i = 0; i < int(cells.size()); ++i) {
        bool known = false;
        for (int j = 0; j < 12; ++j)
          if (cells[i] == kShapeColumns[j]) {
            if (col[j] >= 0) throw fail("column '" + cells[i] + "' appears twice in the header");
            col[j] = i;
            known = true;
          }
        // descriptive columns of a corpus (which model, how often it runs a layer)
        if (!known && cells[i] != "model" && cells[i] != "count")
          throw fail("unknown column '" + cells[i] + "' in the header");
      }
      for (int j = 0; j < 12; ++j)
        if (col[j] < 0)
          throw fail(std::string("header lacks column '") + kShapeColumns[j] +
                     "' (expected name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,"
                     "pad_right)");
      continue;
    }
    if (cells.size() != col.size())
      throw fail("expected " + std::to_string(col.size()) + " fields, got " +
                 std::to_string(cells.size()));
    auto cell = [&](int j) -> const std::string& { return cells[col[j]]; };
    try {
      const std::string name = cell(0);
      if (name.empty()) throw ShapeError("empty name");
      if (names.count(name)) throw ShapeError("duplicate name '" + name + "'");
      auto integer = [&](int j, int64_t lo) {
        int64_t v;
        if (!parse_int64(cell(j), v))
          throw ShapeError(std::string(kShapeColumns[j]) + " '" + cell(j) + "' is not an integer");
        if (v < lo)
          throw ShapeError(std::string(kShapeColumns[j]) + " must be >= " + std::to_string(lo) +
                           ", got " + cell(j));
        return v;
      };
      const int64_t ndim = integer(1, 1);
      if (ndim > 3) throw ShapeError("ndim must be 1, 2 or 3, got " + cell(1));
      const int nd = int(ndim);
      ConvProblem p = make_problem(
          nd, integer(2, 1), integer(3, 1), integer(4, 1), integer(5, 1),
          parse_dims(cell(6), nd, "input", false), parse_dims(cell(7), nd, "filter", false),
          parse_dims(cell(8), nd, "stride", false), parse_dims(cell(9), nd, "dilation", false),
          parse_dims(cell(10), nd, "pad_left", true), parse_dims(cell(11), nd, "pad_right", true));
      names.insert(name);
      out.push_back({name, p, file + ":" + std::to_string(lineno)});
    } catch (const ShapeError& e) {
      throw fail(e.what());
    }
  }
  if (col.empty()) throw ShapeError(file + ": empty shapes file (no header)");
  return out;
}

inline std::vector<NamedProblem> load_shapes_csv(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ShapeError(path + ": cannot open shapes file");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_shapes_csv_text(ss.str(), path);
}

// Option names understood by problem_from_args.
inline const std::set<std::string>& problem_option_names() {
  static const std::set<std::string> s = {"ndim",     "G",        "N",         "C",
                                          "K",        "input",    "filter",    "stride",
                                          "dilation", "pad-left", "pad-right", "pad",
                                          "name"};
  return s;
}

// True when any problem option is present.
inline bool has_problem_args(const Args& a) {
  for (const auto& k : problem_option_names())
    if (a.has(k)) return true;
  return false;
}

// One problem from --ndim --G --N --C --K --input --filter --stride --dilation
// --pad-left --pad-right (or --pad for both) [--name]. ndim defaults to the number of
// values in --input; G and N default to 1, stride/dilation to 1, pads to 0; C, K, --input
// and --filter are required. Throws UsageError.
inline NamedProblem problem_from_args(const Args& a) {
  try {
    for (const char* req : {"C", "K", "input", "filter"})
      if (!a.has(req)) throw UsageError(std::string("a command-line problem needs --") + req);
    int ndim = int(split(trim(a.get("input")), 'x').size());
    if (a.has("ndim")) ndim = int(a.get_int("ndim", 2, 1, 3));
    if (ndim < 1 || ndim > 3) throw UsageError("--input must have 1 to 3 values");
    if (a.has("pad") && (a.has("pad-left") || a.has("pad-right")))
      throw UsageError("give --pad or --pad-left/--pad-right, not both");
    auto ones = [&](int64_t v) {
      std::string s;
      for (int i = 0; i < ndim; ++i) s += (i ? "x" : "") + std::to_string(v);
      return s;
    };
    const std::string pl = a.get("pad-left", a.get("pad", ones(0)));
    const std::string pr = a.get("pad-right", a.get("pad", ones(0)));
    ConvProblem p = make_problem(
        ndim, a.get_int("G", 1, 1), a.get_int("N", 1, 1), a.get_int("C", 1, 1),
        a.get_int("K", 1, 1), parse_dims(a.get("input"), ndim, "--input", false),
        parse_dims(a.get("filter"), ndim, "--filter", false),
        parse_dims(a.get("stride", ones(1)), ndim, "--stride", false),
        parse_dims(a.get("dilation", ones(1)), ndim, "--dilation", false),
        parse_dims(pl, ndim, "--pad-left", true), parse_dims(pr, ndim, "--pad-right", true));
    return {a.get("name", "cmdline"), p, "command line"};
  } catch (const ShapeError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace ckgen::host
