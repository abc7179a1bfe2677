// The profiler binary of one variant: ckgen::host::profiler_main(variant, argc, argv).
//
//   ckgen_profiler_<variant> --shapes FILE.csv [options]
//   ckgen_profiler_<variant> --C 64 --K 64 --input 56x56 --filter 3x3 [--G --N --ndim --stride
//                            --dilation --pad-left --pad-right | --pad] [options]
// Options:
//   --datatype fp16|bf16|fp32|all[,..]  datatypes (default: all that have instances)
//   --verify none|cpu|gpu|auto          reference (default gpu; cpu = fp64 on the host, small
//                                       problems only: larger ones fall back to gpu; auto = cpu
//                                       when small)
//   --init random|int|positive          input values (default random, uniform [-1,1))
//   --seed N                            base seed (default from the clock; printed)
//   --warmup N --repeat N --iters N     timing: N warm-up launches, then repeat samples of
//                                       iters back-to-back launches between two events
//                                       (iters 0 = auto, ~2 ms per sample); median reported
//   --timing graph|loop                 graph (default): the iters launches are captured into
//                                       a CUDA/HIP graph and replayed, as the cuDNN peer is
//                                       timed (falls back to loop when capture fails);
//                                       loop: plain back-to-back launches
//   --kernels GLOB[,GLOB]               instance-name filter (fnmatch: * ? [..])
//   --fusion F[,F]                      only instances with these fused operations (their
//                                       spelling: none, bias_relu, bias_grad_drelu, ...; any =
//                                       every fused one); a fused row reports the bytes the
//                                       fusion saves against the separate operations
//   --shape GLOB[,GLOB]                 shape-name filter for --shapes
//   --k-batch N[,N..]                   split-K counts (0 = instance's choice); StreamK
//                                       instances and forward / backward_data instances with
//                                       k_batch 1 (never split) run once
//   --streamk-blocks N                  StreamK instances: the StreamK grid B (0 = #SMs x
//                                       occupancy; RunOptions::streamk_blocks)
//   --csv FILE                          write results (one row per shape x instance x k_batch)
//   --list                              list matching instances and exit (no GPU needed)
//   --verbose                           also print why instances refuse a problem
//   --strict                            exit 4 when a problem has no supporting instance
// Exit: 0 ok; 1 a verification or run failed; 2 bad arguments / shapes file; 3 no GPU;
//       4 (--strict) a problem without a supporting instance.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/host/runner.hpp"
#include "ckgen/host/shapes.hpp"
#include "ckgen/kernel/kernel_base.hpp"

namespace ckgen::host {

inline const char* profiler_usage() {
  return "usage: ckgen_profiler_<variant> (--shapes FILE.csv | --C C --K K --input DxHxW --filter "
         "ZxYxX [--G G] [--N N] [--ndim D] [--stride S] [--dilation D] [--pad-left P] "
         "[--pad-right P] [--pad P] [--name NAME])\n"
         "  [--datatype fp16|bf16|fp32|all[,..]] [--verify none|cpu|gpu|auto] "
         "[--init random|int|positive] [--seed N]\n"
         "  [--warmup N] [--repeat N] [--iters N (0=auto)] [--timing graph|loop] [--kernels GLOB[,GLOB]] [--fusion F[,F]] [--shape GLOB] "
         "[--k-batch N[,N]] [--split-reduce auto|workspace|cluster] [--streamk-blocks N] [--csv FILE] [--list] [--verbose] [--strict]\n"
         "exit: 0 ok, 1 verification/run failure, 2 bad arguments, 3 no GPU, 4 unsupported "
         "problem (--strict)\n";
}

struct ProfilerRow {
  std::string shape;
  std::string instance;
  int k_batch = 0;
  double ms = -1, tflops = 0, gbps = 0, max_abs_err = 0;
  std::string verified;  // pass / fail / error / none
  bool best = false;
  std::string timing;  // graph / loop
  bool fused = false;  // computes conv + its fused epilogue: never the best plain convolution
};

inline std::string fmt_fixed(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

// Everything the command line sets.
struct ProfilerOptions {
  std::vector<NamedProblem> problems;
  std::vector<DataType> dtypes;
  bool dtypes_explicit = false;
  RefKind verify = RefKind::Gpu;
  bool verify_auto = false;
  InitMode init = InitMode::Random;
  uint64_t seed = 0;
  int warmup = 5, repeat = 10, iters = 0;
  std::string kernels_glob, shape_glob, csv_path;
  std::vector<std::string> fusions;  // --fusion (empty: every instance)
  std::vector<int> k_batches = {0};
  int streamk_blocks = 0;
  SplitReduce split_reduce = SplitReduce::Auto;
  bool list = false, verbose = false, strict = false, use_graph = true, help = false;
};

// The problems: a shapes file (filtered by --shape) or one problem on the command line.
inline void profiler_load_problems(const Args& a, ProfilerOptions& o) {
  const bool cmdline_problem = has_problem_args(a);
  if (a.has("shapes") && cmdline_problem)
    throw UsageError("give either --shapes or a command-line problem, not both");
  if (a.has("shapes")) {
    try {
      o.problems = load_shapes_csv(a.get("shapes"));
    } catch (const ShapeError& e) {
      throw UsageError(e.what());
    }
    o.shape_glob = a.get("shape");
    if (!o.shape_glob.empty()) {
      std::vector<NamedProblem> keep;
      for (auto& np : o.problems)
        if (glob_match(o.shape_glob, np.name)) keep.push_back(np);
      if (keep.empty()) throw UsageError("--shape '" + o.shape_glob + "' matches no shape");
      o.problems = keep;
    }
  } else if (cmdline_problem) {
    o.problems.push_back(problem_from_args(a));
  } else if (!o.list) {
    throw UsageError("give --shapes FILE.csv or one problem (--C --K --input --filter ...)");
  }
  if (a.has("shape") && !a.has("shapes")) throw UsageError("--shape filters --shapes");
}

// Parses the command line; throws UsageError.
inline ProfilerOptions profiler_parse_args(int argc, char** argv) {
  std::set<std::string> value_opts = {"shapes", "datatype", "verify", "init", "seed", "warmup",
                                      "repeat", "iters", "kernels", "fusion", "shape", "k-batch", "csv",
                                      "streamk-blocks", "split-reduce",
                                      "timing"};
  for (const auto& k : problem_option_names()) value_opts.insert(k);
  const std::set<std::string> flag_opts = {"list", "verbose", "strict", "help"};
  ProfilerOptions o;
  Args a(argc, argv, value_opts, flag_opts);
  if (a.flag("help")) {
    o.help = true;
    return o;
  }
  o.list = a.flag("list");
  o.verbose = a.flag("verbose");
  o.strict = a.flag("strict");
  profiler_load_problems(a, o);
  const std::string dt = a.get("datatype", "all");
  if (dt != "all") {
    o.dtypes_explicit = true;
    for (const std::string& s : split(dt, ',')) {
      DataType t;
      if (!parse_datatype(trim(s), t))
        throw UsageError("--datatype: '" + s + "' is not fp16, bf16, fp32 or all");
      if (std::find(o.dtypes.begin(), o.dtypes.end(), t) == o.dtypes.end()) o.dtypes.push_back(t);
    }
  }
  const std::string ver = a.get("verify", "gpu");
  if (ver == "auto") {
    o.verify_auto = true;
  } else if (!parse_ref_kind(ver, o.verify)) {
    throw UsageError("--verify: '" + ver + "' is not none, cpu, gpu or auto");
  }
  if (!parse_init_mode(a.get("init", "random"), o.init))
    throw UsageError("--init: '" + a.get("init") + "' is not random, int or positive");
  o.seed = a.has("seed") ? uint64_t(a.get_int("seed", 0, 0))
                         : uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) %
                               1000000007ull;
  o.warmup = int(a.get_int("warmup", 5, 0, 1000000));
  o.repeat = int(a.get_int("repeat", 10, 1, 1000000));
  o.iters = int(a.get_int("iters", 0, 0, 1000000));
  o.kernels_glob = a.get("kernels");
  if (a.has("fusion"))
    for (const std::string& f : split(a.get("fusion"), ',')) {
      const std::string t = trim(f);
      if (t.empty() || t.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        throw UsageError("--fusion: '" + f + "' is not a fusion spelling (none, bias_relu, ..., any)");
      o.fusions.push_back(t);
    }
  const std::string timing = a.get("timing", "graph");
  if (timing != "graph" && timing != "loop")
    throw UsageError("--timing: '" + timing + "' is not graph or loop");
  o.use_graph = timing == "graph";
  o.csv_path = a.get("csv");
  o.streamk_blocks = int(a.get_int("streamk-blocks", 0, 0, 1 << 30));
  if (a.has("split-reduce") && !parse_split_reduce(a.get("split-reduce"), o.split_reduce))
    throw UsageError("--split-reduce: '" + a.get("split-reduce") + "' is not auto, workspace or cluster");
  if (a.has("k-batch")) {
    o.k_batches.clear();
    for (const std::string& s : split(a.get("k-batch"), ',')) {
      int64_t k;
      if (!parse_int64(s, k) || k < 0 || k > 1000000)
        throw UsageError("--k-batch: '" + s + "' is not a non-negative integer");
      if (std::find(o.k_batches.begin(), o.k_batches.end(), int(k)) == o.k_batches.end())
        o.k_batches.push_back(int(k));
    }
  }
  return o;
}

// " --fusion a,b" as given ("" without --fusion).
inline std::string profiler_fusion_arg(const ProfilerOptions& o) {
  std::string s;
  for (const std::string& f : o.fusions) s += (s.empty() ? " --fusion " : ",") + f;
  return s;
}

// The registered instances of the variant that match --datatype, --kernels and --fusion (the
// mask-copy faces, kernel/mask_copy.hpp, only where --fusion names their mask: three for each
// plain backward instance); without --datatype, fills o.dtypes with the datatypes that have
// instances.
inline std::vector<const KernelBase*> profiler_select_instances(Variant variant, ProfilerOptions& o) {
  std::vector<const KernelBase*> instances;
  for (const auto& k : registry().all()) {
    const KernelKey& key = k->key();
    if (key.variant != variant) continue;
    if (o.dtypes_explicit &&
        std::find(o.dtypes.begin(), o.dtypes.end(), key.datatype) == o.dtypes.end())
      continue;
    if (!glob_match(o.kernels_glob, key.name)) continue;
    if (key.mask_copy && std::find(o.fusions.begin(), o.fusions.end(), fusion_spelling(key)) == o.fusions.end())
      continue;
    if (!o.fusions.empty()) {
      const std::string f = fusion_spelling(key);
      const bool any = is_fused(key) && std::find(o.fusions.begin(), o.fusions.end(), "any") != o.fusions.end();
      if (!any && std::find(o.fusions.begin(), o.fusions.end(), f) == o.fusions.end()) continue;
    }
    instances.push_back(k.get());
  }
  if (!o.dtypes_explicit) {
    for (DataType t : kAllDataTypes)
      for (const KernelBase* k : instances)
        if (k->key().datatype == t) {
          o.dtypes.push_back(t);
          break;
        }
  }
  return instances;
}

inline RunOptions profiler_run_options(const ProfilerOptions& o, const KernelBase* k, int kb) {
  RunOptions r;
  r.split_reduce = o.split_reduce;
  if (k->key().reduction != Reduction::SplitK)
    r.streamk_blocks = o.streamk_blocks;
  else
    r.k_batch = kb;
  return r;
}

// The (instance, k_batch) pairs that support the problem.
inline std::vector<std::pair<const KernelBase*, int>> profiler_supported_runs(
    Variant variant, const ProfilerOptions& o, const std::vector<const KernelBase*>& instances,
    DataType dt, const ConvProblem& p) {
  std::vector<std::pair<const KernelBase*, int>> runs;
  for (const KernelBase* k : instances) {
    if (k->key().datatype != dt) continue;
    const bool streamk = k->key().reduction != Reduction::SplitK;
    // One run for StreamK and for forward / backward_data instances that never split.
    const bool one_run = streamk || (variant != Variant::BackwardWeight && k->key().k_batch == 1);
    for (int kb : o.k_batches) {
      if (one_run && kb != o.k_batches.front()) break;
      const RunOptions ro = profiler_run_options(o, k, kb);
      const std::string reason = k->is_supported(p, ro);
      if (reason.empty())
        runs.push_back({k, ro.k_batch});
      else if (o.verbose)
        std::cout << "  skip " << k->name()
                  << (o.k_batches.size() > 1 ? " k_batch=" + std::to_string(kb) : "") << ": "
                  << reason << "\n";
    }
  }
  return runs;
}

// Verifies and times one (instance, k_batch) on the prepared problem; prints its line.
inline ProfilerRow profiler_run_one(Variant variant, const ProfilerOptions& o, Workbench& wb,
                                    const NamedProblem& np, DataType dt, const KernelBase* k,
                                    int kb, int& failures) {
  const ConvProblem& p = np.problem;
  const RunOptions ro = profiler_run_options(o, k, kb);
  ProfilerRow row;
  row.shape = np.name;
  row.instance = k->name();
  row.k_batch = kb;
  row.fused = is_fused(k->key());
  const VerifyOutcome vo = wb.verify(*k, ro);
  row.verified = vo.word();
  row.max_abs_err = vo.verified ? vo.cmp.max_abs_err : 0;
  if (!vo.ok) ++failures;
  TimingResult t;
  if (vo.ran) t = wb.time(*k, ro, o.warmup, o.repeat, o.iters, o.use_graph);
  if (vo.ran && !t.ok) {
    ++failures;
    row.verified = "error";
  }
  std::ostringstream line;
  if (t.ok) {
    row.ms = t.ms;
    row.tflops = p.flops() / (t.ms * 1e9);
    row.gbps = min_bytes(p, dt, wb.written_datatype(k->key())) / (t.ms * 1e6);
    line << "  " << std::setw(10) << fmt_fixed(t.ms, 4) << " ms " << std::setw(8)
         << fmt_fixed(row.tflops, 2) << " TFLOPS " << std::setw(8)
         << fmt_fixed(row.gbps, 1) << " GB/s  ";
  } else {
    line << "  " << std::setw(10) << "-" << " ms " << std::setw(8) << "-" << " TFLOPS "
         << std::setw(8) << "-" << " GB/s  ";
  }
  line << k->name();
  if (variant == Variant::BackwardWeight) line << " k_batch=" << kb;
  if (ro.streamk_blocks != 0) line << " streamk_blocks=" << ro.streamk_blocks;
  if (ro.split_reduce != SplitReduce::Auto) line << " split_reduce=" << to_string(ro.split_reduce);
  if (row.fused) {
    const double saved = fusion_saved_bytes(k->key(), p, dtype_bytes(dt));
    line << "  fusion " << fusion_spelling(k->key()) << " saves " << fmt_fixed(saved / 1e6, 2)
         << " MB (the output's read and write by a separate elementwise pass)";
  }
  line << "  " << vo.summary(variant, p);
  if (vo.ran && !t.ok) line << "; timing ERROR " << t.error;
  if (t.ok && !t.note.empty()) line << "; note: " << t.note;
  row.timing = t.ok ? t.mode : "";
  std::cout << line.str() << "\n";
  return row;
}

// Marks and prints the fastest timed row that did not fail.
inline void profiler_report_best(Variant variant, std::vector<ProfilerRow>& rows) {
  int best = -1;
  for (int i = 0; i < int(rows.size()); ++i) {
    const auto& r = rows[size_t(i)];
    if (r.ms < 0 || r.fused || r.verified == "fail" || r.verified == "error") continue;
    if (best < 0 || r.ms < rows[size_t(best)].ms) best = i;
  }
  if (best >= 0) {
    auto& b = rows[size_t(best)];
    b.best = true;
    std::cout << "  best: " << b.instance
              << (variant == Variant::BackwardWeight ? " k_batch=" + std::to_string(b.k_batch)
                                                     : "")
              << "  " << fmt_fixed(b.ms, 4) << " ms  " << fmt_fixed(b.tflops, 2)
              << " TFLOPS  " << fmt_fixed(b.gbps, 1) << " GB/s\n";
  } else {
    std::cout << "  best: none (every instance failed)\n";
  }
}

inline void profiler_write_csv(std::ofstream& csv, const char* vname, DataType dt,
                               const ConvProblem& p, const std::string& gpu,
                               const std::vector<ProfilerRow>& rows) {
  for (const auto& r : rows) {
    csv << r.shape << ',' << vname << ',' << to_string(dt) << ',' << r.instance << ','
        << (r.ms >= 0 ? fmt_fixed(r.ms, 6) : "") << ','
        << (r.ms >= 0 ? fmt_fixed(r.tflops, 4) : "") << ','
        << (r.ms >= 0 ? fmt_fixed(r.gbps, 3) : "") << ',' << r.verified << ','
        << r.k_batch << ',' << (r.best ? 1 : 0) << ',' << r.max_abs_err << ','
        << p.ndim << ',' << p.G << ',' << p.N << ',' << p.C << ',' << p.K << ','
        << dims_string(p.in, p.ndim) << ',' << dims_string(p.filter, p.ndim) << ','
        << dims_string(p.stride, p.ndim) << ',' << dims_string(p.dilation, p.ndim)
        << ',' << dims_string(p.pad_l, p.ndim) << ',' << dims_string(p.pad_r, p.ndim)
        << ',' << r.timing << ',' << '"' << gpu << '"' << '\n';
  }
  csv.flush();
}

// One (datatype, problem) case: every supporting run, the best, the CSV rows.
inline void profiler_run_case(Variant variant, const ProfilerOptions& o,
                              const std::vector<const KernelBase*>& instances, Workbench& wb,
                              DataType dt, const NamedProblem& np, uint64_t case_counter,
                              std::ofstream& csv, const std::string& gpu, int& failures,
                              int& unsupported_problems) {
  const char* vname = to_string(variant);
  const ConvProblem& p = np.problem;
  const auto runs = profiler_supported_runs(variant, o, instances, dt, p);
  const uint64_t case_seed = hash2(o.seed, case_counter);
  std::cout << "\n[" << vname << " " << to_string(dt) << "] " << np.name << ": "
            << problem_summary(p) << "  (" << fmt_fixed(p.flops() * 1e-9, 3)
            << " GFLOP, seed " << case_seed << ")\n";
  if (runs.empty()) {
    ++unsupported_problems;
    std::cout << "  NO INSTANCE supports this problem"
              << (o.verbose ? "" : " (--verbose shows why)") << "\n";
    return;
  }
  RefKind ref = o.verify;
  if (o.verify_auto) ref = p.flops() <= kCpuReferenceMaxFlops ? RefKind::Cpu : RefKind::Gpu;
  if (ref == RefKind::Cpu && p.flops() > 50 * kCpuReferenceMaxFlops) {
    std::cout << "  note: problem too large for the CPU reference; using the GPU reference\n";
    ref = RefKind::Gpu;
  }
  std::vector<ProfilerRow> rows;
  try {
    wb.setup(dt, p, o.init, case_seed);
    wb.compute_reference(ref);
  } catch (const GpuFailure& e) {
    std::cout << "  ERROR preparing the problem: " << e.what() << "\n";
    ++failures;
    return;
  }
  for (const auto& [k, kb] : runs)
    rows.push_back(profiler_run_one(variant, o, wb, np, dt, k, kb, failures));
  profiler_report_best(variant, rows);
  if (csv) profiler_write_csv(csv, vname, dt, p, gpu, rows);
}

inline int profiler_main(Variant variant, int argc, char** argv) {
  const char* vname = to_string(variant);
  ProfilerOptions o;
  try {
    o = profiler_parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "ckgen_profiler_" << vname << ": error: " << e.what()
              << "\n(run with --help for usage)\n";
    return 2;
  }
  if (o.help) {
    std::cout << profiler_usage();
    return 0;
  }

  const std::vector<const KernelBase*> instances = profiler_select_instances(variant, o);
  if (o.list) {
    for (const KernelBase* k : instances)
      std::cout << k->key().name << "  " << to_string(k->key().datatype) << "  "
                << k->key().ndim << "D  " << k->key().arch << "\n";
    std::cout << instances.size() << " " << vname << " instance(s)\n";
    return 0;
  }
  if (instances.empty()) {
    std::cerr << "ckgen_profiler_" << vname << ": error: no " << vname << " instance matches"
              << (o.kernels_glob.empty() ? "" : " --kernels '" + o.kernels_glob + "'")
              << profiler_fusion_arg(o)
              << (o.dtypes_explicit ? " for the datatype(s) asked" : "") << " (" <<
        registry().all().size() << " instance(s) registered; try --list)\n";
    return 2;
  }

  std::string why;
  if (!gpu_available(&why)) {
    std::cerr << "ckgen_profiler_" << vname << ": no GPU: " << why << "\n";
    return 3;
  }

  std::ofstream csv;
  if (!o.csv_path.empty()) {
    csv.open(o.csv_path);
    if (!csv) {
      std::cerr << "ckgen_profiler_" << vname << ": error: cannot write " << o.csv_path << "\n";
      return 2;
    }
    csv << "shape,variant,datatype,instance,ms,tflops,gbps,verified,k_batch,best,max_abs_err,"
           "ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right,timing,gpu\n";
  }

  const std::string gpu = gpu_name();
  std::cout << "ckgen profiler: " << vname << " on " << gpu << "; " << o.problems.size()
            << " problem(s), " << instances.size() << " instance(s); verify="
            << (o.verify_auto ? "auto" : to_string(o.verify)) << " init=" << to_string(o.init)
            << " seed=" << o.seed << " warmup=" << o.warmup << " repeat=" << o.repeat
            << " iters=" << (o.iters ? std::to_string(o.iters) : std::string("auto"))
            << " timing=" << (o.use_graph ? "graph" : "loop") << "\n";

  int failures = 0, unsupported_problems = 0;
  try {
    Stream stream;
    Workbench wb(variant, stream.get());
    uint64_t case_counter = 0;
    for (DataType dt : o.dtypes)
      for (const NamedProblem& np : o.problems)
        profiler_run_case(variant, o, instances, wb, dt, np, ++case_counter, csv, gpu, failures,
                          unsupported_problems);
  } catch (const GpuFailure& e) {
    std::cerr << "ckgen_profiler_" << vname << ": GPU error: " << e.what() << "\n";
    return 1;
  }

  std::cout << "\n" << (failures ? "FAILED: " + std::to_string(failures) + " failure(s)" : "OK")
            << (unsupported_problems
                    ? "; " + std::to_string(unsupported_problems) + " problem(s) without a supporting instance"
                    : "")
            << "\n";
  if (failures) return 1;
  if (o.strict && unsupported_problems) return 4;
  return 0;
}

}  // namespace ckgen::host
