// Shape templates of a generated instance and the constants derived from a Config.
//
// A generated Config (see templates/project/instance.hpp.j2) names a block tile (TileShape),
// a warp layout (WaveLayout) and the matrix-instruction shape (WarpTile). ConfigTraits<Cfg>
// derives everything the device code needs (threads, repeats, operand layouts, shared-memory
// sizes) and rejects, with a static_assert, every Config value this library does not implement.
#pragma once

#include <cstdint>
#include <cstring>

#include "ckgen/portability.hpp"
#include "ckgen/vocab.hpp"

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

// N elements moved as one access.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Which GEMM dimension is contiguous in memory for an operand of a variant (DESIGN's table).
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

  static constexpr Variant kVariant = Cfg::kVariant;
  static constexpr DataType kDataType = Cfg::kDataType;
  static constexpr int kNDim = Cfg::kNDim;

  static constexpr int BM = Cfg::Tile::kM, BN = Cfg::Tile::kN, BK = Cfg::Tile::kK;
  static constexpr int WM = Cfg::Waves::kM, WN = Cfg::Waves::kN, WK = Cfg::Waves::kK;
  static constexpr int IM = Cfg::WarpTile::kM, IN = Cfg::WarpTile::kN, IK = Cfg::WarpTile::kK;
  static constexpr int kWarpSize = Cfg::kWarpSize;
  static constexpr int kWarps = WM * WN * WK;
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int RepM = BM / (WM * IM);
  static constexpr int RepN = BN / (WN * IN);
  static constexpr int RepK = BK / IK;
  static constexpr int kWarpTileM = RepM * IM;  // rows of C per warp
  static constexpr int kWarpTileN = RepN * IN;  // cols of C per warp

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
  static constexpr int kLdA = kACols + kPadA;
  static constexpr int kLdB = kBCols + kPadB;
  static constexpr int kSmemAElems = kARows * kLdA;
  static constexpr int kSmemBElems = kBRows * kLdB;
  static constexpr int kStages = Cfg::kPipeline == Pipeline::Multistage ? Cfg::kStages : 1;
  static constexpr int kSmemBytes = kStages * (kSmemAElems + kSmemBElems) * int(sizeof(Raw));

  // ---- what this library implements (the Python rules reject the rest earlier) ----
  static_assert(kNDim >= 1 && kNDim <= 3, "ckgen: kNDim must be 1, 2 or 3");
  static_assert(WK == 1, "ckgen: WaveLayout K must be 1 (split-K inside a block is not implemented)");
  static_assert(BM % (WM * IM) == 0, "ckgen: Tile M must be a multiple of Waves M * WarpTile M");
  static_assert(BN % (WN * IN) == 0, "ckgen: Tile N must be a multiple of Waves N * WarpTile N");
  static_assert(BK % IK == 0, "ckgen: Tile K must be a multiple of WarpTile K");
  static_assert(is_pow2_upto8(VA) && is_pow2_upto8(VB) && is_pow2_upto8(VC),
                "ckgen: vector sizes must be 1, 2, 4 or 8");
  static_assert(kACols % VA == 0, "ckgen: the contiguous tile dim of A must be a multiple of kVecA");
  static_assert(kBCols % VB == 0, "ckgen: the contiguous tile dim of B must be a multiple of kVecB");
  static_assert(Cfg::kPipeline == Pipeline::Basic || Cfg::kPipeline == Pipeline::Multistage,
                "ckgen: only the basic and multistage pipelines are implemented");
  static_assert(Cfg::kPipeline != Pipeline::Basic || Cfg::kStages == 1 || Cfg::kStages == 2,
                "ckgen: the basic pipeline has one LDS buffer (kStages 1)");
  static_assert(Cfg::kPipeline != Pipeline::Multistage || (Cfg::kStages >= 2 && Cfg::kStages <= 8),
                "ckgen: the multistage pipeline needs 2..8 stages");
  static_assert(Cfg::kLoadWaves == 0 && Cfg::kMathWaves == 0,
                "ckgen: wavelet (load/math wave split) is not implemented");
  static_assert(Cfg::kEpilogue == Epilogue::Default, "ckgen: only the default epilogue is implemented");
  static_assert(Cfg::kGroupsToMerge == 1, "ckgen: groups_to_merge > 1 is not implemented");
  static_assert(Cfg::kReduction == Reduction::SplitK, "ckgen: StreamK reductions are not implemented");
  static_assert(!Cfg::kPersistent, "ckgen: persistent kernels are not implemented");
  static_assert(Cfg::kScheduler == Scheduler::Intrawave || Cfg::kMathUnit == MathUnit::Mfma ||
                    Cfg::kMathUnit == MathUnit::Wmma,
                "ckgen: the interwave scheduler is AMD only");
  static_assert(Cfg::kKBatch >= 0 && Cfg::kKBatch <= 64, "ckgen: kKBatch must be 0..64");
  static_assert(kVariant == Variant::BackwardWeight || Cfg::kKBatch <= 1,
                "ckgen: split-K (kKBatch > 1) is only for backward_weight");
  static_assert(kThreads <= 1024, "ckgen: too many threads per block");
};

}  // namespace ckgen
