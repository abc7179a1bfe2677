"""The pointwise pipeline (1x1 layers by bulk row copies, templates/include/ckgen/pipeline/
pointwise.hpp): its instances in the shipped sets, the rules that judge it, its name, and its
plan and cost estimate on the host."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from ckgen.model.arch import load_arch_specs
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import DataType, Pipeline, Specialization, Variant
from ckgen.space import rules
from ckgen.space.expand import Filters, default_config_paths, expand, load_configs

from conftest import build_dispatch_host_test

ARCHS = load_arch_specs()
NAME = "grouped_conv_fwd_fp16_2d_t64x64x16_w4x1x1_wt16x8x16_pw2_cshuffle_v8x8x8_f1x1s1p0"


def _default(arch: str) -> list:
    cfgs = load_configs(default_config_paths(list(Variant), "default"))
    return [i for i in expand(cfgs, ARCHS[arch], Filters()).instances]


def test_shipped_sm90a_set_holds_pointwise_forward_and_backward_data() -> None:
    got = {(i.variant, i.datatype) for i in _default("sm_90a") if i.pipeline is Pipeline.POINTWISE}
    assert got == {
        (v, d)
        for v in (Variant.FORWARD, Variant.BACKWARD_DATA)
        for d in (DataType.FP16, DataType.BF16)
    }
    assert NAME in {i.name for i in _default("sm_90a")}


@pytest.mark.parametrize("arch", ["sm_80", "gfx942"])
def test_no_pointwise_where_the_bulk_copies_are_missing(arch: str) -> None:
    assert not any(i.pipeline is Pipeline.POINTWISE for i in _default(arch))
    why = rules.check(parse_instance_name(NAME), ARCHS[arch])
    assert why is not None and why[0] == "pipeline" and "pointwise" in why[1]


def test_name_round_trip_and_rules() -> None:
    i = parse_instance_name(NAME)
    assert i.pipeline is Pipeline.POINTWISE and i.name == NAME
    a = ARCHS["sm_90a"]
    assert rules.check(i, a) is None
    bad = {
        "variant": replace(i, variant=Variant.BACKWARD_WEIGHT),
        "datatype": replace(i, datatype=DataType.FP32, vec_a=4, vec_b=4, vec_c=4),
        "tile N": replace(i, tile=(64, 32, 16)),
        "tile M": replace(i, tile=(48, 64, 16)),
        "waves": replace(i, waves=(3, 1, 1)),
        "stages": replace(i, stages=3),
        "specialization": replace(i, specialization=Specialization.DEFAULT),
    }
    for what, inst in bad.items():
        why = rules.check(inst, a)
        assert why is not None and why[0] == "pointwise_fields", (what, why)


def test_plan_and_estimate_host_only(tmp_path: Path) -> None:
    """tests/host/pointwise_plan.cpp: the refusals, the shared-memory layout, the bank conflicts
    of a row stride and the cost estimate (a skinny layer at the memory time, 64-channel rows
    dearer than 72-channel ones)."""
    exe = build_dispatch_host_test("pointwise_plan", tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok ") == 4, out.stdout
