// Host-only StreamK checks (no GPU, no CUDA/HIP runtime): compiled with g++ by
// tests/test_streamk_host.py against templates/include. Prints one line per check
// ("<name>: ok" or "<name>: FAIL <why>") and exits 1 when any fails.
#include <cstdio>
#include <string>

#include "suite/streamk_checks.hpp"

int main() {
  using namespace ckgen;
  using namespace ckgen::host;
  struct Check {
    const char* name;
    std::string (*run)();
  };
  const Check checks[] = {
      {"hand_computed", [] { return check_streamk_hand_computed(); }},
      {"schedules_linear", [] { return check_streamk_schedules(Reduction::StreamKLinear); }},
      {"schedules_tree", [] { return check_streamk_schedules(Reduction::StreamKTree); }},
      {"faults_caught", [] { return check_streamk_faults_caught(); }},
  };
  int failed = 0;
  for (const Check& c : checks) {
    const std::string e = c.run();
    std::printf("%s: %s%s\n", c.name, e.empty() ? "ok" : "FAIL ", e.c_str());
    failed += !e.empty();
  }
  return failed ? 1 : 0;
}
