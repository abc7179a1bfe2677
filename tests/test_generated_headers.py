"""One source per fact: the limits, the kernel forms, KernelKey and the C API's problem struct are
written in Python and rendered into the C++ by ``python -m ckgen.model.cxx``; the committed files
equal the rendering, and the C++ keeps no copy of its own."""

from __future__ import annotations

import ctypes
import re
import subprocess
import sys
from dataclasses import fields

import pytest

from ckgen.model import cxx
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import CXX_LIMITS, DIRECT_MAX_SLICES, MAX_K_BATCH
from ckgen.model.problem import C_PROBLEM_FIELDS, Problem
from ckgen.runtime.capi import CProblem, c_problem

from conftest import REPO

TEMPLATES = REPO / "templates"
INCLUDE = TEMPLATES / "include" / "ckgen"


@pytest.mark.parametrize("rel", sorted(cxx.GENERATED))
def test_committed_equals_rendering(rel: str) -> None:
    current = (TEMPLATES / rel).read_text()
    assert current == cxx.GENERATED[rel](current), (
        f"templates/{rel} is stale: python -m ckgen.model.cxx"
    )


def test_check_command_passes() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ckgen.model.cxx", "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("rel", sorted(r for r in cxx.GENERATED if r.endswith(".hpp")))
def test_generated_header_says_so(rel: str) -> None:
    first = (TEMPLATES / rel).read_text().splitlines()[0]
    assert first.startswith("// Rendered from ckgen/") and "do not edit by hand" in first


def _hpp_sources() -> dict[str, str]:
    return {
        str(p.relative_to(INCLUDE)): p.read_text()
        for p in INCLUDE.rglob("*.hpp")
        if "third_party" not in p.parts
    }


def test_cxx_defines_no_copy_of_a_limit() -> None:
    names = [name for name, _, _ in CXX_LIMITS]
    for rel, text in _hpp_sources().items():
        if rel == "core/limits.hpp":
            continue
        for name in names:
            assert not re.search(rf"constexpr\s+int\s+{name}\b", text), f"{rel} redefines {name}"


def test_cxx_spells_no_k_batch_bound() -> None:
    for rel, text in _hpp_sources().items():
        if rel == "core/limits.hpp":
            continue
        for lit in (f"0..{MAX_K_BATCH}", f"1..{MAX_K_BATCH}", f"0..{DIRECT_MAX_SLICES}"):
            assert lit not in text, f"{rel} spells the bound {lit}"
        assert not re.search(rf"kb\s*>\s*{MAX_K_BATCH}\b", text), rel
        assert not re.search(r"kMaxSplits\s*=\s*\d", text), rel


def test_row_form_is_read_from_forms_hpp() -> None:
    src = _hpp_sources()
    assert (
        "is_row_form(Cfg::kPipeline, Cfg::kVariant, Cfg::kSpecialization)"
        in src["pipeline/tma_traits.hpp"]
    )
    assert "is_row_form(k.pipeline, k.variant, k.specialization)" in src["kernel/kernel_base.hpp"]


def test_gemm_dims_written_once() -> None:
    src = _hpp_sources()
    assert "std::gcd" in src["conv/gemm_dims.hpp"]
    assert "tiled_gemm_dims(kVariant, p, GM)" in src["kernel/gemm_kernel.hpp"]
    for rel, text in src.items():
        assert "while (b)" not in text, f"{rel}: a hand-written gcd"


def test_kernel_key_has_every_instance_field() -> None:
    key = {name for _, name, _ in cxx.kernel_key_fields()}
    for f in fields(KernelInstance):
        if f.name == "origin":
            continue
        cols = cxx.key_columns(f.name)
        assert len(cols) == (3 if f.name in ("tile", "waves", "warp_tile") else 1), f.name
        assert all(c in key for c in cols), f.name
    assert "struct KernelKey" not in src_without_generated()


def src_without_generated() -> str:
    return "\n".join(t for r, t in _hpp_sources().items() if r != "core/kernel_key.hpp")


def test_instance_template_reads_every_instance_field() -> None:
    text = (TEMPLATES / "project" / "instance.hpp.j2").read_text()
    for f in fields(KernelInstance):
        if f.name in ("origin",):
            continue
        assert re.search(rf"inst\.{f.name}\b", text), f"instance.hpp.j2 ignores {f.name}"


def _conv_problem_members() -> list[str]:
    text = (INCLUDE / "core" / "problem.hpp").read_text()
    body = text[text.index("struct ConvProblem {") :]
    body = body[: body.index("CKGEN_HOST_DEVICE")]
    names: list[str] = []
    for m in re.finditer(r"^\s*(?:int|int64_t)\s+([^;(]+);", body, re.M):
        decls = re.sub(r"\{[^}]*\}", "", m.group(1))  # drop the {..} initializers
        names += re.findall(r"(\w+)\s*(?:\[\d+\])?\s*=", decls)
    return names


def test_conv_problem_holds_the_c_fields() -> None:
    c_names = [n for n, _, _, attr in C_PROBLEM_FIELDS if attr is not None]
    assert [n for n in _conv_problem_members() if n != "out"] == c_names


def test_ctypes_struct_matches_the_c_fields() -> None:
    size = {"int32_t": 4, "int64_t": 8}
    offset = 0
    for (name, ctype, count, _), (cname, _t) in zip(
        C_PROBLEM_FIELDS, CProblem._fields_, strict=True
    ):
        assert cname.rstrip("_") == name
        assert getattr(CProblem, cname).offset == offset
        offset += size[ctype] * max(count, 1)
    assert ctypes.sizeof(CProblem) == offset
    p = Problem.make(G=2, N=3, C=8, K=16, input=(5, 7), filter=(3, 3), stride=2, pad=1)
    c = c_problem(p)
    assert (c.ndim, c.G, c.N, c.C, c.K) == (2, 2, 3, 8, 16)
    assert list(c.in_) == [1, 5, 7] and list(c.pad_l) == [0, 1, 1] and list(c.stride) == [1, 2, 2]
