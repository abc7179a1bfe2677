// GroupedConvKernel<Config>: the device kernel of one generated implicit-GEMM instance and its
// host face (KernelBase: is_supported / workspace_bytes / run). make_kernel<Config>() is what
// the generated translation unit registers (Pipeline::Direct instances: DepthwiseKernel,
// pipeline/depthwise.hpp).
//
// Composition (CK Tile style): ConfigTraits (core/config_traits.hpp) -> view / index maps (conv/conv_maps.hpp)
// -> loaders (block/tile_loader.hpp) -> pipeline (pipeline/basic.hpp) -> block GEMM + warp backend
// (block/block_gemm.hpp, warp/warp_mma.hpp) -> epilogue (epilogue/epilogue.hpp).
//
// Grid (split-K): x = GEMM tiles (M tiles x N tiles, N fastest), y = group / kGroupsToMerge
// (x stride class for backward_data), z = split-K index. Grid (StreamK, backward_weight):
// x = StreamK blocks then data-parallel tiles (persistent: B blocks), see schedule/streamk_plan.hpp.
//
// Config fields honoured: kName, kArch, kVariant, kDataType, kNDim, Tile, Waves (K must be 1),
// WarpTile (instruction shape; repeats = Tile / (Waves * WarpTile); Wgmma: 64 x N x 16 per
// warpgroup of 4 warps along M), kMathUnit (MmaSync, Fma, Wgmma (wavelet on sm_90a); Mfma/Wmma
// in warp/mma_amd.hpp), kWarpSize, kPipeline (Basic, Multistage, Wavelet: math warps then kLoadWaves
// load warps, see pipeline/wavelet.hpp), kStages (Basic 1, Multistage / Wavelet 2..8), kVecA/kVecB/kVecC (1/2/4/8; is_supported checks the channel alignment),
// kSpecialization (all three), kKBatch (0 = auto; forward / backward_data: 1 = never split),
// kReduction (SplitK; StreamKLinear / StreamKTree for backward_weight on the basic and
// multistage pipelines: schedule/streamk.hpp), kPersistent (StreamK only), kStage (One: fp32 atomics into a zeroed workspace + convert; Two:
// per-split fp32 slices + reduce/convert), kEpilogue (Default, CShuffle), kGroupsToMerge
// (1..32, forward / backward_data: GM groups per block as one block-diagonal GEMM, see
// FwdMergedView / BwdDataMergedView). Must be their neutral values (static_assert otherwise):
// kScheduler Intrawave.
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
#include <string>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/conv/conv_maps.hpp"
#include "ckgen/kernel/depthwise_kernel.hpp"
#include "ckgen/epilogue/epilogue.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/pipeline/basic.hpp"
#include "ckgen/pipeline/multistage.hpp"
#include "ckgen/kernel/tma_kernel.hpp"
#include "ckgen/kernel/tma_window_kernel.hpp"
#include "ckgen/kernel/tma_window_weight_kernel.hpp"
#include "ckgen/pipeline/wavelet.hpp"
#include "ckgen/core/portability.hpp"
#include "ckgen/core/problem.hpp"
#include "ckgen/schedule/splitk_finish.hpp"
#include "ckgen/schedule/streamk.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

// ------------------------------------------------------------------------------------------
// Device kernels
// ------------------------------------------------------------------------------------------
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
  if constexpr (Tr::kStreamK)  // grid.x = StreamK blocks, then data-parallel tiles
    StreamKBlock<BlockParts<Cfg>, Cfg::kReduction, Cfg::kPersistent>::run(p, ckgen_smem, threadIdx.x);
  else
    splitk_block<Cfg>(p, ckgen_smem, threadIdx.x);
}

// ------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------
template <class Cfg>
class GroupedConvKernel final : public KernelBase {
 public:
  using Tr = ConfigTraits<Cfg>;
  using Raw = typename Tr::Raw;
  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr int64_t kMax32 = (int64_t(1) << 31) - 1;

  GroupedConvKernel() {
    key_ = config_key<Cfg>();
    key_.tile_m = Tr::BM;
    key_.tile_n = Tr::BN;
    key_.tile_k = Tr::BK;
    key_.wave_m = Tr::WM;
    key_.wave_n = Tr::WN;
    key_.wave_k = Tr::WK;
    key_.warp_m = Tr::IM;
    key_.warp_n = Tr::IN;
    key_.warp_k = Tr::IK;
    key_.vec_a = Tr::VA;
    key_.vec_b = Tr::VB;
    key_.vec_c = Tr::VC;
  }

  const KernelKey& key() const override { return key_; }

  static constexpr bool kStreamK = Tr::kStreamK;
#if defined(CKGEN_AMD)
  static constexpr std::size_t kDynSmem = 0;  // static LDS (see grouped_conv_kernel)
#else
  static constexpr std::size_t kDynSmem = Tr::kSmemBytes;
#endif

  // Opts in to large dynamic shared memory, once per device (before launches and occupancy
  // queries).
  static gpuError_t prepare_launch() {
    if constexpr (kDynSmem > 48 * 1024) {
      static std::atomic<uint64_t> done{0};
      return detail::allow_dynamic_smem(grouped_conv_kernel<Cfg>, int(Tr::kSmemBytes), done);
    }
    return gpuSuccess;
  }

  static constexpr int GM = Cfg::kGroupsToMerge;

  // GEMM sizes per block's group (merged groups: GM of them; backward_data: the largest
  // stride class).
  static void gemm_dims(const ConvProblem& p, int64_t& M, int64_t& N, int64_t& K) {
    const int64_t zyx = p.filter_spatial();
    if constexpr (kVariant == Variant::Forward) {
      M = p.N * p.out_spatial();
      N = GM * p.K;
      K = zyx * GM * p.C;
    } else if constexpr (kVariant == Variant::BackwardData) {
      M = p.N;
      K = GM * p.K;
      for (int i = 0; i < 3; ++i) {
        const int64_t fstep = p.stride[i] / std::gcd(p.stride[i], p.dilation[i]);
        M *= detail::ceil_div(p.in[i], p.stride[i]);  // class 0 is the largest
        K *= detail::ceil_div(p.filter[i], fstep);    // most taps of any class
      }
      N = GM * p.C;
    } else {
      M = p.K;
      N = zyx * p.C;
      K = p.N * p.out_spatial();
    }
  }

  // The split count a call uses. backward_weight: opts.k_batch, else the instance's kKBatch,
  // else chosen per problem. forward / backward_data: an instance with kKBatch == 1 never
  // splits (RunOptions::k_batch ignored); kKBatch 0 (auto) or > 1 takes opts.k_batch when
  // given, else its kKBatch, else (0) the per-problem choice below.
  int resolve_k_batch(const ConvProblem& p, const RunOptions& opts) const {
    if (kVariant != Variant::BackwardWeight && Cfg::kKBatch == 1) {
      return 1;
    } else {
      if (opts.k_batch > 0) return opts.k_batch;
      if (Cfg::kKBatch > 0) return Cfg::kKBatch;
      int64_t M, N, K;
      gemm_dims(p, M, N, K);
      int64_t classes = 1;
      if constexpr (kVariant == Variant::BackwardData)
        classes = p.stride[0] * p.stride[1] * p.stride[2];
      const int64_t tiles =
          p.G / GM * classes * detail::ceil_div(M, Tr::BM) * detail::ceil_div(N, Tr::BN);
      const int64_t target = 2 * int64_t(detail::device_sm_count());
      int64_t kb = detail::ceil_div(target, tiles);
      const int64_t kmax = std::max<int64_t>(1, detail::ceil_div(K, 4 * Tr::BK));  // >= 4 k tiles
      kb = std::min<int64_t>(kb, kmax);
      return int(std::max<int64_t>(1, std::min<int64_t>(64, kb)));
    }
  }

  std::string is_supported(const ConvProblem& p, const RunOptions& opts = {}) const override {
    using detail::str;
    if (std::string e = detail::common_refusal(p, Cfg::kNDim, [&]() -> std::string {
          if (std::string r = detail::split_reduce_refusal(opts.split_reduce); !r.empty()) return r;
          if constexpr (kStreamK) {
            if (opts.k_batch != 0)
              return "StreamK sizes its own split: RunOptions::k_batch must be 0 (got " +
                     str(opts.k_batch) + ")";
            if (opts.streamk_blocks < 0)
              return "RunOptions::streamk_blocks must be >= 0 (0 = #SMs x occupancy), got " +
                     str(opts.streamk_blocks);
          } else {
            if (opts.streamk_blocks != 0)
              return "RunOptions::streamk_blocks is for StreamK instances (this one uses split-K)";
          }
          return {};
        });
        !e.empty())
      return e;
    // Specialization.
    if constexpr (Cfg::kSpecialization != Specialization::Default) {
      for (int i = 0; i < 3; ++i) {
        if (p.filter[i] != 1) return "specialization filter1x1 needs a 1x1 filter";
        if (p.pad_l[i] != 0 || p.pad_r[i] != 0) return "specialization filter1x1 needs zero pads";
        if (Cfg::kSpecialization == Specialization::Filter1x1Stride1Pad0 && p.stride[i] != 1)
          return "specialization filter1x1_stride1_pad0 needs stride 1";
      }
    }
    // Vector widths vs channel alignment (the contiguous dim of each operand).
    const int64_t zyxc = p.filter_spatial() * p.C;
    auto need = [&](int64_t v, int vec, const char* what, const char* op) -> std::string {
      if (v % vec == 0) return {};
      return std::string(op) + " vector width " + str(vec) + " needs " + what + " (" + str(v) +
             ") to be a multiple of " + str(vec);
    };
    std::string e;
    if constexpr (GM > 1) {
      if (p.G % GM != 0)
        return "groups_to_merge " + str(GM) + " needs G (" + str(p.G) + ") to be a multiple of it";
    }
    if constexpr (GM > 1 && kVariant == Variant::Forward) {
      // merged runs: A over (g', c), C over (g, k); B vectors stay inside one group's c run
      if (!(e = need(GM * p.C, Tr::VA, "groups_to_merge*C", "A (input)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (weight, merged groups)")).empty()) return e;
      if (!(e = need(GM * p.K, Tr::VC, "groups_to_merge*K", "C (output)")).empty()) return e;
    } else if constexpr (GM > 1 && kVariant == Variant::BackwardData) {
      if (!(e = need(GM * p.K, Tr::VA, "groups_to_merge*K", "A (output grad)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (weight)")).empty()) return e;
      if (!(e = need(GM * p.C, Tr::VC, "groups_to_merge*C", "C (input grad)")).empty()) return e;
    } else if constexpr (kVariant == Variant::Forward) {
      if (!(e = need(p.C, Tr::VA, "C", "A (input)")).empty()) return e;
      if (!(e = need(zyxc, Tr::VB, "Z*Y*X*C", "B (weight)")).empty()) return e;
      if (!(e = need(p.K, Tr::VC, "K", "C (output)")).empty()) return e;
    } else if constexpr (kVariant == Variant::BackwardData) {
      if (!(e = need(p.K, Tr::VA, "K", "A (output grad)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (weight)")).empty()) return e;
      if (!(e = need(p.C, Tr::VC, "C", "C (input grad)")).empty()) return e;
    } else {
      if (!(e = need(p.K, Tr::VA, "K", "A (output grad)")).empty()) return e;
      if (!(e = need(p.C, Tr::VB, "C", "B (input)")).empty()) return e;
      if (!(e = need(zyxc, Tr::VC, "Z*Y*X*C", "C (weight grad)")).empty()) return e;
    }
    // 32-bit limits of the index math (tensor offsets themselves are 64-bit).
    int64_t M, N, K;
    gemm_dims(p, M, N, K);
    const int64_t lim = int64_t(1) << 30;
    // (+ one tile of headroom: tile coordinates run up to M + BM - 1)
    constexpr int64_t kTileRoom = Tr::BM > Tr::BN ? (Tr::BM > Tr::BK ? Tr::BM : Tr::BK)
                                                  : (Tr::BN > Tr::BK ? Tr::BN : Tr::BK);
    if (M > kMax32 - kTileRoom || N > kMax32 - kTileRoom || K > kMax32 - kTileRoom)
      return "a per-group GEMM dim exceeds 2^31-1 (M=" + str(M) + " N=" + str(N) + " K=" + str(K) + ")";
    if (p.N * p.in_spatial() > kMax32 || p.N * p.out_spatial() > kMax32)
      return "N * spatial size exceeds 2^31-1 (32-bit index math)";
    if (zyxc > kMax32 || GM * p.C > kMax32 || GM * p.K > kMax32) return "Z*Y*X*C exceeds 2^31-1";
    for (int i = 0; i < 3; ++i)
      if (p.in[i] + p.pad_l[i] + p.pad_r[i] > lim || (p.filter[i] - 1) * p.dilation[i] > lim ||
          p.stride[i] > lim)
        return "a spatial size exceeds 2^30";
    int64_t tiles = detail::ceil_div(M, Tr::BM) * detail::ceil_div(N, Tr::BN);
    if (tiles > kMax32) return "too many tiles for grid.x";
    int64_t classes = 1;
    if constexpr (kVariant == Variant::BackwardData)
      classes = p.stride[0] * p.stride[1] * p.stride[2];
    if (p.G / GM * classes > 65535)
      return "G (x stride classes for backward_data) exceeds 65535 (grid.y limit)";
    if constexpr (kStreamK) {
      const StreamKPlan s = streamk_plan(p, opts);
      if (s.tiles * s.iters > kMax32)
        return "StreamK: tiles x k iterations (" + str(s.tiles) + " x " + str(s.iters) +
               ") exceeds 2^31-1";
      if (s.grid > kMax32) return "StreamK: grid of " + str(s.grid) + " blocks exceeds 2^31-1";
    } else {  // Split-K.
      const int kb = resolve_k_batch(p, opts);
      if (kb < 1 || kb > 64) return "k_batch " + str(kb) + " out of range 1..64";
    }
    if (Tr::kSmemBytes > 48 * 1024 && Tr::kSmemBytes > detail::device_smem_optin())
      return "needs " + str(Tr::kSmemBytes) + " bytes of shared memory, device allows " +
             str(detail::device_smem_optin());
    return {};
  }

  // Elements of the written tensor (the split-K workspace holds it in fp32, per split for
  // two-stage).
  static int64_t dst_elems(const ConvProblem& p) { return ckgen::written_elems(kVariant, p); }

  // Blocks of this instance resident on one SM x SMs: the default StreamK grid B.
  static int resident_blocks() {
    static const int blocks = [] {
      int per_sm = 0;
      if (prepare_launch() != gpuSuccess ||
          gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grouped_conv_kernel<Cfg>,
                                                       Tr::kThreads, kDynSmem) != gpuSuccess ||
          per_sm < 1)
        per_sm = 1;
      return per_sm * detail::device_sm_count();
    }();
    return blocks;
  }

  // The StreamK plan of a call (schedule/streamk_plan.hpp): tiles over all groups, k iterations per
  // tile, B = opts.streamk_blocks or streamk_default_blocks over resident_blocks().
  static StreamKPlan streamk_plan(const ConvProblem& p, const RunOptions& opts) {
    int64_t M, N, K;
    gemm_dims(p, M, N, K);
    const int64_t tiles = p.G * detail::ceil_div(M, Tr::BM) * detail::ceil_div(N, Tr::BN);
    const int64_t iters = std::max<int64_t>(1, detail::ceil_div(K, Tr::BK));
    const int64_t blocks =
        opts.streamk_blocks > 0 ? opts.streamk_blocks : streamk_default_blocks(tiles, iters, resident_blocks());
    return make_streamk_plan(tiles, iters, blocks, Cfg::kPersistent);
  }

  std::size_t workspace_bytes(const ConvProblem& p, const RunOptions& opts = {}) const override {
    if constexpr (kStreamK)
      return std::size_t(streamk_workspace_bytes(streamk_plan(p, opts), Tr::BM, Tr::BN));
    const int kb = resolve_k_batch(p, opts);
    if (kb <= 1) return 0;
    const std::size_t elems = std::size_t(dst_elems(p));
    return (Cfg::kStage == Stage::One ? 1 : std::size_t(kb)) * elems * sizeof(float);
  }

  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* workspace, gpuStream_t stream,
                 const RunOptions& opts = {}) const override {
    ConvArgs a{};
    a.in = t.in;
    a.wei = t.wei;
    a.out = t.out;
    a.G = int(p.G);
    a.N = int(p.N);
    a.C = int(p.C);
    a.K = int(p.K);
    for (int i = 0; i < 3; ++i) {
      a.in_[i] = int(p.in[i]);
      a.out_[i] = int(p.out[i]);
      a.fil[i] = int(p.filter[i]);
      a.s[i] = int(p.stride[i]);
      a.dil[i] = int(p.dilation[i]);
      a.pl[i] = int(p.pad_l[i]);
      a.fd_fil[i].init(p.filter[i]);
      a.fd_out[i].init(p.out[i]);
    }
    a.in_spatial = int(p.in_spatial());
    a.out_spatial = int(p.out_spatial());
    a.ZYX = int(p.filter_spatial());
    a.ZYXC = int(p.filter_spatial() * p.C);
    a.GC = p.G * p.C;
    a.GK = p.G * p.K;
    a.fd_C.init(p.C);
    a.fd_K.init(p.K);
    a.gm = GM;
    a.fd_gmC.init(GM * p.C);
    a.fd_gmK.init(GM * p.K);
    int64_t M, N, K;
    gemm_dims(p, M, N, K);
    a.M = int(M);
    a.Ng = int(N);
    a.Kred = int(K);
    a.tiles_n = int(detail::ceil_div(N, Tr::BN));
    const int64_t tiles = detail::ceil_div(M, Tr::BM) * a.tiles_n;
    a.num_classes = 1;
    if constexpr (kVariant == Variant::BackwardData)
      a.num_classes = int(p.stride[0] * p.stride[1] * p.stride[2]);
    const int kb = kStreamK ? 1 : resolve_k_batch(p, opts);  // StreamK: launch_streamk
    a.k_batch = kb;
    a.k_chunk = int(detail::ceil_div(detail::ceil_div(std::max<int64_t>(K, 1), kb), Tr::BK) * Tr::BK);
    // The backward_data class K varies per block: the kernel splits each class's own K
    // (k_batch > 1); one chunk covers every class otherwise.
    if constexpr (kVariant == Variant::BackwardData) a.k_chunk = int(kMax32);
    a.ws = static_cast<float*>(workspace);
    a.ws_split_stride = dst_elems(p);
    void* dst = kVariant == Variant::Forward ? t.out
                : kVariant == Variant::BackwardData ? t.in
                                                    : t.wei;
    a.dst = dst;
    a.out_mode = OutMode::Direct;
    if (kb > 1) a.out_mode = Cfg::kStage == Stage::One ? OutMode::AtomicF32 : OutMode::PartialF32;
    if (kb > 1 && workspace == nullptr) return gpuErrorInvalidValueCompat();

    if (gpuError_t e = prepare_launch(); e != gpuSuccess) return e;
    if constexpr (kStreamK) {
      return launch_streamk(p, a, workspace, stream, opts);
    } else {
      if (a.out_mode == OutMode::AtomicF32) {
        gpuError_t e = gpuMemsetAsync(workspace, 0, std::size_t(dst_elems(p)) * sizeof(float), stream);
        if (e != gpuSuccess) return e;
      }
      const dim3 grid(unsigned(tiles), unsigned(p.G / GM * a.num_classes), unsigned(kb));
      grouped_conv_kernel<Cfg><<<grid, Tr::kThreads, kDynSmem, stream>>>(a);
      gpuError_t e = gpuGetLastError();
      if (e != gpuSuccess) return e;
      if (kb > 1) {
        const int64_t n = dst_elems(p);
        const int splits = Cfg::kStage == Stage::One ? 1 : kb;
        e = launch_splitk_finish<Cfg::kDataType>(static_cast<const float*>(workspace), splits,
                                                 a.ws_split_stride, static_cast<Raw*>(dst), n, stream, true);
      }
      return e;
    }
  }

 private:
  // StreamK launch: zero the flags (one memsetAsync), then one kernel; grid.x = plan.grid.
  gpuError_t launch_streamk(const ConvProblem& p, ConvArgs& a, void* workspace,
                            gpuStream_t stream, const RunOptions& opts) const {
    const StreamKPlan s = streamk_plan(p, opts);
    a.sk = make_streamk_args(s, s.tiles / p.G);
    if (s.sk_blocks > 0) {
      if (workspace == nullptr) return gpuErrorInvalidValueCompat();
      unsigned char* ws = static_cast<unsigned char*>(workspace);
      a.sk.partials = reinterpret_cast<float*>(ws);
      a.sk.flags = reinterpret_cast<int*>(ws + streamk_partials_bytes(s, Tr::BM, Tr::BN));
      gpuError_t e = gpuMemsetAsync(a.sk.flags, 0, std::size_t(streamk_flags_bytes(s)), stream);
      if (e != gpuSuccess) return e;
    }
    grouped_conv_kernel<Cfg><<<dim3(unsigned(s.grid), 1, 1), Tr::kThreads, kDynSmem, stream>>>(a);
    return gpuGetLastError();
  }

  static gpuError_t gpuErrorInvalidValueCompat() {
#if defined(CKGEN_NVIDIA)
    return cudaErrorInvalidValue;
#elif defined(CKGEN_AMD_NOGPUINC)
    return 1;
#else
    return hipErrorInvalidValue;
#endif
  }
  KernelKey key_;
};

// The host face of an instance: the implicit-GEMM kernel, or the direct depthwise kernel for
// Pipeline::Direct (pipeline/depthwise.hpp).
template <class Cfg>
std::unique_ptr<KernelBase> make_kernel() {
  if constexpr (Cfg::kPipeline == Pipeline::Direct) {
    return std::make_unique<DepthwiseKernel<Cfg>>();
  } else if constexpr (Cfg::kPipeline == Pipeline::WaveletTma) {
#if defined(CKGEN_NVIDIA)
    if constexpr (Cfg::kSpecialization == Specialization::Window && Cfg::kVariant == Variant::BackwardWeight)
      return std::make_unique<TmaWindowWeightKernel<Cfg>>();
    else if constexpr (Cfg::kSpecialization == Specialization::Window) return std::make_unique<TmaWindowKernel<Cfg>>();
    else return std::make_unique<TmaConvKernel<Cfg>>();
#else
    static_assert(Cfg::kPipeline != Pipeline::WaveletTma, "ckgen: wavelet_tma is NVIDIA sm_90a only");
    return nullptr;
#endif
  } else {
    return std::make_unique<GroupedConvKernel<Cfg>>();
  }
}

}  // namespace ckgen
