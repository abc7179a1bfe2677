// Host-side checks of the StreamK plan and schedule (schedule/streamk_plan.hpp), pure arithmetic: no
// GPU, no runtime; they compile with a plain host compiler (tests/cpp/streamk_host_check.cpp,
// g++) and run in the GTest binary (suite streamk_host). The schedule is run through the same
// streamk_schedule the kernel runs, with a simulation for the operations: blocks execute one
// after another in index order, so a wait on a flag that is not yet set is a forward
// dependency (a possible deadlock) and fails.
//
//   check_streamk_plan(tiles, iters, blocks, persistent)
//       "" when the plan's sections add up: sk_tiles + dp_tiles = tiles, whole data-parallel
//       waves, sk_blocks <= min(B, sk_iters), the grid of the mode.
//   simulate_streamk(plan, args, reduction, fault)
//       "" when: every tile is written exactly once, from exactly its k iterations (each once);
//       StreamK blocks own q or q + 1 iterations; each block publishes at most one partial,
//       only into its own slot, and every published partial is consumed exactly once; waits
//       only go to lower block indices; linear: the writer adds n - 1 partials, tree: at most
//       ceil(log2 n) per block and tile (n = contributors of the tile). The plan is the truth,
//       the args are what the kernel would read (a fault may corrupt either).
//   check_streamk_schedule(tiles, iters, blocks, persistent, reduction)   both of the above
//   check_streamk_schedules(reduction)       a range of shapes, both modes: "" or the first failure
//   check_streamk_hand_computed()            grids, workspace sizes and flag layout worked out by
//                                            hand (a formula checked against itself proves nothing)
//   check_streamk_faults_caught()            every injected fault (wrong args, dropped partial,
//                                            reversed block order, the other reduction) must make
//                                            the checks fail: "" or the fault that slipped through
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ckgen/schedule/streamk_plan.hpp"

namespace ckgen::host {

// What the simulation may break on purpose (check_streamk_faults_caught).
enum class StreamKFault {
  None,
  DropAdd,         // the first ops.add of every block is a no-op (a partial lost)
  ReverseOrder,    // blocks run from the highest index down (waits on flags not yet set)
  OtherReduction,  // the schedule of the other reduction, checked against this one's rules
};

namespace streamk_sim {

struct World {
  StreamKPlan plan;
  std::vector<std::vector<int64_t>> slots;  // per StreamK block: iterations of its partial
  std::vector<int> flags, consumed;
  std::vector<int> written;                 // per tile
  std::string err;
  Reduction reduction = Reduction::StreamKLinear;
  StreamKFault fault = StreamKFault::None;
};

inline int ceil_log2(int64_t n) {
  int d = 0;
  while ((int64_t(1) << d) < n) ++d;
  return d;
}

// Contributors of StreamK tile t under the true plan.
inline int64_t contributors(const StreamKPlan& p, int64_t t) {
  auto owner = [&](int64_t i) {
    const int64_t big = p.r * (p.q + 1);
    return i < big ? i / (p.q + 1) : p.r + (i - big) / p.q;
  };
  return owner((t + 1) * p.iters - 1) - owner(t * p.iters) + 1;
}

struct Ops {
  World& w;
  int b;
  std::vector<int64_t> acc;
  int adds = 0, calls = 0;

  void fail(const std::string& m) {
    if (w.err.empty()) w.err = "block " + std::to_string(b) + ": " + m;
  }
  int64_t begin(int c) const { return c * w.plan.q + std::min<int64_t>(c, w.plan.r); }
  int64_t end(int c) const { return begin(c) + w.plan.q + (c < w.plan.r ? 1 : 0); }

  void segment(int t, int i0, int i1, bool streamk) {
    acc.clear();
    adds = 0;
    const int64_t iters = w.plan.iters;
    if (!(0 <= i0 && i0 < i1 && i1 <= iters)) fail("bad segment of tile " + std::to_string(t));
    if (t < 0 || int64_t(t) >= int64_t(w.written.size())) {
      fail("tile " + std::to_string(t) + " out of range");
      return;
    }
    if (streamk != (t < w.plan.sk_tiles)) fail("tile " + std::to_string(t) + " in the wrong section");
    for (int i = i0; i < i1; ++i) {
      const int64_t it = int64_t(t) * iters + i;
      if (streamk && (b >= w.plan.sk_blocks || it < begin(b) || it >= end(b)))
        fail("segment outside the block's range");
      acc.push_back(it);
    }
  }
  void publish(int c) {
    if (c != b) fail("publishes into slot " + std::to_string(c));
    if (b < 0 || b >= int(w.flags.size())) {
      fail("publishes without a slot");
      return;
    }
    if (w.flags[size_t(b)]) fail("publishes twice");
    w.slots[size_t(b)] = acc;
    w.flags[size_t(b)] = 1;
  }
  void add(int c) {
    ++adds;
    if (w.fault == StreamKFault::DropAdd && calls++ == 0) return;
    if (c < 0 || c >= b) {
      fail("waits on block " + std::to_string(c) + " (not a lower block)");
      return;
    }
    if (!w.flags[size_t(c)]) fail("waits on block " + std::to_string(c) + " whose flag is not set");
    if (w.consumed[size_t(c)]++) fail("consumes the partial of block " + std::to_string(c) + " twice");
    acc.insert(acc.end(), w.slots[size_t(c)].begin(), w.slots[size_t(c)].end());
  }
  void finish(int t) {
    if (t < 0 || int64_t(t) >= int64_t(w.written.size())) return;  // failed in segment()
    ++w.written[size_t(t)];
    std::sort(acc.begin(), acc.end());
    const int64_t iters = w.plan.iters;
    bool exact = int64_t(acc.size()) == iters;
    for (size_t i = 0; exact && i < acc.size(); ++i) exact = acc[i] == int64_t(t) * iters + int64_t(i);
    if (!exact) fail("tile " + std::to_string(t) + " is not the sum of exactly its k iterations");
    if (t >= w.plan.sk_tiles) return;  // data-parallel
    const int64_t n = contributors(w.plan, t);
    if (w.reduction == Reduction::StreamKLinear ? adds != n - 1 : adds > ceil_log2(n))
      fail("tile " + std::to_string(t) + ": " + std::to_string(adds) + " partials added by the writer of " +
           std::to_string(n) + " contributors");
  }
};

template <bool Persistent>
inline void run_block(const StreamKArgs& a, int b, Reduction r, Ops& ops) {
  if (r == Reduction::StreamKTree)
    streamk_schedule<Reduction::StreamKTree, Persistent>(a, b, ops);
  else
    streamk_schedule<Reduction::StreamKLinear, Persistent>(a, b, ops);
}

}  // namespace streamk_sim

inline std::string streamk_where(int64_t tiles, int64_t iters, int64_t blocks, bool persistent) {
  return " (tiles " + std::to_string(tiles) + ", iters " + std::to_string(iters) + ", blocks " +
         std::to_string(blocks) + (persistent ? ", persistent" : "") + ")";
}

inline std::string check_streamk_plan(int64_t tiles, int64_t iters, int64_t blocks, bool persistent) {
  const std::string where = streamk_where(tiles, iters, blocks, persistent);
  const StreamKPlan p = make_streamk_plan(tiles, iters, blocks, persistent);
  if (p.sk_tiles + p.dp_tiles != tiles || p.sk_tiles < 0 || p.dp_tiles < 0)
    return "sk_tiles + dp_tiles != tiles" + where;
  if (p.dp_tiles % blocks != 0) return "data-parallel tiles are not whole waves" + where;
  if (p.sk_tiles > 0 && p.dp_tiles > 0 && p.sk_tiles < blocks)
    return "a StreamK section next to data-parallel waves must hold at least B tiles" + where;
  if (p.sk_blocks > blocks || p.sk_blocks > p.sk_iters || (p.sk_iters > 0) != (p.sk_blocks > 0))
    return "bad sk_blocks" + where;
  if (p.sk_blocks > 0 && p.q * p.sk_blocks + p.r != p.sk_iters) return "q, r do not split sk_iters" + where;
  if (persistent ? (p.grid > blocks || p.dp_rounds * blocks != p.dp_tiles) : p.grid != p.sk_blocks + p.dp_tiles)
    return "bad grid" + where;
  return {};
}

// Runs every block of the plan's grid through the schedule on args a.
inline std::string simulate_streamk(const StreamKPlan& p, const StreamKArgs& a, Reduction reduction,
                                    StreamKFault fault = StreamKFault::None) {
  const std::string where = streamk_where(p.tiles, p.iters, p.blocks, p.persistent);
  streamk_sim::World w;
  w.plan = p;
  w.reduction = reduction;
  w.fault = fault;
  w.slots.resize(size_t(p.sk_blocks));
  w.flags.assign(size_t(p.sk_blocks), 0);
  w.consumed.assign(size_t(p.sk_blocks), 0);
  w.written.assign(size_t(p.tiles), 0);
  int64_t owned = 0;
  for (int c = 0; c < int(p.sk_blocks); ++c) {
    const int64_t n = a.end(c) - a.begin(c);
    if (n != p.q && n != p.q + 1) return "uneven StreamK split" + where;
    for (int i = a.begin(c); i < a.end(c); ++i)
      if (a.block_of(i) != c) return "block_of disagrees with begin/end" + where;
    owned += n;
  }
  if (owned != p.sk_iters) return "StreamK blocks do not own every StreamK iteration" + where;
  Reduction run = reduction;
  if (fault == StreamKFault::OtherReduction)
    run = reduction == Reduction::StreamKTree ? Reduction::StreamKLinear : Reduction::StreamKTree;
  for (int i = 0; i < int(p.grid); ++i) {
    const int b = fault == StreamKFault::ReverseOrder ? int(p.grid) - 1 - i : i;
    streamk_sim::Ops ops{w, b, {}, 0, 0};
    if (p.persistent)
      streamk_sim::run_block<true>(a, b, run, ops);
    else
      streamk_sim::run_block<false>(a, b, run, ops);
    if (!w.err.empty()) return w.err + where;
  }
  for (size_t c = 0; c < w.flags.size(); ++c)
    if (w.flags[c] != w.consumed[c]) return "partial of block " + std::to_string(c) + " never consumed" + where;
  for (int64_t t = 0; t < p.tiles; ++t)
    if (w.written[size_t(t)] != 1)
      return "tile " + std::to_string(t) + " written " + std::to_string(w.written[size_t(t)]) + " times" + where;
  return {};
}

inline std::string check_streamk_schedule(int64_t tiles, int64_t iters, int64_t blocks,
                                          bool persistent, Reduction reduction) {
  if (std::string e = check_streamk_plan(tiles, iters, blocks, persistent); !e.empty()) return e;
  const StreamKPlan p = make_streamk_plan(tiles, iters, blocks, persistent);
  return simulate_streamk(p, make_streamk_args(p, tiles), reduction);
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

// Hand-computed plans: grid sizes, workspace bytes and where the flags start.
inline std::string check_streamk_hand_computed() {
  std::string err;
  auto expect = [&err](bool ok, const char* what) {
    if (!ok && err.empty()) err = std::string("hand-computed StreamK plan: ") + what;
  };
  // 10 tiles, 8 k iterations, B = 4: 10 % 4 = 2 -> 2 + 4 StreamK tiles (48 iterations, 12 per
  // block), 4 data-parallel tiles (one wave).
  StreamKPlan s = make_streamk_plan(10, 8, 4, false);
  expect(s.sk_tiles == 6 && s.dp_tiles == 4, "10x8 B4: 6 StreamK + 4 data-parallel tiles");
  expect(s.sk_blocks == 4 && s.q == 12 && s.r == 0, "10x8 B4: 4 StreamK blocks of 12 iterations");
  expect(s.grid == 8, "10x8 B4: grid 4 StreamK + 4 data-parallel blocks");
  expect(streamk_workspace_bytes(s, 64, 64) == 4 * (64 * 64 * 4 + 4), "10x8 B4 64x64: workspace");
  // Flags right after the partial slots, 16-byte aligned, one int per StreamK block.
  expect(streamk_partials_bytes(s, 64, 64) == 4 * 16384 && streamk_partials_bytes(s, 64, 64) % 16 == 0,
         "10x8 B4 64x64: flags at byte 65536");
  expect(streamk_flags_bytes(s) == 16, "10x8 B4: 4 flags");
  s = make_streamk_plan(10, 8, 4, true);
  expect(s.dp_rounds == 1 && s.grid == 4, "10x8 B4 persistent: 1 round, grid 4");
  expect(streamk_workspace_bytes(s, 128, 128) == 4 * (128 * 128 * 4 + 4), "10x8 B4 128x128: workspace");
  expect(streamk_partials_bytes(s, 32, 32) == 4 * 4096, "10x8 B4 32x32: flags at byte 16384");
  // Fewer tiles than blocks: all StreamK; 15 iterations over 8 blocks: 7 x 2 + 1 x 1.
  s = make_streamk_plan(3, 5, 8, false);
  expect(s.sk_tiles == 3 && s.dp_tiles == 0, "3x5 B8: all StreamK");
  expect(s.sk_blocks == 8 && s.q == 1 && s.r == 7 && s.grid == 8, "3x5 B8: q 1, r 7, grid 8");
  // One tile, 64 iterations, B = 7: every block holds a part of it (9 or 10 iterations).
  s = make_streamk_plan(1, 64, 7, true);
  expect(s.sk_tiles == 1 && s.sk_blocks == 7 && s.q == 9 && s.r == 1 && s.grid == 7, "1x64 B7: 7 contributors");
  // Fewer iterations than blocks: one block per iteration.
  s = make_streamk_plan(2, 1, 8, true);
  expect(s.sk_blocks == 2 && s.grid == 2, "2x1 B8: 2 blocks");
  // Whole waves: no StreamK section, no workspace.
  s = make_streamk_plan(8, 6, 4, false);
  expect(s.sk_tiles == 0 && s.sk_blocks == 0 && s.grid == 8, "8x6 B4: all data-parallel, grid 8");
  expect(streamk_workspace_bytes(s, 64, 64) == 0, "8x6 B4: no workspace");
  s = make_streamk_plan(8, 6, 4, true);
  expect(s.dp_rounds == 2 && s.grid == 4, "8x6 B4 persistent: 2 rounds, grid 4");
  // One block: everything data-parallel.
  s = make_streamk_plan(5, 9, 1, false);
  expect(s.sk_tiles == 0 && s.grid == 5, "5x9 B1: 5 data-parallel blocks");
  // H200-like: 132 SMs x 2, 1000 tiles of 392 iterations.
  s = make_streamk_plan(1000, 392, 264, false);
  expect(s.sk_tiles == 1000 % 264 + 264 && s.dp_tiles == 2 * 264, "1000x392 B264: 472 StreamK tiles");
  expect(s.sk_blocks == 264 && s.grid == 264 + 2 * 264, "1000x392 B264: grid 792");
  expect(make_streamk_plan(1000, 392, 264, true).grid == 264, "1000x392 B264 persistent: grid 264");
  // Default B (kStreamKMinIters 16) on 264 slots: the tiles fill the slots -> all of them.
  expect(streamk_default_blocks(1000, 392, 264) == 264 && streamk_default_blocks(264, 1, 264) == 264,
         "default B: T >= slots keeps the slots");
  // 1 tile x 784 iterations: 784 / 16 = 49 blocks of 16.
  expect(streamk_default_blocks(1, 784, 264) == 49, "default B: 1x784 -> 49 blocks");
  // 9 x 196 = 1764 iterations: 110 blocks (16 or 17 iterations each).
  expect(streamk_default_blocks(9, 196, 264) == 110, "default B: 9x196 -> 110 blocks");
  // 144 x 4: fewer than 16 iterations per tile -> one block per tile.
  expect(streamk_default_blocks(144, 4, 264) == 144, "default B: 144x4 -> 144 blocks (one per tile)");
  // 36 x 196 = 7056 iterations: 441 > 264 -> the slots.
  expect(streamk_default_blocks(36, 196, 264) == 264, "default B: 36x196 -> 264 blocks");
  // ... and B = T makes every tile data-parallel: no partials, no flags, no workspace.
  s = make_streamk_plan(144, 4, streamk_default_blocks(144, 4, 264), true);
  expect(s.sk_tiles == 0 && s.sk_blocks == 0 && s.grid == 144 && streamk_workspace_bytes(s, 128, 128) == 0,
         "144x4 default B: whole tiles, grid 144, no workspace");
  return err;
}

// Faults that the checks above must catch; "" when each one fails them.
inline std::string check_streamk_faults_caught() {
  struct Shape {
    int64_t tiles, iters, blocks;
    bool persistent;
  };
  // Mixed StreamK + data-parallel, both modes; one tile shared by 7 blocks; several tiles
  // shared by few blocks.
  const Shape shapes[] = {{10, 8, 4, false}, {10, 8, 4, true}, {1, 64, 7, false}, {1, 64, 7, true},
                          {13, 5, 3, true}, {3, 5, 8, false}};
  for (Reduction red : {Reduction::StreamKLinear, Reduction::StreamKTree}) {
    for (const Shape& sh : shapes) {
      const StreamKPlan p = make_streamk_plan(sh.tiles, sh.iters, sh.blocks, sh.persistent);
      const StreamKArgs good = make_streamk_args(p, sh.tiles);
      const std::string where = std::string(to_string(red)) + streamk_where(sh.tiles, sh.iters, sh.blocks, sh.persistent);
      if (std::string e = simulate_streamk(p, good, red); !e.empty()) return "the correct schedule fails: " + e;
      struct Mutant {
        const char* name;
        StreamKArgs args;
        StreamKFault fault;
      };
      std::vector<Mutant> ms;
      auto mutate = [&](const char* name, auto&& change) {
        StreamKArgs a = good;
        change(a);
        ms.push_back({name, a, StreamKFault::None});
      };
      mutate("q - 1", [](StreamKArgs& a) { a.q -= 1; });
      mutate("r + 1", [](StreamKArgs& a) { a.r += 1; });
      mutate("sk_tiles - 1", [](StreamKArgs& a) { a.sk_tiles -= 1; });
      mutate("iters - 1", [](StreamKArgs& a) { a.iters -= 1; });
      if (sh.persistent && p.dp_rounds > 0) {
        mutate("dp_rounds + 1", [](StreamKArgs& a) { a.dp_rounds += 1; });
        if (p.dp_rounds > 1) mutate("blocks + 1 (data-parallel stride)", [](StreamKArgs& a) { a.blocks += 1; });
      }
      ms.push_back({"a dropped partial", good, StreamKFault::DropAdd});
      ms.push_back({"blocks in reverse order", good, StreamKFault::ReverseOrder});
      int64_t most = 0;
      for (int64_t t = 0; t < p.sk_tiles; ++t) most = std::max(most, streamk_sim::contributors(p, t));
      if (most >= 4) ms.push_back({"the other reduction's schedule", good, StreamKFault::OtherReduction});
      for (const Mutant& m : ms) {
        if (m.args.q < 1 && m.args.sk_blocks > 0) continue;  // division by zero, not a schedule
        if (simulate_streamk(p, m.args, red, m.fault).empty())
          return std::string("fault not caught: ") + m.name + ", " + where;
      }
    }
  }
  return {};
}

}  // namespace ckgen::host
