// The device kernel of the implicit-GEMM pipelines (basic, multistage, wavelet): one block tile
// = main loop (pipeline/) + epilogue (epilogue/), in a split-K or StreamK grid (schedule/).
//
// Grid (split-K): x = GEMM tiles (M tiles x N tiles, N fastest), y = group / kGroupsToMerge
// (x stride class for backward_data), z = split-K index. Grid (StreamK, backward_weight):
// x = StreamK blocks then data-parallel tiles (persistent: B blocks), see schedule/streamk_plan.hpp.
//
// Shared memory per block: kStages * (rowsA * (colsA + padA) + rowsB * (colsB + padB)) elements,
// rows/cols by operand layout (K-major: BM x BK / BN x BK; M/N-major: BK x BM / BK x BN),
// pad = 16 bytes (ConfigTraits::kSmemBytes).
#pragma once

// First: under clang -nogpuinc, clang's cuda_wrappers/<algorithm> and <new> need __host__ /
// __device__, which core/portability.hpp defines.
#include "ckgen/core/portability.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <type_traits>

#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/core/chain.hpp"
#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/core/vocab.hpp"
#include "ckgen/epilogue/epilogue.hpp"
#include "ckgen/pipeline/basic.hpp"
#include "ckgen/pipeline/multistage.hpp"
#include "ckgen/pipeline/wavelet.hpp"
#include "ckgen/schedule/streamk.hpp"

namespace ckgen {

// The main loop and epilogue of one block tile for the non-wavelet pipelines: the pieces the
// split-K path below and the StreamK path (schedule/streamk.hpp) both run.
template <class Cfg>
struct BlockParts {
  using Tr = ConfigTraits<Cfg>;
  using View = typename ViewFor<Tr::kVariant, typename Tr::Raw, Cfg::kSpecialization,
                                Cfg::kGroupsToMerge>::type;
  using Pipe = std::conditional_t<Cfg::kPipeline == Pipeline::Multistage,
                                  PipelineMultistage<Tr, View>, PipelineBasic<Tr, View>>;
  using Gemm = BlockGemm<Tr>;
  using Acc = typename Gemm::Acc;

  // acc = A[m0.., kb..ke) * B[kb..ke), n0..]
  CKGEN_DEVICE CKGEN_FORCEINLINE static void mainloop(const View& v, Acc& acc, int m0, int n0,
                                                      int kb, int ke, unsigned char* smem,
                                                      int tid) {
    Gemm::clear(acc);
    Pipe::run(v, acc, m0, n0, kb, ke, smem, tid);
  }
  // Writes the tile in p.out_mode (split: the split-K slice index).
  CKGEN_DEVICE CKGEN_FORCEINLINE static void epilogue(const View& v, const ConvArgs& p,
                                                      const Acc& acc, int m0, int n0,
                                                      unsigned char* smem, int tid,
                                                      int split = 0) {
    if constexpr (Cfg::kEpilogue == Epilogue::CShuffle)
      EpilogueCShuffle<Tr, View>::run(v, p, acc, m0, n0, split, tid, smem);
    else
      EpilogueDefault<Tr, View>::run(v, p, acc, m0, n0, split, tid);
  }
};

// One block of a split-K (or unsplit) launch: grid x = GEMM tiles, y = group (x stride class),
// z = split.
template <class Cfg>
CKGEN_DEVICE CKGEN_FORCEINLINE void splitk_block(const ConvArgs& p, unsigned char* ckgen_smem,
                                                 int tid) {
  using Tr = ConfigTraits<Cfg>;
  using Parts = BlockParts<Cfg>;
  using View = typename Parts::View;
  using Gemm = typename Parts::Gemm;
  const int by = blockIdx.y;
  const int g = by / p.num_classes;
  const int cls = by - g * p.num_classes;
  const View v(p, g, cls);

  const int tile = blockIdx.x;
  const int tm = tile / p.tiles_n;
  const int tn = tile - tm * p.tiles_n;
  const int m0 = tm * Tr::BM, n0 = tn * Tr::BN;
  if (m0 >= v.M()) return;  // smaller backward_data classes (uniform per block)

  const int split = blockIdx.z;
  const int Kred = v.K();
  int chunk = p.k_chunk;
  if constexpr (Tr::kVariant == Variant::BackwardData) {  // K differs per stride class
    if (p.k_batch > 1) chunk = ((Kred + p.k_batch - 1) / p.k_batch + Tr::BK - 1) / Tr::BK * Tr::BK;
  }
  const int kb = split * chunk;
  const int ke = kb + chunk < Kred ? kb + chunk : Kred;

  if constexpr (Tr::kWavelet) {  // warp-specialized: math warps first, then load warps
    static_assert(Cfg::kEpilogue == Epilogue::Default,
                  "ckgen: the wavelet pipeline uses the default epilogue (math warps only)");
    using Wl = PipelineWavelet<Tr, View>;
    typename Gemm::Acc acc;
#if defined(CKGEN_HAS_MBARRIER)
    Wl::init(ckgen_smem, tid);
    if (tid >= Tr::kMathThreads) {
      Wl::produce(v, m0, n0, kb, ke, ckgen_smem, tid - Tr::kMathThreads);
      return;
    }
    Gemm::clear(acc);
    Wl::consume(acc, kb, ke, ckgen_smem, tid);
#else
    Gemm::clear(acc);
    Wl::run_lockstep(v, acc, m0, n0, kb, ke, ckgen_smem, tid);
    if (tid >= Tr::kMathThreads) return;
#endif
    EpilogueDefault<Tr, View>::run(v, p, acc, m0, n0, split, tid);
  } else {
    typename Gemm::Acc acc;
    Parts::mainloop(v, acc, m0, n0, kb, ke, ckgen_smem, tid);
    Parts::epilogue(v, p, acc, m0, n0, ckgen_smem, tid, split);
  }
}

template <class Cfg>
CKGEN_GLOBAL void __launch_bounds__(ConfigTraits<Cfg>::kThreads)
    grouped_conv_kernel(const CKGEN_GRID_CONSTANT ConvArgs p) {
  using Tr = ConfigTraits<Cfg>;
#if defined(CKGEN_AMD)
  // Static LDS on AMD: the code object then reports it (group_segment_fixed_size) and the
  // compiler's occupancy accounts for it (ckgen check-isa reads both).
  __shared__ __attribute__((aligned(16))) unsigned char ckgen_smem[Tr::kSmemBytes];
#else
  extern __shared__ __attribute__((aligned(16))) unsigned char ckgen_smem[];
#endif
  // A split's conversion (launch_splitk_finish, chained) may be placed now: its blocks wait in
  // chain_wait until this grid has completed. (StreamK launches nothing after it.)
  if constexpr (!Tr::kStreamK) chain_release();
  chain_wait();  // global memory from here on (core/chain.hpp)
  if constexpr (Tr::kStreamK)  // grid.x = StreamK blocks, then data-parallel tiles
    StreamKBlock<BlockParts<Cfg>, Cfg::kReduction, Cfg::kPersistent>::run(p, ckgen_smem, threadIdx.x);
  else
    splitk_block<Cfg>(p, ckgen_smem, threadIdx.x);
}

}  // namespace ckgen
