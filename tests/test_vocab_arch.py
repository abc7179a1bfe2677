"""One source of truth: core/vocab.hpp is rendered from ckgen/model/vocab.py; every target of
arch_specs.json loads and every number in it names its source."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from ckgen.model import vocab
from ckgen.model.arch import SOURCED_FIELDS, get_arch, load_arch_specs
from ckgen.model.vocab import ALL_WORDS, DataType, MathUnit, Platform
from ckgen.resources import arch_specs_path, templates_dir

from conftest import ALL_ARCHS, REPO


def test_vocab_hpp_is_rendered_from_vocab_py() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ckgen.model.vocab"], check=True, capture_output=True, text=True
    ).stdout
    committed = (REPO / "templates" / "include" / "ckgen" / "core" / "vocab.hpp").read_text()
    assert committed == out, (
        "templates/include/ckgen/core/vocab.hpp is stale: python -m ckgen.model.vocab > "
        "templates/include/ckgen/core/vocab.hpp"
    )
    assert (templates_dir() / "include" / "ckgen" / "core" / "vocab.hpp").read_text() == out


def test_vocab_hpp_names_every_word() -> None:
    text = vocab.render_cpp_header()
    for cls in ALL_WORDS:
        assert f"enum class {cls.__name__} {{" in text
        for m in cls:
            assert f"{cls.__name__}::{m.cpp}" in text and f'"{m.value}"' in text


@pytest.mark.parametrize("cls", ALL_WORDS, ids=lambda c: c.__name__)
def test_words_are_unique_and_name_safe(cls) -> None:
    members = list(cls)
    for attr in ("value", "short", "cpp"):
        vals = [getattr(m, attr) for m in members]
        assert len(vals) == len(set(vals)), f"{cls.__name__}.{attr} repeats"
    for m in members:
        assert re.fullmatch(r"[a-z0-9_]+", m.short), m.short  # a token of instance names
        assert m.cpp.isidentifier()
        assert vocab.parse_word(cls, m.value) is m and vocab.by_short(cls, m.short) is m


def _raw() -> dict:
    return json.loads(arch_specs_path().read_text())


def _has_number(v: object) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    if isinstance(v, dict):
        return any(_has_number(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_number(x) for x in v)
    return False


def test_every_required_target_is_present() -> None:
    assert set(ALL_ARCHS) <= set(load_arch_specs())


@pytest.mark.parametrize("arch", ALL_ARCHS)
def test_target_loads(arch: str) -> None:
    a = get_arch(arch)
    assert a.name == arch
    assert a.warp_size in (32, 64)
    assert a.platform is (Platform.NVIDIA if arch.startswith("sm_") else Platform.AMD)
    assert a.warp_size == (32 if arch.startswith(("sm_", "gfx11", "gfx12")) else 64)
    assert a.lds_bytes > 0 and a.compute_units > 0 and a.registers_per_thread > 0
    assert a.wave_layouts and a.pipelines and a.schedulers
    assert set(a.warp_tiles) == set(a.math_units) and a.warp_tiles
    assert a.bandwidth_gbs > 0 and all(v > 0 for v in a.peak_tflops.values())
    for dt, unit in a.math_units.items():
        assert isinstance(dt, DataType) and isinstance(unit, MathUnit)
    if a.platform is Platform.NVIDIA:
        assert a.cuda_arch and a.cuda_arch in arch


@pytest.mark.parametrize("arch", ALL_ARCHS)
def test_every_numeric_field_has_a_source(arch: str) -> None:
    entry = _raw()[arch]
    sources = entry["sources"]
    numeric = [k for k, v in entry.items() if k != "sources" and _has_number(v)]
    assert set(SOURCED_FIELDS) <= set(numeric) | {"warp_tiles"}
    missing = [k for k in numeric if not (isinstance(sources.get(k), str) and sources[k].strip())]
    assert not missing, f"{arch}: numbers without a source: {missing}"
    for k in SOURCED_FIELDS:
        assert sources.get(k, "").strip(), f"{arch}: {k} has no source"


def test_design_numbers() -> None:
    """The numbers docs/design.md states about the targets."""
    specs = load_arch_specs()
    assert specs["gfx950"].lds_bytes == 160 * 1024
    for a in ("gfx90a", "gfx942"):
        assert specs[a].lds_bytes == 64 * 1024
    assert specs["sm_90a"].lds_bytes == 227 * 1024
    for a in ("gfx1100", "gfx1201"):
        assert (16, 16, 16) in specs[a].warp_tiles[DataType.FP16]
    for a in ("sm_80", "sm_90a"):
        assert (16, 8, 16) in specs[a].warp_tiles[DataType.FP16]


def test_cost_calibration_is_measured_per_variant_and_pipeline(tmp_path) -> None:
    """sm_90a carries the cost model's measured calibration (every variant x pipeline, positive);
    a target without one gets 1; a non-positive factor is refused with its key."""
    from ckgen.errors import CkgenError
    from ckgen.model.vocab import Pipeline, Variant

    specs = load_arch_specs()
    h = specs["sm_90a"]
    assert all(h.calibration(v, p) > 0 for v in Variant for p in Pipeline)
    assert len(h.cost_calibration) == len(Variant) * len(Pipeline)
    assert specs["gfx942"].calibration(Variant.FORWARD, Pipeline.BASIC) == 1.0
    raw = json.loads(arch_specs_path().read_text())
    raw["sm_90a"]["cost_calibration"]["forward"]["basic"] = 0
    bad = tmp_path / "arch_specs.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(CkgenError, match="cost_calibration.forward.basic"):
        load_arch_specs(bad)
