"""Fused epilogues (forward): the fusion field through the rules, the tests set, the generated
instance headers, the manifest and the C++ vocabulary and kernel key."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from ckgen.model.arch import load_arch_specs
from ckgen.model.instance import KernelInstance
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import (
    BACKWARD_CHANNEL_OPS,
    GRAD_MASKS,
    Activation,
    ChannelOp,
    DataType,
    Epilogue,
    Pipeline,
    Specialization,
    Variant,
    fusion_spelling,
    parse_fusion,
)
from ckgen.space.rules import NO_CONTEXT, check
from ckgen.space.rules.common import check_fusion

from conftest import REPO, build_dispatch_host_test, cli

SM90 = load_arch_specs()["sm_90a"]
PLAIN = KernelInstance(
    variant=Variant.FORWARD,
    datatype=DataType.FP16,
    ndim=2,
    tile=(64, 64, 32),
    waves=(2, 2, 1),
    warp_tile=(16, 8, 16),
    pipeline=Pipeline.MULTISTAGE,
    stages=3,
)
FUSED = replace(PLAIN, channel_op=ChannelOp.BIAS, activation=Activation.RELU, residual=True)


def test_a_fused_forward_instance_is_valid() -> None:
    assert check(PLAIN, SM90) is None
    assert check(FUSED, SM90) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"variant": Variant.BACKWARD_DATA}, "fuse a gradient mask"),
        ({"k_batch": 0}, "needs k_batch 1"),
    ],
)
def test_fusion_rule_rejects(change: dict, reason: str) -> None:
    bad = check(replace(FUSED, **change), SM90)
    assert bad is not None and bad[0] == "fusion" and reason in bad[1], bad


STATS = replace(PLAIN, epilogue=Epilogue.CSHUFFLE, channel_op=ChannelOp.SCALE_SHIFT, stats=True)


def test_stats_is_a_cshuffle_forward_operation() -> None:
    assert check(STATS, SM90) is None
    assert check(replace(STATS, pipeline=Pipeline.BASIC, stages=1), SM90) is None
    for change, reason in (
        ({"epilogue": Epilogue.DEFAULT}, "CShuffle epilogue"),
        ({"k_batch": 0}, "needs k_batch 1"),
        ({"variant": Variant.BACKWARD_DATA, "channel_op": ChannelOp.NONE}, "forward operation"),
        # 128 threads, 96 / 8 = 12 column chunks: a thread's chunk would change between rounds
        ({"tile": (64, 96, 32), "waves": (2, 2, 1)}, "multiple of the tile's 12 column chunks"),
    ):
        bad = check(replace(STATS, **change), SM90)
        assert bad is not None and reason in bad[1], (change, bad)
    tma = replace(
        STATS,
        pipeline=Pipeline.WAVELET_TMA,
        stages=4,
        load_waves=1,
        math_waves=4,
        tile=(64, 64, 64),
        waves=(4, 1, 1),
        warp_tile=(64, 64, 16),
        vec_a=8,
        vec_b=8,
        vec_c=8,
    )
    assert check(tma, SM90) is None
    # 128 accumulators a thread (ping-pong 64 x 256): the channel sums beside them spill
    wide = replace(tma, tile=(64, 256, 64), warp_tile=(64, 256, 16), math_waves=8)
    bad = check(wide, SM90)
    assert bad is not None and "at most 64 accumulators" in bad[1], bad
    for change in ({"residual": True}, {"epilogue": Epilogue.DEFAULT}):
        bad = check(replace(tma, **change), SM90)
        assert bad is not None and "stats" in bad[1], (change, bad)


CONVERT = replace(PLAIN, vec_c=4, out_datatype=DataType.FP32)


def test_output_conversion_is_a_forward_fusion_within_a_16_byte_store() -> None:
    assert CONVERT.fusion == "to_fp32" and CONVERT.fused
    assert CONVERT.output_datatype is DataType.FP32 and PLAIN.output_datatype is DataType.FP16
    assert check(CONVERT, SM90) is None
    both = replace(CONVERT, channel_op=ChannelOp.BIAS, activation=Activation.RELU, residual=True)
    assert both.fusion == "bias_relu_residual_to_fp32" and check(both, SM90) is None
    assert check(replace(CONVERT, datatype=DataType.BF16), SM90) is None
    tma = replace(
        parse_instance_name(
            "grouped_conv_fwd_fp16_2d_t64x64x64_w4x1x1_wt64x64x16_wltma4_lm1x4_v8x8x8"
        ),
        out_datatype=DataType.BF16,
    )
    assert check(tma, SM90) is None
    assert check(replace(tma, out_datatype=DataType.FP32), SM90) is None  # pairs from registers
    for inst, reason in (
        (replace(CONVERT, vec_c=8), "vec_c at most 4"),
        (replace(CONVERT, out_datatype=DataType.FP16), "fp16 already"),
        (replace(CONVERT, variant=Variant.BACKWARD_DATA), "forward operation"),
        (
            replace(tma, out_datatype=DataType.FP32, epilogue=Epilogue.CSHUFFLE),
            "CShuffle copy writes fp16 or bf16",
        ),
        (replace(CONVERT, k_batch=0), "needs k_batch 1"),
    ):
        bad = check(inst, SM90)
        assert bad is not None and bad[0] == "fusion" and reason in bad[1], (inst.name, bad)


@pytest.mark.parametrize(
    "name",
    [
        "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x4_ofp32",
        "grouped_conv_fwd_bf16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_cshuffle_v8x8x4_ss_relu_stats_ofp32",
        "grouped_conv_fwd_fp32_2d_t64x64x16_w2x2x1_wt16x8x8_ms2_v4x4x4_obf16",
    ],
)
def test_conversion_names_parse_back(name: str) -> None:
    inst = parse_instance_name(name)
    assert inst.out_datatype is not None and inst.name == name
    assert fusion_spelling(*parse_fusion(inst.fusion)) == inst.fusion


def test_wavelet_tma_fuses_with_split_k() -> None:
    """wavelet_tma's split-K finish applies the epilogue: k_batch auto or fixed is valid there."""
    name = (
        "grouped_conv_fwd_fp16_2d_t128x128x64_w8x1x1_wt64x128x16_wltma4_lm1x8_cshuffle_v8x8x8_kb0"
    )
    tma = replace(parse_instance_name(name), channel_op=ChannelOp.BIAS, residual=True)
    for k_batch in (0, 1, 4):
        assert check(replace(tma, k_batch=k_batch), SM90) is None


def test_fusion_rule_takes_both_direct_paths_the_matrix_path_without_conversion() -> None:
    fma = replace(FUSED, pipeline=Pipeline.DIRECT, stages=1, warp_tile=(1, 1, 1))
    mma = replace(fma, warp_tile=(16, 8, 16))
    assert check_fusion(fma, SM90, NO_CONTEXT) is None
    assert check_fusion(mma, SM90, NO_CONTEXT) is None
    fp32_out = replace(fma, out_datatype=DataType.FP32, vec_c=4)
    assert check_fusion(fp32_out, SM90, NO_CONTEXT) is None
    why = check_fusion(replace(mma, out_datatype=DataType.FP32), SM90, NO_CONTEXT) or ""
    assert "direct matrix path writes its input datatype" in why


def test_window_kernel_fuses_a_channel_op_and_an_activation_only() -> None:
    window = replace(
        FUSED,
        pipeline=Pipeline.WAVELET_TMA,
        specialization=Specialization.WINDOW,
        residual=False,
        stats=False,
        out_datatype=None,
    )
    for op in (ChannelOp.BIAS, ChannelOp.SCALE_SHIFT):
        for act in (Activation.NONE, Activation.RELU, Activation.SILU):
            fused = replace(window, channel_op=op, activation=act)
            assert check_fusion(fused, SM90, NO_CONTEXT) is None
    for extra in ({"residual": True}, {"stats": True}, {"out_datatype": DataType.FP32}):
        why = check_fusion(replace(window, **extra), SM90, NO_CONTEXT) or ""
        assert "window kernel" in why and "channel op and an activation only" in why


def test_unfused_fields_default_to_none() -> None:
    assert PLAIN.channel_op is ChannelOp.NONE and PLAIN.activation is Activation.NONE
    assert not PLAIN.residual and PLAIN.fusion == "none"


def _fused_test_names() -> list[str]:
    names = cli(
        "list-instances",
        "--format",
        "names",
        "--arch",
        "sm_90a",
        "--set",
        "tests",
        "--variant",
        "forward",
    ).stdout.split()
    return [n for n in names if parse_instance_name(n).fused]


def test_the_tests_set_holds_a_handful_of_fused_instances_one_per_store_path() -> None:
    fused = [parse_instance_name(n) for n in _fused_test_names()]
    # one per store path and operation (wavelet_tma's cshuffle residual: read into registers ahead
    # of the main loop, or in the epilogue; the window kernel's staged tile; the direct matrix
    # path's channel pairs), four with stats (the CShuffle sums: 16-byte and fp32 vectors, merged
    # groups, wavelet_tma), seven conversions and relu6 on wavelet_tma's 16-bit conversion
    assert 5 <= len(fused) <= 35, [i.name for i in fused]
    assert any(i.specialization is Specialization.WINDOW for i in fused)
    paths = {(i.pipeline, i.epilogue.value, i.swap_ab, i.groups_to_merge > 1) for i in fused}
    assert (Pipeline.MULTISTAGE, "default", False, False) in paths
    assert (Pipeline.MULTISTAGE, "cshuffle", False, True) in paths
    assert (Pipeline.BASIC, "default", False, False) in paths
    assert (Pipeline.WAVELET, "default", False, False) in paths
    assert (Pipeline.WAVELET_TMA, "default", False, False) in paths
    assert (Pipeline.WAVELET_TMA, "cshuffle", False, False) in paths
    assert (Pipeline.WAVELET_TMA, "default", True, False) in paths
    assert (Pipeline.DIRECT, "default", False, False) in paths
    ops = {i.channel_op for i in fused if not i.stats} - {ChannelOp.NONE}
    assert ops == set(ChannelOp) - {ChannelOp.NONE, *BACKWARD_CHANNEL_OPS}
    acts = {i.activation for i in fused if not i.stats} - {Activation.NONE}
    assert acts == set(Activation) - {Activation.NONE, *GRAD_MASKS}
    # conversions: to fp32 and from it, and into the 16-bit types on wavelet_tma (both stores)
    conv = {(i.datatype, i.out_datatype, i.pipeline, i.epilogue.value) for i in fused}
    assert (DataType.FP16, DataType.FP32, Pipeline.MULTISTAGE, "default") in conv
    assert (DataType.FP32, DataType.BF16, Pipeline.MULTISTAGE, "default") in conv
    assert (DataType.FP16, DataType.FP32, Pipeline.DIRECT, "default") in conv
    tma = {(o, e) for d, o, p, e in conv if p is Pipeline.WAVELET_TMA and o}
    assert tma == {(DataType.FP32, "default"), (DataType.BF16, "cshuffle")}
    assert any(i.swap_ab and i.out_datatype and i.k_batch != 1 for i in fused)
    assert any(i.residual for i in fused)
    stats = [i for i in fused if i.stats]
    paths = {(i.datatype.value, i.groups_to_merge > 1) for i in stats}
    assert paths >= {("fp16", False), ("bf16", True)}
    assert {i.pipeline for i in stats} >= {Pipeline.MULTISTAGE, Pipeline.WAVELET_TMA}
    # wavelet_tma: split-K (the finish applies the epilogue), and the residual read during the main
    # loop (a 64-row ping-pong tile) or pair by pair in the epilogue (a 256-row tile)
    tma = [i for i in fused if i.pipeline is Pipeline.WAVELET_TMA]
    assert any(i.k_batch != 1 for i in tma)
    assert {i.tile[0] for i in tma if i.residual and i.epilogue.value == "cshuffle"} >= {64, 256}


def test_generate_writes_fused_headers_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cli("generate", "--arch", "sm_90a", "--set", "tests", "--variant", "forward", "-o", str(out))
    fused = _fused_test_names()
    for name in fused:
        inst = parse_instance_name(name)
        text = (out / "instances" / "forward" / f"{name}.hpp").read_text()
        assert (
            f"ckgen::epilogue::Fused<{inst.channel_op.cpp_ref}, {inst.activation.cpp_ref}," in text
        )
    plain = next(
        p for p in (out / "instances" / "forward").glob("*.hpp") if p.stem not in set(fused)
    )
    assert "Fused<" not in plain.read_text()
    doc = json.loads((out / "manifest.json").read_text())
    by_name = {i["name"]: i for i in doc["instances"]}
    one = by_name[fused[0]]
    inst = parse_instance_name(fused[0])
    assert (one["channel_op"], one["activation"], one["residual"]) == (
        inst.channel_op.value,
        inst.activation.value,
        inst.residual,
    )


def test_cxx_vocabulary_and_kernel_key_carry_the_fusion() -> None:
    inc = REPO / "templates" / "include" / "ckgen" / "core"
    vocab = (inc / "vocab.hpp").read_text()
    assert "enum class ChannelOp { Identity, Bias, ScaleShift, BiasGrad };" in vocab
    assert (
        "enum class Activation { Identity, Relu, Relu6, LeakyRelu, Silu, GeluTanh, DRelu, DRelu6, "
        "DLeakyRelu };" in vocab
    )
    key = (inc / "kernel_key.hpp").read_text()
    for field in ("ChannelOp channel_op;", "Activation activation;", "bool residual;"):
        assert field in key


def test_profiles_rank_no_fused_instance() -> None:
    from ckgen.model.problem import load_shapes
    from ckgen.tuning.profile import mark_best
    from ckgen.tuning.tune import build_db

    shapes = load_shapes(REPO / "templates" / "project" / "shapes" / "retinanet_r50fpn_n2.csv")
    row = {"shape": shapes[0].name, "variant": "forward", "datatype": "fp16", "verified": "pass"}
    rows = [
        {**row, "instance": FUSED.name, "ms": "0.5", "k_batch": "0"},
        {**row, "instance": PLAIN.name, "ms": "1.0", "k_batch": "0"},
    ]
    mark_best(rows)
    assert [r["best"] for r in rows] == ["0", "1"]
    db = build_db(rows, shapes, arch="sm_90a")
    assert [c["kernel"] for c in db["entries"][0]["ranking"]] == [PLAIN.name]


def test_fusion_arithmetic_host_only(tmp_path: Path) -> None:
    """epilogue/fusion.hpp's arithmetic on the host (tests/host/fusion_ops.cpp): for every channel
    op, activation and residual, fusion::apply equals y = act(op(acc) + beta * residual) written
    out in double, both with its channel vectors read per call and read once into
    fusion::ChannelVals (as the direct paths do); a ChannelVals load of channels that do not
    exist reads nothing and gives zeros."""
    exe = build_dispatch_host_test("fusion_ops", tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok apply equals the definition") == 30, out.stdout
