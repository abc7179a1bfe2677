"""The workflow around the dispatcher: Python helpers of profile/tune/report (shapes files,
build status, tuning databases, summaries), the CLI's workflow commands (help, argument errors,
the generated project's dispatcher files) and profile's sharding over GPUs (fake profilers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ckgen.model.problem import Problem, load_shapes, write_shapes
from ckgen.runtime.build import parse_status
from ckgen.tuning.profile import mark_best, shard
from ckgen.tuning.tune import Quality, build_db, split_shapes, summarize

from conftest import REPO, cli, cli_proc

SHAPES = REPO / "templates" / "project" / "shapes" / "retinanet_r50fpn_n2.csv"


# ------------------------------------------------------------------ host-only Python pieces
def test_lazy_import_keeps_ckgen_light() -> None:
    code = (
        "import sys, ckgen; assert 'ckgen.runtime.library' not in sys.modules; from ckgen "
        "import KernelLibrary, Registry, Problem; assert Registry is KernelLibrary; "
        "print(Registry.__name__, Problem.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["KernelLibrary", "Problem"]


def test_shapes_roundtrip(tmp_path: Path) -> None:
    ps = load_shapes(SHAPES)
    assert len(ps) == 41 and ps[0].name == "r50_conv1_7x7s2"
    assert ps[0].input == (1, 800, 800) and ps[0].filter == (1, 7, 7) and ps[0].pad_l == (0, 3, 3)
    assert ps[0].output == (1, 400, 400)
    write_shapes(tmp_path / "s.csv", ps)
    assert [p.key() for p in load_shapes(tmp_path / "s.csv")] == [p.key() for p in ps]
    p = Problem.make(C=8, K=16, input=(17,), filter=(3,), stride=2, pad_l=0, pad_r=1, G=2)
    assert p.ndim == 1 and p.input == (1, 1, 17) and p.pad_r == (0, 0, 1) and p.output == (1, 1, 8)
    assert Problem.from_json(p.to_json()).key() == p.key()


def test_ninja_status_parse_and_sharding() -> None:
    assert parse_status("[3/17] Building CUDA object x.o") == (3, 17, "Building CUDA object x.o")
    assert parse_status("ptxas info: ...") is None
    parts = shard([f"k{i}" for i in range(7)], 3)
    assert parts == [["k0", "k3", "k6"], ["k1", "k4"], ["k2", "k5"]]
    assert shard(["a"], 4) == [["a"]]


def _rows() -> list[dict[str, str]]:
    def mk(s, i, ms, kb="0", v="forward", ver="pass"):
        return {
            "shape": s,
            "variant": v,
            "datatype": "fp16",
            "instance": i,
            "ms": ms,
            "verified": ver,
            "k_batch": kb,
            "best": "1",
            "gpu": "G",
        }

    return [
        mk("r50_l1_1x1_64_64", "a", "0.5"),
        mk("r50_l1_1x1_64_64", "b", "0.2"),
        mk("r50_l1_1x1_64_64", "c", "0.1", ver="fail"),
        mk("r50_l1_3x3_64_64", "a", "0.3"),
        mk("r50_l1_3x3_64_64", "b", ""),
    ]


def test_mark_best_and_tuning_db() -> None:
    rows = _rows()
    mark_best(rows)
    assert [r["best"] for r in rows] == [
        "0",
        "1",
        "0",
        "1",
        "0",
    ]  # failed and untimed rows never win
    db = build_db(rows, load_shapes(SHAPES), arch="sm_90a")
    assert db["ckgen_tuning_db"] == 1 and len(db["entries"]) == 2
    e = {x["shape"]: x for x in db["entries"]}
    assert e["r50_l1_1x1_64_64"]["kernel"] == "b" and [
        r["kernel"] for r in e["r50_l1_1x1_64_64"]["ranking"]
    ] == ["b", "a"]
    assert e["r50_l1_3x3_64_64"]["problem"]["filter"] == [1, 3, 3]
    ps = load_shapes(SHAPES)
    even, odd = split_shapes(ps, "even"), split_shapes(ps, "odd")
    assert not set(even) & set(odd) and len(even) + len(odd) == len(ps)
    assert len(build_db(rows, ps, shapes=["r50_l1_3x3_64_64"])["entries"]) == 1


def test_tuning_db_keeps_every_timed_pair() -> None:
    # the neighbour ranking needs every instance's time relative to the best, not a top-N
    def mk(i, kb):
        return {
            "shape": "r50_l1_1x1_64_64",
            "variant": "backward_weight",
            "datatype": "fp16",
            "instance": f"k{i:02d}",
            "ms": str(0.1 + 0.01 * i),
            "verified": "pass",
            "k_batch": str(kb),
        }

    rows = [mk(i, kb) for i in range(12) for kb in (0, 4)]
    db = build_db(rows, load_shapes(SHAPES))
    ranking = db["entries"][0]["ranking"]
    assert len(ranking) == 24 and [r["ms"] for r in ranking] == sorted(r["ms"] for r in ranking)
    assert {(r["kernel"], r["k_batch"]) for r in ranking} == {
        (f"k{i:02d}", kb) for i in range(12) for kb in (0, 4)
    }
    # keep=N (`ckgen tune --keep`): the N fastest pairs, in order
    kept = build_db(rows, load_shapes(SHAPES), keep=5)["entries"][0]["ranking"]
    assert kept == ranking[:5]


def test_shipped_tuning_databases_name_default_instances() -> None:
    """Every shipped tuning database (configs/tuning/<arch>_<gpu>.json, `ckgen tune --from-csv` of a
    benchmark's profiles) reads as one of this version, belongs to a known arch, ranks its entries
    fastest first, and names only instances of that arch's default set: a config change that
    renames or drops an instance fails here instead of leaving entries the dispatcher skips."""
    from ckgen.model.arch import load_arch_specs
    from ckgen.model.vocab import Variant
    from ckgen.resources import tuning_dir
    from ckgen.space.expand import default_config_paths, expand, load_configs
    from ckgen.tuning.tune import DB_VERSION, read_db

    dbs = sorted(tuning_dir().glob("*.json"))
    assert dbs, f"no tuning database under {tuning_dir()}"
    for path in dbs:
        db = read_db(path)
        arch = db["arch"]
        assert db["ckgen_tuning_db"] == DB_VERSION and path.stem.startswith(arch + "_"), path
        names = {
            i.name
            for i in expand(
                load_configs(default_config_paths(list(Variant), "default")),
                load_arch_specs()[arch],
            ).instances
        }
        used = set()
        for e in db["entries"]:
            ms = [r["ms"] for r in e["ranking"]]
            assert ms == sorted(ms) and e["kernel"] == e["ranking"][0]["kernel"], (
                path.name,
                e["shape"],
            )
            used.update(r["kernel"] for r in e["ranking"])
        # a channel-padding face (kernel/channel_pad.hpp) is its instance's name + "_cpad"
        faces = {n.removesuffix("_cpad") for n in used}
        assert used and faces <= names, (path.name, sorted(faces - names)[:5])


def test_summary_distribution() -> None:
    q = [
        Quality("forward", "fp16", f"s{i}", "k", 0, "cost-model", ms, "b", 1.0)
        for i, ms in enumerate([1.0, 1.05, 1.5, None])
    ]
    s = summarize(q)
    assert s["timed"] == 3 and s["untimed"] == 1
    assert s["within_10pct"] == pytest.approx(2 / 3) and s["max_ratio"] == 1.5


def test_report_markdown_and_plots(tmp_path: Path) -> None:
    res = tmp_path / "res.csv"
    res.write_text(
        "shape,variant,datatype,instance,ms,tflops,gbps,verified,k_batch,best\n"
        "s1,forward,fp16,k1,0.5,10,100,pass,0,0\ns1,forward,fp16,k2,0.25,20,200,pass,0,0\n"
        "s2,backward_weight,fp16,k3,1.0,5,50,pass,4,1\n"
    )
    cud = tmp_path / "cudnn.csv"
    cud.write_text("shape,variant,datatype,cudnn_ms,cudnn_tflops\ns1,forward,fp16,0.5,10\n")
    r = cli("report", "--results", str(res), "--cudnn", str(cud), "-o", str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| forward | fp16 | s1 | `k2` | 0.2500 | 20.0 | 0.5000 | 2.00 |" in md
    assert "| forward | fp16 | 1 | 2.000 |" in md and "| backward_weight | fp16 | 1 | - |" in md
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in r.stderr
    else:
        assert (tmp_path / "rep" / "speedup.png").is_file() and (
            tmp_path / "rep" / "roofline.png"
        ).is_file()
        # one plot per variant that has a cuDNN time to compare with
        assert (tmp_path / "rep" / "speedup_forward.png").is_file()
        assert not (tmp_path / "rep" / "speedup_backward_weight.png").exists()


# ------------------------------------------------------------------ CLI surface
@pytest.mark.parametrize("cmd", ["build", "profile", "tune", "check-heuristic", "report"])
def test_workflow_help(cmd: str) -> None:
    out = cli(cmd, "--help").output
    assert "-o, --output" in out or "--results" in out


def test_workflow_argument_errors(tmp_path: Path) -> None:
    r = cli_proc("build", "-o", str(tmp_path / "none"), ok=False)
    assert (
        r.returncode == 2 and "manifest.json not found" in r.stderr and "Traceback" not in r.stderr
    )
    r = cli_proc("profile", "-o", str(tmp_path), ok=False)
    assert r.returncode == 2 and "--shapes" in r.stderr
    r = cli_proc(
        "profile", "-o", str(tmp_path), "--shapes", str(SHAPES), "--variant", "sideways", ok=False
    )
    assert r.returncode == 2 and "sideways" in r.stderr
    cli(
        "generate",
        "--arch",
        "sm_90a",
        "--set",
        "tests",
        "-o",
        str(tmp_path / "g"),
        "-q",
        "--kernels",
        "grouped_conv_fwd_fp16_2d_*",
    )
    r = cli_proc("profile", "-o", str(tmp_path / "g"), "--shapes", str(SHAPES), ok=False)
    assert r.returncode == 2 and "ckgen build -o" in r.stderr
    r = cli_proc("build", "-o", str(tmp_path / "g"), "--launcher", "no-such-launcher-xyz", ok=False)
    assert r.returncode == 2 and "not on PATH" in r.stderr
    r = cli_proc(
        "tune", "-o", str(tmp_path / "g"), "--shapes", str(tmp_path / "missing.csv"), ok=False
    )
    assert r.returncode == 2
    r = cli_proc(
        "report", "--results", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "rep"), ok=False
    )
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_generated_project_has_dispatcher(tmp_path: Path) -> None:
    cli(
        "generate",
        "--arch",
        "sm_90a",
        "--set",
        "tests",
        "-o",
        str(tmp_path),
        "-q",
        "--kernels",
        "grouped_conv_fwd_fp16_2d_*",
    )
    for f in (
        "dispatcher.cmake",
        "dispatch/ckgen_dispatch.cpp",
        "dispatch/ckgen_dispatch_args.cpp",
        "dispatch/ckgen_dispatch_args.hpp",
        "dispatch/ckgen_dispatch.h",
        "include/ckgen/dispatch/dispatcher.hpp",
        "include/ckgen/generated/arch_params.hpp",
    ):
        assert (tmp_path / f).is_file(), f
    hdr = (tmp_path / "include/ckgen/generated/arch_params.hpp").read_text()
    specs = json.loads((REPO / "arch_specs.json").read_text())["sm_90a"]
    assert (
        f"kComputeUnits = {specs['compute_units']};" in hdr
        and f"kLdsBytes = {specs['lds_bytes']};" in hdr
    )
    cli("emit-cmake", "-o", str(tmp_path))
    assert (tmp_path / "CMakeLists.txt").read_text().count("dispatcher.cmake") == 1


# ---------------------------------------------------------- multi-GPU sharding (fake profilers)
FAKE_PROFILER = r"""#!/usr/bin/env bash
# Stand-in for ckgen_profiler_<variant>: --list prints instances; a run writes one CSV row per
# (shape, instance) it was given, with the GPU it saw (CUDA_VISIBLE_DEVICES) as the time.
v=$(basename "$0"); v=${v#ckgen_profiler_}
all="$*"
if [ "$1" = --list ]; then for i in 0 1 2 3 4; do echo "grouped_conv_${v}_k$i  fp16  2D  sm_90a"; done; exit 0; fi
while [ $# -gt 0 ]; do case $1 in --kernels) ks=$2; shift;; --csv) csv=$2; shift;; --shapes) sh=$2; shift;; esac; shift; done
echo "shape,variant,datatype,instance,ms,tflops,gbps,verified,k_batch,best,gpu" > "$csv"
echo "$all" > "$csv.args"
for s in $(tail -n +2 "$sh" | cut -d, -f1); do
  for k in ${ks//,/ }; do echo "$s,$v,fp16,$k,$((CUDA_VISIBLE_DEVICES + 1)).${#k},1,1,pass,0,1,dev$CUDA_VISIBLE_DEVICES" >> "$csv"; done
done
"""  # noqa: E501


def _fake_project(tmp_path: Path, variants: tuple[str, ...]) -> Path:
    out = tmp_path / "proj"
    (out / "build" / "bin").mkdir(parents=True)
    for v in variants:
        exe = out / "build" / "bin" / f"ckgen_profiler_{v}"
        exe.write_text(FAKE_PROFILER)
        exe.chmod(0o755)
    return out


def test_profile_shards_over_gpus(tmp_path: Path) -> None:
    out = _fake_project(tmp_path, ("forward", "backward_weight"))
    shapes = tmp_path / "s.csv"
    write_shapes(shapes, load_shapes(SHAPES)[:3])
    r = cli_proc(
        "profile",
        "-o",
        str(out),
        "--shapes",
        str(shapes),
        "--devices",
        "0,1,2",
        "--variant",
        "forward",
        "--variant",
        "backward_weight",
        "--verify",
        "none",
        "--csv",
        str(tmp_path / "all.csv"),
    )
    from ckgen.tuning.profile import read_rows

    rows = read_rows(tmp_path / "all.csv")
    assert len(rows) == 2 * 3 * 5  # variants x shapes x instances, no row lost or doubled
    for v in ("forward", "backward_weight"):
        gpus = {r["instance"]: r["gpu"] for r in rows if r["variant"] == v}
        assert gpus == {
            f"grouped_conv_{v}_k{i}": f"dev{i % 3}" for i in range(5)
        }  # round-robin, one GPU each
    best = [
        r for r in rows if r["best"] == "1"
    ]  # recomputed over all shards: fastest = GPU 0's instance k0
    assert len(best) == 6 and all(r["gpu"] == "dev0" for r in best)
    assert "best per shape" in r.stdout


def test_profile_passes_run_options_to_every_variant(tmp_path: Path) -> None:
    out = _fake_project(tmp_path, ("forward", "backward_weight"))
    shapes = tmp_path / "s.csv"
    write_shapes(shapes, load_shapes(SHAPES)[:1])
    cli_proc(
        "profile",
        "-o",
        str(out),
        "--shapes",
        str(shapes),
        "--devices",
        "0",
        "--verify",
        "none",
        "--k-batch",
        "0,2",
        "--split-reduce",
        "cluster",
        "--streamk-blocks",
        "96",
    )
    for v in ("forward", "backward_weight"):
        args = (out / "profile" / f"{v}_dev0.csv.args").read_text().split()
        for flag, value in (
            ("--k-batch", "0,2"),
            ("--split-reduce", "cluster"),
            ("--streamk-blocks", "96"),
        ):
            assert args[args.index(flag) + 1] == value, (v, args)
    cli_proc(
        "profile", "-o", str(out), "--shapes", str(shapes), "--devices", "0", "--verify", "none"
    )
    args = (out / "profile" / "forward_dev0.csv.args").read_text().split()
    assert not {"--k-batch", "--split-reduce", "--streamk-blocks"} & set(
        args
    )  # the profilers' defaults


def test_profile_refuses_bad_shapes_and_a_missing_build_before_writing(tmp_path: Path) -> None:
    """A shapes file that is not a regular file, one without the profiler's columns, and a
    project with nothing built: exit 2, the reason, and no OUTPUT/profile left behind."""
    out = _fake_project(tmp_path, ("forward",))
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (out, "/dev/null", "is not a regular file"),
        (out, str(bad), "missing column(s)"),
        (empty, str(SHAPES), "ckgen build -o"),
    ]
    for project, shapes, why in cases:
        r = cli_proc("profile", "-o", str(project), "--shapes", shapes, ok=False)
        assert r.returncode == 2 and why in r.stderr, r.stderr
        assert not (project / "profile").exists()


@pytest.mark.parametrize("bad", ["x", "1,-2", "65", "1;2"])
def test_profile_rejects_bad_k_batch(tmp_path: Path, bad: str) -> None:
    out = _fake_project(tmp_path, ("forward",))
    r = cli_proc("profile", "-o", str(out), "--shapes", str(SHAPES), "--k-batch", bad, ok=False)
    assert r.returncode == 2 and "split count 0..64" in r.stderr
    assert not (out / "profile").exists()  # refused before anything ran
