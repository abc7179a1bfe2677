"""The direct (depthwise) pipeline: names, the rules that judge it, its instances in the shipped
sets, and the C++ side it needs (make_kernel dispatch, check-isa's non-matrix check)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from ckgen.model.arch import load_arch_specs
from ckgen.model.instance import KernelInstance
from ckgen.model.naming import instance_name, parse_instance_name
from ckgen.model.vocab import (
    DataType,
    Epilogue,
    MathUnit,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
)
from ckgen.resources import templates_dir
from ckgen.space import rules
from ckgen.space.estimate import lds_bytes
from ckgen.space.estimate.direct import (
    direct_mma_accumulators,
    direct_mma_bwd_ring,
    direct_mma_stages,
    direct_mma_weight_bytes,
)
from ckgen.space.estimate.registers import direct_register_estimate
from ckgen.space.expand import Filters, default_config_paths, expand, load_configs
from ckgen.space.forms import math_unit

from conftest import ALL_ARCHS, build_dispatch_host_test

ARCHS = load_arch_specs()


def direct(
    variant: Variant = Variant.FORWARD, datatype: DataType = DataType.FP16, vec: int = 8, **kw
) -> KernelInstance:
    base = dict(
        variant=variant,
        datatype=datatype,
        ndim=2,
        tile=(64, 64, 1),
        waves=(4, 1, 1),
        warp_tile=(1, 1, 1),
        pipeline=Pipeline.DIRECT,
        vec_a=vec,
        vec_b=vec,
        vec_c=vec,
        k_batch=0 if variant is Variant.BACKWARD_WEIGHT else 1,
    )
    base.update(kw)
    return KernelInstance(**base)  # type: ignore[arg-type]


def test_name_has_a_stageless_direct_token_and_round_trips() -> None:
    i = direct()
    assert instance_name(i) == "grouped_conv_fwd_fp16_2d_t64x64x1_w4x1x1_wt1x1x1_direct_v8x8x8"
    assert parse_instance_name(i.name) == i
    bw = direct(Variant.BACKWARD_WEIGHT, tile=(32, 64, 1), stage=Stage.TWO)
    assert bw.name.endswith("_direct_v8x8x8_2st") and parse_instance_name(bw.name) == bw
    with pytest.raises(ValueError):
        parse_instance_name(i.name.replace("_direct_", "_direct2_"))


@pytest.mark.parametrize("arch", ALL_ARCHS)
@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize(
    "datatype,vec", [(DataType.FP16, 8), (DataType.BF16, 8), (DataType.FP32, 4), (DataType.FP32, 1)]
)
def test_direct_instances_are_valid_on_every_target(
    arch: str, variant: Variant, datatype: DataType, vec: int
) -> None:
    tile = (32, 64, 1) if variant is Variant.BACKWARD_WEIGHT else (64, 64, 1)
    i = direct(variant, datatype, vec, tile=(tile[0], 8 * vec, 1))
    assert rules.check(i, ARCHS[arch]) is None
    assert math_unit(i, ARCHS[arch]) is MathUnit.FMA


@pytest.mark.parametrize(
    "change,rule,words",
    [
        (
            dict(warp_tile=(32, 32, 8)),
            "direct_fields",
            "warp_tile must be [1, 1, 1] (FMA) or [16, 8, 16]",
        ),
        (
            dict(warp_tile=(16, 8, 16)),
            "direct_fields",
            "serves C = K = (8, 16, 32) per group in forward / backward_data: tile K must be one",
        ),
        (dict(waves=(2, 2, 1)), "direct_fields", "waves must be [w, 1, 1]"),
        (
            dict(tile=(64, 64, 32)),
            "direct_fields",
            "tile K is the channels per group (C = K) served, one of (1, 2, 4, 8)",
        ),
        (dict(tile=(64, 64, 3)), "direct_fields", "one of (1, 2, 4, 8)"),
        (dict(epilogue=Epilogue.CSHUFFLE), "direct_fields", "epilogue must be default"),
        (
            dict(specialization=Specialization.FILTER1X1_PAD0),
            "direct_fields",
            "specialization must be default",
        ),
        (dict(groups_to_merge=8), "direct_fields", "groups_to_merge must be 1"),
        (dict(scheduler=Scheduler.INTERWAVE), "direct_fields", "scheduler must be intrawave"),
        (dict(k_batch=0), "direct_fields", "k_batch must be 1"),
        (dict(stage=Stage.TWO), "direct_fields", "stage must be one"),
        (dict(vec_a=4), "direct_layout", "vector must be [v, v, v]"),
        (dict(tile=(64, 60, 1)), "direct_layout", "not a multiple of the vector"),
        (
            dict(tile=(64, 64, 8), vec_a=4, vec_b=4, vec_c=4),
            "direct_layout",
            "vector 4 does not hold whole groups of 8",
        ),
        (dict(tile=(8, 64, 1)), "direct_layout", "not a multiple of the 16 pixel rows"),
        (dict(tile=(256, 64, 1)), "direct_layout", "16 pixels per thread > 8"),
        (dict(stages=2), "pipeline", "direct pipeline has exactly one stage"),
    ],
)
def test_fields_that_do_not_apply_are_rejected_with_a_reason(
    change: dict, rule: str, words: str
) -> None:
    bad = rules.check(replace(direct(), **change), ARCHS["sm_90a"])
    assert bad is not None and bad[0] == rule and words in bad[1], bad


@pytest.mark.parametrize("arch", ALL_ARCHS)
@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize("cg", [2, 4, 8])
def test_small_group_instances_are_valid_on_every_target(
    arch: str, variant: Variant, cg: int
) -> None:
    """tile K = channels per group (C = K) served. forward / backward_data hold the block's 3x3
    filter in shared memory as fp32 (taps x cg rows of channels + 4); backward_weight sums one tap's
    cg entries at a time through [pixel rows][entries][channels + 4] floats, as many entries a pass
    as fit 5,120 floats (ptxas sm_90a: 17,408 bytes for 64 x 64 x 4 v8 at 16 pixel rows)."""
    i = direct(variant, tile=(32, 64, cg))
    assert rules.check(i, ARCHS[arch]) is None
    rows = 4 * ARCHS[arch].warp_size * 8 // 64
    lds = (
        rows * min(5120 // (rows * 68), cg) * 68 * 4
        if variant is Variant.BACKWARD_WEIGHT
        else 9 * cg * (64 + 4) * 4
    )
    assert lds_bytes(i, ARCHS[arch]) == lds
    assert (
        instance_name(i).endswith(f"_2d_t32x64x{cg}_w4x1x1_wt1x1x1_direct_v8x8x8")
        and parse_instance_name(i.name) == i
    )


def test_direct_backward_weight_rules() -> None:
    a = ARCHS["sm_90a"]
    ok = direct(Variant.BACKWARD_WEIGHT, tile=(32, 64, 1))
    assert (
        rules.check(ok, a) is None
        and rules.check(replace(ok, stage=Stage.TWO, k_batch=64), a) is None
    )
    bad = rules.check(replace(ok, reduction=Reduction.STREAMK_LINEAR), a)
    assert bad is not None and "splits its reduction with k_batch" in bad[1]
    # beyond 2 pixels per thread the 3x3 filter takes the window path: 4 pixels hold the 9 x 8
    # accumulators, 4 gradients and three filter rows of 9 columns (estimate 242, ptxas 204-213);
    # 7 and 8 pixels do not (ptxas spills at W stride 2)
    assert rules.check(replace(ok, tile=(64, 64, 1)), a) is None
    assert direct_register_estimate(replace(ok, tile=(64, 64, 1)), a) == 242
    for pixels in (112, 128):
        bad = rules.check(replace(ok, tile=(pixels, 64, 1)), a)
        assert bad is not None and bad[0] == "direct_resources" and "register estimate" in bad[1]
    # the block sums: 16 pixel rows x 4 of the 9 taps a pass x (64 + 4) floats; 64 x 64 x 1 v4 at 8
    # rows takes all 9 taps in one pass (ptxas sm_90a: 19,584 bytes)
    assert lds_bytes(ok, a) == 16 * 4 * 68 * 4 and lds_bytes(direct(), a) == 0
    assert lds_bytes(replace(ok, tile=(64, 64, 1), vec_a=4, vec_b=4, vec_c=4), a) == 19584


def test_gemm_rules_do_not_judge_direct_and_direct_rules_do_not_judge_gemm() -> None:
    gemm = [r.id for r in rules.RULES if r.applies == rules.GEMM]
    only_direct = [r.id for r in rules.RULES if r.applies == rules.DIRECT]
    assert {"warp_tile", "divisible", "vectors", "lds", "registers", "implemented"} <= set(gemm)
    assert set(only_direct) == {"direct_fields", "direct_layout", "direct_resources"}
    g = KernelInstance(
        variant=Variant.FORWARD,
        datatype=DataType.FP16,
        ndim=2,
        tile=(64, 64, 32),
        waves=(2, 2, 1),
        warp_tile=(16, 8, 16),
    )
    assert (
        rules.check(g, ARCHS["sm_90a"]) is None
    )  # a GEMM instance is not asked for warp_tile [1, 1, 1]


@pytest.mark.parametrize("config_set", ["default", "tests"])
@pytest.mark.parametrize("arch", ["sm_90a", "gfx942", "gfx1100"])
def test_shipped_sets_hold_direct_instances_for_every_variant_and_datatype(
    config_set: str, arch: str
) -> None:
    exp = expand(
        load_configs(default_config_paths(list(Variant), config_set)), ARCHS[arch], Filters()
    )
    got = {(i.variant, i.datatype) for i in exp.instances if i.pipeline is Pipeline.DIRECT}
    assert got == {(v, d) for v in Variant for d in DataType}
    # the 16-byte vector instances are there for the 16-bit types
    assert any(
        i.pipeline is Pipeline.DIRECT and i.vec_c == 8 and i.datatype is DataType.BF16
        for i in exp.instances
    )


def test_cpp_side_dispatches_direct_and_check_isa_knows_its_kernel() -> None:
    from ckgen.runtime import isa

    inc = templates_dir() / "include" / "ckgen"
    kernel = (inc / "kernel/conv_kernel.hpp").read_text()
    assert "Pipeline::Direct" in kernel and "DepthwiseKernel<Cfg>" in kernel
    assert "depthwise_conv_kernel" in (inc / "pipeline/depthwise.hpp").read_text()
    assert "depthwise_conv_kernel" in isa.MAIN_KERNELS
    assert "Pipeline::Direct" in (inc / "dispatch/cost_model.hpp").read_text()
    syms = [
        "_ZN5ckgen21depthwise_conv_kernelINS_9generated3abcELi0ELi0ELi0ELNS_10DirectPathE0EEEvNS_10DirectArgsE",
        "_ZN5ckgen21depthwise_conv_kernelINS_9generated3abcELi1ELi3ELi3ELNS_10DirectPathE1EEEvNS_10DirectArgsE",
        "_ZN5ckgen19grouped_conv_kernelINS_9generated3xyzEEEvNS_8ConvArgsE",
    ]
    assert isa._kernel_symbols(syms, "abc") == sorted(syms[:2])
    assert isa._kernel_symbol(syms, "xyz") == syms[2]


def mma_direct(
    variant: Variant = Variant.FORWARD, datatype: DataType = DataType.FP16, **kw
) -> KernelInstance:
    return direct(variant, datatype, 8, **{"tile": (64, 64, 8), "warp_tile": (16, 8, 16), **kw})


@pytest.mark.parametrize("variant", [Variant.FORWARD, Variant.BACKWARD_DATA])
@pytest.mark.parametrize("datatype", [DataType.FP16, DataType.BF16])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_matrix_path_is_valid_on_mma_sync_targets(
    variant: Variant, datatype: DataType, arch: str
) -> None:
    i = mma_direct(variant, datatype)
    assert (
        i.name.endswith("_t64x64x8_w4x1x1_wt16x8x16_direct_v8x8x8")
        and parse_instance_name(i.name) == i
    )
    assert rules.check(i, ARCHS[arch]) is None
    assert math_unit(i, ARCHS[arch]) is MathUnit.MMA_SYNC
    # stages x (64 + 16) columns x (64 channels x 2 bytes + 16 bytes of padding) + 9 taps x 64 x
    # 8 x 2 bytes of weights: DirectMmaTraits::kSmemBytes
    assert lds_bytes(i, ARCHS[arch]) == 3 * 80 * 144 + 9216
    assert (
        lds_bytes(replace(i, tile=(32, 64, 8), waves=(2, 1, 1)), ARCHS[arch]) == 4 * 48 * 144 + 9216
    )
    # 16-pixel blocks stage 16 + 24 columns (a stride-2 row): two stages beside 128 channels
    assert (
        lds_bytes(replace(i, tile=(16, 128, 8), waves=(1, 1, 1)), ARCHS[arch])
        == 2 * 40 * 272 + 18432
    )
    # 144 columns of 144 bytes: one stage beside the weights, refused
    bad = rules.check(replace(i, tile=(128, 64, 8), waves=(4, 1, 1)), ARCHS[arch])
    assert (
        bad is not None and bad[0] == "direct_layout" and "two stages of 20736 bytes" in bad[1]
    ), bad


@pytest.mark.parametrize("arch", [a for a in ALL_ARCHS if not a.startswith("sm_")])
def test_matrix_path_is_refused_where_there_is_no_mma_sync(arch: str) -> None:
    bad = rules.check(mma_direct(), ARCHS[arch])
    assert bad is not None and bad[0] == "direct_fields" and "mma.sync path" in bad[1], bad


@pytest.mark.parametrize(
    "change,rule,words",
    [
        (
            dict(datatype=DataType.FP32, vec_a=4, vec_b=4, vec_c=4),
            "direct_fields",
            "mma.sync path: not for fp32",
        ),
        (dict(tile=(64, 64, 4)), "direct_fields", "tile K must be one of them"),
        (dict(tile=(64, 32, 8)), "direct_layout", "not a multiple of 64 channels"),
        (dict(tile=(48, 64, 8)), "direct_layout", "4 warps must divide the 48 / 16 pixel tiles"),
        (dict(tile=(16, 64, 8), waves=(16, 1, 1)), "direct_layout", "splits the 8 groups evenly"),
        (
            dict(tile=(128, 128, 8), waves=(8, 1, 1)),
            "direct_layout",
            "do not fit 49152 bytes of static shared memory",
        ),
    ],
)
def test_matrix_path_fields_are_checked(change: dict, rule: str, words: str) -> None:
    bad = rules.check(replace(mma_direct(), **change), ARCHS["sm_90a"])
    assert bad is not None and bad[0] == rule and words in bad[1], bad


def mma_weight(cg: int = 8, datatype: DataType = DataType.FP16, **kw) -> KernelInstance:
    return direct(
        Variant.BACKWARD_WEIGHT,
        datatype,
        8,
        **{"tile": (32, 64, cg), "waves": (8, 1, 1), "warp_tile": (16, 8, 16), **kw},
    )


@pytest.mark.parametrize("cg", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("datatype", [DataType.FP16, DataType.BF16])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_matrix_backward_weight_takes_every_group_size(
    cg: int, datatype: DataType, arch: str
) -> None:
    i = mma_weight(cg, datatype=datatype, stage=Stage.TWO)
    assert (
        i.name.endswith(f"_t32x64x{cg}_w8x1x1_wt16x8x16_direct_v8x8x8_2st")
        and parse_instance_name(i.name) == i
    )
    assert rules.check(i, ARCHS[arch]) is None
    assert math_unit(i, ARCHS[arch]) is MathUnit.MMA_SYNC
    # a ring of source rows ((M + 16) columns x 64 channels x 2 bytes) beside S buffers of M
    # gradient pixels within 112 KB: DirectMmaBwdTraits (M 32: S 8, 13 rows; 16: 8, 19 rows of
    # 40 columns; 64: 4, 8)
    assert direct_mma_bwd_ring(i) == (8, 13)
    # (+ one int per buffer, the unit's first ring row: 128 bytes of static smem by ptxas -v)
    assert lds_bytes(i, ARCHS[arch]) == 13 * 48 * 128 + 8 * 32 * 128 + 128 == 112768
    assert (
        lds_bytes(replace(i, tile=(16, 64, cg)), ARCHS[arch]) == 19 * 40 * 128 + 8 * 16 * 128 + 128
    )
    assert direct_mma_bwd_ring(replace(i, tile=(64, 64, cg))) == (4, 8)
    # one chunk per warp: 20 accumulators (64 registers by ptxas, no spills); two: 40; groups of
    # 16 / 32 channels: each chunk's products with the 2 / 4 chunks of its group
    partners = max(1, cg // 8)
    assert direct_mma_accumulators(i) == 20 * partners
    assert direct_mma_accumulators(replace(i, waves=(4, 1, 1))) == 40 * partners


@pytest.mark.parametrize("variant", [Variant.FORWARD, Variant.BACKWARD_WEIGHT])
def test_groups_of_16_channels_are_the_matrix_paths_alone(variant: Variant) -> None:
    i = direct(variant, DataType.FP16, 8, tile=(32, 64, 16), waves=(8, 1, 1))
    bad = rules.check(i, ARCHS["sm_90a"])
    assert bad is not None and bad[0] == "direct_fields", bad
    assert "one of (1, 2, 4, 8) (1 = depthwise; 16 and 32 on the matrix path only)" in bad[1]


@pytest.mark.parametrize("variant", [Variant.FORWARD, Variant.BACKWARD_DATA])
@pytest.mark.parametrize("cg", [16, 32])
def test_matrix_forward_and_backward_data_take_wide_groups(variant: Variant, cg: int) -> None:
    # weights: 9 taps x 64 rows x cg channels beside the staged rows within 48 KB; a warp takes
    # whole groups (two / four chunks)
    i = direct(variant, DataType.FP16, 8, tile=(16, 64, cg), waves=(1, 1, 1), warp_tile=(16, 8, 16))
    assert rules.check(i, ARCHS["sm_90a"]) is None
    assert direct_mma_weight_bytes(i) == 9 * 64 * cg * 2
    assert direct_mma_stages(i) == (4 if cg == 16 else 2)
    bad = rules.check(replace(i, waves=(8, 1, 1)), ARCHS["sm_90a"])
    assert bad is not None and f"must be whole groups of {cg} channels" in bad[1], bad
    bad = rules.check(replace(i, tile=(64, 64, 32)), ARCHS["sm_90a"])
    assert cg == 16 or (bad is not None and "two stages" in bad[1]), bad


@pytest.mark.parametrize(
    "change,words",
    [
        (dict(waves=(3, 1, 1)), "3 warps must split the 8 channel chunks"),
        (dict(waves=(1, 1, 1)), "32 threads must be a multiple of tile N=64"),
        (dict(tile=(24, 64, 8)), "tile M=24 must be a multiple of 16"),
        (dict(tile=(32, 96, 8)), "not a multiple of 64 channels"),
        (
            dict(tile=(128, 64, 8)),
            "two gradient buffers and 6 source rows of 18432 bytes do not fit 114688",
        ),
        (dict(vec_a=4, vec_b=4, vec_c=4), "vector must be [8, 8, 8]"),
    ],
)
def test_matrix_backward_weight_layout_is_checked(change: dict, words: str) -> None:
    bad = rules.check(replace(mma_weight(), **change), ARCHS["sm_90a"])
    assert bad is not None and bad[0] == "direct_layout" and words in bad[1], bad


def test_matrix_path_is_in_the_default_and_test_sets_for_nvidia_only() -> None:
    for variant in (Variant.FORWARD, Variant.BACKWARD_DATA, Variant.BACKWARD_WEIGHT):
        for config_set in ("default", "tests"):
            for arch in ("sm_90a", "gfx942"):
                cfgs = load_configs(default_config_paths([variant], config_set))
                names = [i.name for i in expand(cfgs, ARCHS[arch], Filters()).instances]
                mma = [n for n in names if "_wt16x8x16_direct_" in n]
                assert bool(mma) == (arch == "sm_90a"), (variant, config_set, arch, mma)


def test_phased_backward_data_plan_host_only(tmp_path: Path) -> None:
    """The matrix path's strided backward_data plan without a GPU: tests/host/direct_phases.cpp.
    Over strides 1-4, dilations 1-3 and filters of 1-11 taps, a W phase's stride class holds exactly
    the taps that reach its pixels, its staged dy columns fit what is_supported checks, and the
    bands of H and W phases cover every dx row and phase exactly once; and the FMA path's cost
    estimate of a launch of fewer blocks than compute units issues on those units alone."""
    exe = build_dispatch_host_test("direct_phases", tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok ") == 4, out.stdout
