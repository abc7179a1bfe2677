// ConvKernel<Problem, Pipeline, Epilogue, Schedule>: a generated instance as the composition of
// its parts, each a tag type that carries its own fields:
//
//   Problem<Variant, DataType, NDim, Specialization, GroupsToMerge>   what is convolved
//   pipeline::Basic / Multistage / Wavelet / TmaWs / TmaWindow / Direct / Pointwise<
//       BlockShape<Tile, Waves, WarpTile, MathUnit, WarpSize>, Stages, LoadWaves, MathWaves,
//       VecA, VecB, SwapAB, Scheduler>                                 the main loop
//   epilogue::Default / CShuffle<VecC, Ops = Plain>                    how the tile is written
//       (Ops: epilogue::Fused<ChannelOp, Activation, Residual>, epilogue/fusion.hpp)
//   schedule::SplitK<KBatch, Stage> / StreamK<Reduction, Persistent, KBatch, Stage>
//                                                                      how the reduction is split
//
// A generated instance derives from its ConvKernel and adds kName / kArch; that struct is the
// Cfg every device and host template of the library reads (Cfg::kVariant, Cfg::Tile, ...).
// make_kernel<Cfg>() asks the pipeline tag for its host face:
//   Basic, Multistage, Wavelet  GroupedConvKernel     (kernel/gemm_kernel.hpp)
//   TmaWs                       TmaConvKernel         (kernel/tma_kernel.hpp)
//   TmaWindow                   TmaWindowKernel, backward_weight: TmaWindowWeightKernel
//                               (kernel/tma_window_kernel.hpp, kernel/tma_window_weight_kernel.hpp)
//   Direct                      DepthwiseKernel       (kernel/depthwise_kernel.hpp)
//   Pointwise                   PointwiseKernel       (kernel/pointwise_kernel.hpp)
//
// Field meanings and bounds: core/vocab.hpp (enums) and core/config_traits.hpp (shape traits);
// ckgen's rules check them before an instance is generated.
#pragma once

// First: under clang -nogpuinc, clang's cuda_wrappers/<algorithm> and <new> need __host__ /
// __device__, which core/portability.hpp defines.
#include "ckgen/core/portability.hpp"

#include <memory>

#include "ckgen/core/config_traits.hpp"
#include "ckgen/core/vocab.hpp"
#include "ckgen/core/epilogue_ops.hpp"
#include "ckgen/kernel/depthwise_kernel.hpp"
#include "ckgen/kernel/gemm_kernel.hpp"
#include "ckgen/kernel/kernel_base.hpp"
#include "ckgen/kernel/pointwise_kernel.hpp"
#include "ckgen/kernel/tma_kernel.hpp"
#include "ckgen/kernel/tma_window_kernel.hpp"
#include "ckgen/kernel/tma_window_weight_kernel.hpp"

namespace ckgen {

// What is convolved: the variant, element type, spatial rank, the specialization the instance
// assumes of the problem, how many groups one block runs as one block-diagonal GEMM, and the
// written output's element type (a forward's fused conversion; D otherwise).
template <Variant V, DataType D, int NDim, Specialization Spec = Specialization::Default, int GroupsToMerge = 1,
          DataType Out = D>
struct Problem {
  static constexpr Variant kVariant = V;
  static constexpr DataType kDataType = D;
  static constexpr DataType kOutDataType = Out;
  static constexpr int kNDim = NDim;
  static constexpr Specialization kSpecialization = Spec;
  static constexpr int kGroupsToMerge = GroupsToMerge;
};

// The block's tile, its warp layout, the warp instruction shape and the math unit issuing it.
template <class TileT, class WavesT, class WarpTileT, MathUnit M, int WarpSize>
struct BlockShape {
  using Tile = TileT;
  using Waves = WavesT;
  using WarpTile = WarpTileT;
  static constexpr MathUnit kMathUnit = M;
  static constexpr int kWarpSize = WarpSize;
};

namespace pipeline {
// The fields every main loop carries: the block shape, the ring depth, the load / math warp
// split of warp-specialized loops, the A / B vector widths, operand swap and the scheduler.
template <Pipeline P, class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S>
struct Fields : Block {
  static constexpr Pipeline kPipeline = P;
  static constexpr int kStages = Stages;
  static constexpr Scheduler kScheduler = S;
  static constexpr int kLoadWaves = LoadWaves;
  static constexpr int kMathWaves = MathWaves;
  static constexpr bool kSwapAB = SwapAB;
  static constexpr int kVecA = VecA;
  static constexpr int kVecB = VecB;
};

// Implicit GEMM, single-buffered (Basic), cp.async ring (Multistage) or warp-specialized with
// mbarriers (Wavelet): kernel/gemm_device.hpp.
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave>
struct Basic : Fields<Pipeline::Basic, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() { return std::make_unique<GroupedConvKernel<Cfg>>(); }
};
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave>
struct Multistage : Fields<Pipeline::Multistage, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() { return std::make_unique<GroupedConvKernel<Cfg>>(); }
};
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave>
struct Wavelet : Fields<Pipeline::Wavelet, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() { return std::make_unique<GroupedConvKernel<Cfg>>(); }
};

// The TMA warp-specialized main loop of sm_90a (pipeline/tma_ws.hpp). MinBlocks: the resident
// blocks its launch bounds ask the compiler to fit (the generator's tma_min_blocks).
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave, int MinBlocks = 1>
struct TmaWs : Fields<Pipeline::WaveletTma, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  static constexpr int kMinBlocks = MinBlocks;
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() {
#if defined(CKGEN_NVIDIA)
    static_assert(Cfg::kSpecialization != Specialization::Window,
                  "ckgen: Specialization::Window composes with pipeline::TmaWindow");
    return std::make_unique<TmaConvKernel<Cfg>>();
#else
    static_assert(Cfg::kPipeline != Pipeline::WaveletTma, "ckgen: wavelet_tma is NVIDIA sm_90a only");
    return nullptr;
#endif
  }
};

// The TMA window kernels of Specialization::Window (pipeline/tma_window.hpp, tma_window_weight.hpp).
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave>
struct TmaWindow : Fields<Pipeline::WaveletTma, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() {
#if defined(CKGEN_NVIDIA)
    static_assert(Cfg::kSpecialization == Specialization::Window,
                  "ckgen: pipeline::TmaWindow serves Specialization::Window");
    if constexpr (Cfg::kVariant == Variant::BackwardWeight)
      return std::make_unique<TmaWindowWeightKernel<Cfg>>();
    else
      return std::make_unique<TmaWindowKernel<Cfg>>();
#else
    static_assert(Cfg::kPipeline != Pipeline::WaveletTma, "ckgen: wavelet_tma is NVIDIA sm_90a only");
    return nullptr;
#endif
  }
};

// The direct (not implicit-GEMM) kernel of depthwise and small-group problems (pipeline/depthwise.hpp).
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave>
struct Direct : Fields<Pipeline::Direct, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() { return std::make_unique<DepthwiseKernel<Cfg>>(); }
};

// The 1x1 kernel of bulk row copies and mma.sync (pipeline/pointwise.hpp; NVIDIA sm_90).
template <class Block, int Stages, int LoadWaves, int MathWaves, int VecA, int VecB, bool SwapAB,
          Scheduler S = Scheduler::Intrawave>
struct Pointwise : Fields<Pipeline::Pointwise, Block, Stages, LoadWaves, MathWaves, VecA, VecB, SwapAB, S> {
  template <class Cfg>
  static std::unique_ptr<KernelBase> make() {
#if defined(CKGEN_NVIDIA)
    return std::make_unique<PointwiseKernel<Cfg>>();
#else
    static_assert(Cfg::kPipeline != Pipeline::Pointwise, "ckgen: pointwise is NVIDIA sm_90 only");
    return nullptr;
#endif
  }
};
}  // namespace pipeline

namespace epilogue {
// Accumulators stored straight from registers (Default) or staged through shared memory into
// wide stores (CShuffle); VecC: the output vector width; Ops: the fused operations applied
// before the conversion (epilogue/fusion.hpp; Plain: none).
template <int VecC, class Ops = Plain>
struct Default : Ops {
  static constexpr Epilogue kEpilogue = Epilogue::Default;
  static constexpr int kVecC = VecC;
};
template <int VecC, class Ops = Plain>
struct CShuffle : Ops {
  static constexpr Epilogue kEpilogue = Epilogue::CShuffle;
  static constexpr int kVecC = VecC;
};
}  // namespace epilogue

namespace schedule {
// Split-K over KBatch slices (0: chosen per problem); Stage::One adds fp32 atomics into a zeroed
// workspace, Stage::Two writes per-split slices and reduces them (schedule/splitk_finish.hpp).
template <int KBatch, Stage St = Stage::One>
struct SplitK {
  static constexpr int kKBatch = KBatch;
  static constexpr Reduction kReduction = Reduction::SplitK;
  static constexpr bool kPersistent = false;
  static constexpr Stage kStage = St;
};
// StreamK over the reduction (schedule/streamk.hpp), optionally with a persistent grid.
template <Reduction R, bool Persistent, int KBatch = 0, Stage St = Stage::One>
struct StreamK {
  static constexpr int kKBatch = KBatch;
  static constexpr Reduction kReduction = R;
  static constexpr bool kPersistent = Persistent;
  static constexpr Stage kStage = St;
};
}  // namespace schedule

template <class ProblemT, class PipelineT, class EpilogueT, class ScheduleT>
struct ConvKernel : ProblemT, PipelineT, EpilogueT, ScheduleT {
  using ProblemPart = ProblemT;
  using PipelinePart = PipelineT;
  using EpiloguePart = EpilogueT;
  using SchedulePart = ScheduleT;
};

// stats (a forward's channel statistics) is summed by the CShuffle epilogue of basic /
// multistage (epilogue/epilogue.hpp) and wavelet_tma (tma_ws_epilogue.hpp ChunkStats); the
// space's rules (ckgen/space/rules/common.py check_stats) generate no other.
template <class Cfg>
inline constexpr bool kStatsServed = !Cfg::kStats || ((Cfg::kPipeline == Pipeline::Basic ||
                                                        Cfg::kPipeline == Pipeline::Multistage ||
                                                        Cfg::kPipeline == Pipeline::WaveletTma) &&
                                                       Cfg::kEpilogue == Epilogue::CShuffle &&
                                                       Cfg::kVariant == Variant::Forward);

// An output datatype other than the inputs' is written by a forward's GEMM epilogues (basic,
// multistage, wavelet, wavelet_tma: its CShuffle copy into a 16-bit type only) and the depthwise
// FMA kernel (check_convert in ckgen/space/rules/common.py).
template <class Cfg>
inline constexpr bool kConvertServed =
    Cfg::kOutDataType == Cfg::kDataType ||
    (Cfg::kVariant == Variant::Forward && Cfg::kSpecialization != Specialization::Window &&
     (Cfg::kPipeline != Pipeline::WaveletTma || Cfg::kOutDataType != DataType::FP32 ||
      Cfg::kEpilogue != Epilogue::CShuffle));

// The host face of an instance, as its pipeline part names it.
template <class Cfg>
std::unique_ptr<KernelBase> make_kernel() {
  static_assert(kStatsServed<Cfg>, "ckgen: stats needs the CShuffle epilogue of a basic / multistage / wavelet_tma forward");
  static_assert(kConvertServed<Cfg>, "ckgen: this instance's epilogue writes no other output datatype");
  return Cfg::PipelinePart::template make<Cfg>();
}

}  // namespace ckgen
