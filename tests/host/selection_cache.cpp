// Host-only checks of the dispatcher's selection cache, candidates and cache_put
// (tests/test_select_cache.py compiles this with the host C++ compiler against templates/include
// and a rendered arch_params.hpp; no GPU, no CUDA). Fake instances stand in for compiled kernels.
// argv[1]: a directory for the tuning database it writes; argv[2] (optional): a tuning database
// written by Python (the autotune cache's format) that must load with its entries.
// Prints "ok <check>" per passed check; "FAIL <check>: ..." and exit 1 on the first failure.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ckgen/dispatch/dispatcher.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen;
using namespace ckgen_test;

namespace {

KernelKey key(const std::string& name, Variant v, int tm, int tn, int tk, int vec) {
  KernelKey k = fake_key(name, v, tm, tn, tk);
  k.vec_a = k.vec_b = k.vec_c = vec;
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  Registry reg;
  reg.add(std::make_unique<FakeKernel>(key("fwd_big_v8", Variant::Forward, 128, 128, 32, 8), 8));
  reg.add(std::make_unique<FakeKernel>(key("fwd_small_v8", Variant::Forward, 64, 64, 32, 8), 8));
  reg.add(std::make_unique<FakeKernel>(key("fwd_v1", Variant::Forward, 64, 64, 32, 1), 1));
  reg.add(std::make_unique<FakeKernel>(key("bwd_data_v8", Variant::BackwardData, 64, 64, 32, 8), 8));
  Dispatcher d(reg);
  const ConvProblem p = conv(8, 64, 64, 56);
  const ConvProblem p3 = conv(8, 3, 64, 56);

  // --- hit / miss, the same answer ----------------------------------------------------------
  {
    bool hit = true;
    const CachedSelection a = d.select_cached(p, DataType::FP16, Variant::Forward, 0, false, &hit);
    check(!hit && a.index >= 0 && d.cache().size() == 1, "first select misses and is stored");
    const CachedSelection b = d.select_cached(p, DataType::FP16, Variant::Forward, 0, false, &hit);
    check(hit && b.index == a.index && b.k_batch == a.k_batch && b.text == a.text, "repeat hits, same answer");
    d.select_cached(p, DataType::FP16, Variant::Forward, 1, false, &hit);
    check(!hit && d.cache().size() == 2, "another device is another key");
    d.select_cached(p, DataType::FP16, Variant::Forward, 0, true, &hit);
    check(!hit, "cost-model-only is another key");
    const CachedSelection n = d.select_cached(p3, DataType::FP16, Variant::BackwardData, 0, false, &hit);
    check(n.index < 0 && n.text.find("vector width 8") != std::string::npos && n.text.find("bwd_data_v8") != std::string::npos,
          "no kernel: the refusal with an example instance", n.text);
    d.select_cached(p3, DataType::FP16, Variant::BackwardData, 0, false, &hit);
    check(!hit, "refusals are not cached");
  }

  // --- cleared by a tuning database load and by setting changes --------------------------------
  {
    const std::string db = dir + "/db.json";
    std::ofstream(db) << "{\"ckgen_tuning_db\": 1, \"entries\": [{\"variant\": \"forward\", \"datatype\": "
                         "\"fp16\", \"shape\": \"s\", \"problem\": {\"ndim\": 2, \"G\": 1, \"N\": 8, \"C\": 64, "
                         "\"K\": 64, \"in\": [1, 56, 56], \"filter\": [1, 3, 3], \"stride\": [1, 1, 1], "
                         "\"dilation\": [1, 1, 1], \"pad_l\": [0, 1, 1], \"pad_r\": [0, 1, 1]}, \"ranking\": "
                         "[{\"kernel\": \"fwd_v1\", \"k_batch\": 0, \"ms\": 0.01}]},"
                         "{\"variant\": \"forward\", \"datatype\": \"fp16\", \"shape\": \"bad\", \"problem\": "
                         "{\"ndim\": 2, \"G\": 1, \"N\": 8, \"C\": 64, \"K\": 64, \"in\": [1, 56, 56], "
                         "\"filter\": [1, 3, 3], \"stride\": [1, 0, 1], \"dilation\": [1, 1, 1], \"pad_l\": "
                         "[0, 1, 1], \"pad_r\": [0, 1, 1]}, \"ranking\": [{\"kernel\": \"fwd_v1\", \"ms\": 1}]}]}\n";
    const uint64_t e0 = d.cache().epoch();
    d.load_tuning_db(db);
    check(d.cache().size() == 0 && d.cache().epoch() > e0, "a tuning database load clears the cache");
    check(d.tuning_db()->entries().size() == 1, "an entry with a zero stride is skipped, not divided by");
    const CachedSelection t = d.select_cached(p, DataType::FP16, Variant::Forward, 0, false);
    check(reg.all()[size_t(t.index)]->name() == "fwd_v1" && t.text.rfind("tuning-db-exact", 0) == 0,
          "after the load the database decides", t.text);
    d.clear_tuning_db();
    check(d.cache().size() == 0, "clearing the database clears the cache");
    d.select_cached(p, DataType::FP16, Variant::Forward, 0, false);
    d.set_k_batch_candidates({0, 2});
    check(d.cache().size() == 0, "new split candidates clear the cache");
    d.select_cached(p, DataType::FP16, Variant::Forward, 0, false);
    ArchNumbers a = d.arch();
    a.compute_units = 66;
    d.set_arch(a);
    check(d.cache().size() == 0, "new compute units clear the cache");
  }

  // --- a selection computed before a clear is not stored ---------------------------------------
  {
    SelectionCache c;
    const uint64_t e = c.epoch();
    c.clear();
    CachedSelection v;
    v.index = 1;
    check(!c.put(SelectionKey(p, Variant::Forward, DataType::FP16, 0, 0), v, e) && c.size() == 0,
          "a stale epoch's selection is dropped");
  }

  // --- bounded: cap + clear --------------------------------------------------------------------
  {
    d.cache().set_capacity(4);
    for (int n = 1; n <= 9; ++n) d.select_cached(conv(n, 64, 64, 28), DataType::FP16, Variant::Forward, 0, false);
    check(d.cache().size() >= 1 && d.cache().size() <= 4, "never more than the capacity",
          std::to_string(d.cache().size()));
    d.cache().set_capacity(0);
    d.select_cached(p, DataType::FP16, Variant::Forward, 0, false);
    check(d.cache().size() == 0, "capacity 0 disables the cache");
    d.cache().set_capacity(SelectionCache::kDefaultCapacity);
  }

  // --- cache_put: an autotuned pick answers select; refusals ------------------------------------
  {
    const int v1 = d.index_of("fwd_v1"), bd = d.index_of("bwd_data_v8");
    check(d.cache_put(p, DataType::FP16, Variant::Forward, 0, v1, 0, "autotune: measured").empty(), "cache_put stores");
    bool hit = false;
    const CachedSelection s = d.select_cached(p, DataType::FP16, Variant::Forward, 0, false, &hit);
    check(hit && s.index == v1 && s.text == "autotune: measured", "select answers the recorded pick");
    check(d.cache_put(p, DataType::FP16, Variant::Forward, 0, bd, 0, "").find("backward_data") != std::string::npos,
          "cache_put refuses another variant's kernel");
    check(d.cache_put(p3, DataType::FP16, Variant::Forward, 0, d.index_of("fwd_big_v8"), 0, "")
                  .find("vector width 8") != std::string::npos,
          "cache_put refuses a kernel that does not support the problem");
    check(!d.cache_put(p, DataType::FP16, Variant::Forward, 0, 99, 0, "").empty(), "cache_put refuses a bad index");
  }

  // --- candidates: the selection first, no duplicates, at most k, only supporting kernels ------
  {
    const std::vector<Dispatcher::CostCandidate> cs = d.candidates(p, DataType::FP16, Variant::Forward, 8);
    const Selection s = d.select(p, DataType::FP16, Variant::Forward);
    check(cs.size() == 3 && cs[0].index == s.index, "candidates: every forward kernel, the selection first",
          std::to_string(cs.size()));
    check(d.candidates(p, DataType::FP16, Variant::Forward, 2).size() == 2, "candidates: at most k");
    const std::vector<Dispatcher::CostCandidate> c3 = d.candidates(p3, DataType::FP16, Variant::Forward, 8);
    check(c3.size() == 1 && reg.all()[size_t(c3[0].index)]->name() == "fwd_v1", "candidates: supporting kernels only");
    check(d.candidates(p3, DataType::FP16, Variant::BackwardData, 8).empty(), "candidates: none when none supports");
  }

  // --- threads: lookups, insertions and clears at once -----------------------------------------
  {
    std::atomic<bool> stop{false};
    std::atomic<long> wrong{0}, done{0};
    d.cache().clear();  // (drops the recorded pick above)
    const int want = d.select(p, DataType::FP16, Variant::Forward).index;
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t)
      ts.emplace_back([&, t] {
        for (int i = 0; i < 3000; ++i) {
          const ConvProblem q = conv(1 + (i + t) % 40, 64, 64, 28);
          const CachedSelection s = d.select_cached(q, DataType::FP16, Variant::Forward, t % 4, false);
          if (s.index < 0) ++wrong;
          if (d.select_cached(p, DataType::FP16, Variant::Forward, t % 4, false).index != want) ++wrong;
          ++done;
        }
      });
    std::thread clearer([&] {
      while (!stop) {
        d.cache().clear();
        std::this_thread::yield();
      }
    });
    for (auto& t : ts) t.join();
    stop = true;
    clearer.join();
    check(wrong == 0 && done == 8 * 3000, "8 threads select while another clears: consistent answers",
          std::to_string(wrong.load()));
  }

  // --- a database written by Python (the autotune cache's format) loads -------------------------
  if (argc > 2) {
    Dispatcher e(reg);
    e.load_tuning_db(argv[2]);
    check(!e.tuning_db()->entries().empty(), "the autotune cache file loads as a tuning database");
    const CachedSelection s = e.select_cached(p, DataType::FP16, Variant::Forward, 0, false);
    check(s.index == e.index_of("fwd_small_v8") && s.text.rfind("tuning-db-exact", 0) == 0,
          "its entry decides the exact problem", s.text);
  }
  std::printf("all passed\n");
  return 0;
}
