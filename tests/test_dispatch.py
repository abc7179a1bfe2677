"""Dispatcher and workflow: C API in lib/libckgen_dispatch.so, ckgen.Registry (JIT build +
cache), select() on a tuning database and on the cost model (host only: no GPU needed),
Python helpers of profile/tune/report, and the CLI's workflow commands (help, argument errors)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ckgen.model.problem import Problem, load_shapes, write_shapes
from ckgen.runtime.build import parse_status
from ckgen.tuning.profile import mark_best, shard
from ckgen.tuning.tune import Quality, build_db, split_shapes, summarize

from conftest import REPO, build_dispatch_host_test, cli, cli_proc, have

SHAPES = REPO / "templates" / "project" / "shapes" / "retinanet_r50fpn_n2.csv"
# The JIT tests build their own instance lists (stable names, whatever the shipped sets hold).
TINY_YAML = {
    "forward": "variant: forward\ndefaults: {ndim: 2, datatype: fp16, tile: [64, 64, 32], waves: "
    "[2, 2, 1]}\n"
    "spaces:\n  - {pipeline: multistage, stages: 3, vector: [8, 8, 8]}\n  - {vector: [1, 1, 1]}\n",
    "backward_weight": "variant: backward_weight\ndefaults: {ndim: 2, datatype: fp16, tile: [64, "
    "64, 32], waves: [2, 2, 1]}\n"
    "spaces:\n  - {pipeline: multistage, stages: 3, vector: [8, 8, 8]}\n",
    "backward_data": "variant: backward_data\ndefaults: {ndim: 2, datatype: fp16, tile: [64, 64, "
    "32], waves: [2, 2, 1]}\n"
    "spaces:\n  - {pipeline: multistage, stages: 3, vector: [8, 8, 8]}\n",
}
FWD_V1 = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v1x1x1"
FWD_V8 = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8"


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
        assert used and used <= names, (path.name, sorted(used - names)[:5])


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


# ------------------------------------------------------------------ compiled (nvcc, no GPU needed)
def test_neighbour_ranking_host_only(tmp_path: Path) -> None:
    """The dispatcher's neighbour ranking without a GPU or CUDA: tests/host/neighbour_ranking.cpp
    (fake instances in a Registry) compiled by the host C++ compiler against the library headers
    and a rendered arch_params.hpp. It checks split_features, residual_estimate, that measured
    residuals override the cost model's order, that an untimed instance borrows the other
    instances' residuals plus the penalty, and that a measured split count is matched by blocks
    per compute unit (k_batch 8 on a shape becomes 2 on one with 4x the tiles), not copied; and
    that a wavelet_tma backward_weight instance's automatic split is estimated with the rule the
    kernel runs (detail::tma_reduction_splits), not the multistage one; and that backward_weight's
    row form (wavelet_tma stride1) is picked from a tuning database's exact ranking, never by the
    cost model alone; and that the forward windows (wavelet_tma window) are estimated on their own
    grid (windows a block, groups a block) and picked over the ring on grouped g4."""
    exe = build_dispatch_host_test("neighbour_ranking", tmp_path)
    out = subprocess.run([str(exe), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("\nok ") >= 14, out.stdout


needs_build = pytest.mark.skipif(
    not have("cmake", "ninja", "nvcc"), reason="needs cmake, ninja and nvcc on PATH"
)


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    from ckgen import Registry

    cache = tmp_path_factory.mktemp("jit")
    cfg = tmp_path_factory.mktemp("cfg")
    paths = []
    for v, text in TINY_YAML.items():
        (cfg / f"{v}.yaml").write_text(text)
        paths.append(cfg / f"{v}.yaml")
    t0 = time.perf_counter()
    r = Registry.build(paths, arch="sm_90a", max_workers=os.cpu_count() or 2, cache_dir=cache)
    first = time.perf_counter() - t0
    for _ in range(3):  # a template edited meanwhile (shared tree) changes the hash: build again
        t0 = time.perf_counter()
        r2 = Registry.build(paths, arch="sm_90a", max_workers=os.cpu_count() or 2, cache_dir=cache)
        second = time.perf_counter() - t0
        if r2.cached:
            break
        r, first = r2, second
    print(f"\nJIT build of {len(r)} kernels: {first:.1f} s; cached rebuild: {second:.3f} s")
    return r, r2, first, second, cache


@pytest.mark.slow
@needs_build
def test_jit_build_and_cache_hit(reg) -> None:
    r, r2, first, second, cache = reg
    assert not r.cached and r2.cached
    assert second < 2.0 and second < first / 10, (first, second)
    assert r2.lib_path == r.lib_path and sorted(k.name for k in r.kernels) == sorted(
        [FWD_V1, FWD_V8, FWD_V8.replace("fwd", "bwd_weight"), FWD_V8.replace("fwd", "bwd_data")]
    )
    assert {k.variant for k in r.kernels} == {"forward", "backward_weight", "backward_data"}
    # the shared library exports the C API and links the shared CUDA runtime (one cudart)
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(r.lib_path)], capture_output=True, text=True
    ).stdout
    for sym in (
        "ckgen_num_kernels",
        "ckgen_kernel_name",
        "ckgen_is_supported",
        "ckgen_workspace_bytes",
        "ckgen_run",
        "ckgen_select",
        "ckgen_load_tuning_db",
    ):
        assert f" T {sym}" in nm, sym
    if shutil.which("ldd"):
        assert (
            "libcudart.so"
            in subprocess.run(["ldd", str(r.lib_path)], capture_output=True, text=True).stdout
        )


@pytest.mark.slow
@needs_build
def test_select_cost_model(reg) -> None:
    r = reg[0]
    r.load_tuning_db(None)
    p = Problem.make(N=2, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
    s = r.select(p, "forward", "fp16")
    assert s.source == "cost-model" and s.name == FWD_V8, s.why  # wide vectors beat v1 on aligned C
    assert "tile efficiency" in s.why
    # C=3: only the v1 instance supports it
    p3 = Problem.make(N=2, C=3, K=64, input=(56, 56), filter=(7, 7), stride=2, pad=3)
    assert r.select(p3, "forward", "fp16").name == FWD_V1
    assert "vector width 8 needs C (3)" in r[FWD_V8].is_supported(p3)
    # backward_weight picks a split count; a k_batch-specific estimate exists
    sw = r.select(p, "backward_weight", "fp16")
    import re

    used = int(
        re.search(r"k_batch (\d+)\)", sw.why).group(1)
    )  # 0 in sw.k_batch = the instance's own choice
    assert used > 1 and sw.k_batch != 1 and sw.kernel.variant == "backward_weight", sw.why
    assert r[sw.name].estimate_us(p, 1) > r[sw.name].estimate_us(p, sw.k_batch)
    assert (
        sw.workspace_bytes(p) == sw.k_batch * 64 * 64 * 9 * 4
        or sw.workspace_bytes(p) == 64 * 64 * 9 * 4
    )
    # tile efficiency: a problem that pads badly costs more per useful flop
    from ckgen.runtime.library import NoKernel

    with pytest.raises(NoKernel, match="ndim"):
        r.select(Problem.make(C=8, K=8, input=(16,), filter=(3,)), "forward", "fp16")
    with pytest.raises(NoKernel, match="no forward bf16 instance"):
        r.select(p, "forward", "bf16")


@pytest.mark.slow
@needs_build
def test_select_tuning_db(reg, tmp_path: Path) -> None:
    r = reg[0]
    ps = {p.name: p for p in load_shapes(SHAPES)}
    tuned = ps["r50_l1_3x3_64_64"]
    rows = [
        {
            "shape": tuned.name,
            "variant": "forward",
            "datatype": "fp16",
            "instance": FWD_V1,
            "ms": "0.1",
            "verified": "pass",
            "k_batch": "0",
            "best": "1",
            "gpu": "fake",
        },
        {
            "shape": tuned.name,
            "variant": "forward",
            "datatype": "fp16",
            "instance": FWD_V8,
            "ms": "0.2",
            "verified": "pass",
            "k_batch": "0",
            "best": "0",
            "gpu": "fake",
        },
        {
            "shape": tuned.name,
            "variant": "forward",
            "datatype": "fp16",
            "instance": "grouped_conv_not_built",
            "ms": "0.05",
            "verified": "pass",
            "k_batch": "0",
            "best": "0",
            "gpu": "fake",
        },
    ]
    db = tmp_path / "db.json"
    db.write_text(json.dumps(build_db(rows, list(ps.values()), arch="sm_90a")))
    assert r.load_tuning_db(db) == 1
    # exact: the fastest *registered* entry of the ranking (the unbuilt kernel is skipped)
    s = r.select(tuned, "forward", "fp16")
    assert s.source == "tuning-db-exact" and s.name == FWD_V1, s.why
    # nearest: a similar 3x3 (different spatial size) borrows the choice
    near = Problem.make(N=2, C=64, K=64, input=(100, 100), filter=(3, 3), pad=1)
    s = r.select(near, "forward", "fp16")
    assert s.source == "tuning-db-nearest" and s.name == FWD_V1 and "r50_l1_3x3_64_64" in s.why
    # far away / other variant: cost model
    assert r.select(near, "backward_weight", "fp16").source == "cost-model"
    far = Problem.make(G=32, N=64, C=8, K=8, input=(7, 7), filter=(1, 1))
    assert r.select(far, "forward", "fp16").source == "cost-model"
    # the cost model only, on request
    assert r.select(tuned, "forward", "fp16", cost_model_only=True).source == "cost-model"
    # CKGEN_TUNING_DB is read by a fresh process on first select
    code = (
        "import ckgen,sys; from ckgen.model.problem import Problem; "
        "r=ckgen.Registry.load(sys.argv[1]);"
        "s=r.select(Problem.make(N=2,C=64,K=64,input=(200,200),filter=(3,3),pad=1),'forward','fp16');print(s.source,s.name)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(r.lib_path)],
        capture_output=True,
        text=True,
        env=dict(os.environ, CKGEN_TUNING_DB=str(db)),
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["tuning-db-exact", FWD_V1]
    # a bad file is an error with the reason
    bad = tmp_path / "bad.json"
    bad.write_text('{"entries": [1, }')
    from ckgen.runtime.library import CkgenRuntimeError

    with pytest.raises(CkgenRuntimeError, match="JSON"):
        r.load_tuning_db(bad)
    r.load_tuning_db(None)


def _fwd_3x3(hw: int, name: str = "") -> Problem:
    return Problem.make(N=2, C=64, K=64, input=(hw, hw), filter=(3, 3), pad=1, name=name)


def _db_rows(times: dict[str, dict[str, float]]) -> list[dict[str, str]]:
    return [
        {
            "shape": s,
            "variant": "forward",
            "datatype": "fp16",
            "instance": k,
            "ms": str(ms),
            "verified": "pass",
            "k_batch": "0",
        }
        for s, t in times.items()
        for k, ms in t.items()
    ]


@pytest.mark.slow
@needs_build
def test_select_neighbour_ranking(reg, tmp_path: Path) -> None:
    """A shape not in the DB: the cost model's estimates, corrected by the residuals (measured
    over estimated time) of the same instance on the tuned shapes nearby. The cost model alone
    prefers v8 on this aligned problem; neighbours that measured v8 far slower than estimated
    and v1 at its estimate turn the choice to v1."""
    r = reg[0]
    target = _fwd_3x3(64)
    shapes = [_fwd_3x3(72, "near"), _fwd_3x3(48, "b"), _fwd_3x3(88, "c"), _fwd_3x3(40, "d")]
    assert r.select(target, "forward", "fp16", cost_model_only=True).name == FWD_V8
    est = {s.name: {k: r[k].estimate_us(s) * 1e-3 for k in (FWD_V1, FWD_V8)} for s in shapes}
    times = {s: {FWD_V1: e[FWD_V1], FWD_V8: 10 * e[FWD_V8]} for s, e in est.items()}
    db = tmp_path / "db.json"
    db.write_text(json.dumps(build_db(_db_rows(times), shapes, arch="sm_90a")))
    assert r.load_tuning_db(db) == 4
    s = r.select(target, "forward", "fp16")
    assert s.source == "tuning-db-nearest" and s.name == FWD_V1, s.why
    assert (
        "4 tuned shape(s) within distance" in s.why
        and "'near'" in s.why
        and "calibrated by 4" in s.why
    ), s.why
    # the exact shape still takes its own ranking
    assert r.select(shapes[0], "forward", "fp16").name == FWD_V1
    # neighbours that measured both at their estimates: the cost model's order
    times2 = {s: {FWD_V1: e[FWD_V1], FWD_V8: e[FWD_V8]} for s, e in est.items()}
    db.write_text(json.dumps(build_db(_db_rows(times2), shapes, arch="sm_90a")))
    r.load_tuning_db(db)
    assert r.select(target, "forward", "fp16").name == FWD_V8
    # only an unsupported instance timed nearby (C=3 refuses v8): the supported, untimed v1
    c3 = [
        Problem.make(
            N=2, C=3, K=64, input=(hw, hw), filter=(7, 7), stride=2, pad=3, name=f"c3_{hw}"
        )
        for hw in (200, 240)
    ]
    db.write_text(json.dumps(build_db(_db_rows({"c3_200": {FWD_V8: 0.1}}), c3, arch="sm_90a")))
    r.load_tuning_db(db)
    s = r.select(c3[1], "forward", "fp16")
    assert (
        s.source == "tuning-db-nearest"
        and s.name == FWD_V1
        and "untimed by the neighbours" in s.why
    ), s.why
    r.load_tuning_db(None)


@pytest.mark.slow
@needs_build
def test_run_refuses_with_reason_before_any_launch(reg) -> None:
    from ckgen.runtime.library import CkgenRuntimeError, UnsupportedProblem

    r = reg[0]
    p3 = Problem.make(N=2, C=3, K=64, input=(56, 56), filter=(3, 3), pad=1)
    with pytest.raises(UnsupportedProblem) as ei:
        r[FWD_V8].run(p3, 0, 0, 0)
    assert "vector width 8 needs C (3)" in ei.value.reason
    bad = Problem.make(N=2, C=8, K=8, input=(2, 2), filter=(5, 5))  # empty output
    assert "invalid problem" in r[FWD_V1].is_supported(bad)
    with pytest.raises(CkgenRuntimeError):
        r[FWD_V1].run(bad, 0, 0, 0)


@pytest.mark.slow
@needs_build
def test_check_heuristic_cli_without_gpu(reg, tmp_path: Path) -> None:
    r = reg[0]
    entry = r.lib_path.parent.parent.parent  # <cache>/<arch-hash>/{src,build}
    res = tmp_path / "res.csv"
    res.write_text(
        "shape,variant,datatype,instance,ms,tflops,gbps,verified,k_batch,best\n"
        f"r50_l1_3x3_64_64,forward,fp16,{FWD_V1},0.30,1,1,pass,0,0\n"
        f"r50_l1_3x3_64_64,forward,fp16,{FWD_V8},0.10,1,1,pass,0,1\n"
    )
    j = tmp_path / "q.json"
    cli(
        "check-heuristic",
        "-o",
        str(entry),
        "--results",
        str(res),
        "--shapes",
        str(SHAPES),
        "--json",
        str(j),
    )
    q = json.loads(j.read_text())
    assert (
        q["summary"]["timed"] == 1
        and q["rows"][0]["selected"] == FWD_V8
        and q["summary"]["within_10pct"] == 1.0
    )


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


@pytest.mark.parametrize("bad", ["x", "1,-2", "65", "1;2"])
def test_profile_rejects_bad_k_batch(tmp_path: Path, bad: str) -> None:
    out = _fake_project(tmp_path, ("forward",))
    r = cli_proc("profile", "-o", str(out), "--shapes", str(SHAPES), "--k-batch", bad, ok=False)
    assert r.returncode == 2 and "split count 0..64" in r.stderr
    assert not (out / "profile").exists()  # refused before anything ran
