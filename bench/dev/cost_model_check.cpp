// Host-only check of the dispatcher's cost model against measured times: reads the PERF lines
// of a kernel-check log (bench/dev/kernel_check_<date>_<gpu>.log), estimates every (instance,
// problem) with ckgen::estimate_cost and reports, per problem, the measured time of the
// instance the model ranks first over the best measured time (1.00 = the model picks the best).
//
//   nvcc -std=c++17 -x cu -I<generated project>/include bench/dev/cost_model_check.cpp -o /tmp/cmc
//   /tmp/cmc bench/dev/kernel_check_2026-11-22_H200.log
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "ckgen/dispatcher.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: cost_model_check KERNEL_CHECK_LOG\n";
    return 2;
  }
  std::ifstream f(argv[1]);
  const std::regex re(
      R"(^PERF\s+(\w+)\s+t(\d+)x(\d+)x(\d+)\s+(?:w(\d)x(\d)\s+)?(basic|ms(\d))(\s+stage2)?\s+(\d)D G(\d+) N(\d+) C(\d+) K(\d+) in\((\d+),(\d+),(\d+)\) f\((\d+),(\d+),(\d+)\) s\((\d+),(\d+),(\d+)\) d\((\d+),(\d+),(\d+)\) pl\((\d+),(\d+),(\d+)\) pr\((\d+),(\d+),(\d+)\)\s+([\d.]+) ms)");
  struct Obs {
    std::string inst;
    double ms, est;
  };
  std::map<std::string, std::vector<Obs>> by_problem;
  std::string line;
  ckgen::Registry empty;
  ckgen::Dispatcher d(empty);  // only for auto_k_batch (the arch numbers)
  while (std::getline(f, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    auto I = [&](int i) { return std::stoi(m[size_t(i)].str()); };
    ckgen::KernelKey k{};
    const std::string v = m[1];
    k.variant = v == "fwd" ? ckgen::Variant::Forward
                : v == "bwd_data" ? ckgen::Variant::BackwardData : ckgen::Variant::BackwardWeight;
    k.datatype = ckgen::DataType::FP16;
    k.tile_m = I(2), k.tile_n = I(3), k.tile_k = I(4);
    k.wave_m = m[5].matched ? I(5) : 2, k.wave_n = m[6].matched ? I(6) : 2, k.wave_k = 1;
    k.pipeline = m[7] == "basic" ? ckgen::Pipeline::Basic : ckgen::Pipeline::Multistage;
    k.stages = m[8].matched ? I(8) : 1;
    k.stage = m[9].matched ? ckgen::Stage::Two : ckgen::Stage::One;
    k.vec_a = k.vec_b = k.vec_c = 8;
    ckgen::ConvProblem p;
    p.ndim = I(10), p.G = I(11), p.N = I(12), p.C = I(13), p.K = I(14);
    for (int i = 0; i < 3; ++i) {
      p.in[i] = I(15 + i), p.filter[i] = I(18 + i), p.stride[i] = I(21 + i);
      p.dilation[i] = I(24 + i), p.pad_l[i] = I(27 + i), p.pad_r[i] = I(30 + i);
    }
    p.compute_output();
    const int kb = k.variant == ckgen::Variant::BackwardWeight ? d.auto_k_batch(k, p) : 1;
    const double est = ckgen::estimate_cost(k, p, kb).us;
    const std::string key = v + " " + line.substr(line.find("2D"), line.find(")  ") - line.find("2D") + 1);
    const std::string inst = line.substr(6, line.find("2D") - 6);
    by_problem[key].push_back({inst, std::stod(m[33]), est});
  }
  int n = 0, within10 = 0;
  double geo = 0;
  for (auto& [key, obs] : by_problem) {
    auto best = std::min_element(obs.begin(), obs.end(), [](auto& a, auto& b) { return a.ms < b.ms; });
    auto pick = std::min_element(obs.begin(), obs.end(), [](auto& a, auto& b) { return a.est < b.est; });
    const double r = pick->ms / best->ms;
    ++n;
    within10 += r <= 1.10;
    geo += std::log(r);
    std::printf("%-90s pick %-28s %.4f ms (est %.1f us)  best %-28s %.4f ms  ratio %.3f\n", key.c_str(),
                pick->inst.c_str(), pick->ms, pick->est, best->inst.c_str(), best->ms, r);
  }
  std::printf("%d problems: %d within 10%% of the best, geomean ratio %.3f\n", n, within10,
              n ? std::exp(geo / n) : 0.0);
  return 0;
}
