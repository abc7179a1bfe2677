// Host-side checks of the StreamK plan and schedule (streamk_plan.hpp), pure arithmetic: no
// GPU, no runtime. The schedule is run through the same streamk_schedule the kernel runs, with a
// simulation for the operations: blocks execute one after another in index order, so a wait
// on a flag that is not yet set is a forward dependency (a possible deadlock) and fails.
//
//   std::string check_streamk_schedule(tiles, iters, blocks, persistent, reduction)
//       "" when: every tile is written exactly once, from exactly its k iterations (each once);
//       StreamK blocks own q or q + 1 iterations; each block publishes at most one partial,
//       only into its own slot, and every published partial is consumed exactly once; waits
//       only go to lower block indices; linear: the writer adds n - 1 partials, tree: at most
//       ceil(log2 n) per block and tile (n = contributors of the tile); the data-parallel
//       section covers the remaining tiles (persistent: in dp_rounds per block).
//   StreamKPlan / streamk_workspace_bytes: from streamk_plan.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ckgen/streamk_plan.hpp"

namespace ckgen::host {

namespace streamk_sim {

struct World {
  int64_t iters = 0;
  std::vector<std::vector<int64_t>> slots;  // per StreamK block: iterations of its partial
  std::vector<int> flags, consumed;
  std::vector<int> written;                 // per tile
  std::string err;
  Reduction reduction = Reduction::StreamKLinear;
};

inline int ceil_log2(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

struct Ops {
  const StreamKArgs& s;
  World& w;
  int b;
  std::vector<int64_t> acc;
  int adds = 0;

  void fail(const std::string& m) {
    if (w.err.empty()) w.err = "block " + std::to_string(b) + ": " + m;
  }
  void segment(int t, int i0, int i1, bool streamk) {
    acc.clear();
    adds = 0;
    if (!(0 <= i0 && i0 < i1 && i1 <= w.iters)) fail("bad segment of tile " + std::to_string(t));
    if (t < 0 || int64_t(t) >= int64_t(w.written.size())) {
      fail("tile " + std::to_string(t) + " out of range");
      return;
    }
    if (streamk != (t < s.sk_tiles)) fail("tile " + std::to_string(t) + " in the wrong section");
    for (int i = i0; i < i1; ++i) {
      const int64_t it = int64_t(t) * w.iters + i;
      if (streamk && (it < s.begin(b) || it >= s.end(b))) fail("segment outside the block's range");
      acc.push_back(it);
    }
  }
  void publish(int c) {
    if (c != b) fail("publishes into slot " + std::to_string(c));
    if (w.flags[size_t(b)]) fail("publishes twice");
    w.slots[size_t(b)] = acc;
    w.flags[size_t(b)] = 1;
  }
  void add(int c) {
    ++adds;
    if (c < 0 || c >= b) {
      fail("waits on block " + std::to_string(c) + " (not a lower block)");
      return;
    }
    if (!w.flags[size_t(c)]) fail("waits on block " + std::to_string(c) + " whose flag is not set");
    if (w.consumed[size_t(c)]++) fail("consumes the partial of block " + std::to_string(c) + " twice");
    acc.insert(acc.end(), w.slots[size_t(c)].begin(), w.slots[size_t(c)].end());
  }
  void finish(int t) {
    ++w.written[size_t(t)];
    std::sort(acc.begin(), acc.end());
    bool exact = int64_t(acc.size()) == w.iters;
    for (size_t i = 0; exact && i < acc.size(); ++i) exact = acc[i] == int64_t(t) * w.iters + int64_t(i);
    if (!exact) fail("tile " + std::to_string(t) + " is not the sum of exactly its k iterations");
    if (t >= s.sk_tiles) return;  // data-parallel
    const int n = s.block_of(int((t + 1) * w.iters - 1)) - s.block_of(int(t * w.iters)) + 1;
    if (w.reduction == Reduction::StreamKLinear ? adds != n - 1 : adds > ceil_log2(n))
      fail("tile " + std::to_string(t) + ": " + std::to_string(adds) + " partials added by the writer of " +
           std::to_string(n) + " contributors");
  }
};

}  // namespace streamk_sim

inline std::string check_streamk_schedule(int64_t tiles, int64_t iters, int64_t blocks,
                                          bool persistent, Reduction reduction) {
  const std::string where = " (tiles " + std::to_string(tiles) + ", iters " + std::to_string(iters) +
                            ", blocks " + std::to_string(blocks) +
                            (persistent ? ", persistent" : "") + ")";
  const StreamKPlan p = make_streamk_plan(tiles, iters, blocks, persistent);
  if (p.sk_tiles + p.dp_tiles != tiles || p.sk_tiles < 0 || p.dp_tiles < 0)
    return "sk_tiles + dp_tiles != tiles" + where;
  if (p.dp_tiles % blocks != 0) return "data-parallel tiles are not whole waves" + where;
  if (p.sk_blocks > blocks || p.sk_blocks > p.sk_iters || (p.sk_iters > 0) != (p.sk_blocks > 0))
    return "bad sk_blocks" + where;
  if (persistent ? p.grid > blocks : p.grid != p.sk_blocks + p.dp_tiles) return "bad grid" + where;
  const StreamKArgs a = make_streamk_args(p, tiles);
  streamk_sim::World w;
  w.iters = iters;
  w.reduction = reduction;
  w.slots.resize(size_t(p.sk_blocks));
  w.flags.assign(size_t(p.sk_blocks), 0);
  w.consumed.assign(size_t(p.sk_blocks), 0);
  w.written.assign(size_t(tiles), 0);
  // Every block of the grid, in index order.
  int64_t owned = 0;
  for (int b = 0; b < int(p.grid); ++b) {
    if (b < p.sk_blocks) {
      const int64_t n = a.end(b) - a.begin(b);
      if (n != p.q && n != p.q + 1) return "uneven StreamK split" + where;
      for (int i = a.begin(b); i < a.end(b); ++i)
        if (a.block_of(i) != b) return "block_of disagrees with begin/end" + where;
      owned += n;
    }
    streamk_sim::Ops ops{a, w, b, {}, 0};
    const bool tree = reduction == Reduction::StreamKTree;
    if (persistent && tree) streamk_schedule<Reduction::StreamKTree, true>(a, b, ops);
    if (persistent && !tree) streamk_schedule<Reduction::StreamKLinear, true>(a, b, ops);
    if (!persistent && tree) streamk_schedule<Reduction::StreamKTree, false>(a, b, ops);
    if (!persistent && !tree) streamk_schedule<Reduction::StreamKLinear, false>(a, b, ops);
    if (!w.err.empty()) return w.err + where;
  }
  if (owned != p.sk_iters) return "StreamK blocks do not own every StreamK iteration" + where;
  for (size_t c = 0; c < w.flags.size(); ++c)
    if (w.flags[c] != w.consumed[c]) return "partial of block " + std::to_string(c) + " never consumed" + where;
  for (int64_t t = 0; t < tiles; ++t)
    if (w.written[size_t(t)] != 1)
      return "tile " + std::to_string(t) + " written " + std::to_string(w.written[size_t(t)]) + " times" + where;
  return {};
}

// Every (tiles, iters, blocks) in small ranges plus a few large ones, both modes; "" or the
// first failure.
inline std::string check_streamk_schedules(Reduction reduction) {
  for (bool persistent : {false, true}) {
    for (int64_t tiles = 1; tiles <= 40; ++tiles)
      for (int64_t iters = 1; iters <= 12; ++iters)
        for (int64_t blocks : {1, 2, 3, 4, 5, 7, 8, 13, 16, 33, 64, 132, 264})
          if (std::string e = check_streamk_schedule(tiles, iters, blocks, persistent, reduction); !e.empty())
            return e;
    for (int64_t tiles : {131, 133, 264, 265, 1000})
      for (int64_t iters : {1, 7, 64, 392})
        for (int64_t blocks : {132, 264, 396, 528})
          if (std::string e = check_streamk_schedule(tiles, iters, blocks, persistent, reduction); !e.empty())
            return e;
  }
  return {};
}

}  // namespace ckgen::host
