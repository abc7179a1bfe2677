"""The limits of the template library (templates/include/ckgen): the values and bounds its kernels
implement, one place for each. The validity rules (ckgen.space.rules), the resource estimates
(ckgen.space.estimate), the YAML schema and the CLI read them; the C++ reads the ones CXX_LIMITS
names from templates/include/ckgen/core/limits.hpp, rendered from this module by
``python -m ckgen.model.cxx`` (a test checks that the committed header is current).
"""

from __future__ import annotations

# --- every kernel family ------------------------------------------------------------------------
VECTOR_SIZES = (1, 2, 4, 8)
MAX_STAGES = 8
MIN_STAGES = 2  # pipelines that stage (multistage, wavelet, wavelet_tma)
# Most splits of the reduction a GEMM-family kernel takes (an instance's k_batch, the CLI's
# --k-batch, RunOptions::k_batch of implicit-GEMM and wavelet_tma instances).
MAX_K_BATCH = 64
# Most threads a block may have (every target).
MAX_THREADS_PER_BLOCK = 1024
# The largest tile dimension the YAML schema accepts (the rules bound each family further).
MAX_TILE_DIM = 1024
GROUPS_TO_MERGE = (1, 2, 4, 8, 16, 32)
WAVELET_RATIOS = ((4, 4), (4, 2), (2, 2), (2, 1), (1, 1))
# Shared-memory rows are padded by 16 bytes against bank conflicts.
LDS_ROW_PAD_BYTES = 16

# --- wavelet_tma (the copy-engine pipeline) -----------------------------------------------------
# wavelet_tma (templates/include/ckgen/pipeline/tma_ws.hpp, TmaTraits): one load warp, one or
# two wgmma math warpgroups of one to three m64 slices each, one 128-byte swizzle row per tile
# row (tile K x element bytes), an im2col box of at most 256 pixels, 1024 bytes of alignment
# slack in shared memory.
TMA_LOAD_WAVES = 1
TMA_MATH_WAVES = (4, 8)
# Ping-pong: waves (4, 1, 1) with twice the math waves: two warpgroups take turns on the
# block's units, each with the whole tile (TmaTraits::kPingPong).
TMA_PINGPONG_WAVES = (4, 1, 1)
# Tile N: backward_data's and backward_weight's N-major B operands are copied as 64-column blocks;
# forward's B (the filters, K-major) is one box of tile-N rows, so it also takes 160 (K = 144 / 160
# / 320 layers in one column of tiles, wgmma m64n160).
TMA_TILE_N = (64, 128, 192, 256)
TMA_FORWARD_TILE_N = (64, 128, 160, 192, 256)
# swap_ab's pixels per warpgroup (the instruction's N) and the plain wavelet pipeline's wgmma N
# (mma_wgmma.hpp WarpWgmma): the widths those paths implement; 192 is the copy engine's alone.
TMA_SWAP_PIXELS = (64, 128, 256)
WGMMA_PLAIN_N = (64, 128, 256)
TMA_ROW_BYTES = 128
TMA_MAX_TILE_M = 256
TMA_SLICES_M = (1, 2, 3)  # m64 slices per math warpgroup
TMA_SMEM_SLACK = 1024
TMA_SWAP_TILE_N = 64  # swap_ab: the output channels of a tile fill one wgmma M
TMA_PATCH_BUFFERS = 2  # stride1: staged input patches (double-buffered across channel chunks)
# Specialization window (templates/include/ckgen/pipeline/tma_window.hpp): a tile is Tile M / 8
# output rows x 8 columns (the instruction's N, which mma_wgmma.hpp implements for these widths),
# 64-channel groups, two math warpgroups taking turns on windows, 2 or 4 patch buffers (stages);
# shared memory as detail::tma_window_smem_bytes lays it out for a 3x3 filter (the kernel refuses
# larger filters that do not fit the device). backward_weight (pipeline/tma_window_weight.hpp):
# the same windows as the reduction, three math warpgroups (one a filter row of a 3x3 filter, its
# three taps x 64 channels on the instruction's N), 2 to 4 stages of the window's dy and patch.
TMA_WINDOW_PIXELS = (64, 128, 160, 192, 256)
TMA_WINDOW_COLUMNS = 8
TMA_WINDOW_STAGES = (2, 4)  # even: each patch buffer has one reader warpgroup (TmaWindowTraits)
TMA_WINDOW_CHANNELS = 64
TMA_WINDOW_WEIGHT_STAGES = (2, 3, 4)  # every warpgroup reads every stage (TmaWindowWeightTraits)
TMA_WINDOW_WEIGHT_WAVES = (12, 1, 1)  # one warpgroup a filter row
TMA_WINDOW_WEIGHT_TAPS = 3  # a filter row's taps: the warp tile's N = 3 x 64
# the partial filter a block leaves for its cluster: 64 rows of 9 x 64 fp32 sums, 8 floats of
# padding a row (detail::kTmaWindowPartBytes)
TMA_WINDOW_WEIGHT_PART_BYTES = 64 * (9 * 64 + 8) * 4
# cshuffle epilogue: a slab of 16 rows x 40 elements per math warp.
TMA_SLAB_ELEMS_PER_WARP = 16 * 40
# bias_grad (backward_weight): the all-ones B operand of the m64n8k16 row sums of dy (two
# 8 x 16-byte core matrices of 1.0), after the slabs (epilogue/tma_ws_bias_grad.hpp).
TMA_BIAS_GRAD_ONES_BYTES = 256
# wavelet_tma stats: the most fp32 accumulators a math thread may hold beside the warp's channel
# sums (tma_ws_epilogue.hpp UnitStats); more spill.
TMA_STATS_MAX_ACC = 64

# --- the direct kernel ------------------------------------------------------------------------
# The direct kernel, templates/include/ckgen/depthwise.hpp: depthwise problems (C = K = 1 per
# group) and small groups (C = K = Cg per group). Its fields:
#   tile [P, Ct, Cg]  a block covers Ct channels (Ct / Cg groups) and P pixels (forward: output
#                     pixels, backward_data: input pixels, backward_weight: pixels per reduction
#                     step); Cg: the channels per group the instance serves (1 = depthwise)
#   waves [w, 1, 1]   w warps per block; Ct / vector threads across the channels, the rest across
#                     pixels, each thread P / (threads / (Ct / vector)) pixels
#   vector [v, v, v]  v consecutive channels (whole groups) per thread, one access of v elements
#                     per tensor
#   warp_tile         [1, 1, 1]: plain fp32 FMA; [16, 8, 16]: the matrix path (mma.sync targets,
#                     fp16 / bf16; vector 8, tile N a multiple of 64 channels, tile M the pixels
#                     of one row segment, a multiple of 16). forward / backward_data
#                     (pipeline/direct_mma.hpp): C = K = 8, 16 or 32 per group (tile K); w warps
#                     divide its m16
#                     tiles or are a multiple of them that splits the groups; per filter row M + 16
#                     staged source columns, 2-4 such stages plus 9 taps of weights within 48 KB.
#                     backward_weight (pipeline/direct_mma_bwd_weight.hpp): tile K 1, 2, 4, 8,
#                     16 or 32;
#                     w warps
#                     split the tile N / 8 channel chunks; a ring of source rows (M + 16 columns,
#                     16-pixel M + 24: direct_mma_cols)
#                     beside 2-8 buffers of M gradient pixels within 112 KB (dynamic), at least
#                     6 rows
# Everything else takes its default (no LDS pipeline, no merged groups, no epilogue choice, no
# specialization); backward_weight splits its reduction over N*Do*Ho*Wo with k_batch (0 = per
# problem) and stage one (fp32 atomics) or two (per-split partials + reduce).
DIRECT_WARP_TILE = (1, 1, 1)
DIRECT_MMA_WARP_TILE = (16, 8, 16)
# forward / backward_data matrix path: C = K per group (tile K); 16 / 32 take m16n8k16 over a
# group's two / four chunks (kDirectMmaGroupChannels)
DIRECT_MMA_GROUP_CHANNELS = (8, 16, 32)
DIRECT_MMA_CHANNEL_STEP = 64  # tile N: runs of 8 group chunks (the shared-memory swizzle)
DIRECT_MMA_MAX_LDS = 48 * 1024  # static shared memory (kDirectMmaMaxSmem)
DIRECT_MMA_MAX_STAGES = 4  # staged source rows (kDirectMmaMaxStages)
DIRECT_MMA_MAX_TAPS = 9  # taps whose weights are staged at once (kDirectMmaMaxTaps)
DIRECT_MMA_COLUMN_SLACK = 16  # staged columns per filter row beyond tile M (kDirectMmaColumnSlack)
# ... beyond a 16-pixel tile M (kDirectMmaNarrowColumnSlack): 40 columns, what a 3-wide filter at
# W stride 2 reads (33, dilation 2: 35), so the narrow blocks serve stride-2 layers (every variant:
# direct_mma_cols)
DIRECT_MMA_NARROW_COLUMN_SLACK = 24
DIRECT_MMA_COLUMN_PAD = (
    16  # forward / backward_data: bytes after a staged column (kDirectMmaColumnPad)
)
DIRECT_MMA_BWD_FILTER_ROWS = (
    3  # backward_weight: filter rows staged per unit (kDirectMmaBwdFilterRows)
)
DIRECT_MMA_BWD_MAX_STAGES = 8  # backward_weight: gradient buffers (kDirectMmaBwdMaxStages)
DIRECT_MMA_BWD_MAX_LDS = 112 * 1024  # backward_weight: dynamic shared memory (kDirectMmaBwdMaxSmem)
DIRECT_MMA_BWD_TAP_TILES = (DIRECT_MMA_MAX_TAPS + 1) // 2  # m16 tiles of two taps (kTapTiles)
DIRECT_MAX_PIXELS_PER_THREAD = 8
# Most reduction slices of a direct backward_weight call (RunOptions::k_batch, the per-problem
# choice): its slices are short loops combined in a workspace, far more than a GEMM's splits.
DIRECT_MAX_SLICES = 1024

# --- pointwise (1x1 at unit strides, no padding; templates/include/ckgen/pipeline/pointwise.hpp) --
# Tile M rows of pixels a block (16 per m16 tile of each of its w warps: waves (w, 1, 1));
# tile N the output columns a warp accumulates at once (kPointwiseChunk), tile K one k16 step;
# a ring of two source tiles beside two output buffers (kPointwiseStages), 16-byte rows.
POINTWISE_WARP_TILE = (16, 8, 16)
POINTWISE_CHUNK = 64
POINTWISE_TILE_K = 16
POINTWISE_STAGES = 2
POINTWISE_WAVES = (2, 4, 8)
POINTWISE_MAX_M_TILES = 4  # m16 tiles a warp (accumulators: 32 fp32 each)
POINTWISE_CHANNEL_STEP = 8  # C and K per group multiples of 8 (16-byte rows of 16-bit elements)
# Registers a pointwise thread holds: 32 fp32 accumulators per m16 tile of its column chunk, and
# the rest (addresses, operand fragments, loop state); ptxas -v (sm_90a) reported 79-84 for one
# m16 tile a warp, 116-120 for two. The rule's estimate and the cost model's occupancy.
POINTWISE_ACC_PER_M_TILE = 32
POINTWISE_REGISTER_BASE = 52
# backward_weight depthwise: the Linear 1x3x3 path (all nine taps' loads hoisted) serves up to
# this many pixels per thread; beyond, 3x3 problems take the window path (per filter row the
# (pp - 1) * stride + 3 columns, W stride 1 / 2) or the one-tap path (kDirectBwdLinearMaxPixels,
# direct_plan.hpp)
DIRECT_BWD_LINEAR_MAX_PIXELS = 2
DIRECT_BWD_WINDOW_MAX_STRIDE = 2
# The filter taps the direct kernel holds in registers (a compile-time 3x3 path; other filters
# take the generic path that reads the taps' weights per pixel step).
DIRECT_REGISTER_TAPS = 9
# The channels per group (C = K) a direct instance may serve: tile K. 1 = depthwise, 2 / 4 / 8 =
# small groups (backward_weight: one tap at a time, Cg x vector accumulators).
DIRECT_GROUP_CHANNELS = (1, 2, 4, 8)
# The channels per group the backward_weight matrix path serves (tile K): 16 and 32 pair each
# 8-channel chunk of a group with every chunk of it (pipeline/direct_mma_bwd_weight.hpp).
DIRECT_MMA_BWD_GROUP_CHANNELS = (1, 2, 4, 8, 16, 32)
# Floats of padding per row of the small-group filter in shared memory
# (pipeline/depthwise.hpp kRow).
DIRECT_FILTER_ROW_PAD = 4
# backward_weight's block sums through shared memory (pipeline/depthwise.hpp kDirectCombineFloats /
# kDirectCombinePad): at most this many floats, each (pixel row, entry) row of channels padded.
DIRECT_COMBINE_FLOATS = 5120
DIRECT_COMBINE_PAD = 4
# Depthwise filters the compile-time 1x3x3 paths do not take run as row windows
# (pipeline/depthwise_rows.hpp): a thread's pixels of one row read each source column of a filter
# row once. The window is compiled for these filter widths; a width takes the first at least as
# wide (wider filters, W dilation > 1: the one-tap path).
DIRECT_WINDOW_WIDTHS = (3, 5, 7, 11)
# forward / backward_data row windows stage the block's filter in shared memory as fp32, at most
# this many bytes (dynamic shared memory within the default limit); a larger filter takes the
# one-tap path.
DIRECT_WINDOW_MAX_SMEM = 48 * 1024


# The limits the C++ reads, by their C++ names (templates/include/ckgen/core/limits.hpp): name,
# value, the reason the header gives. A tuple becomes an array of the allowed values.
CXX_LIMITS: tuple[tuple[str, int | tuple[int, ...], str], ...] = (
    ("kMinStages", MIN_STAGES, "fewest stages of a staging pipeline"),
    ("kMaxStages", MAX_STAGES, "most stages of a staging pipeline"),
    ("kMaxKBatch", MAX_K_BATCH, "most reduction splits of an implicit-GEMM / wavelet_tma call"),
    ("kGroupsToMergeValues", GROUPS_TO_MERGE, "the groups one tile may compute"),
    ("kMaxThreadsPerBlock", MAX_THREADS_PER_BLOCK, "most threads of a block"),
    ("kDirectMaxSlices", DIRECT_MAX_SLICES, "most reduction slices of a direct backward_weight"),
    ("kPointwiseChunk", POINTWISE_CHUNK, "pointwise: output columns a warp accumulates at once"),
    ("kPointwiseStages", POINTWISE_STAGES, "pointwise: source tiles in flight (output buffers)"),
    ("kPointwiseChannelStep", POINTWISE_CHANNEL_STEP, "pointwise: C and K per group are multiples"),
    ("kPointwiseAccPerMTile", POINTWISE_ACC_PER_M_TILE, "pointwise: registers per m16 tile a warp"),
    ("kPointwiseRegisterBase", POINTWISE_REGISTER_BASE, "pointwise: registers beyond accumulators"),
    (
        "kDirectMmaGroupChannels",
        DIRECT_MMA_GROUP_CHANNELS,
        "direct matrix forward / backward_data: the C = K per group it serves",
    ),
    (
        "kDirectMmaBwdGroupChannels",
        DIRECT_MMA_BWD_GROUP_CHANNELS,
        "direct matrix backward_weight: the C = K per group it serves",
    ),
    ("kDirectMmaMaxTaps", DIRECT_MMA_MAX_TAPS, "direct matrix path: filter taps staged at once"),
    (
        "kDirectMmaMaxStages",
        DIRECT_MMA_MAX_STAGES,
        "direct matrix path: source rows staged (a 3x3 filter's three + 1 ahead)",
    ),
    ("kDirectMmaMaxSmem", DIRECT_MMA_MAX_LDS, "direct matrix path: static shared memory"),
    (
        "kDirectMmaNarrowColumnSlack",
        DIRECT_MMA_NARROW_COLUMN_SLACK,
        "direct matrix path: staged columns per filter row beyond a 16-pixel block's",
    ),
    (
        "kDirectMmaColumnSlack",
        DIRECT_MMA_COLUMN_SLACK,
        "direct matrix path: staged columns per filter row beyond the block's pixels",
    ),
    (
        "kDirectMmaColumnPad",
        DIRECT_MMA_COLUMN_PAD,
        "direct matrix path: bytes after each staged column's channels",
    ),
    (
        "kDirectMmaBwdFilterRows",
        DIRECT_MMA_BWD_FILTER_ROWS,
        "direct matrix backward_weight: filter rows (Z * Y) a unit reads",
    ),
    (
        "kDirectMmaBwdMaxStages",
        DIRECT_MMA_BWD_MAX_STAGES,
        "direct matrix backward_weight: gradient buffers (units in flight + 1)",
    ),
    (
        "kDirectMmaBwdMaxSmem",
        DIRECT_MMA_BWD_MAX_LDS,
        "direct matrix backward_weight: dynamic shared memory (2 blocks per SM)",
    ),
    (
        "kDirectBwdLinearMaxPixels",
        DIRECT_BWD_LINEAR_MAX_PIXELS,
        "direct backward_weight: most pixels a thread of the nine-tap path",
    ),
    (
        "kDirectCombineFloats",
        DIRECT_COMBINE_FLOATS,
        "direct backward_weight: floats of the block's combining buffer",
    ),
    (
        "kDirectCombinePad",
        DIRECT_COMBINE_PAD,
        "direct backward_weight: floats of padding per row of the combining buffer",
    ),
    ("kTmaTileN", TMA_TILE_N, "wavelet_tma: tile N of backward_data / backward_weight"),
    ("kTmaForwardTileN", TMA_FORWARD_TILE_N, "wavelet_tma: tile N of forward"),
    (
        "kTmaBiasGradOnesBytes",
        TMA_BIAS_GRAD_ONES_BYTES,
        "wavelet_tma bias_grad: shared bytes of the all-ones operand of dy's row sums",
    ),
    (
        "kTmaStatsMaxAcc",
        TMA_STATS_MAX_ACC,
        "wavelet_tma stats: most fp32 accumulators a math thread holds beside the channel sums",
    ),
    ("kDirectWindowWidths", DIRECT_WINDOW_WIDTHS, "direct row windows: the filter widths compiled"),
    (
        "kDirectWindowMaxSmem",
        DIRECT_WINDOW_MAX_SMEM,
        "direct row windows: most bytes of staged filter (forward / backward_data)",
    ),
    (
        "kDirectFilterRowPad",
        DIRECT_FILTER_ROW_PAD,
        "direct: floats of padding per filter row in shared memory",
    ),
)
