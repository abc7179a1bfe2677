"""Backward fusions: gradient masks (drelu, drelu6, dleaky_relu) multiplied into dy from the saved
forward output, and bias_grad (db) for backward_weight, through the vocabulary, names, rules, the
tests set, the generated instance headers, the manifest, the C++ vocabulary and the runtime's
operands."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_wavelet_tma import tma

from ckgen.model.arch import load_arch_specs
from ckgen.model.epilogue import C_EPILOGUE_ARGS_FIELDS, Epilogue
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import TMA_BIAS_GRAD_ONES_BYTES
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import (
    GRAD_MASKS,
    Activation,
    ChannelOp,
    DataType,
    Pipeline,
    Reduction,
    Specialization,
    Variant,
    parse_fusion,
)
from ckgen.space.estimate.lds import lds_bytes
from ckgen.space.rules import check

from conftest import REPO, cli

SM90 = load_arch_specs()["sm_90a"]
BWD_DATA = KernelInstance(
    variant=Variant.BACKWARD_DATA,
    datatype=DataType.FP16,
    ndim=2,
    tile=(64, 64, 32),
    waves=(2, 2, 1),
    warp_tile=(16, 8, 16),
    pipeline=Pipeline.BASIC,
    activation=Activation.DRELU,
)
BWD_WEIGHT = replace(
    BWD_DATA,
    variant=Variant.BACKWARD_WEIGHT,
    channel_op=ChannelOp.BIAS_GRAD,
    k_batch=0,
)


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("drelu", (ChannelOp.NONE, Activation.DRELU, False)),
        ("drelu6", (ChannelOp.NONE, Activation.DRELU6, False)),
        ("dleaky_relu", (ChannelOp.NONE, Activation.DLEAKY_RELU, False)),
        ("bias_grad", (ChannelOp.BIAS_GRAD, Activation.NONE, False)),
        ("bias_grad_drelu6", (ChannelOp.BIAS_GRAD, Activation.DRELU6, False)),
    ],
)
def test_backward_fusion_spellings_parse_and_name(text: str, parts: tuple) -> None:
    assert parse_fusion(text) == (*parts, False, None)
    assert Epilogue.parse(text).fusion == text
    inst = replace(BWD_WEIGHT, channel_op=parts[0], activation=parts[1])
    assert parse_instance_name(inst.name) == inst
    assert inst.fusion == text


def test_every_mask_is_the_gradient_of_a_forward_activation() -> None:
    assert set(GRAD_MASKS) == {Activation.DRELU, Activation.DRELU6, Activation.DLEAKY_RELU}
    assert all(f"d{fwd.value}" == m.value for m, fwd in GRAD_MASKS.items())


def test_backward_fusions_are_valid_on_the_basic_pipeline() -> None:
    assert check(BWD_DATA, SM90) is None
    assert check(BWD_WEIGHT, SM90) is None
    assert check(replace(BWD_WEIGHT, activation=Activation.NONE), SM90) is None
    assert check(replace(BWD_DATA, k_batch=0), SM90) is None  # the mask is applied per split


def test_a_mask_alone_is_valid_on_the_multistage_pipeline_with_y_beside_dy() -> None:
    ms = replace(BWD_DATA, pipeline=Pipeline.MULTISTAGE, stages=3)
    assert check(ms, SM90) is None
    mask = replace(BWD_WEIGHT, pipeline=Pipeline.MULTISTAGE, stages=3, channel_op=ChannelOp.NONE)
    assert check(mask, SM90) is None
    plain = replace(ms, activation=Activation.NONE)
    tm, _, tk = ms.tile
    a_tile = tm * (tk + max(16 // 2, ms.vec_a)) * 2  # one K-major dy tile, fp16, padded rows
    assert lds_bytes(ms, SM90) - lds_bytes(plain, SM90) == ms.stages * a_tile


@pytest.mark.parametrize(
    ("inst", "reason"),
    [
        (replace(BWD_DATA, variant=Variant.FORWARD), "backward operations"),
        (replace(BWD_DATA, channel_op=ChannelOp.BIAS_GRAD), "backward_weight operation"),
        (replace(BWD_DATA, activation=Activation.RELU), "fuse a gradient mask"),
        (replace(BWD_DATA, channel_op=ChannelOp.BIAS), "forward epilogue operation"),
        (replace(BWD_DATA, residual=True), "fuse a gradient mask"),
        (
            replace(BWD_WEIGHT, pipeline=Pipeline.MULTISTAGE, stages=3),
            "gradient mask alone",
        ),
        (
            replace(BWD_WEIGHT, reduction=Reduction.STREAMK_LINEAR, k_batch=0),
            "reduction splitk",
        ),
    ],
)
def test_backward_fusion_rule_rejects(inst: KernelInstance, reason: str) -> None:
    bad = check(inst, SM90)
    assert bad is not None and bad[0] == "fusion" and reason in bad[1], bad


TMA_WEIGHT = tma(Variant.BACKWARD_WEIGHT, k_batch=0, channel_op=ChannelOp.BIAS_GRAD)


def test_wavelet_tma_sums_bias_grad_in_backward_weights_default_form() -> None:
    assert check(replace(TMA_WEIGHT, channel_op=ChannelOp.NONE), SM90) is None
    assert check(TMA_WEIGHT, SM90) is None
    for bad_inst in (
        replace(TMA_WEIGHT, activation=Activation.DRELU),
        replace(TMA_WEIGHT, channel_op=ChannelOp.NONE, activation=Activation.DRELU),
        replace(TMA_WEIGHT, specialization=Specialization.STRIDE1, tile=(64, 192, 64),
                waves=(4, 1, 1), math_waves=4, warp_tile=(64, 192, 16)),
    ):  # fmt: skip
        bad = check(bad_inst, SM90)
        assert bad is not None and bad[0] == "fusion", bad
        assert "wavelet_tma fuses bias_grad" in bad[1], bad


def test_wavelet_tma_masks_dy_in_backward_data() -> None:
    data = tma(Variant.BACKWARD_DATA, k_batch=1, activation=Activation.DRELU)
    for ok in (
        data,
        replace(data, activation=Activation.DLEAKY_RELU, specialization=Specialization.STRIDE1),
        replace(data, tile=(256, 64, 64), waves=(4, 1, 1), math_waves=4,
                warp_tile=(64, 256, 16), swap_ab=True),
    ):  # fmt: skip
        assert check(ok, SM90) is None, ok.name
    # y's tile rides beside dy's in every stage (stride1: y's patch beside dy's)
    plain = replace(data, activation=Activation.NONE)
    assert lds_bytes(data, SM90) - lds_bytes(plain, SM90) == data.stages * 128 * 128
    s1 = replace(data, specialization=Specialization.STRIDE1)
    s1_plain = replace(s1, activation=Activation.NONE)
    assert lds_bytes(s1, SM90) - lds_bytes(s1_plain, SM90) == 2 * 128 * 128
    # a ring that no longer fits once y rides along is rejected by the shared-memory rule
    big = replace(data, tile=(256, 128, 64), stages=4)
    assert check(replace(big, activation=Activation.NONE), SM90) is None
    bad = check(big, SM90)
    assert bad is not None and bad[0] == "lds", bad


def test_bias_grad_adds_its_ones_to_the_shared_memory_estimate() -> None:
    plain = replace(TMA_WEIGHT, channel_op=ChannelOp.NONE)
    assert lds_bytes(TMA_WEIGHT, SM90) - lds_bytes(plain, SM90) == TMA_BIAS_GRAD_ONES_BYTES


def test_backward_fusion_rule_rejects_merged_groups() -> None:
    merged = replace(BWD_DATA, groups_to_merge=2, vec_a=1, vec_b=1, vec_c=1)
    bad = check(merged, SM90)
    assert bad is not None and "groups_to_merge 1" in bad[1], bad


def _fused_names(variant: str) -> list[str]:
    names = cli(
        "list-instances", "--format", "names", "--arch", "sm_90a", "--set", "tests",
        "--variant", variant,
    ).stdout.split()  # fmt: skip
    return [n for n in names if parse_instance_name(n).fused]


def test_the_tests_sets_hold_one_backward_fusion_per_path() -> None:
    every_data = [parse_instance_name(n) for n in _fused_names("backward_data")]
    every_weight = [parse_instance_name(n) for n in _fused_names("backward_weight")]
    data = [i for i in every_data if i.pipeline is Pipeline.BASIC]
    weight = [i for i in every_weight if i.pipeline is Pipeline.BASIC]
    tma = [i for i in every_weight if i.pipeline is Pipeline.WAVELET_TMA]
    assert 2 <= len(data) <= 4 and 3 <= len(weight) <= 5, [i.name for i in data + weight]
    # the multistage masks (y copied beside dy): every mask, 16- and 8-byte copies, a split,
    # 1D-3D in backward_data; 16-byte copies with and without a split in backward_weight
    ms_data = [i for i in every_data if i.pipeline is Pipeline.MULTISTAGE]
    ms_weight = [i for i in every_weight if i.pipeline is Pipeline.MULTISTAGE]
    tma_data = [i for i in every_data if i.pipeline is Pipeline.WAVELET_TMA]
    assert len(ms_data) + len(data) + len(tma_data) == len(every_data) and 3 <= len(ms_data) <= 6
    # wavelet_tma's masks (y's tile beside dy's): every mask, one and two warpgroups, ping-pong,
    # swap_ab, stride1's patches, a split, 1D-3D, both epilogues, a handful of fp16 builds
    assert 5 <= len(tma_data) <= 10 and {i.activation for i in tma_data} == set(GRAD_MASKS)
    assert {i.ndim for i in tma_data} == {1, 2, 3} and any(i.swap_ab for i in tma_data)
    assert {i.specialization for i in tma_data} == {Specialization.DEFAULT, Specialization.STRIDE1}
    assert {i.waves[0] for i in tma_data} == {4, 8} and any(
        i.math_waves == 8 and i.waves[0] == 4 for i in tma_data
    )
    assert any(i.k_batch != 1 for i in tma_data) and {i.epilogue.value for i in tma_data} == {
        "default",
        "cshuffle",
    }
    assert sum(i.datatype is DataType.FP16 for i in tma_data) <= 5
    assert {i.activation for i in ms_data} == set(GRAD_MASKS) and {i.ndim for i in ms_data} == {
        1,
        2,
        3,
    }
    assert {i.vec_a for i in ms_data} >= {4, 8} and any(i.k_batch != 1 for i in ms_data)
    assert 2 <= len(ms_weight) <= 4 and {i.k_batch for i in ms_weight} >= {0, 1}
    assert all(i.channel_op is ChannelOp.NONE for i in ms_data + ms_weight)
    # wavelet_tma's bias_grad: one and two warpgroups, ping-pong, split sums, both epilogues, 1D-3D
    assert 4 <= len(tma) <= 8 and all(i.channel_op is ChannelOp.BIAS_GRAD for i in tma)
    assert {i.ndim for i in tma} == {1, 2, 3} and {i.datatype for i in tma} == set(DataType) - {
        DataType.FP32
    }
    assert {i.math_waves for i in tma} >= {4, 8} and {i.waves[0] for i in tma} >= {4, 8}
    assert {i.epilogue.value for i in tma} == {"default", "cshuffle"}
    assert {i.k_batch for i in tma} >= {0, 1}
    assert {i.activation for i in data} == set(GRAD_MASKS)
    assert {i.vec_a for i in data} >= {1, 8} and {i.vec_a for i in weight} >= {1, 8}
    assert any(i.k_batch != 1 for i in data)
    bgrad = [i for i in weight if i.channel_op is ChannelOp.BIAS_GRAD]
    assert {i.stage.value for i in bgrad} == {"one", "two"}
    assert any(i.activation in GRAD_MASKS for i in bgrad)
    assert any(i.channel_op is ChannelOp.NONE for i in weight)


def test_generate_writes_backward_fused_headers_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cli(
        "generate", "--arch", "sm_90a", "--set", "tests", "--variant", "backward_weight",
        "--kernels", "*_bgrad*", "-o", str(out),
    )  # fmt: skip
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["instances"]
    for entry in doc["instances"]:
        inst = parse_instance_name(entry["name"])
        assert entry["channel_op"] == "bias_grad"
        assert entry["activation"] == inst.activation.value
        text = (out / "instances" / "backward_weight" / f"{inst.name}.hpp").read_text()
        assert f"ckgen::epilogue::Fused<ckgen::ChannelOp::BiasGrad, {inst.activation.cpp_ref}," in (
            text
        )


def test_cxx_and_c_api_carry_the_backward_operands() -> None:
    vocab = (REPO / "templates" / "include" / "ckgen" / "core" / "vocab.hpp").read_text()
    assert "inline constexpr bool is_grad_mask(Activation v)" in vocab
    assert "inline constexpr bool is_backward_op(ChannelOp v)" in vocab
    assert [f[0] for f in C_EPILOGUE_ARGS_FIELDS][-3:] == ["y", "db", "stats"]
    ep = Epilogue.parse("bias_grad_dleaky_relu")
    assert ep.needs_y and ep.needs_db and not ep.needs_bias and not ep.needs_scale
    assert not Epilogue.parse("bias_relu").needs_y
