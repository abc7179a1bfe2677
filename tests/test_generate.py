"""generate: byte-identical output (runs, dirs, --jobs, cwd), no-op regeneration touches
nothing, stale files removed while user files survive, --dry-run, manifest, shards."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ckgen.model.instance import INSTANCE_FIELDS
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import Variant

from conftest import cli, cli_proc, stat_tree, tree

# The default set for sm_90a has > 64 instances, so --jobs really uses the process pool.
DEFAULT = ("--arch", "sm_90a")
TESTS = ("--arch", "sm_90a", "--set", "tests")


def _gen(out: Path, *args: str) -> str:
    return cli("generate", *args, "-o", str(out)).stdout


def _summary(text: str) -> dict[str, int]:
    m = re.search(r"(\d+) written, (\d+) removed, (\d+) unchanged", text)
    assert m, text
    return {"written": int(m.group(1)), "removed": int(m.group(2)), "unchanged": int(m.group(3))}


def _names(*args: str) -> list[str]:
    return cli("list-instances", "--format", "names", *args).stdout.split()


def test_output_is_byte_identical_across_runs_dirs_and_jobs(tmp_path: Path) -> None:
    n = len(_names(*DEFAULT))
    assert n >= 64, "need enough instances for the process pool"
    a, b, c = tmp_path / "a", tmp_path / "deeper" / "b", tmp_path / "c"
    _gen(a, *DEFAULT, "--jobs", "1")
    _gen(b, *DEFAULT, "--jobs", "1")
    _gen(c, *DEFAULT, "--jobs", "4")
    ta = tree(a)
    assert len([f for f in ta if f.startswith("instances/") and f.endswith(".hpp")]) == n
    assert ta == tree(b)
    assert ta == tree(c)
    # nothing machine- or directory-specific leaks into the output
    blob = b"\n".join(ta.values())
    assert str(tmp_path).encode() not in blob
    assert str(Path.home()).encode() + b"/" not in blob


def test_output_is_identical_from_different_working_directories(tmp_path: Path, repo: Path) -> None:
    w1, w2 = tmp_path / "w1", tmp_path / "w2" / "nested"
    w1.mkdir()
    w2.mkdir(parents=True)
    cli_proc("generate", *TESTS, "-o", "out", "--jobs", "2", cwd=w1)
    cli_proc("generate", *TESTS, "-o", "out", cwd=w2)
    # an explicit --config given by a relative and by an absolute path
    cfg = repo / "configs" / "forward" / "tests.yaml"
    (tmp_path / "cfgs").mkdir()
    (tmp_path / "cfgs" / "tests.yaml").write_bytes(cfg.read_bytes())
    cli_proc(
        "generate", "--arch", "sm_90a", "--config", "cfgs/tests.yaml", "-o", "o1", cwd=tmp_path
    )
    cli_proc(
        "generate",
        "--arch",
        "sm_90a",
        "--config",
        str(tmp_path / "cfgs" / "tests.yaml"),
        "-o",
        str(w1 / "o2"),
        cwd=w2,
    )
    assert tree(w1 / "out") == tree(w2 / "out")
    assert tree(tmp_path / "o1") == tree(w1 / "o2")


def test_second_identical_run_touches_nothing(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    first = _summary(_gen(out, *DEFAULT))
    assert first["written"] > 0 and first["unchanged"] == 0
    before = stat_tree(out)
    second = _summary(_gen(out, *DEFAULT, "--jobs", "2"))
    assert second == {"written": 0, "removed": 0, "unchanged": first["written"]}
    assert stat_tree(out) == before, "a no-op regeneration changed an mtime or an inode"
    # the same via a subprocess and another shard size changes only what differs
    p = cli_proc("generate", *DEFAULT, "-o", str(out))
    assert "0 written, 0 removed" in p.stdout
    assert stat_tree(out) == before


def test_stale_files_are_removed_user_files_survive(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    big = set(_names(*DEFAULT))
    small = set(_names(*TESTS))
    assert small < big or small - big  # a different, smaller set
    _gen(out, *DEFAULT)
    cli("emit-cmake", "-o", str(out), "--platform", "nvidia", "--gpu-targets", "90a")
    cmake = (out / "CMakeLists.txt").read_bytes()
    (out / "NOTES.md").write_text("mine\n")
    (out / "instances" / "forward" / "my_local.hpp").write_text("// mine\n")
    (out / "build").mkdir()
    (out / "build" / "CMakeCache.txt").write_text("# a build folder\n")
    stale = [f for f in tree(out) if f.startswith("instances/") and Path(f).stem in big - small]
    assert stale
    res = _summary(_gen(out, *TESTS))
    assert res["removed"] >= len(stale)
    files = tree(out)
    for f in stale:
        assert f not in files, f"stale {f} survived"
    assert files["NOTES.md"] == b"mine\n"
    assert files["instances/forward/my_local.hpp"] == b"// mine\n"
    assert files["build/CMakeCache.txt"] == b"# a build folder\n"
    assert files["CMakeLists.txt"] == cmake
    manifest = json.loads(files["manifest.json"])
    owned = set(manifest["files"])
    assert set(files) - owned == {
        "NOTES.md",
        "instances/forward/my_local.hpp",
        "build/CMakeCache.txt",
        "CMakeLists.txt",
    }
    headers = {Path(f).stem for f in files if f.startswith("instances/") and f.endswith(".hpp")} - {
        "my_local"
    }
    assert headers == small
    # no staging leftovers, no empty directories left behind
    assert not [p for p in out.rglob(".ckgen-staging-*")]
    assert not [d for d in out.rglob("*") if d.is_dir() and not any(d.iterdir())]


def test_dry_run_lists_changes_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    p = cli("generate", *TESTS, "-o", str(out), "--dry-run").stdout
    assert not out.exists()
    lines = p.strip().splitlines()
    creates = [ln for ln in lines if ln.startswith("create ")]
    assert creates and f"{len(creates)} to write, 0 to remove, 0 unchanged (dry run)" in lines[-1]
    _gen(out, *TESTS)
    assert sorted(ln.split(" ", 1)[1] for ln in creates) == sorted(tree(out))
    before, files_before = stat_tree(out), tree(out)
    # nothing to do
    p = cli("generate", *TESTS, "-o", str(out), "--dry-run").stdout
    assert (
        p.strip().splitlines()[-1]
        == f"0 to write, 0 to remove, {len(files_before)} unchanged (dry run)"
    )
    # a different selection: lists creates, updates and removes, still writes nothing
    p = cli(
        "generate", *TESTS, "--datatype", "fp16", "--shard-size", "4", "-o", str(out), "--dry-run"
    ).stdout
    kinds = {ln.split(" ", 1)[0] for ln in p.strip().splitlines()[:-1]}
    assert kinds == {"create", "update", "remove"}
    assert stat_tree(out) == before and tree(out) == files_before


def test_manifest_holds_every_instance_with_its_full_config(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    _gen(out, *DEFAULT)
    man = json.loads((out / "manifest.json").read_text())
    listed = json.loads(cli("list-instances", "--format", "json", *DEFAULT).stdout)["instances"]
    assert man["arch"] == "sm_90a" and man["platform"] == "nvidia"
    assert [i["name"] for i in man["instances"]] == [i["name"] for i in listed]
    for i in man["instances"]:
        assert set(INSTANCE_FIELDS) <= set(i), set(INSTANCE_FIELDS) - set(i)
        inst = parse_instance_name(i["name"])
        for f in INSTANCE_FIELDS:
            v = getattr(inst, f)
            want = v.value if hasattr(v, "value") else (list(v) if isinstance(v, tuple) else v)
            assert i[f] == want, (i["name"], f)
        assert re.match(r"^configs/[a-z_]+/default\.yaml:\d+$", i["origin"]), i["origin"]
        assert (out / "instances" / i["variant"] / f"{i['name']}.hpp").is_file()
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert set(man["files"]) == on_disk


@pytest.mark.parametrize("shard", [4])
def test_shards(tmp_path: Path, shard: int) -> None:
    out = tmp_path / "gen"
    _gen(out, *DEFAULT, "--shard-size", str(shard))
    names = _names(*DEFAULT)
    seen: list[str] = []
    for v in Variant:
        vn = [n for n in names if parse_instance_name(n).variant is v]
        units = sorted((out / "instances" / v.value).glob("*.cpp"))
        assert len(units) == math.ceil(len(vn) / shard)
        assert all(re.fullmatch(r"shard_\d{4}\.cpp", u.name) for u in units)
        for u in units:
            inc = re.findall(r'#include "([a-z0-9_]+)\.hpp"', u.read_text())
            assert 1 <= len(inc) <= shard
            assert all(f"register_{n}(" in u.read_text() for n in inc)
            seen += inc
    assert sorted(seen) == sorted(names), "every instance in exactly one shard"
    cmake = (out / "instances.cmake").read_text()
    assert cmake.count("shard_") == sum(1 for _ in out.glob("instances/*/shard_*.cpp"))
    # back to one unit per instance: shards disappear, per-instance units appear
    res = _summary(_gen(out, *DEFAULT))
    assert not list(out.glob("instances/*/shard_*.cpp"))
    assert len(list(out.glob("instances/*/*.cpp"))) == len(names)
    assert res["removed"] == sum(
        math.ceil(sum(1 for n in names if parse_instance_name(n).variant is v) / shard)
        for v in Variant
    )
