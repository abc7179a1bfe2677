"""AMD targets: what can be verified without an AMD GPU.

- parsers of check-isa (readelf notes, objdump, compiler remarks) on fixed text (fast);
- the 'measured' rule: measured resources fed back with `generate --resources` reject instances
  that spill or exceed LDS, with the measured numbers in the reason (fast);
- device-only compile + ISA count + mnemonic shapes + resources of a small subset per arch
  (`ckgen check-isa`): gfx942, gfx1100, gfx1201 with clang-19, gfx950 with clang-22 (its
  16x16x32 / 32x32x16 MFMA); skipped with the reason only when that toolchain is missing;
- the same for one instance per code path of the default set (slow): gfx942 and gfx1201,
  gfx950's CDNA4-only warp tiles; every instance on every target with CKGEN_EXHAUSTIVE=1;
- hipcc (Debian 5.2, HIP_PLATFORM=amd) builds a small gfx90a --set tests project, profilers and
  GoogleTest binaries included (slow); skipped with the reason when hipcc is missing.
Nothing here runs a kernel (no AMD GPU): see docs/amd.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ckgen.model.arch import get_arch
from ckgen.model.naming import parse_instance_name
from ckgen.runtime.isa import (
    count_matrix_insts,
    matrix_mnemonics,
    parse_notes,
    parse_remarks,
    toolchain_problem,
    write_manifest_resources,
    wrong_shape,
)
from ckgen.space import rules
from ckgen.space.rules.measured import check_measured

from conftest import EXHAUSTIVE, cli, cli_proc, have, one_per_code_path

NOTES = """\
Displaying notes found in: .note
  Owner                Data size 	Description
  AMDGPU               0x00000834	NT_AMDGPU_METADATA (AMDGPU Metadata)
    AMDGPU Metadata:
        ---
amdhsa.kernels:
  - .agpr_count:     64
    .args:
      - .offset:         0
        .size:           296
        .value_kind:     by_value
    .group_segment_fixed_size: 18432
    .name:           _ZN5ckgen19grouped_conv_kernelINS_9generated3abcEEEvNS_8ConvArgsE
    .private_segment_fixed_size: 0
    .sgpr_count:     80
    .vgpr_count:     140
    .vgpr_spill_count: 0
    .wavefront_size: 64
  - .agpr_count:     0
    .name:           other
    .vgpr_count:     8
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
"""

DISASM = """\
0000000000001900 <_ZN5ckgen19grouped_conv_kernelINS_9generated3abcEEEvNS_8ConvArgsE>:
	v_mfma_f32_32x32x8_f16 v[0:15], v[16:17], v[18:19], v[0:15]// 000000001758: D3CC0000 04022510
	s_nop 7
	v_mfma_f32_32x32x8_f16 a[0:15], v[16:17], v[18:19], a[0:15]// 000000001758: D3CC0000 04022510
0000000000002000 <other>:
	v_add_f32 v0, v1, v2
"""

REMARKS = """\
k.hpp:47:1: remark: Function Name: _ZN5ckgen19grouped_conv_kernelINS_9generated3abcEEEvNS_8ConvArgsE [-Rpass-analysis=kernel-resource-usage]
k.hpp:47:1: remark:     VGPRs: 74 [-Rpass-analysis=kernel-resource-usage]
k.hpp:47:1: remark:     AGPRs: 64 [-Rpass-analysis=kernel-resource-usage]
k.hpp:47:1: remark:     Occupancy [waves/SIMD]: 3 [-Rpass-analysis=kernel-resource-usage]
k.hpp:47:1: remark:     LDS Size [bytes/block]: 18432 [-Rpass-analysis=kernel-resource-usage]
"""  # noqa: E501

K = "_ZN5ckgen19grouped_conv_kernelINS_9generated3abcEEEvNS_8ConvArgsE"


def test_parse_notes() -> None:
    n = parse_notes(NOTES)
    assert set(n) == {K, "other"}
    assert n[K]["vgpr_count"] == "140" and n[K]["agpr_count"] == "64"
    assert n[K]["group_segment_fixed_size"] == "18432" and n[K]["wavefront_size"] == "64"
    assert "offset" not in n[K]  # argument fields are not kernel fields
    assert n["other"]["vgpr_count"] == "8"


def test_count_matrix_insts() -> None:
    assert count_matrix_insts(DISASM, "v_mfma") == {K: 2, "other": 0}
    assert count_matrix_insts(DISASM, "v_wmma") == {K: 0, "other": 0}


def test_matrix_mnemonics_and_shape() -> None:
    assert matrix_mnemonics(DISASM, "v_mfma") == {K: {"v_mfma_f32_32x32x8_f16": 2}, "other": {}}
    m = {"v_mfma_f32_16x16x32_f16": 4}
    assert wrong_shape(m, "16x16x32") == {}
    assert wrong_shape(m, "16x16x16") == m  # a double-K tile must not hide behind 16x16x16
    assert wrong_shape({"v_mfma_f32_16x16x16_bf16": 8}, "16x16x32") == {
        "v_mfma_f32_16x16x16_bf16": 8
    }
    assert wrong_shape({"v_mfma_f32_32x32x2f32": 1, "v_mfma_f32_32x32x2_f32": 1}, "32x32x2") == {}
    assert wrong_shape({"v_mfma_f32_32x32x16_bf16": 1}, "32x32x1") != {}


def test_toolchain_problem_names_the_packages() -> None:
    a = get_arch("gfx950")
    gone = dataclasses.replace(
        a, compiler=dict(a.compiler, device_only_compiler="clang++-no-such-version")
    )
    why = toolchain_problem(gone)
    # the missing tools are listed first ("A, B, ... not found"): other LLVM 22 tools may be
    # missing too on a machine where test.sh has not installed them yet
    assert why and "clang-22 lld-22 llvm-22" in why, why
    missing = why.split(" not found", 1)[0].split(", ")
    assert missing[0] == "clang++-no-such-version", why


def test_parse_remarks() -> None:
    r = parse_remarks(REMARKS)
    assert r[K]["VGPRs"] == "74" and r[K]["Occupancy [waves/SIMD]"] == "3"
    assert r[K]["LDS Size [bytes/block]"] == "18432"


# ------------------------------------------------------------------------------------------
# Feedback: measured resources -> rule 'measured'
# ------------------------------------------------------------------------------------------
SUBSET = ("--variant", "forward", "--datatype", "fp16", "--ndim", "2")


def _names(arch: str, *extra: str) -> list[str]:
    return cli(
        "list-instances", "--arch", arch, *SUBSET, *extra, "--format", "names"
    ).stdout.split()


def test_measured_rule_rejects_spills_and_lds(tmp_path: Path) -> None:
    names = _names("gfx1100")
    assert len(names) >= 3
    spill, lds, fine = names[:3]
    doc = {
        "resources_version": 1,
        "arch": "gfx1100",
        "compiler": "test",
        "instances": {
            spill: {
                "vgpr": 256,
                "scratch_bytes": 436,
                "vgpr_spill": 228,
                "sgpr_spill": 0,
                "lds_bytes": 1024,
                "estimate": 232,
            },
            lds: {"vgpr": 100, "scratch_bytes": 0, "lds_bytes": 70000},
            fine: {"vgpr": 100, "scratch_bytes": 0, "lds_bytes": 1024},
        },
    }
    f = tmp_path / "res.json"
    f.write_text(json.dumps(doc))
    got = _names("gfx1100", "--resources", str(f))
    assert spill not in got and lds not in got and fine in got
    a = get_arch("gfx1100")
    ctx = rules.RuleContext(arch="gfx1100", measured=doc["instances"])
    rule, why = rules.check(parse_instance_name(spill), a, ctx)
    assert rule == "measured" and "436 bytes of scratch" in why and "VGPR 256" in why, why
    rule, why = rules.check(parse_instance_name(lds), a, ctx)
    assert rule == "measured" and "LDS 70000 bytes measured > 65536" in why, why
    assert rules.check(parse_instance_name(fine), a, ctx) is None
    # the context is explicit: a later check without it does not see the measurements
    assert rules.check(parse_instance_name(spill), a) is None


def test_measured_resources_for_another_arch_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "res.json"
    f.write_text(json.dumps({"arch": "gfx942", "instances": {}}))
    p = cli_proc("list-instances", "--arch", "gfx1100", "--resources", str(f), ok=False)
    assert p.returncode == 2 and "gfx942" in p.stderr


def test_measured_rule_is_off_without_resources() -> None:
    a = get_arch("gfx1100")
    i = parse_instance_name(_names("gfx1100")[0])
    assert check_measured(i, a, rules.NO_CONTEXT) is None


# ------------------------------------------------------------------------------------------
# Device-only compile, ISA and resources (clang-19; clang-22 for gfx950)
# ------------------------------------------------------------------------------------------
# One instance per datatype and variant, small tiles (whatever pipeline the defaults use): 5-6
# compiles per arch.
ISA_KERNELS = (
    "grouped_conv_fwd_*_2d_t64x64x32_w2x2x1_wt16x16x16_*_v8x8x8",
    "grouped_conv_fwd_fp32_2d_t64x64x16_w2x2x1_*_v4x4x4",
    "grouped_conv_bwd_data_bf16_2d_t64x64x32_w2x2x1_wt16x16x16_*_v8x8x8",
    "grouped_conv_bwd_weight_fp16_2d_t64x64x32_w2x2x1_wt16x16x16_*_v8x8x8",
)
# gfx950 (CDNA4) adds the double-K MFMA tiles: one per variant, both datatypes, both shapes.
ISA_KERNELS_GFX950 = (
    "grouped_conv_fwd_*_2d_t64x64x32_w2x2x1_wt16x16x32_*_v8x8x8",
    "grouped_conv_bwd_data_bf16_2d_t64x64x32_w2x2x1_wt32x32x16_*_v8x8x8",
    "grouped_conv_bwd_weight_fp16_2d_t64x64x32_w2x2x1_wt32x32x16_*_v8x8x8",
)


AMD_TARGETS = [
    ("gfx942", "v_mfma"),
    ("gfx950", "v_mfma"),
    ("gfx1100", "v_wmma"),
    ("gfx1201", "v_wmma"),
]


def _needs(arch: str) -> str | None:
    return toolchain_problem(get_arch(arch))


@pytest.mark.parametrize("arch, unit", AMD_TARGETS)
def test_check_isa_subset(tmp_path: Path, arch: str, unit: str) -> None:
    why = _needs(arch)
    if why:
        pytest.skip(f"{arch} device-only compile unavailable: {why}")
    gen = tmp_path / "gen"
    globs = ISA_KERNELS + (ISA_KERNELS_GFX950 if arch == "gfx950" else ())
    sel = [a for k in globs for a in ("--kernels", k)]
    cli("generate", "--arch", arch, *sel, "-o", str(gen), "-q")
    p = cli_proc(
        "check-isa", "-o", str(gen), "--resources-out", str(tmp_path / "res.json"), timeout=1200
    )
    res = _check_resources(gen, arch, unit)
    assert p.returncode == 0
    assert len(res) >= 5
    if arch == "gfx950":  # the CDNA4-only instructions are there, fp16 and bf16
        seen = {m for r in res.values() for m in r["matrix_mnemonics"]}
        assert {
            "v_mfma_f32_16x16x32_f16",
            "v_mfma_f32_16x16x32_bf16",
            "v_mfma_f32_32x32x16_f16",
            "v_mfma_f32_32x32x16_bf16",
        } <= seen, seen
    # Deterministic: writing the same measurements again leaves the manifest byte-identical.
    before = (gen / "manifest.json").read_bytes()
    doc = json.loads((tmp_path / "res.json").read_text())
    write_manifest_resources(gen, doc)
    assert (gen / "manifest.json").read_bytes() == before


# The whole default set of one target compiles in 10-25 min on a 2-core machine, too long for CI
# on three targets. By default the tests compile one instance per code path of the default set
# (every field of the name but the tile's sizes: the largest tile, the likeliest to spill, stands
# for the others) on one CDNA and one RDNA target, and on gfx950 the same over its CDNA4-only
# warp tiles (the rest share gfx942's code paths). CKGEN_EXHAUSTIVE=1 compiles every instance
# for every target.
COVER_TARGETS = ("gfx942", "gfx1201")
GFX950_ONLY_TILES = ("*_wt16x16x32_*", "*_wt32x32x16_*")


def test_one_per_code_path() -> None:
    big = "grouped_conv_fwd_fp16_2d_t128x128x32_w2x2x1_wt32x32x8_ms3_v8x8x8"
    small = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt32x32x8_ms3_v8x8x8"
    other_warp = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x16x16_ms3_v8x8x8"
    scalar = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt32x32x8_ms3_v1x1x1"
    rank1 = "grouped_conv_fwd_fp16_1d_t64x64x32_w2x2x1_wt32x32x8_ms3_v8x8x8"
    assert one_per_code_path([small, big, other_warp]) == sorted([big, other_warp])
    assert one_per_code_path([small, big, scalar]) == sorted([big, scalar])  # another access
    assert one_per_code_path([small, big], largest=False) == [small]
    # another rank: its own representative per pipeline, not per code path
    assert one_per_code_path([small, big, rank1]) == sorted([big, rank1])
    names = _names("gfx942")
    cover = one_per_code_path(names)
    assert 0 < len(cover) < len(names)
    assert {parse_instance_name(n).pipeline for n in cover} == {
        parse_instance_name(n).pipeline for n in names
    }


@pytest.mark.slow
@pytest.mark.parametrize("arch, unit", AMD_TARGETS)
def test_check_isa_every_code_path(tmp_path: Path, arch: str, unit: str) -> None:
    """Every code path of the shipped default set (every instance with CKGEN_EXHAUSTIVE=1)
    compiles device-only for the target and holds matrix instructions of its warp tile's shape.
    An instance check-isa fails for its measured resources (a spill, LDS over the target) is
    rejected by the `measured` rule once the measurements are fed back (`generate --resources`),
    with the numbers in the reason."""
    why = _needs(arch)
    if why:
        pytest.skip(f"{arch} device-only compile unavailable: {why}")
    sel: list[str] = []
    if not EXHAUSTIVE:
        if arch not in COVER_TARGETS and arch != "gfx950":
            pytest.skip(
                f"the default set's code paths on {arch} compile with CKGEN_EXHAUSTIVE=1 "
                f"(test_check_isa_subset covers {arch} here)"
            )
        tiles = GFX950_ONLY_TILES if arch == "gfx950" else ()
        names = cli(
            "list-instances",
            "--arch",
            arch,
            *(a for k in tiles for a in ("--kernels", k)),
            "--format",
            "names",
        ).stdout.split()
        sel = [a for n in one_per_code_path(names) for a in ("--kernels", n)]
    gen = tmp_path / "gen"
    measured = tmp_path / "res.json"
    cli("generate", "--arch", arch, *sel, "-o", str(gen), "-q")
    p = cli_proc(
        "check-isa",
        "-o",
        str(gen),
        "-j",
        "0",
        "--resources-out",
        str(measured),
        timeout=3600,
        ok=False,
    )
    res = _check_resources(gen, arch, unit, allow_measured_failures=True)
    assert len(res) >= 100, len(res)
    failed = sorted(n for n, r in res.items() if not r["ok"])
    assert p.returncode == (1 if failed else 0), p.stdout[-4000:] + p.stderr[-4000:]
    if failed:
        cli(
            "generate",
            "--arch",
            arch,
            *sel,
            "--resources",
            str(measured),
            "-o",
            str(tmp_path / "gen2"),
            "-q",
        )
        kept = {
            i["name"]
            for i in json.loads((tmp_path / "gen2" / "manifest.json").read_text())["instances"]
        }
        assert kept == set(res) - set(failed)
        shown = json.loads(
            cli(
                "list-instances",
                "--arch",
                arch,
                "--resources",
                str(measured),
                "--show-rejected",
                "--format",
                "json",
            ).stdout
        )
        by_rule = [g for g in shown["rejected"] if g["rule"] == "measured"]
        assert sum(g["count"] for g in by_rule) == len(failed), by_rule
        assert all("measured" in g["reason"] for g in by_rule), by_rule


def _check_resources(
    gen: Path, arch: str, unit: str, allow_measured_failures: bool = False
) -> dict:
    """The manifest's measured resources: one entry per instance, each compiled, with matrix
    instructions of its warp tile's shape (none for fp32 on RDNA: FMA), and no scratch (or,
    with allow_measured_failures, a failure that names the measured numbers)."""
    man = json.loads((gen / "manifest.json").read_text())
    res = man["resources"]["instances"]
    assert set(res) == {i["name"] for i in man["instances"]}
    for name, r in res.items():
        assert r["compiled"], (name, r)
        assert r["wave_size"] == get_arch(arch).warp_size
        assert r["vgpr"] > 0 and r["sgpr"] > 0 and r["occupancy"] >= 1, (name, r)
        assert r["lds_bytes"] > 0 or "_direct" in name, (name, r)  # the direct kernels use no LDS
        dt = name.split("_")[3] if name.startswith("grouped_conv_fwd") else name.split("_")[4]
        if (dt == "fp32" and unit == "v_wmma") or "_direct" in name:
            # FMA: fp32 on RDNA (no fp32 WMMA) and the direct depthwise kernels (no GEMM)
            assert r["matrix_insts"] == 0 and r["matrix_expected"] == 0, (name, r)
        else:
            assert r["matrix_insts"] >= r["matrix_expected"] > 0, (name, r)
            # every matrix instruction has the warp tile's shape: v_mfma_f32_16x16x32_bf16 for
            # wt16x16x32
            shape = parse_instance_name(name).warp_tile
            want = f"{unit}_f32_{shape[0]}x{shape[1]}x{shape[2]}"
            assert r["matrix_mnemonics"] and all(
                m.startswith(want) for m in r["matrix_mnemonics"]
            ), (name, r)
            assert sum(r["matrix_mnemonics"].values()) == r["matrix_insts"]
        if allow_measured_failures and not r["ok"]:
            assert r["failures"] and all("measured" in f for f in r["failures"]), (name, r)
        else:
            assert r["scratch_bytes"] == 0 and r["ok"], (name, r)
    return res


def test_check_isa_refuses_nvidia_projects(tmp_path: Path) -> None:
    gen = tmp_path / "gen"
    cli(
        "generate",
        "--arch",
        "sm_90a",
        *SUBSET,
        "--kernels",
        "*t64x64x32*v8x8x8",
        "-o",
        str(gen),
        "-q",
    )
    p = cli_proc("check-isa", "-o", str(gen), ok=False)
    assert p.returncode == 2 and "AMD" in p.stderr


# ------------------------------------------------------------------------------------------
# hipcc build (host + device) of a small gfx90a tests project
# ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_hipcc_builds_gfx90a_tests_project(tmp_path: Path) -> None:
    if not have("hipcc", "cmake", "ninja"):
        pytest.skip("needs hipcc (Debian hipcc 5.2: HIP_PLATFORM=amd), cmake and ninja on PATH")
    gen = tmp_path / "gen"
    cli(
        "generate",
        "--arch",
        "gfx90a",
        "--set",
        "tests",
        "--datatype",
        "fp16",
        "--ndim",
        "2",
        "--kernels",
        "*wt32x32x8*",
        "-o",
        str(gen),
        "-q",
    )
    cli("emit-cmake", "-o", str(gen))
    env = dict(os.environ, HIP_PLATFORM="amd")
    build = gen / "build"
    cfg = subprocess.run(
        [
            "cmake",
            "-S",
            str(gen),
            "-B",
            str(build),
            "-G",
            "Ninja",
            "-DCKGEN_PLATFORM=amd",
            "-DCMAKE_CXX_COMPILER=hipcc",
            "-DCKGEN_GPU_TARGETS=gfx90a",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if cfg.returncode != 0 and "GoogleTest not found" in cfg.stderr:
        pytest.skip("GoogleTest (libgtest-dev) is not installed")
    assert cfg.returncode == 0, cfg.stdout[-4000:] + cfg.stderr[-4000:]
    jobs = str(max(1, os.cpu_count() or 1))
    b = subprocess.run(
        ["ninja", "-C", str(build), "-j", jobs],
        env=env,
        capture_output=True,
        text=True,
        timeout=int(os.environ.get("CKGEN_BUILD_TIMEOUT", "2400")),
    )
    assert b.returncode == 0, b.stdout[-8000:] + b.stderr[-4000:]
    for v in ("forward", "backward_data", "backward_weight"):
        for exe in (f"ckgen_profiler_{v}", f"test_grouped_conv_{v}"):
            assert os.access(build / "bin" / exe, os.X_OK), exe
    assert shutil.which("hipcc")
