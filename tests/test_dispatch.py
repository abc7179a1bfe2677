"""Dispatcher: C API in lib/libckgen_dispatch.so, ckgen.Registry (JIT build + cache), select()
on a tuning database and on the cost model (host only: no GPU needed), the neighbour ranking
host-only. The workflow's Python helpers and CLI commands: tests/test_workflow.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ckgen.model.problem import Problem, load_shapes
from ckgen.tuning.tune import build_db

from conftest import REPO, build_dispatch_host_test, cli, have

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


# ------------------------------------------------------------------ compiled (nvcc, no GPU needed)
def test_neighbour_ranking_host_only(tmp_path: Path) -> None:
    """The dispatcher's neighbour ranking without a GPU or CUDA: tests/host/neighbour_ranking.cpp
    (fake instances in a Registry) compiled by the host C++ compiler against the library headers
    and a rendered arch_params.hpp. It checks split_features, residual_estimate, that measured
    residuals override the cost model's order, that an untimed instance borrows the other
    instances' residuals plus the penalty, and that a measured split count is matched by blocks
    per compute unit (k_batch 8 on a shape becomes 2 or 4 on one with 4x the tiles), not copied; and
    that a wavelet_tma backward_weight instance's automatic split is estimated with the rule the
    kernel runs (detail::tma_reduction_splits), not the multistage one; and that backward_weight's
    row form (wavelet_tma stride1) is picked from a tuning database's exact ranking, never by the
    cost model alone; and that the forward windows (wavelet_tma window) are estimated on their own
    grid (windows a block, groups a block) and picked over the ring on grouped g4."""
    exe = build_dispatch_host_test("neighbour_ranking", tmp_path)
    out = subprocess.run([str(exe), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("\nok ") >= 14, out.stdout


def test_twins_host_only(tmp_path: Path) -> None:
    """The dispatcher's twins without a GPU: tests/host/twins.cpp. A fused request ranks its
    candidates by their plain twins' database entries (exact and nearest), passes over a ranked
    instance without a fused twin, and lists fused candidates in the plain twins' order; a bf16
    request reads a database that holds fp16 entries only, each name standing for its bf16 twin,
    while an fp16 request keeps its own names."""
    exe = build_dispatch_host_test("twins", tmp_path)
    out = subprocess.run([str(exe), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("\nok ") >= 8, out.stdout


def test_channel_pad_faces_host_only(tmp_path: Path) -> None:
    """Channel-padding faces (kernel/channel_pad.hpp) without a GPU: tests/host/channel_pad.cpp runs
    a face over a fake fp32 instance that computes the reference on the problem it is given and
    refuses channels that are not whole vectors. Every variant, odd C and / or K, groups, 1D / 3D,
    stride 2: the face's result equals a plain-loop reference of the user's problem with the
    output poisoned and the workspace garbage; the face refuses whole-vector problems, only plain
    split-K instances of whole vectors get one, and the dispatcher picks it over a scalar
    instance on C = 921, estimated as its instance on the padded problem plus the copies."""
    exe = build_dispatch_host_test("channel_pad", tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok face equals the reference") == 30, out.stdout


def test_mask_copy_faces_host_only(tmp_path: Path) -> None:
    """Mask-copy faces (kernel/mask_copy.hpp) without a GPU: tests/host/mask_copy.cpp runs a face
    over the fake fp32 reference instance for backward_data and backward_weight with drelu,
    drelu6 and dleaky_relu (1D-3D, groups, stride 2): the result equals the reference of dy times
    the mask of y with the output poisoned and the workspace garbage, a call without y fails; the
    registry gives faces only to plain backward instances and none where the fused twin is
    registered; the cost model prices a face as its instance plus the copy; a drelu request gets
    the face, or the fused twin where one serves it."""
    exe = build_dispatch_host_test("mask_copy", tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok face equals the reference") == 24, out.stdout


def test_chain_mode_host_only(tmp_path: Path) -> None:
    """CKGEN_CHAIN (core/chain.hpp): unset / all chains every launch, call only the kernels after
    the first of a call, off none; the process reads the value it was started with."""
    exe = build_dispatch_host_test("chain_mode", tmp_path, "-Wall", "-Wextra", "-Werror")
    for value in ("all", "call", "off"):
        env = dict(os.environ, CKGEN_CHAIN=value)
        out = subprocess.run([str(exe), value], capture_output=True, text=True, timeout=60, env=env)
        assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
        assert out.stdout.count("\nok ") + out.stdout.startswith("ok ") == 9, out.stdout


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
    v8 = [FWD_V8, FWD_V8.replace("fwd", "bwd_weight"), FWD_V8.replace("fwd", "bwd_data")]
    # the 16-byte instances, their channel-padding faces (kernel/channel_pad.hpp) and the
    # mask-copy faces of the plain backward ones (kernel/mask_copy.hpp)
    masks = ("drelu", "drelu6", "dlrelu")
    assert r2.lib_path == r.lib_path and sorted(k.name for k in r.kernels) == sorted(
        [FWD_V1, *v8, *(n + "_cpad" for n in v8), *(f"{n}_{m}" for n in v8[1:] for m in masks)]
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
    # C=3: the v1 instance, or the v8 instance's channel-padding face; never v8 itself
    p3 = Problem.make(N=2, C=3, K=64, input=(56, 56), filter=(7, 7), stride=2, pad=3)
    assert r.select(p3, "forward", "fp16").name in (FWD_V1, FWD_V8 + "_cpad")
    assert "vector width 8 needs C (3)" in r[FWD_V8].is_supported(p3)
    assert r[FWD_V8 + "_cpad"].is_supported(p3) == ""
    assert "whole 16-byte vectors" in r[FWD_V8 + "_cpad"].is_supported(p)
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
            "ms": "10",
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
    # nearest: a similar 3x3 (different spatial size) borrows the choice (a measured contrast
    # far beyond the cost model's: one shape's residuals are shrunk towards the cost model)
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
    # only an unsupported instance timed nearby (C=3 refuses v8): a supported, untimed entry
    # (v1, or v8's channel-padding face)
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
        and s.name in (FWD_V1, FWD_V8 + "_cpad")
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
