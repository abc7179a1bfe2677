"""The wavelet_tma pipeline (sm_90a): its name, the one rule that says what TmaTraits implements,
its shipped instances, and the C++ pieces the generator relies on. forward / backward_data never
split; backward_weight always may (fp32 atomics, stage one)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ckgen.model.arch import load_arch_specs
from ckgen.model.instance import KernelInstance
from ckgen.model.naming import instance_name, parse_instance_name
from ckgen.model.vocab import (
    DataType,
    Epilogue,
    Pipeline,
    Reduction,
    Specialization,
    Stage,
    Variant,
)
from ckgen.resources import templates_dir
from ckgen.space import rules
from ckgen.space.estimate import lds_bytes
from ckgen.space.estimate.tma import window_lds_bytes
from ckgen.space.expand import Filters, default_config_paths, expand, load_configs
from ckgen.space.forms import is_pingpong, is_window

ARCHS = load_arch_specs()


def tma(
    variant: Variant = Variant.FORWARD, datatype: DataType = DataType.FP16, **kw
) -> KernelInstance:
    base = dict(
        variant=variant,
        datatype=datatype,
        ndim=2,
        tile=(128, 128, 64),
        waves=(8, 1, 1),
        warp_tile=(64, 128, 16),
        pipeline=Pipeline.WAVELET_TMA,
        stages=3,
        load_waves=1,
        math_waves=8,
    )
    base.update(kw)
    return KernelInstance(**base)  # type: ignore[arg-type]


def test_name_round_trips() -> None:
    i = tma()
    assert (
        instance_name(i)
        == "grouped_conv_fwd_fp16_2d_t128x128x64_w8x1x1_wt64x128x16_wltma3_lm1x8_v8x8x8"
    )
    assert parse_instance_name(i.name) == i


@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize("datatype", [DataType.FP16, DataType.BF16])
@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize(
    "tile,waves,warp_tile",
    [
        ((128, 128, 64), (8, 1, 1), (64, 128, 16)),
        ((256, 128, 64), (8, 1, 1), (64, 128, 16)),
        ((64, 64, 64), (4, 1, 1), (64, 64, 16)),
        ((192, 64, 64), (4, 1, 1), (64, 64, 16)),  # one warpgroup of three m64 slices
        ((64, 192, 64), (4, 1, 1), (64, 192, 16)),  # wgmma m64n192k16
        ((128, 192, 64), (8, 1, 1), (64, 192, 16)),
    ],
)
def test_valid_on_sm90a(
    variant: Variant, datatype: DataType, ndim: int, tile, waves, warp_tile
) -> None:
    kb = 0 if variant is Variant.BACKWARD_WEIGHT else 1
    i = tma(
        variant,
        datatype,
        ndim=ndim,
        tile=tile,
        waves=waves,
        warp_tile=warp_tile,
        math_waves=waves[0],
        k_batch=kb,
    )
    assert rules.check(i, ARCHS["sm_90a"]) is None


@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize("k_batch", [0, 1, 4])
def test_every_variant_splits_with_atomics_only(variant: Variant, k_batch: int) -> None:
    inst = tma(variant, k_batch=k_batch)
    assert rules.check(inst, ARCHS["sm_90a"]) is None
    assert parse_instance_name(inst.name) == inst
    bad = rules.check(replace(inst, stage=Stage.TWO), ARCHS["sm_90a"])
    assert bad is not None and "stage one" in bad[1], bad


@pytest.mark.parametrize("arch", ["sm_80", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_rejected_off_hopper(arch: str) -> None:
    assert rules.check(tma(), ARCHS[arch]) is not None


@pytest.mark.parametrize(
    "change,words",
    [
        (dict(load_waves=4), "load waves 1"),
        (dict(math_waves=4), "math waves"),
        (dict(tile=(256, 256, 64), waves=(4, 2, 1)), "waves (M, 1, 1)"),
        (dict(tile=(128, 128, 32)), "tile K"),
        (dict(warp_tile=(64, 64, 16)), "tile N"),
        (dict(tile=(384, 128, 64)), "tile M"),
        (
            dict(tile=(256, 64, 64), waves=(4, 1, 1), math_waves=4, warp_tile=(64, 64, 16)),
            "tile M",
        ),  # 4 slices
        (dict(tile=(192, 128, 64)), "tile M"),  # 96 rows per warpgroup
        (dict(vec_a=4, vec_b=4, vec_c=4), "vector [8, 8, 8]"),
        (dict(reduction=Reduction.STREAMK_LINEAR), "split-K"),
        (dict(groups_to_merge=2), "merge groups"),
        (dict(specialization=Specialization.FILTER1X1_STRIDE1_PAD0), "1x1"),
    ],
)
def test_rule_names_what_tma_does_not_implement(change: dict, words: str) -> None:
    bad = rules.check(replace(tma(), **change), ARCHS["sm_90a"])
    assert bad is not None, change
    assert words in bad[1], bad


def test_wgmma_n192_is_the_copy_engines_alone() -> None:
    """m64n192k16 is implemented for wavelet_tma (pipeline/tma_ws.hpp issues wgmma_detail::Op
    directly); the plain wavelet pipeline's WarpWgmma and swap_ab's pixel widths stay 64/128/256."""
    wide = tma(tile=(64, 192, 64), waves=(4, 1, 1), math_waves=4, warp_tile=(64, 192, 16))
    assert rules.check(wide, ARCHS["sm_90a"]) is None and parse_instance_name(wide.name) == wide
    plain = replace(
        wide, pipeline=Pipeline.WAVELET, stages=2, load_waves=4, vec_a=8, vec_b=8, vec_c=8
    )
    bad = rules.check(plain, ARCHS["sm_90a"])
    assert bad is not None and "without the copy engine" in bad[1], bad
    swap = tma(
        tile=(192, 64, 64), waves=(4, 1, 1), math_waves=4, warp_tile=(64, 192, 16), swap_ab=True
    )
    bad = rules.check(swap, ARCHS["sm_90a"])
    assert bad is not None and "swap_ab" in bad[1], bad
    off = rules.check(wide, ARCHS["sm_80"])
    assert off is not None


@pytest.mark.parametrize("variant", [Variant.FORWARD, Variant.BACKWARD_DATA])
def test_cshuffle_is_valid_and_its_slabs_are_counted(variant: Variant) -> None:
    plain = tma(variant)
    staged = replace(plain, epilogue=Epilogue.CSHUFFLE)
    assert rules.check(staged, ARCHS["sm_90a"]) is None
    assert "_cshuffle_" in staged.name and parse_instance_name(staged.name) == staged
    # one slab of 16 rows x 40 fp16 elements per math warp (TmaTraits::kSlabBytes)
    assert lds_bytes(staged, ARCHS["sm_90a"]) - lds_bytes(plain, ARCHS["sm_90a"]) == 8 * 16 * 40 * 2


def test_cshuffle_counts_against_the_shared_memory_limit() -> None:
    big = tma(tile=(256, 128, 64), stages=4, epilogue=Epilogue.CSHUFFLE)
    assert rules.check(big, ARCHS["sm_90a"]) is None  # 192 KB ring + 10 KB slabs fit
    bad = rules.check(replace(big, stages=5), ARCHS["sm_90a"])
    assert bad is not None and bad[0] == "lds"


@pytest.mark.parametrize("variant", [Variant.FORWARD, Variant.BACKWARD_DATA])
def test_stride1_stages_input_rows_for_forward_launches(variant: Variant) -> None:
    i = tma(variant, specialization=Specialization.STRIDE1)
    assert rules.check(i, ARCHS["sm_90a"]) is None
    assert i.name.endswith("_s1") and parse_instance_name(i.name) == i
    # the ring holds B only; two patches of at least tile M pixels each
    # (TmaTraits::kPatchFixedBytes)
    assert lds_bytes(i) == (3 * 128 + 2 * 128) * 128 + 16 * 5 + 1024


def test_backward_weight_stride1_is_the_row_form_on_one_warpgroup() -> None:
    row = tma(
        Variant.BACKWARD_WEIGHT,
        tile=(64, 192, 64),
        waves=(4, 1, 1),
        math_waves=4,
        warp_tile=(64, 192, 16),
        specialization=Specialization.STRIDE1,
        k_batch=0,
    )
    assert rules.check(row, ARCHS["sm_90a"]) is None
    assert row.name.endswith("_s1") and parse_instance_name(row.name) == row
    # the row form keeps the default stage (tile M + tile N rows of 128 bytes): no patches
    assert lds_bytes(row) == lds_bytes(replace(row, specialization=Specialization.DEFAULT))
    for bad_tile, waves, warp in (
        ((128, 192, 64), (8, 1, 1), (64, 192, 16)),
        ((64, 64, 64), (4, 1, 1), (64, 64, 16)),
    ):
        bad = rules.check(
            replace(row, tile=bad_tile, waves=waves, math_waves=waves[0], warp_tile=warp),
            ARCHS["sm_90a"],
        )
        assert bad is not None and "tile M 64" in bad[1], bad


def test_stride1_is_refused_where_no_path_stages_rows() -> None:
    bad = rules.check(
        tma(Variant.BACKWARD_WEIGHT, specialization=Specialization.STRIDE1, k_batch=0),
        ARCHS["sm_90a"],
    )
    assert bad is not None and "backward_weight" in bad[1], bad
    ms = KernelInstance(
        variant=Variant.FORWARD,
        datatype=DataType.FP16,
        ndim=2,
        tile=(128, 128, 32),
        waves=(2, 2, 1),
        warp_tile=(16, 8, 16),
        pipeline=Pipeline.MULTISTAGE,
        stages=3,
        specialization=Specialization.STRIDE1,
    )
    bad = rules.check(ms, ARCHS["sm_90a"])
    assert bad is not None and "wavelet_tma specialization" in bad[1], bad


@pytest.mark.parametrize("variant", [Variant.FORWARD, Variant.BACKWARD_DATA])
@pytest.mark.parametrize(
    "tile,waves,warp_tile",
    [
        ((256, 64, 64), (8, 1, 1), (64, 128, 16)),
        ((128, 64, 64), (8, 1, 1), (64, 64, 16)),
        ((256, 64, 64), (4, 1, 1), (64, 256, 16)),
    ],
)
def test_swap_ab_puts_the_pixels_on_the_instruction_n(
    variant: Variant, tile, waves, warp_tile
) -> None:
    i = tma(variant, tile=tile, waves=waves, warp_tile=warp_tile, math_waves=waves[0], swap_ab=True)
    assert rules.check(i, ARCHS["sm_90a"]) is None
    assert "_swapab_" in i.name and parse_instance_name(i.name) == i


@pytest.mark.parametrize(
    "change,words",
    [
        (dict(variant=Variant.BACKWARD_WEIGHT, k_batch=0), "forward / backward_data"),
        (dict(tile=(256, 128, 64)), "swap_ab needs tile N 64"),
        (dict(warp_tile=(64, 64, 16)), "swap_ab needs tile N 64"),
        (dict(epilogue=Epilogue.CSHUFFLE), "epilogue default"),
    ],
)
def test_swap_ab_refusals(change: dict, words: str) -> None:
    base = tma(tile=(256, 64, 64), warp_tile=(64, 128, 16), swap_ab=True)
    bad = rules.check(replace(base, **change), ARCHS["sm_90a"])
    assert bad is not None and words in bad[1], bad


def test_swap_ab_is_a_wavelet_tma_option() -> None:
    ms = KernelInstance(
        variant=Variant.FORWARD,
        datatype=DataType.FP16,
        ndim=2,
        tile=(128, 128, 32),
        waves=(2, 2, 1),
        warp_tile=(16, 8, 16),
        pipeline=Pipeline.MULTISTAGE,
        stages=3,
        swap_ab=True,
    )
    bad = rules.check(ms, ARCHS["sm_90a"])
    assert bad is not None and "swap_ab is a wavelet_tma option" in bad[1], bad


@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize(
    "tile,warp_tile", [((64, 256, 64), (64, 256, 16)), ((128, 128, 64), (64, 128, 16))]
)
def test_ping_pong_takes_twice_the_math_waves(variant: Variant, tile, warp_tile) -> None:
    i = tma(
        variant,
        tile=tile,
        waves=(4, 1, 1),
        warp_tile=warp_tile,
        math_waves=8,
        stages=4,
        k_batch=0 if variant is Variant.BACKWARD_WEIGHT else 1,
        epilogue=Epilogue.CSHUFFLE,
    )
    assert rules.check(i, ARCHS["sm_90a"]) is None and is_pingpong(i)
    assert "_w4x1x1_" in i.name and "_lm1x8_" in i.name and parse_instance_name(i.name) == i
    # both warpgroups hold the whole tile; eight cshuffle slabs (one per math warp)
    assert lds_bytes(i) == 4 * (tile[0] + tile[1]) * 128 + 16 * 4 + 8 * 16 * 40 * 2 + 1024
    assert not is_pingpong(tma(variant, k_batch=0 if variant is Variant.BACKWARD_WEIGHT else 1))


@pytest.mark.parametrize(
    "change,words",
    [
        (
            dict(tile=(128, 128, 64), waves=(8, 1, 1), math_waves=16),
            "ping-pong: waves [4, 1, 1], math waves 8",
        ),
        (dict(swap_ab=True, tile=(64, 64, 64), warp_tile=(64, 64, 16)), "ping-pong"),
        (dict(specialization=Specialization.STRIDE1), "ping-pong"),
    ],
)
def test_ping_pong_refusals(change: dict, words: str) -> None:
    base = tma(tile=(64, 128, 64), waves=(4, 1, 1), warp_tile=(64, 128, 16), math_waves=8)
    bad = rules.check(replace(base, **change), ARCHS["sm_90a"])
    assert bad is not None and words in bad[1], bad


def test_tile_n_160_is_forward_only() -> None:
    # forward's B (filters, K-major) is one box of tile-N rows; the N-major B of the other variants
    # is copied as 64-column blocks
    wide = dict(tile=(128, 160, 64), warp_tile=(64, 160, 16))
    assert rules.check(tma(**wide), ARCHS["sm_90a"]) is None
    for v in (Variant.BACKWARD_DATA, Variant.BACKWARD_WEIGHT):
        bad = rules.check(tma(v, **wide), ARCHS["sm_90a"])
        assert bad is not None and "tile N" in bad[1]


def test_fp32_is_rejected() -> None:
    bad = rules.check(tma(datatype=DataType.FP32, vec_a=4, vec_b=4, vec_c=4), ARCHS["sm_90a"])
    assert bad is not None


def test_shipped_default_set_has_tma_for_every_variant() -> None:
    exp = expand(
        load_configs(default_config_paths(list(Variant), "default")), ARCHS["sm_90a"], Filters()
    )
    every = [i for i in exp.instances if i.pipeline is Pipeline.WAVELET_TMA]
    # forward windows (pipeline/tma_window.hpp): 20-, 16- and 8-row windows, four patch buffers, 2D;
    # backward_weight windows (pipeline/tma_window_weight.hpp): 8-row windows, four stages
    win = {
        (i.variant, i.datatype, i.ndim, i.tile, i.stages, i.swap_ab, i.epilogue)
        for i in every
        if is_window(i)
    }
    assert win == (
        {
            (Variant.FORWARD, d, 2, (m, 64, 64), 4, True, Epilogue.CSHUFFLE)
            for d in (DataType.FP16, DataType.BF16)
            for m in (160, 128, 64)
        }
        | {
            (Variant.BACKWARD_WEIGHT, d, 2, (64, 64, 64), 4, False, Epilogue.DEFAULT)
            for d in (DataType.FP16, DataType.BF16)
        }
    )
    every = [i for i in every if not is_window(i)]
    found = [i for i in every if i.ndim < 3]
    by_variant = {v: sum(i.variant is v for i in found) for v in Variant}
    assert by_variant[Variant.FORWARD] == 104 and by_variant[Variant.BACKWARD_DATA] == 80
    # ping-pong (math waves 8 on waves 4 x 1 x 1): three cshuffle tiles per variant, two more
    # 64-column ones for forward / backward_data
    pp = {(i.variant, i.tile) for i in found if is_pingpong(i)}
    assert pp == (
        {(v, t) for v in Variant for t in ((64, 256, 64), (64, 128, 64), (128, 128, 64))}
        | {
            (v, t)
            for v in (Variant.FORWARD, Variant.BACKWARD_DATA)
            for t in ((128, 64, 64), (64, 64, 64))
        }
    )
    assert not any(i.swap_ab for i in every), "test sets only"
    # stride1: forward's staged input rows on the 192 x 64 ring (the K=36 box head) and
    # backward_weight's row form on 64 x 192 (3x3 filters), four and six stages
    s1 = {
        (i.variant, i.tile, i.stages, i.epilogue)
        for i in every
        if i.specialization is Specialization.STRIDE1
    }
    assert s1 == {
        (Variant.FORWARD, (192, 64, 64), 4, Epilogue.DEFAULT),
        (Variant.BACKWARD_WEIGHT, (64, 192, 64), 4, Epilogue.CSHUFFLE),
        (Variant.BACKWARD_WEIGHT, (64, 192, 64), 6, Epilogue.CSHUFFLE),
    }
    split = [i for i in found if i.variant is not Variant.BACKWARD_WEIGHT and i.k_batch != 1]
    assert len(split) == 16 and all(i.k_batch == 0 and i.stage is Stage.ONE for i in split)
    staged = [i for i in found if i.epilogue is Epilogue.CSHUFFLE]
    assert by_variant[Variant.BACKWARD_WEIGHT] == 74
    assert len(staged) == 72 + 24 + 16 + 16 + 66 + 16 + 12 + 8, (
        "every ring but 192x64 ships with the cshuffle epilogue; 128x64 with both"
    )
    deep = {
        (i.tile[0], i.tile[1], i.stages)
        for i in found
        if i.variant is Variant.BACKWARD_WEIGHT and i.stages > 4
    }
    assert deep == {(64, 128, 8), (64, 64, 8), (128, 64, 6), (64, 192, 6), (128, 128, 6)}, (
        "the deep rings of the small bw layers"
    )
    # 160- and 192-column rings (wgmma m64n160k16 / m64n192k16; 160: forward only)
    wide = {(i.variant, i.tile, i.stages) for i in found if i.tile[1] in (160, 192)}
    assert wide == {
        (Variant.BACKWARD_WEIGHT, t, s)
        for t, s in (
            ((128, 192, 64), 3),
            ((128, 192, 64), 4),
            ((64, 192, 64), 4),
            ((64, 192, 64), 6),
        )
    } | {
        (Variant.FORWARD, (64, 160, 64), 6),
        (Variant.FORWARD, (128, 160, 64), 4),
        (Variant.FORWARD, (128, 192, 64), 3),
        (Variant.BACKWARD_DATA, (128, 192, 64), 3),
    }
    assert all(
        i.k_batch == 0 and i.stage is Stage.ONE
        for i in every
        if i.variant is Variant.BACKWARD_WEIGHT
    )
    # 3D (depth folded into the batch, or 5D maps): three cshuffle tiles per variant and datatype,
    # forward and backward_data with the 128 x 128 ring also split; backward_data's 64 x 128 also
    # with 2 stages, backward_weight's 64 x 64 with 8 and a 64 x 256 (four packed taps of C = 64)
    folded = [i for i in every if i.ndim == 3]
    assert {v: sum(i.variant is v for i in folded) for v in Variant} == {
        Variant.FORWARD: 8,
        Variant.BACKWARD_DATA: 10,
        Variant.BACKWARD_WEIGHT: 10,
    }
    assert all(i.epilogue is Epilogue.CSHUFFLE for i in folded)
    assert sum(i.k_batch == 0 for i in folded if i.variant is not Variant.BACKWARD_WEIGHT) == 4


def test_no_tma_instances_off_hopper() -> None:
    exp = expand(
        load_configs(default_config_paths(list(Variant), "default")), ARCHS["sm_80"], Filters()
    )
    assert not any(i.pipeline is Pipeline.WAVELET_TMA for i in exp.instances)


def test_template_library_has_the_tma_pipeline() -> None:
    inc = templates_dir() / "include" / "ckgen"
    assert "tma_conv_kernel" in (inc / "pipeline" / "tma_ws.hpp").read_text()
    assert "cp.async.bulk.tensor" in (inc / "block" / "tma_ptx.hpp").read_text()
    assert "class TmaConvKernel" in (inc / "kernel" / "tma_kernel.hpp").read_text()


# ------------------------------------------------------------------ specialization window
def window(**kw) -> KernelInstance:
    base = dict(
        tile=(160, 64, 64),
        waves=(4, 1, 1),
        warp_tile=(64, 160, 16),
        math_waves=8,
        swap_ab=True,
        stages=4,
        epilogue=Epilogue.CSHUFFLE,
        specialization=Specialization.WINDOW,
        k_batch=1,
    )
    base.update(kw)
    return tma(**base)


@pytest.mark.parametrize("m, stages", [(64, 4), (128, 4), (160, 4), (192, 2), (256, 2)])
def test_window_accepted(m: int, stages: int) -> None:
    i = window(tile=(m, 64, 64), warp_tile=(64, m, 16), stages=stages)
    assert rules.check(i, ARCHS["sm_90a"]) is None
    assert i.name.endswith(f"_wltma{stages}_lm1x8_swapab_cshuffle_v8x8x8_win")
    assert parse_instance_name(i.name) == i


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(variant=Variant.BACKWARD_DATA), "2D forward"),
        (dict(ndim=3), "2D forward"),
        (dict(swap_ab=False), "not a multiple of waves x warp tile"),
        (dict(tile=(96, 64, 64), warp_tile=(64, 96, 16)), "warp tile"),
        (dict(tile=(160, 128, 64)), "tile N 64"),
        (dict(waves=(8, 1, 1), math_waves=8), "not a multiple of waves x warp tile"),
        (dict(math_waves=4), "waves [4, 1, 1]"),
        (dict(epilogue=Epilogue.DEFAULT), "epilogue cshuffle"),
        (dict(stages=5), "patch buffers"),
        (dict(stages=3), "patch buffers"),
        (dict(k_batch=0), "k_batch 1"),
        (dict(tile=(256, 64, 64), warp_tile=(64, 256, 16), stages=4), "LDS"),
        (
            dict(
                pipeline=Pipeline.MULTISTAGE,
                load_waves=0,
                math_waves=0,
                swap_ab=False,
                warp_tile=(16, 8, 16),
                waves=(2, 2, 1),
            ),
            "window is a wavelet_tma specialization",
        ),
    ],
)
def test_window_refusals(change: dict, words: str) -> None:
    bad = rules.check(window(**change), ARCHS["sm_90a"])
    assert bad is not None and words in bad[1], bad


def test_window_lds_matches_the_kernel_layout() -> None:
    # detail::tma_window_smem_bytes for a 3x3 filter: 9 filter taps of 8 KB, the patches
    # (10 x (rows + 2) pixels of 128 bytes, 1024-aligned), two staging buffers, barriers, slack
    i = window(stages=4)
    patch = -(-(10 * 22 * 128) // 1024) * 1024
    assert lds_bytes(i, ARCHS["sm_90a"]) == 9 * 8192 + 4 * patch + 2 * 160 * 128 + 8 * 10 + 1024


# ------------------------------------------------- specialization window, backward_weight
def weight_window(**kw) -> KernelInstance:
    base = dict(
        variant=Variant.BACKWARD_WEIGHT,
        tile=(160, 64, 64),
        waves=(12, 1, 1),
        warp_tile=(64, 192, 16),
        math_waves=12,
        stages=4,
        epilogue=Epilogue.DEFAULT,
        specialization=Specialization.WINDOW,
        k_batch=1,
    )
    base.update(kw)
    return tma(**base)


@pytest.mark.parametrize("m, stages", [(64, 2), (64, 4), (128, 3), (160, 4), (192, 3), (256, 3)])
def test_weight_window_accepted(m: int, stages: int) -> None:
    i = weight_window(tile=(m, 64, 64), stages=stages)
    assert rules.check(i, ARCHS["sm_90a"]) is None
    assert i.name.endswith(f"_w12x1x1_wt64x192x16_wltma{stages}_lm1x12_v8x8x8_win_kb1")
    assert parse_instance_name(i.name) == i


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(ndim=1), "2D forward or backward_weight"),
        (dict(tile=(160, 128, 64)), "tile N 64"),
        (dict(tile=(96, 64, 64)), "tile M (8 x window rows)"),
        (dict(warp_tile=(64, 128, 16)), "warp tile (64, 192, 16)"),
        (dict(swap_ab=True), "no swap_ab"),
        (dict(waves=(8, 1, 1), math_waves=8), "waves [12, 1, 1]"),
        (dict(epilogue=Epilogue.CSHUFFLE), "epilogue default"),
        (dict(stages=5), "stages in (2, 3, 4)"),
        (dict(k_batch=0), "k_batch 1"),
        (dict(tile=(256, 64, 64), stages=4), "LDS"),
    ],
)
def test_weight_window_refusals(change: dict, words: str) -> None:
    bad = rules.check(weight_window(**change), ARCHS["sm_90a"])
    assert bad is not None and words in bad[1], bad


def test_weight_window_lds_matches_the_kernel_layout() -> None:
    """window_lds_bytes mirrors detail::tma_window_weight_smem_bytes: the ring of (dy window +
    1024-aligned patch) stages or the 64 x 584-float partial filter, whichever is larger."""
    ring = 4 * (160 * 128 + 28 * 1024)  # 22 x 10 pixels of 128 bytes -> 28 KB
    assert window_lds_bytes(weight_window()) == ring + 16 * 4 + 1024
    small = weight_window(tile=(64, 64, 64), stages=2)
    assert window_lds_bytes(small) == 64 * 584 * 4 + 16 * 2 + 1024
    assert (
        "kTmaWindowPartLd = 3 * 192 + 8"
        in (templates_dir() / "include/ckgen/pipeline/tma_window_weight.hpp").read_text()
    )


def test_wave_layout_12_is_only_the_weight_window() -> None:
    """waves 12 x 1 x 1 (three warpgroups) is legal on sm_90a for the backward_weight window
    alone."""
    bad = rules.check(
        tma(
            variant=Variant.BACKWARD_WEIGHT,
            tile=(192, 64, 64),
            waves=(12, 1, 1),
            warp_tile=(64, 64, 16),
            math_waves=12,
        ),
        ARCHS["sm_90a"],
    )
    assert bad is not None
    assert rules.check(weight_window(), ARCHS["sm_80"]) is not None
