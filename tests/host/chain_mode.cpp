// CKGEN_CHAIN (core/chain.hpp) without a GPU: which launches are chained under each value, and
// that the process reads the variable it was started with.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ckgen/core/chain.hpp"

using ckgen::ChainMode;

int main(int argc, char** argv) {
  int fails = 0;
  auto check = [&](bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok" : "FAIL", what);
    fails += ok ? 0 : 1;
  };
  check(ckgen::chain_mode_from(nullptr) == ChainMode::All, "unset: every launch");
  check(ckgen::chain_mode_from("all") == ChainMode::All, "all");
  check(ckgen::chain_mode_from("call") == ChainMode::Call, "call");
  check(ckgen::chain_mode_from("off") == ChainMode::Off, "off");
  check(ckgen::chain_mode_from("bogus") == ChainMode::All, "an unknown value: every launch");
  check(ckgen::chain_launch(ChainMode::All, false) && ckgen::chain_launch(ChainMode::All, true),
        "all chains a call's first kernel and the rest");
  check(!ckgen::chain_launch(ChainMode::Call, false) && ckgen::chain_launch(ChainMode::Call, true),
        "call chains only the kernels after the first of a call");
  check(!ckgen::chain_launch(ChainMode::Off, false) && !ckgen::chain_launch(ChainMode::Off, true),
        "off chains nothing");
  if (argc > 1) {  // the mode this process was started with, by name
    const ChainMode want = ckgen::chain_mode_from(argv[1]);
    check(ckgen::chain_mode() == want, "chain_mode() reads CKGEN_CHAIN");
  }
  std::printf(fails ? "%d failed\n" : "all passed\n", fails);
  return fails ? 1 : 0;
}
