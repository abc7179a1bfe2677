// Shape templates of a generated instance and the constants derived from a Config.
//
// A generated Config (see templates/project/instance.hpp.j2) names a block tile (TileShape),
// a warp layout (WaveLayout) and the matrix-instruction shape (WarpTile). ConfigTraits<Cfg>
// derives everything the device code needs (threads, repeats, operand layouts, shared-memory
// sizes) and rejects, with a static_assert, every Config value this library does not implement.
#pragma once

#include <cstdint>
#include <cstring>

#include "ckgen/core/portability.hpp"
#include "ckgen/core/limits.hpp"
#include "ckgen/core/vocab.hpp"

namespace ckgen {

template <int M, int N, int K>
struct TileShape {
  static constexpr int kM = M, kN = N, kK = K;
};

template <int M, int N, int K>
struct WaveLayout {
  static constexpr int kM = M, kN = N, kK = K;
};

// The matrix-instruction shape (one warp-level MMA); repeats = Tile / (Waves * WarpTile).
template <int M, int N, int K>
struct WarpTile {
  static constexpr int kM = M, kN = N, kK = K;
};

// Element types. `raw` is what loaders move (bits only); `type` is the arithmetic type.
template <DataType D> struct DataTypeTraits;
template <> struct DataTypeTraits<DataType::FP16> { using type = half_t; using raw = uint16_t; };
template <> struct DataTypeTraits<DataType::BF16> { using type = bf16_t; using raw = uint16_t; };
template <> struct DataTypeTraits<DataType::FP32> { using type = float; using raw = float; };

// Bits <-> float for the raw element types.
template <DataType D>
CKGEN_HOST_DEVICE inline float raw_to_float(typename DataTypeTraits<D>::raw r) {
  if constexpr (D == DataType::FP32) {
    return r;
  } else if constexpr (D == DataType::BF16) {
    const uint32_t u = uint32_t(r) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  } else {
    half_t h;
    memcpy(&h, &r, 2);
    return to_float(h);
  }
}
template <DataType D>
CKGEN_HOST_DEVICE inline typename DataTypeTraits<D>::raw float_to_raw(float f) {
  if constexpr (D == DataType::FP32) {
    return f;
  } else {
    using T = typename DataTypeTraits<D>::type;
    const T t = from_float<T>(f);
    uint16_t r;
    memcpy(&r, &t, 2);
    return r;
  }
}

// Two floats converted to 16-bit type D as one word, f0 in the low half.
template <DataType D>
CKGEN_HOST_DEVICE inline uint32_t pack_pair(float f0, float f1) {
  static_assert(D != DataType::FP32, "ckgen: pack_pair packs 16-bit values");
  return uint32_t(float_to_raw<D>(f0)) | (uint32_t(float_to_raw<D>(f1)) << 16);
}

// N elements moved as one access.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Which GEMM dimension is contiguous in memory for an operand of a variant.
//   forward:         A (im2col x) along K,  B (w) along K
//   backward_data:   A (dy)       along K,  B (w) along N (c)
//   backward_weight: A (dy)       along M,  B (im2col x) along N (c)
constexpr bool a_is_k_major(Variant v) { return v != Variant::BackwardWeight; }
constexpr bool b_is_k_major(Variant v) { return v == Variant::Forward; }

constexpr bool is_pow2_upto8(int v) { return v == 1 || v == 2 || v == 4 || v == 8; }

template <class Cfg>
struct ConfigTraits {
  using Config = Cfg;
  using T = typename DataTypeTraits<Cfg::kDataType>::type;
  using Raw = typename DataTypeTraits<Cfg::kDataType>::raw;
  using OutRaw = typename DataTypeTraits<Cfg::kOutDataType>::raw;  // a forward's written output

  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr DataType kDataType = Cfg::kDataType;
  static constexpr DataType kOutDataType = Cfg::kOutDataType;
  static constexpr int kNDim = Cfg::kNDim;

  static constexpr int BM = Cfg::Tile::kM, BN = Cfg::Tile::kN, BK = Cfg::Tile::kK;
  static constexpr int WM = Cfg::Waves::kM, WN = Cfg::Waves::kN, WK = Cfg::Waves::kK;
  static constexpr int IM = Cfg::WarpTile::kM, IN = Cfg::WarpTile::kN, IK = Cfg::WarpTile::kK;
  static constexpr int kWarpSize = Cfg::kWarpSize;
  static constexpr int kWarps = WM * WN * WK;  // math warps (the wave layout)
  // Wavelet pipeline: kLoadWaves load warps after the kMathWaves (= kWarps) math warps; math
  // warps come first so the math warpgroups start at warp 0 (wgmma needs warp index % 4 == 0).
  static constexpr bool kWavelet = Cfg::kPipeline == Pipeline::Wavelet;
  static constexpr int kMathThreads = kWarps * kWarpSize;
  static constexpr int kLoadThreads = kWavelet ? Cfg::kLoadWaves * kWarpSize : kMathThreads;
  static constexpr int kThreads = kWavelet ? kMathThreads + kLoadThreads : kMathThreads;
  // wgmma (sm_90a): WarpTile is the warpgroup instruction 64 x IN x 16; the 4 warps of a
  // warpgroup stack along M (16 rows each), so a warpgroup spans WM / 4 of the wave layout.
  static constexpr bool kWgmma = Cfg::kMathUnit == MathUnit::Wgmma;
  static constexpr int kMGroup = kWgmma ? 4 : 1;
  static constexpr int RepM = BM / ((WM / kMGroup) * IM);
  static constexpr int RepN = BN / (WN * IN);
  static constexpr int RepK = BK / IK;
  static constexpr int kWarpTileM = RepM * IM;  // rows of C per warp (wgmma: per warpgroup)
  static constexpr int kWarpTileN = RepN * IN;  // cols of C per warp

  // StreamK work distribution (backward_weight; schedule/streamk_plan.hpp / schedule/streamk.hpp).
  static constexpr bool kStreamK = Cfg::kReduction != Reduction::SplitK;

  static constexpr int VA = Cfg::kVecA, VB = Cfg::kVecB, VC = Cfg::kVecC;
  static constexpr bool kAKMajor = a_is_k_major(kVariant);
  static constexpr bool kBKMajor = b_is_k_major(kVariant);

  // Shared memory: one buffer per operand per stage, rows padded by 16 bytes (at least one
  // vector) so ldmatrix rows fall into different banks.
  static constexpr int kPadA = (16 / int(sizeof(Raw))) > VA ? (16 / int(sizeof(Raw))) : VA;
  static constexpr int kPadB = (16 / int(sizeof(Raw))) > VB ? (16 / int(sizeof(Raw))) : VB;
  static constexpr int kARows = kAKMajor ? BM : BK;
  static constexpr int kACols = kAKMajor ? BK : BM;
  static constexpr int kBRows = kBKMajor ? BN : BK;
  static constexpr int kBCols = kBKMajor ? BK : BN;
  // wgmma reads shared memory through matrix descriptors: unpadded tiles in the no-swizzle
  // core-matrix layout (8 x 16-byte bricks, see smem_offset), no row padding.
  static constexpr bool kSmemInterleaved = kWgmma;
  static constexpr int kLdA = kSmemInterleaved ? kACols : kACols + kPadA;
  static constexpr int kLdB = kSmemInterleaved ? kBCols : kBCols + kPadB;
  static constexpr int kSmemAElems = kARows * kLdA;
  static constexpr int kSmemBElems = kBRows * kLdB;
  static constexpr int kStages = Cfg::kPipeline == Pipeline::Basic ? 1 : Cfg::kStages;
  // Wavelet: 2 mbarriers (full, empty) of 8 bytes per stage after the operand buffers.
  static constexpr int kBarrierBytes = kWavelet ? kStages * 16 : 0;
  // CShuffle epilogue: the fp32 C tile [BM][BN + 4] reuses the operand buffers afterwards.
  static constexpr int kLdC = BN + 4;
  static constexpr int kSmemCBytes = Cfg::kEpilogue == Epilogue::CShuffle ? BM * kLdC * 4 : 0;
  // A gradient mask in the multistage pipeline copies the saved forward output y beside dy: a
  // second A buffer a stage (block/tile_loader.hpp apply_mask).
  static constexpr bool kMaskStage = Cfg::kGradMask && Cfg::kPipeline == Pipeline::Multistage;
  static constexpr int kSmemMainBytes =
      kStages * ((kMaskStage ? 2 : 1) * kSmemAElems + kSmemBElems) * int(sizeof(Raw));
  static constexpr int kSmemBytes =
      (kSmemMainBytes > kSmemCBytes ? kSmemMainBytes : kSmemCBytes) + kBarrierBytes;

  // Element offset of (row, col) of an operand tile stored [rows][cols] (cols contiguous in
  // global memory, see kARows/kACols). Interleaved (wgmma): 8 x 8-element core matrices, the
  // one of (mn / 8, k / 8) at ((mn / 8) * (BK / 8) + k / 8) * 64, K-major ones holding 8 rows
  // of 8 k, MN-major ones 8 k of 8 mn (descriptor LBO = 128 bytes, SBO = BK * 16 bytes).
  template <bool KMajor, int Ld>
  CKGEN_HOST_DEVICE static constexpr int smem_offset(int row, int col) {
    if constexpr (!kSmemInterleaved) {
      return row * Ld + col;
    } else if constexpr (KMajor) {  // row = mn, col = k
      return (((row >> 3) * (BK >> 3) + (col >> 3)) << 6) + ((row & 7) << 3) + (col & 7);
    } else {  // row = k, col = mn
      return (((col >> 3) * (BK >> 3) + (row >> 3)) << 6) + ((row & 7) << 3) + (col & 7);
    }
  }

  // ---- what this library implements (the Python rules reject the rest earlier) ----
  static_assert(kNDim >= 1 && kNDim <= 3, "ckgen: kNDim must be 1, 2 or 3");
  static_assert(WK == 1, "ckgen: WaveLayout K must be 1 (split-K inside a block is not implemented)");
  static_assert(BM % ((WM / kMGroup) * IM) == 0,
                "ckgen: Tile M must be a multiple of Waves M * WarpTile M (wgmma: Waves M / 4)");
  static_assert(BN % (WN * IN) == 0, "ckgen: Tile N must be a multiple of Waves N * WarpTile N");
  static_assert(BK % IK == 0, "ckgen: Tile K must be a multiple of WarpTile K");
  static_assert(is_pow2_upto8(VA) && is_pow2_upto8(VB) && is_pow2_upto8(VC),
                "ckgen: vector sizes must be 1, 2, 4 or 8");
  static_assert(kACols % VA == 0, "ckgen: the contiguous tile dim of A must be a multiple of kVecA");
  static_assert(kBCols % VB == 0, "ckgen: the contiguous tile dim of B must be a multiple of kVecB");
  static_assert(!kWgmma || (kWavelet && WM % 4 == 0 && WK == 1 && IM == 64 && IK == 16 &&
                             IN % 8 == 0 && IN >= 8 && IN <= 256 && BK % 16 == 0),
                "ckgen: wgmma needs the wavelet pipeline, WarpTile<64, N, 16> and Waves M % 4 == 0");
  static_assert(!kSmemInterleaved || (VA <= 8 && VB <= 8 && BM % 8 == 0 && BN % 8 == 0),
                "ckgen: the interleaved shared-memory layout needs 8-element bricks");
  static_assert(!kWavelet || (Cfg::kStages >= kMinStages && Cfg::kStages <= kMaxStages),
                "ckgen: the wavelet pipeline needs kMinStages..kMaxStages stages (core/limits.hpp)");
  static_assert(!kWavelet || (Cfg::kMathWaves == kWarps && Cfg::kLoadWaves >= 1),
                "ckgen: wavelet needs kMathWaves == the wave layout's warps and kLoadWaves >= 1");
  static_assert(Cfg::kPipeline != Pipeline::Basic || Cfg::kStages == 1 || Cfg::kStages == 2,
                "ckgen: the basic pipeline has one LDS buffer (kStages 1)");
  static_assert(Cfg::kPipeline != Pipeline::Multistage || (Cfg::kStages >= kMinStages && Cfg::kStages <= kMaxStages),
                "ckgen: the multistage pipeline needs kMinStages..kMaxStages stages (core/limits.hpp)");
  static_assert(kWavelet || (Cfg::kLoadWaves == 0 && Cfg::kMathWaves == 0),
                "ckgen: load/math waves are only for the wavelet pipeline");
  static_assert(Cfg::kEpilogue == Epilogue::Default || Cfg::kEpilogue == Epilogue::CShuffle,
                "ckgen: epilogue must be default or cshuffle");
  static_assert(Cfg::kEpilogue != Epilogue::CShuffle || BN % VC == 0,
                "ckgen: cshuffle needs Tile N to be a multiple of kVecC");
  static_assert(one_of(kGroupsToMergeValues, Cfg::kGroupsToMerge),
                "ckgen: groups_to_merge must be one of kGroupsToMergeValues (core/limits.hpp)");
  static_assert(Cfg::kGroupsToMerge == 1 || kVariant != Variant::BackwardWeight,
                "ckgen: groups_to_merge > 1 is for forward and backward_data");
  static_assert(!kStreamK || kVariant == Variant::BackwardWeight,
                "ckgen: StreamK reductions are for backward_weight");
  static_assert(!kStreamK || !kWavelet,
                "ckgen: StreamK runs on the basic / multistage pipelines, not wavelet");
  static_assert(!kStreamK || (Cfg::kKBatch == 0 && Cfg::kStage == Stage::One),
                "ckgen: StreamK sizes its own split (kKBatch 0) and has no second stage");
  static_assert(!Cfg::kPersistent || kStreamK, "ckgen: persistent is a StreamK mode");
  static_assert(Cfg::kScheduler == Scheduler::Intrawave || Cfg::kMathUnit == MathUnit::Mfma ||
                    Cfg::kMathUnit == MathUnit::Wmma,
                "ckgen: the interwave scheduler is AMD only");
  static_assert(Cfg::kKBatch >= 0 && Cfg::kKBatch <= kMaxKBatch, "ckgen: kKBatch must be 0..kMaxKBatch (core/limits.hpp)");
  static_assert(kThreads <= kMaxThreadsPerBlock, "ckgen: too many threads per block");
};

}  // namespace ckgen
