"""Instance names: every instance of the whole space round-trips name -> instance, names are
[a-z0-9_] only, and names work as glob filters."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckgen.config.schema import FIELDS
from ckgen.model.arch import load_arch_specs
from ckgen.model.instance import INSTANCE_FIELDS, KernelInstance
from ckgen.model.limits import (
    GROUPS_TO_MERGE,
    MAX_K_BATCH,
    MAX_STAGES,
    VECTOR_SIZES,
    WAVELET_RATIOS,
)
from ckgen.model.naming import NAME_RE, instance_name, parse_instance_name
from ckgen.model.vocab import (
    SINGLE_STAGE_PIPELINES,
    Activation,
    ChannelOp,
    DataType,
    Epilogue,
    Pipeline,
    Reduction,
    Scheduler,
    Specialization,
    Stage,
    Variant,
)
from ckgen.space.expand import Filters, default_config_paths, expand, load_configs

from conftest import ALL_ARCHS, cli

NAME_PATTERN = re.compile(r"^[a-z0-9_]+$")


def _int_range(field: str) -> tuple[int, int]:
    """The (lo, hi) a config file accepts for an integer field, read from its parser's error."""
    parse = FIELDS[field].parse
    try:
        parse(-(10**9))
    except ValueError as ex:
        m = re.search(r"outside (\d+)\.\.(\d+)", str(ex))
        assert m, ex
        return int(m.group(1)), int(m.group(2))
    raise AssertionError(f"{field} accepted a huge negative number")


def _triple_range(field: str) -> tuple[int, int]:
    parse = FIELDS[field].parse
    lo = 1
    hi = lo
    while hi < 100000:  # largest accepted value
        try:
            parse([hi * 2, 1, 1])
        except ValueError:
            break
        hi *= 2
    # exact upper bound by bisection
    a, b = hi, hi * 2
    while a + 1 < b:
        mid = (a + b) // 2
        try:
            parse([mid, 1, 1])
            a = mid
        except ValueError:
            b = mid
    return lo, a


TILE = _triple_range("tile")
WAVES = _triple_range("waves")
WARP_TILE = _triple_range("warp_tile")


def triples(lo_hi: tuple[int, int]) -> st.SearchStrategy[tuple[int, int, int]]:
    x = st.integers(*lo_hi)
    return st.tuples(x, x, x)


@st.composite
def instances(draw: st.DrawFn) -> KernelInstance:
    """Any instance the configs can describe and the structural rules allow: every field drawn
    from the vocabulary or the allowed set of ckgen.model.limits / ckgen.config.schema."""
    variant = draw(st.sampled_from(list(Variant)))
    pipeline = draw(st.sampled_from(list(Pipeline)))
    # The name carries stages only for multi-stage pipelines (not basic / direct) and load/math
    # waves only for wavelet: the rules ('pipeline', 'wavelet') reject everything else.
    stages = 1 if pipeline in SINGLE_STAGE_PIPELINES else draw(st.integers(2, MAX_STAGES))
    waves = draw(triples(WAVES))
    if pipeline is Pipeline.WAVELET:
        load, math = draw(st.sampled_from(WAVELET_RATIOS))
    else:
        load, math = 0, 0
    bw = variant is Variant.BACKWARD_WEIGHT
    return KernelInstance(
        variant=variant,
        datatype=draw(st.sampled_from(list(DataType))),
        ndim=draw(st.sampled_from([1, 2, 3])),
        tile=draw(triples(TILE)),
        waves=waves,
        warp_tile=draw(triples(WARP_TILE)),
        pipeline=pipeline,
        stages=stages,
        scheduler=draw(st.sampled_from(list(Scheduler))),
        load_waves=load,
        math_waves=math,
        epilogue=draw(st.sampled_from(list(Epilogue))),
        swap_ab=draw(st.booleans()),
        vec_a=draw(st.sampled_from(VECTOR_SIZES)),
        vec_b=draw(st.sampled_from(VECTOR_SIZES)),
        vec_c=draw(st.sampled_from(VECTOR_SIZES)),
        specialization=draw(st.sampled_from(list(Specialization))),
        groups_to_merge=draw(st.sampled_from(GROUPS_TO_MERGE)),
        k_batch=draw(st.integers(0, MAX_K_BATCH)) if bw else 1,
        reduction=draw(st.sampled_from(list(Reduction))) if bw else Reduction.SPLITK,
        persistent=draw(st.booleans()) if bw else False,
        stage=draw(st.sampled_from(list(Stage))) if bw else Stage.ONE,
        channel_op=draw(st.sampled_from(list(ChannelOp))),
        activation=draw(st.sampled_from(list(Activation))),
        residual=draw(st.booleans()),
        stats=draw(st.booleans()),
        out_datatype=draw(st.sampled_from([None, *DataType])),
    )


@settings(max_examples=3000, deadline=None)
@given(instances())
def test_name_round_trips_over_the_whole_space(inst: KernelInstance) -> None:
    name = instance_name(inst)
    assert NAME_PATTERN.match(name), name
    assert NAME_RE.match(name)
    back = parse_instance_name(name)
    assert back == inst
    for f in INSTANCE_FIELDS:
        assert getattr(back, f) == getattr(inst, f), f
    assert instance_name(back) == name


@settings(max_examples=500, deadline=None)
@given(instances(), instances())
def test_different_instances_have_different_names(a: KernelInstance, b: KernelInstance) -> None:
    assert (a == b) == (instance_name(a) == instance_name(b))


def test_every_field_is_drawn() -> None:
    """The strategy above builds KernelInstance with every field explicitly (a new field
    must be added to it)."""
    from pathlib import Path

    text = Path(__file__).read_text()
    src = text[text.index("def instances(") : text.index("def test_name_round_trips")]
    for f in INSTANCE_FIELDS:
        assert f"{f}=" in src, f"the hypothesis strategy does not draw {f}"


@pytest.mark.parametrize("arch", ALL_ARCHS)
@pytest.mark.parametrize("config_set", ["default", "tests", "profiler"])
def test_every_shipped_instance_and_rejection_round_trips(arch: str, config_set: str) -> None:
    spec = load_arch_specs()[arch]
    exp = expand(load_configs(default_config_paths(list(Variant), config_set)), spec, Filters())
    for inst in exp.instances + [r.instance for r in exp.rejected]:
        assert NAME_PATTERN.match(inst.name), inst.name
        assert parse_instance_name(inst.name) == inst


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v8x8x8",
        "grouped_conv_up_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v8x8x8",
        "grouped_conv_fwd_fp8_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v8x8x8",
        "grouped_conv_fwd_fp16_4d_t64x64x32_w2x2x1_wt16x8x16_basic_v8x8x8",
        "grouped_conv_fwd_fp16_2d_t64x64_w2x2x1_wt16x8x16_basic_v8x8x8",
        "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v8x8x8_extra",
        "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v8x8x8_gm1",  # not canonical
        "grouped_conv_fwd_fp16_2d_t064x64x32_w2x2x1_wt16x8x16_basic_v8x8x8",  # not canonical
        "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms_v8x8x8",
        # direct has no stage count
        "grouped_conv_fwd_fp16_2d_t64x64x1_w4x1x1_wt1x1x1_direct1_v8x8x8",
        "GROUPED_CONV_FWD_FP16_2D_T64X64X32_W2X2X1_WT16X8X16_BASIC_V8X8X8",
    ],
)
def test_parse_name_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_instance_name(bad)


def _names(*args: str) -> list[str]:
    return cli("list-instances", "--format", "names", *args).stdout.split()


def test_kernels_glob_filters_list_and_generate(tmp_path) -> None:
    every = _names("--arch", "sm_90a", "--set", "profiler")
    glob = "grouped_conv_bwd_data_fp16_*"
    picked = _names("--arch", "sm_90a", "--set", "profiler", "--kernels", glob)
    want = [n for n in every if fnmatch.fnmatchcase(n, glob)]
    assert picked == want and 0 < len(picked) < len(every)
    assert all(n.startswith("grouped_conv_bwd_data_fp16_") for n in picked)
    # several globs are a union
    two = _names(
        "--arch", "sm_90a", "--set", "profiler", "--kernels", glob, "--kernels", "*_fwd_bf16_1d_*"
    )
    assert set(two) == set(want) | {n for n in every if fnmatch.fnmatchcase(n, "*_fwd_bf16_1d_*")}
    # generate honours the same filter
    out = tmp_path / "gen"
    cli("generate", "--arch", "sm_90a", "--set", "tests", "--kernels", glob, "-o", str(out), "-q")
    tests_names = [
        n for n in _names("--arch", "sm_90a", "--set", "tests") if fnmatch.fnmatchcase(n, glob)
    ]
    headers = sorted(p.stem for p in (out / "instances").rglob("*.hpp"))
    assert headers == sorted(tests_names) and headers


UNFUSED = KernelInstance(
    variant=Variant.FORWARD,
    datatype=DataType.FP16,
    ndim=2,
    tile=(128, 128, 32),
    waves=(2, 2, 1),
    warp_tile=(16, 8, 16),
    pipeline=Pipeline.MULTISTAGE,
    stages=3,
)


def test_unfused_names_carry_no_fusion_token() -> None:
    assert UNFUSED.name == "grouped_conv_fwd_fp16_2d_t128x128x32_w2x2x1_wt16x8x16_ms3_v8x8x8"
    assert UNFUSED.fusion == "none" and not UNFUSED.fused


@pytest.mark.parametrize(
    ("fusion", "suffix"),
    [
        ("bias", "_bias"),
        ("bias_relu", "_bias_relu"),
        ("bias_relu6", "_bias_relu6"),
        ("bias_leaky_relu", "_bias_lrelu"),
        ("bias_silu", "_bias_silu"),
        ("bias_gelu_tanh", "_bias_gelutanh"),
        ("scale_shift_relu", "_ss_relu"),
        ("scale_shift_relu_residual", "_ss_relu_res"),
        ("relu_residual", "_relu_res"),
        ("residual", "_res"),
        ("stats", "_stats"),
        ("scale_shift_relu_stats", "_ss_relu_stats"),
        ("bias_relu_residual_stats", "_bias_relu_res_stats"),
        ("to_fp32", "_ofp32"),
        ("bias_relu_to_bf16", "_bias_relu_obf16"),
        ("scale_shift_relu_residual_stats_to_fp32", "_ss_relu_res_stats_ofp32"),
    ],
)
def test_fusion_yaml_to_name_and_back(fusion: str, suffix: str) -> None:
    from dataclasses import replace

    from ckgen.model.vocab import parse_fusion

    op, act, res, stats, out = FIELDS["fusion"].parse(fusion)
    assert (op, act, res, stats, out) == parse_fusion(fusion)
    inst = replace(
        UNFUSED, channel_op=op, activation=act, residual=res, stats=stats, out_datatype=out
    )
    assert inst.name == UNFUSED.name + suffix
    assert inst.fusion == fusion
    back = parse_instance_name(inst.name)
    assert back == inst and back.fusion == fusion


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "bias_",
        "relu_bias",
        "bias_bias",
        "residual_relu",
        "relu6x",
        "gelu",
        "to_fp8",
        "to_fp32_bias",
        "bias_to",
        3,
        None,
    ],
)
def test_bad_fusion_values_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        FIELDS["fusion"].parse(bad)
