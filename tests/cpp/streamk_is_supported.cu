// is_supported / workspace_bytes of StreamK instances on the host: no GPU needed (forced StreamK
// grids make no device query). Built with nvcc by tests/test_streamk_host.py from a generated
// project: the instance headers come in with nvcc -include, CKGEN_INSTANCES lists their config
// structs as CKGEN_INSTANCE(name) ... Prints "<instance> <case>: <reason>" ("accepted" when empty)
// and "<instance> workspace B<blocks>: <bytes>"; the test asserts on those lines.
#include <cstdio>
#include <string>
#include <vector>

#include "ckgen/host/shapes.hpp"
#include "ckgen/kernel/conv_kernel.hpp"

namespace {

using ckgen::ConvProblem;
using ckgen::RunOptions;
using ckgen::host::make_problem;

ConvProblem p2d(int64_t G, int64_t N, int64_t C, int64_t K, int64_t hw, int64_t f, int64_t pad) {
  return make_problem(2, G, N, C, K, {hw, hw}, {f, f}, {1, 1}, {1, 1}, {pad, pad}, {pad, pad});
}

RunOptions grid(int blocks, int k_batch = 0) {
  RunOptions o;
  o.streamk_blocks = blocks;
  o.k_batch = k_batch;
  return o;
}

template <class Cfg>
void report() {
  const ckgen::GroupedConvKernel<Cfg> k;
  const std::string n = Cfg::kName;
  auto line = [&](const char* what, const ConvProblem& p, const RunOptions& o) {
    const std::string r = k.is_supported(p, o);
    std::printf("%s %s: %s\n", n.c_str(), what, r.empty() ? "accepted" : r.c_str());
  };
  // 18 tiles (K 128 -> 2 x C*9 576 -> 9) of 4 k iterations (N*Ho*Wo = 128) at 64x64x32.
  const ConvProblem ok = p2d(1, 2, 64, 128, 8, 3, 1);
  line("valid_b7", ok, grid(7));
  line("k_batch3", ok, grid(7, 3));
  line("blocks_negative", ok, grid(-1));
  line("c12_vector8", p2d(1, 2, 12, 128, 8, 3, 1), grid(7));
  line("k4_vector8", p2d(1, 2, 64, 4, 8, 3, 1), grid(7));
  line("ndim1", make_problem(1, 1, 2, 64, 128, {8}, {3}, {1}, {1}, {1}, {1}), grid(7));
  // 64 x 64 tiles of 2^25 / 32 = 2^20 k iterations: tiles x iters = 2^32.
  line("tiles_x_iters_2p32", p2d(1, 512, 4096, 4096, 256, 1, 0), grid(7));
  for (int b : {1, 3, 7, 18, 100})
    std::printf("%s workspace B%d: %zu\n", n.c_str(), b, k.workspace_bytes(ok, grid(b)));
}

}  // namespace

int main() {
#define CKGEN_INSTANCE(n) report<ckgen::generated::n>();
  CKGEN_INSTANCES
#undef CKGEN_INSTANCE
  return 0;
}
