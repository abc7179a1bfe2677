"""Expansion: deterministic order, duplicates removed, rejections with reasons, and the
list-instances views (table, --show-rejected, json/csv/names, filters, counts)."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from pathlib import Path

import pytest

from ckgen.errors import ConfigError
from ckgen.model.arch import load_arch_specs
from ckgen.model.instance import INSTANCE_FIELDS
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import DataType, Variant
from ckgen.space.expand import (
    REJECTED_SAMPLE,
    Filters,
    default_config_paths,
    expand,
    load_configs,
)
from ckgen.space.rules import RULES, check

from conftest import ALL_ARCHS, cli, cli_proc

SM90 = ("--arch", "sm_90a", "--set", "profiler")


def _expansion(arch: str = "sm_90a", config_set: str = "profiler", filters: Filters = Filters()):
    return expand(
        load_configs(default_config_paths(list(Variant), config_set)),
        load_arch_specs()[arch],
        filters,
    )


@functools.cache
def _json_text(*args: str) -> str:
    return cli("list-instances", "--format", "json", *args).stdout


def _json(*args: str) -> dict:
    return json.loads(_json_text(*args))


def _names(*args: str) -> list[str]:
    return cli("list-instances", "--format", "names", *args).stdout.split()


def test_order_is_deterministic_across_processes_and_hash_seeds() -> None:
    outs = [
        cli_proc("list-instances", "--format", "names", *SM90, env={"PYTHONHASHSEED": seed}).stdout
        for seed in ("0", "1", "12345")
    ]
    assert outs[0] == outs[1] == outs[2]
    names = outs[0].split()
    assert len(names) > 1000
    order = {v.short: k for k, v in enumerate(Variant)}

    def key(n: str) -> tuple[int, str]:
        v = parse_instance_name(n).variant
        return (order[v.short], n)

    assert names == sorted(names, key=key), "instances are sorted by variant, then name"


def test_duplicates_are_removed(tmp_path: Path) -> None:
    cfg = tmp_path / "dups.yaml"
    cfg.write_text(
        "variant: forward\n"
        "defaults: {ndim: 2, warp_tile: auto, datatype: fp16}\n"
        "instances:\n"
        "  - {tile: [64, 64, 32], waves: [2, 2, 1]}\n"
        "  - {tile: [64, 64, 32], waves: [2, 2, 1]}\n"  # exact duplicate
        "spaces:\n"
        "  - tile: [[64, 64, 32], [128, 64, 32]]\n"  # overlaps the first
        "    waves: [[2, 2, 1], [2, 2, 1]]\n"  # duplicate value inside a space
    )
    exp = expand(load_configs([cfg]), load_arch_specs()["sm_90a"])
    names = [i.name for i in exp.instances]
    assert len(names) == len(set(names)) == 2
    assert exp.candidates == 2 + 4
    assert exp.duplicates == 4
    js = _json("--arch", "sm_90a", "--config", str(cfg))
    assert js["count"] == 2 and [i["name"] for i in js["instances"]] == names
    table = cli("list-instances", "--arch", "sm_90a", "--config", str(cfg)).stdout
    assert "2 valid, 0 rejected, 4 duplicates, 0 filtered out, 6 candidates" in table


def test_an_entry_s_name_filter_leaves_the_candidate_to_other_entries(tmp_path: Path) -> None:
    # The first file's space makes 64x64 and 128x64 but keeps only 128x64; a second file asking
    # for 64x64 gets it (it is not a duplicate of a candidate the first file left out).
    base, extra = tmp_path / "base.yaml", tmp_path / "extra.yaml"
    base.write_text(
        "variant: forward\n"
        "defaults: {ndim: 2, warp_tile: auto, datatype: fp16}\n"
        "spaces:\n"
        "  - tile: [[64, 64, 32], [128, 64, 32]]\n"
        "    waves: [2, 2, 1]\n"
        "    include: ['*_t128x64x32_*']\n"
    )
    extra.write_text(
        "variant: forward\n"
        "defaults: {ndim: 2, warp_tile: auto, datatype: fp16}\n"
        "instances:\n"
        "  - {tile: [64, 64, 32], waves: [2, 2, 1]}\n"
        "  - {tile: [128, 64, 32], waves: [2, 2, 1]}\n"  # a real duplicate of the first file's
    )
    exp = expand(load_configs([base, extra]), load_arch_specs()["sm_90a"])
    assert sorted(i.tile for i in exp.instances) == [(64, 64, 32), (128, 64, 32)]
    assert (exp.candidates, exp.filtered, exp.duplicates) == (4, 1, 1)


def test_not_on_leaves_a_space_out_on_those_targets(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "variant: forward\n"
        "defaults: {ndim: 2, warp_tile: auto, datatype: fp16, waves: [2, 2, 1]}\n"
        "spaces:\n"
        "  - tile: [64, 64, 32]\n"
        "  - tile: [128, 64, 32]\n"
        "    not_on: [sm_90a]\n"
    )
    specs = load_arch_specs()
    on_90 = expand(load_configs([cfg]), specs["sm_90a"]).instances
    on_80 = expand(load_configs([cfg]), specs["sm_80"]).instances
    assert {i.tile for i in on_90} == {(64, 64, 32)}
    assert {i.tile for i in on_80} == {(64, 64, 32), (128, 64, 32)}
    # the shipped default set: no plain wavelet on sm_90a, the mma.sync ones stay on sm_80
    default = load_configs(default_config_paths(list(Variant), "default"))
    assert not [i for i in expand(default, specs["sm_90a"]).instances if "_wavelet" in i.name]
    assert [i for i in expand(default, specs["sm_80"]).instances if "_wavelet" in i.name]
    cfg.write_text(cfg.read_text().replace("[sm_90a]", "[sm90a]"))
    with pytest.raises(ConfigError, match=r"c\.yaml:6: spaces\[1\]\.not_on\[0\]: unknown target"):
        load_configs([cfg])


@pytest.mark.parametrize("arch", ALL_ARCHS)
def test_every_rejection_keeps_its_reason(arch: str) -> None:
    exp = _expansion(arch)
    ids = {r.id for r in RULES}
    assert exp.rejected, "the profiler sweep has rejected candidates on every target"
    for r in exp.rejected:
        assert r.rule in ids
        assert isinstance(r.reason, str) and r.reason.strip()
        assert check(r.instance, exp.arch) == (r.rule, r.reason)
    for i in exp.instances:
        assert check(i, exp.arch) is None
    valid = {i.name for i in exp.instances}
    assert not valid & {r.name for r in exp.rejected}
    assert len(exp.rejected) == min(exp.rejected_count, REJECTED_SAMPLE)
    assert sum(sum(c.values()) for c in exp.rejection_counts.values()) == exp.rejected_count
    assert len(exp.instances) + exp.rejected_count + exp.duplicates + exp.filtered == exp.candidates


def test_show_rejected_groups_by_reason_with_counts() -> None:
    exp = _expansion()
    res = cli("list-instances", *SM90, "--show-rejected")
    out = res.stdout
    assert f"{exp.rejected_count} rejected candidates by reason" in out
    m = re.search(
        r"(\d+) valid, (\d+) rejected, (\d+) duplicates, (\d+) filtered out, (\d+) candidates", out
    )
    assert m and int(m.group(1)) == len(exp.instances) and int(m.group(2)) == exp.rejected_count
    # the grouped table: one row per rule, counts add up to the number rejected
    rows = re.findall(
        r"^\W*(\d+)\s*\W\s*([a-z_]+)\s*\W\s*(.+?)\s*\W?\s*$",
        out.split("rejected candidates by reason")[1],
        re.M,
    )
    counts = {rule: int(n) for n, rule, _ in rows}
    want = {rule: sum(c.values()) for rule, c in exp.rejection_counts.items()}
    assert counts == want
    assert sum(counts.values()) == exp.rejected_count
    # the same grouping in JSON
    js = _json(*SM90, "--show-rejected")
    assert {g["rule"]: g["count"] for g in js["rejected"]} == want
    assert all(g["reason"] for g in js["rejected"])
    assert [g["count"] for g in js["rejected"]] == sorted(
        (g["count"] for g in js["rejected"]), reverse=True
    )
    # with machine formats the rejected table goes to stderr, stdout stays clean
    names = cli("list-instances", *SM90, "--show-rejected", "--format", "names")
    assert "rejected" not in names.stdout and "rejected candidates by reason" in names.stderr


def test_formats_agree() -> None:
    names = _names(*SM90)
    js = _json(*SM90)
    assert js["arch"] == "sm_90a" and js["count"] == len(names) == len(js["instances"])
    assert [i["name"] for i in js["instances"]] == names
    for i in js["instances"][:50]:
        assert set(INSTANCE_FIELDS) <= set(i)
    rows = list(csv.DictReader(io.StringIO(cli("list-instances", *SM90, "--format", "csv").stdout)))
    assert [r["name"] for r in rows] == names
    assert set(INSTANCE_FIELDS) <= set(rows[0])
    table = cli("list-instances", *SM90).stdout
    assert f"{len(names)} instances for sm_90a" in table
    assert f"{len(names)} valid," in table


FILTER_CASES = [
    (("--variant", "backward_data"), lambda i: i["variant"] == "backward_data"),
    (
        ("--variant", "forward", "--variant", "backward_weight"),
        lambda i: i["variant"] in ("forward", "backward_weight"),
    ),
    (("--datatype", "bf16"), lambda i: i["datatype"] == "bf16"),
    (("--ndim", "3"), lambda i: i["ndim"] == 3),
    (("--ndim", "1", "--datatype", "fp32"), lambda i: i["ndim"] == 1 and i["datatype"] == "fp32"),
    (("--pipeline", "basic"), lambda i: i["pipeline"] == "basic"),
    (
        ("--kernels", "grouped_conv_fwd_fp16_2d_*"),
        lambda i: i["name"].startswith("grouped_conv_fwd_fp16_2d_"),
    ),
    (
        ("--kernels", "*_t64x64x32_*", "--variant", "forward"),
        lambda i: "_t64x64x32_" in i["name"] and i["variant"] == "forward",
    ),
]


@pytest.mark.parametrize("args,keep", FILTER_CASES, ids=[" ".join(a) for a, _ in FILTER_CASES])
def test_filters_select_exactly_the_matching_instances(args, keep) -> None:
    every = _json(*SM90)["instances"]
    got = _json(*SM90, *args)
    want = [i["name"] for i in every if keep(i)]
    assert [i["name"] for i in got["instances"]] == want
    assert got["count"] == len(want) > 0
    assert len(_names(*SM90, *args)) == len(want)


def test_empty_selection_says_so() -> None:
    exp = _expansion(filters=Filters(kernels=("grouped_conv_nothing_*",)))
    assert not exp.instances and exp.filtered == len(_expansion().instances)
    res = cli(
        "list-instances",
        *SM90,
        "--kernels",
        "grouped_conv_nothing_*",
        "--format",
        "names",
        ok=False,
    )
    # an empty list is either an error that says why (exit 2) or an empty list: never a crash
    assert res.exit_code in (0, 2), res.output
    assert res.stdout.split() == [] or res.exit_code == 2
    if res.exit_code == 2:
        assert "the expansion is empty" in res.stderr and "Traceback" not in res.stderr
    res = cli(
        "generate", *SM90, "--kernels", "grouped_conv_nothing_*", "-o", "never-written", ok=False
    )
    assert res.exit_code == 2 and "the expansion is empty" in res.stderr
    assert not Path("never-written").exists()


def test_filters_narrow_but_do_not_reject() -> None:
    full = _expansion()
    narrowed = _expansion(filters=Filters(datatypes=(DataType.FP32,)))
    assert narrowed.rejected_count < full.rejected_count
    assert narrowed.filtered > 0
    assert {i.name for i in narrowed.instances} == {
        i.name for i in full.instances if i.datatype is DataType.FP32
    }


@pytest.mark.parametrize("arch", ALL_ARCHS)
def test_arch_changes_the_space(arch: str) -> None:
    n = len(_expansion(arch).instances)
    if n == 0:  # e.g. CDNA until the template library has MFMA: an error that says why
        res = cli("list-instances", "--arch", arch, "--set", "profiler", ok=False)
        assert res.exit_code == 2 and "the expansion is empty" in res.stderr
        return
    js = _json("--arch", arch, "--set", "profiler")
    assert js["arch"] == arch
    assert js["count"] == n


def test_unknown_arch_lists_the_known_ones() -> None:
    p = cli_proc("list-instances", "--arch", "sm_91", ok=False)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "unknown arch 'sm_91'" in p.stderr
    for a in ALL_ARCHS:
        assert a in p.stderr
    p = cli_proc("generate", "--arch", "gfx9420", "-o", "unused", ok=False)
    assert p.returncode == 2 and "gfx942" in p.stderr


def test_rejections_are_counted_by_reason_and_sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rejection is counted under its rule and reason; only a bounded sample is kept."""
    import ckgen.space.expand as expand_mod

    monkeypatch.setattr(expand_mod, "REJECTED_SAMPLE", 5)
    exp = _expansion("sm_90a", "profiler")
    assert len(exp.rejected) == 5 < exp.rejected_count
    rows = exp.rejected_by_reason()
    assert sum(n for _, _, n in rows) == exp.rejected_count
    assert len(exp.instances) + exp.rejected_count + exp.duplicates + exp.filtered == exp.candidates


def test_entry_size_is_checked_before_expanding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A space over MAX_ENTRY_CANDIDATES is refused from its value lists: no candidate is built,
    even when an earlier entry of the same run is small."""
    import ckgen.space.expand as expand_mod
    from ckgen.errors import ConfigError

    cfg = tmp_path / "big.yaml"
    cfg.write_text(
        "variant: forward\n"
        "instances:\n"
        "  - {tile: [64, 64, 32]}\n"
        "spaces:\n"
        "  - warp_tile: [16, 16, 16]\n"
        f"    k_batch: {list(range(65))}\n"
        f"    groups_to_merge: {list(range(1, 801))}\n"
        "    stages: [2, 3]\n"
    )

    def no_candidates(*a: object, **k: object) -> None:
        raise AssertionError("expanded before the size check")

    monkeypatch.setattr(expand_mod, "_candidates", no_candidates)
    with pytest.raises(ConfigError) as ei:
        expand(load_configs([cfg]), load_arch_specs()["sm_90a"])
    msg = str(ei.value)
    assert f"{cfg}:5: spaces[0]: this entry gives 104000 candidates on sm_90a" in msg
    assert "the limit is 100000 per entry" in msg
