// StreamK work distribution (backward_weight): the plan and the per-block schedule, pure
// integer arithmetic shared by the host (grid and workspace sizes, is_supported, the host-side
// tests) and the device (schedule/streamk.hpp). Nothing here touches memory.
//
// Work space: T output tiles (all groups, tile t = g * tiles_per_group + tm * tiles_n + tn),
// each of I = ceil(Kred / BK) k iterations. With B StreamK blocks (RunOptions::streamk_blocks,
// default streamk_default_blocks: S = #SMs x resident blocks per SM of the instance when the
// tiles fill it, fewer when they do not, see there):
//
//   T % B == 0          every tile data-parallel (one block computes it whole)
//   T <  B              every tile StreamK
//   otherwise           sk_tiles = T % B + B StreamK tiles (the first ones), the other
//                       (T / B - 1) * B tiles data-parallel: whole waves of B tiles, and each
//                       StreamK block gets between 1 and 2 tiles' worth of k iterations
//
// The sk_tiles * I StreamK iterations are split evenly over sk_blocks = min(B, sk_tiles * I)
// blocks: block b owns [b * q + min(b, r), ...) with q + 1 iterations for b < r, q for the rest
// (q = sk_iters / sk_blocks, r = sk_iters % sk_blocks).
//
// Grid: non-persistent: sk_blocks StreamK blocks first (blockIdx.x 0 .. sk_blocks-1), then one
//       block per data-parallel tile; persistent: B blocks (sk_blocks when there is no
//       data-parallel tile), each first computes dp_rounds = dp_tiles / B whole tiles
//       (tile sk_tiles + round * B + b), then its StreamK range.
//
// Schedule of a StreamK block (streamk_schedule): its range is walked from the highest iteration
// down, one segment per tile. Tile t's contributors are the blocks first..last that own its
// iterations; a block is `last` for every tile it touches except possibly its first segment
// (the highest tile), so every block publishes at most one partial tile: one workspace slot
// and one flag per StreamK block. Contributors only ever wait on lower block indices, whose
// contribution is their first segment (computed before they wait on anything).
//   linear: `last` waits for the flags of last-1 .. first, adds their slots, writes the tile;
//           every other contributor publishes its partial into its slot.
//   tree:   rank = last - b; at step d = 1, 2, 4, .. a block whose rank has bit d publishes
//           its (accumulated) partial and stops; otherwise it adds the partial of rank + d
//           (block b - d) when that exists. Rank 0 (last) writes the tile: depth ceil(log2 n).
//
// Workspace (streamk_workspace_bytes): sk_blocks fp32 partial tiles (BM x BN each, stored in
// the accumulator layout: element e of thread t at e * threads + t), then sk_blocks int flags
// (zeroed by run() with one memsetAsync per launch; a publisher sets its flag to 1 with a
// release store, its consumer polls with acquire loads).
#pragma once

#include <cstdint>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// What the kernel reads (part of ConvArgs). All counts and StreamK iteration indices fit int:
// is_supported refuses tiles x iters > 2^31-1, and every index below is at most that.
struct StreamKArgs {
  int tiles_per_group = 0;  // M tiles x N tiles of one group
  int iters = 0;            // k iterations per tile (ceil(Kred / BK))
  int sk_tiles = 0;         // tiles 0 .. sk_tiles-1 are StreamK, the rest data-parallel
  int sk_blocks = 0;        // blocks with StreamK iterations
  int q = 0, r = 0;         // iterations per StreamK block: q + 1 for b < r, else q
  int blocks = 0;           // B (persistent: data-parallel stride)
  int dp_rounds = 0;        // persistent: whole tiles per block before its StreamK range
  float* partials = nullptr;
  int* flags = nullptr;

  // StreamK iterations [begin(b), end(b)) of block b (b * q + min(b, r) <= sk_iters).
  CKGEN_HOST_DEVICE int begin(int b) const { return b * q + (b < r ? b : r); }
  CKGEN_HOST_DEVICE int end(int b) const { return begin(b) + q + (b < r ? 1 : 0); }
  // The StreamK block that owns StreamK iteration i (r * (q + 1) <= sk_iters).
  CKGEN_HOST_DEVICE int block_of(int i) const {
    const int big = r * (q + 1);
    return i < big ? i / (q + 1) : r + (i - big) / q;
  }
};

struct StreamKPlan {
  int64_t tiles = 0, iters = 0, blocks = 0;
  bool persistent = false;
  int64_t sk_tiles = 0, dp_tiles = 0, sk_iters = 0, sk_blocks = 0, q = 0, r = 0;
  int64_t dp_rounds = 0;  // persistent only
  int64_t grid = 0;       // blocks launched
};

// The default B for T tiles of I iterations on S resident block slots. T >= S: B = S. T < S
// (every tile StreamK): the T x I iterations are spread over the slots, but a block gets at
// least kStreamKMinIters of them and every tile at least one block, B = min(S, max(T,
// T * I / kStreamKMinIters)). A partial tile costs about what 8 k iterations of operand loads
// do (a BM x BN fp32 tile written and read back against (BM + BN) x BK operands per
// iteration), so StreamK loses when its blocks get few iterations and wins from a few dozen on.
// With I < kStreamKMinIters, B = T: every tile is then
// data-parallel (T % B == 0), with no workspace.
inline constexpr int64_t kStreamKMinIters = 16;
CKGEN_HOST_DEVICE inline int64_t streamk_default_blocks(int64_t tiles, int64_t iters, int64_t slots) {
  if (tiles >= slots) return slots;
  const int64_t by_iters = tiles * iters / kStreamKMinIters;
  const int64_t b = by_iters > tiles ? by_iters : tiles;
  return b < slots ? b : slots;
}

// tiles >= 1, iters >= 1, blocks >= 1.
CKGEN_HOST_DEVICE inline StreamKPlan make_streamk_plan(int64_t tiles, int64_t iters,
                                                       int64_t blocks, bool persistent) {
  StreamKPlan s;
  s.tiles = tiles;
  s.iters = iters;
  s.blocks = blocks;
  s.persistent = persistent;
  if (tiles % blocks == 0)
    s.sk_tiles = 0;
  else if (tiles < blocks)
    s.sk_tiles = tiles;
  else
    s.sk_tiles = tiles % blocks + blocks;
  s.dp_tiles = tiles - s.sk_tiles;
  s.sk_iters = s.sk_tiles * iters;
  s.sk_blocks = s.sk_iters < blocks ? s.sk_iters : blocks;
  if (s.sk_blocks > 0) {
    s.q = s.sk_iters / s.sk_blocks;
    s.r = s.sk_iters % s.sk_blocks;
  }
  if (persistent) {
    s.dp_rounds = s.dp_tiles / blocks;  // dp_tiles is a multiple of blocks
    s.grid = s.dp_rounds > 0 ? blocks : s.sk_blocks;
  } else {
    s.grid = s.sk_blocks + s.dp_tiles;
  }
  return s;
}

// The kernel arguments of a plan; the workspace pointers are set by the launch.
CKGEN_HOST_DEVICE inline StreamKArgs make_streamk_args(const StreamKPlan& s, int64_t tiles_per_group) {
  StreamKArgs a;
  a.tiles_per_group = int(tiles_per_group);
  a.iters = int(s.iters);
  a.sk_tiles = int(s.sk_tiles);
  a.sk_blocks = int(s.sk_blocks);
  a.q = int(s.q);
  a.r = int(s.r);
  a.blocks = int(s.blocks);
  a.dp_rounds = int(s.dp_rounds);
  return a;
}

// Bytes of the partial-tile slots (offset of the flags in the workspace: a multiple of 16).
CKGEN_HOST_DEVICE inline int64_t streamk_partials_bytes(const StreamKPlan& s, int bm, int bn) {
  return s.sk_blocks * int64_t(bm) * bn * int64_t(sizeof(float));
}
CKGEN_HOST_DEVICE inline int64_t streamk_flags_bytes(const StreamKPlan& s) {
  return s.sk_blocks * int64_t(sizeof(int));
}
// Workspace = sk_blocks * (BM * BN * 4 + 4) bytes (0 when every tile is data-parallel).
CKGEN_HOST_DEVICE inline int64_t streamk_workspace_bytes(const StreamKPlan& s, int bm, int bn) {
  return streamk_partials_bytes(s, bm, bn) + streamk_flags_bytes(s);
}

// The cross-block reduction of StreamK tile t after block b computed its segment, as calls on
// `ops`: ops.publish(b) (store the accumulators into slot b, then set flag b) or ops.add(c)
// (wait for flag c, then add slot c). True when block b writes the tile.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <Reduction R, class Ops>
CKGEN_HOST_DEVICE inline bool streamk_reduce(const StreamKArgs& s, int b, int t, Ops& ops) {
  static_assert(R == Reduction::StreamKLinear || R == Reduction::StreamKTree,
                "ckgen: streamk_reduce is for the StreamK reductions");
  const int t0 = t * s.iters;
  const int first = s.block_of(t0), last = s.block_of(t0 + s.iters - 1);
  if constexpr (R == Reduction::StreamKLinear) {
    if (b != last) {
      ops.publish(b);
      return false;
    }
    for (int c = last - 1; c >= first; --c) ops.add(c);
  } else {
    const int n = last - first + 1, rank = last - b;
    for (int d = 1; d < n; d <<= 1) {
      if (rank & d) {
        ops.publish(b);
        return false;
      }
      if (rank + d < n) ops.add(b - d);
    }
  }
  return true;
}

// The whole schedule of block b (the kernel: schedule/streamk.hpp; the host-side tests: a simulation):
//   ops.segment(tile, it0, it1, streamk)   fresh accumulators = k iterations [it0, it1) of tile
//   ops.publish / ops.add                   see streamk_reduce
//   ops.finish(tile)                        write the tile from the accumulators
// First the block's data-parallel tiles (persistent: dp_rounds of them, tile sk_tiles + b + k * B
// in round k; non-persistent: one, tile sk_tiles + b - sk_blocks, for the blocks after the
// StreamK blocks), then its StreamK range walked from the highest iteration down, one segment
// per tile. One loop with one call site of each operation (the main loop and the epilogue are
// inlined once) and one counter carried through it: with more loop-carried state ptxas spilled
// it around the main loop (sm_90a, 64x64 tree + persistent: 32 bytes). hi + dp <= tiles x iters.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <Reduction R, bool Persistent, class Ops>
CKGEN_HOST_DEVICE inline void streamk_schedule(const StreamKArgs& s, int b, Ops& ops) {
  const bool sk = b < s.sk_blocks;
  const int dp = Persistent ? s.dp_rounds : (sk ? 0 : 1);
  const int lo = sk ? s.begin(b) : 0, hi = sk ? s.end(b) : 0;
  // One counter walks the block's work from the top: (hi, hi + dp] are its data-parallel tiles,
  // [lo, hi) its StreamK iterations.
  for (int cur = hi + dp; cur > lo;) {
    int t, it0 = 0, it1 = s.iters;
    if (cur > hi) {
      const int k = hi + dp - cur;  // data-parallel round
      t = Persistent ? s.sk_tiles + b + k * s.blocks : s.sk_tiles + (b - s.sk_blocks);
      --cur;
    } else {
      t = (cur - 1) / s.iters;
      const int t0 = t * s.iters;
      const int seg = lo > t0 ? lo : t0;
      it0 = seg - t0;
      it1 = cur - t0;
      cur = seg;
    }
    const bool streamk = t < s.sk_tiles;
    ops.segment(t, it0, it1, streamk);
    if (!streamk || streamk_reduce<R>(s, b, t, ops)) ops.finish(t);
  }
}

}  // namespace ckgen
