// Specialization::Window on the wavelet_tma pipeline: the forward convolution of 64-channel
// groups (C = K = 64) at stride 1, with the group's filter resident in shared memory.
//
//   filter: a block runs the windows of one group at a time (blocks are spread over the groups:
//           ceil(#SMs / G) a group, or one group after another when G exceeds the SMs) and
//           holds its whole filter, taps x 64 output channels x 64 input channels (one 64 x 64
//           K-major tile of 8 KB a tap, copied once per group), the instruction's A operand.
//   window: a tile is Tile M / 8 output rows x 8 output columns of one image. The load warp
//           copies its input patch ((rows + (Y - 1) d_h) x (8 + (X - 1) d_w) pixels x 64
//           channels, one 4D tiled box of x {G*C, W, H, N} from (ow0 - pl_w, oh0 - pl_h);
//           padding and pixels past the image are zero-filled by the engine) into one of
//           kStages (2 or 4) patch buffers; tap (fy, fx) reads its B operand straight from the patch: its
//           8-pixel groups (one output row each) start fy * d_h patch rows and fx * d_w pixels
//           in, one patch row apart (descriptor SBO = patch width x 128 bytes; any 128-byte row
//           works, the swizzle follows the address bits). No im2col copy, no copy per tap.
//   math:   two warpgroups take turns on the block's windows (each window is one warpgroup's:
//           64 output channels on the instruction's M, Tile M pixels on its N, taps x 4
//           m64n(Tile M)k16 back to back from resident operands), so one's epilogue runs beside
//           the other's MMA.
//   epilogue: a fused instance's channel op and activation (epilogue/fusion.hpp; a thread's
//           accumulators hold two output channels, whose bias / scale it reads once a group),
//           the tile converted, transposed into a staging buffer (stmatrix .trans, 128-byte
//           swizzled pixel rows of 64 channels) and written by one 4D tiled store of y
//           {G*K, Q, P, N} (the engine clips the window at the image's edge).
// Each input pixel of a window is copied once and read by every tap, where the default form's
// im2col ring copies it once per tap.
#pragma once

#include "ckgen/pipeline/tma_ws.hpp"

namespace ckgen {

#if defined(CKGEN_NVIDIA)

// What both window forms (this file, pipeline/tma_window_weight.hpp) share: a window of Tile M
// pixels (Tile M / 8 rows x 8 columns), 64-channel rows of 128 bytes, a 2D fp16 / bf16 instance
// without split, merged groups or StreamK.
template <class Cfg>
struct TmaWindowCommonTraits {
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  static constexpr int PN = Cfg::Tile::kM;   // pixels of a window
  static constexpr int TW = 8, TH = PN / TW;  // window columns and rows
  static constexpr int S = Cfg::kStages;
  static constexpr int kRowBytes = 128;  // one pixel's 64 channels
  static constexpr bool kBF16 = Cfg::kDataType == DataType::BF16;
  static_assert(Cfg::kNDim == 2 && Cfg::kVariant != Variant::BackwardData,
                "ckgen: specialization window is 2D forward or backward_weight");
  static_assert(Cfg::kDataType == DataType::FP16 || Cfg::kDataType == DataType::BF16,
                "ckgen: specialization window needs fp16 or bf16");
  static_assert(Cfg::Tile::kN == 64 && Cfg::Tile::kK * int(sizeof(Raw)) == kRowBytes,
                "ckgen: specialization window needs Tile N 64 and Tile K 64 (64-channel groups)");
  static_assert(PN == 64 || PN == 128 || PN == 160 || PN == 192 || PN == 256,
                "ckgen: specialization window needs Tile M (8 x window rows) 64, 128, 160, 192 or 256");
  static_assert(Cfg::kMathUnit == MathUnit::Wgmma && Cfg::WarpTile::kM == 64 && Cfg::WarpTile::kK == 16 &&
                    Cfg::Waves::kN == 1 && Cfg::Waves::kK == 1 && Cfg::kLoadWaves == 1,
                "ckgen: specialization window: wgmma warp tile (64, N, 16), waves (M, 1, 1), one load warp");
  static_assert(Cfg::kKBatch == 1 && Cfg::kGroupsToMerge == 1 && Cfg::kReduction == Reduction::SplitK &&
                    !Cfg::kPersistent && Cfg::kVecA == 8 && Cfg::kVecB == 8 && Cfg::kVecC == 8,
                "ckgen: specialization window: k_batch 1, no merged groups, vector (8, 8, 8)");
};

template <class Cfg>
struct TmaWindowTraits : TmaWindowCommonTraits<Cfg> {
  using Base = TmaWindowCommonTraits<Cfg>;
  using Base::PN;
  using Base::S;
  using Base::kRowBytes;
  static constexpr int kTapBytes = 64 * kRowBytes;
  static constexpr int kStageOut = PN * kRowBytes;  // one warpgroup's staging buffer
  static constexpr int kThreads = 2 * 128 + 32;     // two math warpgroups + one load warp
  static_assert(Cfg::kVariant == Variant::Forward, "ckgen: TmaWindowTraits is forward");
  static_assert(Cfg::WarpTile::kN == PN && Cfg::kSwapAB,
                "ckgen: specialization window computes the transposed tile: swap_ab, warp tile (64, Tile M, 16)");
  static_assert(Cfg::Waves::kM == 4 && Cfg::kMathWaves == 8,
                "ckgen: specialization window needs waves (4, 1, 1), two math warpgroups (math waves 8), one load warp");
  static_assert(Cfg::kEpilogue == Epilogue::CShuffle,
                "ckgen: specialization window stages its tile through shared memory (epilogue cshuffle)");
  // Window li lands in buffer li % S and is read by warpgroup li % 2: with S even each buffer has
  // one reader, which waits for its phases in order. With S odd the two warpgroups share every
  // buffer and the faster one can wait for a `full` parity two phases early (a window whose copy
  // has not landed reads as landed), so S must be even.
  static_assert(S == 2 || S == 4, "ckgen: specialization window needs 2 or 4 patch buffers (stages)");
  static_assert(!Cfg::kResidual && !Cfg::kStats && Cfg::kOutDataType == Cfg::kDataType,
                "ckgen: specialization window fuses a channel op and an activation only (rule fusion)");
};

namespace detail {
// Shared memory of a window launch: the filter (taps tiles), S patch buffers of pw x ph pixel
// rows each (1024-byte aligned: the swizzle atom), two staging buffers, the barriers (filter
// full / empty, a full / empty pair per patch buffer) and the alignment slack.
inline constexpr int tma_window_patch_bytes(int pw, int ph) { return (pw * ph * 128 + 1023) / 1024 * 1024; }
inline constexpr int tma_window_smem_bytes(int taps, int pw, int ph, int stages, int pixels) {
  return taps * 64 * 128 + stages * tma_window_patch_bytes(pw, ph) + 2 * pixels * 128 + 8 * (2 + 2 * stages) + 1024;
}
}  // namespace detail

// What both window launches carry about the problem's windows (detail::window_geometry).
struct TmaWindowGeometry {
  int G, pl_h, pl_w, d_h, d_w;
  int pw;                 // patch width (pixels)
  int tiles_group;        // windows a group: N x tiles_img
  int bpg, group_stride;  // blocks a group; groups run at once (block b: group b / bpg + i * group_stride)
  FastDiv by_tiles_img, by_tiles_w;
  // Window `tile` of a group (windows of `rows` x 8): image n, first output row oh0 and column ow0.
  CKGEN_HOST_DEVICE void origin(int tile, int rows, int& n, int& oh0, int& ow0) const {
    int r, th, tw;
    by_tiles_img.divmod(tile, n, r);
    by_tiles_w.divmod(r, th, tw);
    oh0 = th * rows;
    ow0 = tw * 8;
  }
};

struct TmaWindowArgs {
  CUtensorMap x, w, y;  // x {G*C, W, H, N}, box 64 x pw x ph; w {C, taps, G*K}, box 64 x 1 x 64;
                        // y {G*K, Q, P, N}, box 64 x 8 x TH
  TmaWindowGeometry win;
  int taps, X;
  int patch_bytes, patch_tx;  // buffer stride, bytes a patch copy lands
  EpilogueArgs ep;            // a fused instance's operands
};

namespace tma {
#if defined(CKGEN_HAS_TMA)
CKGEN_DEVICE inline void store_tile_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
#endif
// K-major 128B-swizzle descriptor whose 8-row groups lie sbo bytes apart (sw128_desc: 1024).
CKGEN_HOST_DEVICE constexpr uint64_t sw128_desc_sbo(uint32_t smem_addr, uint32_t sbo) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
         (uint64_t(1) << 62);
}
}  // namespace tma

template <class Cfg>
CKGEN_GLOBAL void __launch_bounds__(TmaWindowTraits<Cfg>::kThreads, 1)
    tma_window_kernel(const CKGEN_GRID_CONSTANT TmaWindowArgs p) {
  using Tr = TmaWindowTraits<Cfg>;
  extern __shared__ __attribute__((aligned(1024))) unsigned char win_smem_raw[];
#if defined(CKGEN_HAS_TMA) && defined(CKGEN_HAS_WGMMA)
  const uint32_t raw_addr = mbar::addr(win_smem_raw);
  unsigned char* base = win_smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u);
  unsigned char* wsm = base;
  unsigned char* patches = wsm + p.taps * Tr::kTapBytes;
  unsigned char* staging = patches + Tr::S * p.patch_bytes;
  uint64_t* wfull = reinterpret_cast<uint64_t*>(staging + 2 * Tr::kStageOut);
  uint64_t* wempty = wfull + 1;
  uint64_t* pfull = wfull + 2;
  uint64_t* pempty = pfull + Tr::S;
  const int tid = threadIdx.x;
  const int slot = int(blockIdx.x) / p.win.bpg, sub = int(blockIdx.x) % p.win.bpg;
  if (tid == 256) {  // the copies' issuer: the maps fetched while the previous kernel ends
    tma::prefetch_map(&p.x);
    tma::prefetch_map(&p.w);
  }
  if (tid == 0) {
    mbar::init(wfull, 1);
    mbar::init(wempty, 8);  // every math warp, once per group
    for (int b = 0; b < Tr::S; ++b) {
      mbar::init(pfull + b, 1);
      mbar::init(pempty + b, 4);  // the warps of the warpgroup that read the patch
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  chain_wait();
  if (tid >= 256) {  // the load warp: one thread issues every copy
    if (tid == 256) {
      int li = 0, gi = 0;  // windows and groups of this block
      for (int g = slot; g < p.win.G; g += p.win.group_stride, ++gi) {
        if (gi > 0) mbar::wait(wempty, uint32_t((gi - 1) & 1));  // the last group's MMA done
        tma::expect_tx(wfull, uint32_t(p.taps * Tr::kTapBytes));
        for (int tap = 0; tap < p.taps; ++tap)
          tma::load_tile_3d(wsm + tap * Tr::kTapBytes, &p.w, wfull, 0, tap, g * 64);
        for (int tile = sub; tile < p.win.tiles_group; tile += p.win.bpg, ++li) {
          const int b = li % Tr::S;
          if (li >= Tr::S) mbar::wait(pempty + b, uint32_t((li / Tr::S - 1) & 1));
          int n, oh0, ow0;
          p.win.origin(tile, Tr::TH, n, oh0, ow0);
          tma::expect_tx(pfull + b, uint32_t(p.patch_tx));
          tma::load_tile_4d(patches + b * p.patch_bytes, &p.x, pfull + b, g * 64, ow0 - p.win.pl_w,
                            oh0 - p.win.pl_h, n);
        }
      }
      chain_release();
    }
    return;
  }

  // Math warpgroup c takes the block's windows c, c + 2, ...
  using Op = wgmma_detail::Op<Tr::PN, Tr::kBF16, 0, 0>;
  const int c = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  float acc[Tr::PN / 2];
  auto fence_acc = [&] {
#pragma unroll
    for (int e = 0; e < Tr::PN / 2; ++e) asm volatile("" : "+f"(acc[e])::"memory");
  };
  const uint32_t wa = mbar::addr(wsm), pa = mbar::addr(patches);
  const uint32_t out = mbar::addr(staging) + uint32_t(c * Tr::kStageOut);
  const uint32_t sbo = uint32_t(p.win.pw) * Tr::kRowBytes;
  int li = 0, gi = 0;
  bool stored = false;
  for (int g = slot; g < p.win.G; g += p.win.group_stride, ++gi) {
    // A fused instance's operands of this thread's channels warp * 16 + 8h + lane / 4 of group g.
    [[maybe_unused]] float fb[2] = {0.f, 0.f}, fs[2] = {1.f, 1.f};
    if constexpr (Cfg::kEpilogueOps) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t ch = int64_t(g) * 64 + warp * 16 + 8 * h + lane / 4;
        if constexpr (fusion::kReadsBias<Cfg>) fb[h] = __ldg(p.ep.bias + ch);
        if constexpr (fusion::kReadsScale<Cfg>) fs[h] = __ldg(p.ep.scale + ch);
      }
    }
    mbar::wait(wfull, uint32_t(gi & 1));
    for (int tile = sub; tile < p.win.tiles_group; tile += p.win.bpg, ++li) {
      if ((li & 1) != c) continue;
      const int b = li % Tr::S;
      mbar::wait(pfull + b, uint32_t((li / Tr::S) & 1));
#pragma unroll
      for (int e = 0; e < Tr::PN / 2; ++e) acc[e] = 0.f;
      fence_acc();
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      const uint32_t pb = pa + uint32_t(b * p.patch_bytes);
      auto tap_mma = [&](int tap, int fy, int fx) {
        const uint32_t bt = pb + uint32_t(fy * p.win.d_h * p.win.pw + fx * p.win.d_w) * Tr::kRowBytes;
        const uint32_t at = wa + uint32_t(tap * Tr::kTapBytes);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          Op::run(acc, tma::sw128_desc(at + kk * 32), tma::sw128_desc_sbo(bt + kk * 32, sbo));
      };
      if (p.taps == 9 && p.X == 3) {  // 3x3 unrolled: the wgmma issue back to back
#pragma unroll
        for (int tap = 0; tap < 9; ++tap) tap_mma(tap, tap / 3, tap % 3);
      } else {
        int fy = 0, fx = 0;
        for (int tap = 0; tap < p.taps; ++tap) {
          tap_mma(tap, fy, fx);
          if (++fx == p.X) {
            fx = 0;
            ++fy;
          }
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      fence_acc();
      if (lane == 0) mbar::arrive(pempty + b);
      // Epilogue: the staging buffer is free once the last store from it has read it. Matrix
      // (j, h) of 8 pixels x 8 channels: accumulators 4j + 2h, +1 hold channel warp * 16 + 8h +
      // lane / 4 of pixels 8j + 2 (lane % 4), +1; stmatrix .trans writes it as 8 pixel rows of
      // 16 bytes (chunk warp * 2 + h of the 128-byte row, swizzled by the row's address bits).
      if (tid % 128 == 0 && stored) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
#pragma unroll
      for (int j = 0; j < Tr::PN / 8; j += 2) {
        uint32_t r[4];
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int jj = j + m / 2, h = m % 2;
          float f[2] = {acc[jj * 4 + h * 2], acc[jj * 4 + h * 2 + 1]};
          if constexpr (Cfg::kEpilogueOps) {
            const float b[2] = {fb[h], fb[h]}, sc[2] = {fs[h], fs[h]};
            r[m] = fusion::apply_pack2<Cfg, Cfg::kDataType>(p.ep, f, b, sc);
          } else {
            r[m] = pack_pair<Cfg::kDataType>(f[0], f[1]);
          }
        }
        const int m = lane / 8, pix = (j + m / 2) * 8 + lane % 8, chunk = warp * 2 + (m % 2);
        const uint32_t addr = out + uint32_t(pix * Tr::kRowBytes + ((chunk ^ (pix & 7)) << 4));
        asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                     "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                     : "memory");
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // seen by the store's reads
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
      if (tid % 128 == 0) {
        int n, oh0, ow0;
        p.win.origin(tile, Tr::TH, n, oh0, ow0);
        tma::store_tile_4d(&p.y, out, g * 64, ow0, oh0, n);
      }
      stored = true;
    }
    if (lane == 0) mbar::arrive(wempty);  // this warp's reads of the group's filter are done
  }
  if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#else
  (void)p;
  (void)win_smem_raw;
#endif
}

#endif  // CKGEN_NVIDIA

}  // namespace ckgen
