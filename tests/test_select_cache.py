"""Selection cache and autotune: the dispatcher's cache host-only (tests/host/selection_cache.cpp),
the autotune cache file (key, location, locking, corruption, several processes), the shipped
database's GPU gate; on a GPU, a built library's repeated select(), autotune and its cache file."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from ckgen.model.problem import Problem
from ckgen.runtime import autotune as at

from conftest import build_dispatch_host_test, have

P = Problem.make(N=8, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
KEY = at.DeviceKey("NVIDIA H200", 132, 12080, 12080, "0.1.0", "ab" * 32)


# ------------------------------------------------------------------ C++ host-only
def test_selection_cache_host_only(tmp_path: Path) -> None:
    """The selection cache, candidates() and cache_put() of the dispatcher with fake instances:
    hit / miss, keys by device and mode, cleared by a tuning database load and by setting
    changes, a stale epoch's selection dropped, the capacity bound, recorded picks answering
    select, refusals, 8 threads selecting while another clears; and a file written by the
    autotune store loads as a tuning database whose entry decides the exact problem."""
    # a cache file of the autotune store, for the fake fwd_small_v8 on the host test's problem
    store = at.AutotuneStore(tmp_path / "autotune.json", KEY, "sm_90a")
    p = Problem.make(N=8, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
    store.put("forward", "fp16", p, [("fwd_big_v8", 0, 0.02), ("fwd_small_v8", 0, 0.01)])
    exe = build_dispatch_host_test(
        "selection_cache", tmp_path, "-Wall", "-Wextra", "-Werror", "-pthread"
    )
    out = subprocess.run(
        [str(exe), str(tmp_path), str(store.path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "all passed" in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok ") >= 27, out.stdout


# ------------------------------------------------------------------ cache file: key, location
def test_cache_dir_follows_xdg_and_override(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(at.DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert at.autotune_dir() == tmp_path / "xdg" / "ckgen" / "autotune"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert at.autotune_dir() == tmp_path / "home" / ".cache" / "ckgen" / "autotune"
    monkeypatch.setenv(at.DIR_ENV, str(tmp_path / "mine"))
    assert at.autotune_dir() == tmp_path / "mine"


def test_device_key_names_the_file() -> None:
    name = KEY.file_name()
    assert name.startswith("NVIDIA-H200_132sm_") and name.endswith(".json")
    # every component changes the file: another driver, runtime, ckgen or library is measured anew
    for field in ("gpu", "sm_count", "driver", "runtime", "ckgen_version", "library_hash"):
        d = KEY.as_json()
        d[field] = d[field] + 1 if isinstance(d[field], int) else d[field] + "x"
        assert at.DeviceKey(**d).file_name() != name, field
    assert at.slug("AMD Instinct MI300X / OAM") == "AMD-Instinct-MI300X-OAM"


def test_topk_env(monkeypatch) -> None:
    monkeypatch.delenv(at.TOPK_ENV, raising=False)
    assert at.autotune_topk() == at.DEFAULT_TOPK
    monkeypatch.setenv(at.TOPK_ENV, "3")
    assert at.autotune_topk() == 3
    monkeypatch.setenv(at.TOPK_ENV, "zero")
    with pytest.warns(UserWarning, match="not a positive integer"):
        assert at.autotune_topk() == at.DEFAULT_TOPK
    monkeypatch.setenv(at.AUTOTUNE_ENV, "1")
    assert at.autotune_enabled()
    monkeypatch.setenv(at.AUTOTUNE_ENV, "0")
    assert not at.autotune_enabled()


# ------------------------------------------------------------------ cache file: format, corruption
def test_store_writes_a_tuning_database(tmp_path: Path) -> None:
    from ckgen.tuning.tune import read_db

    s = at.AutotuneStore.for_key(KEY, "sm_90a", tmp_path)
    e = s.put("forward", "fp16", P, [("b", 2, 0.5), ("a", 0, 0.25)])
    assert (
        e["kernel"] == "a"
        and e["k_batch"] == 0
        and [r["kernel"] for r in e["ranking"]]
        == [
            "a",
            "b",
        ]
    )
    db = read_db(s.path)  # `ckgen tune`'s reader accepts it
    assert db["ckgen_tuning_db"] == 1 and db["gpu"] == "NVIDIA H200" and db["sm_count"] == 132
    assert db["autotune"] == KEY.as_json() and db["entries"][0]["problem"] == P.to_json()
    # a fresh store (another process) reads it back
    s2 = at.AutotuneStore.for_key(KEY, "sm_90a", tmp_path)
    assert s2.get("forward", "fp16", P)["kernel"] == "a"
    assert s2.get("backward_data", "fp16", P) is None
    assert not list(tmp_path.glob("*.tmp")), "temporary files left behind"


@pytest.mark.parametrize(
    "content",
    [
        b'{"ckgen_tuning_db": 1, "entries": [',  # torn
        b"\x00\xff garbage",
        b"[1, 2, 3]",
        b'{"entries": 5}',
        b"",
    ],
)
def test_corrupt_cache_file_warns_and_is_rebuilt(tmp_path: Path, content: bytes) -> None:
    s = at.AutotuneStore.for_key(KEY, "sm_90a", tmp_path)
    s.path.parent.mkdir(parents=True, exist_ok=True)
    s.path.write_bytes(content)
    with pytest.warns(UserWarning, match="rebuil"):
        assert s.get("forward", "fp16", P) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.put("forward", "fp16", P, [("k", 0, 0.1)])
    assert json.loads(s.path.read_text())["entries"][0]["kernel"] == "k"


def test_cache_file_of_another_key_is_ignored(tmp_path: Path) -> None:
    s = at.AutotuneStore.for_key(KEY, "sm_90a", tmp_path)
    s.put("forward", "fp16", P, [("k", 0, 0.1)])
    other = at.DeviceKey(**{**KEY.as_json(), "driver": 1})
    t = at.AutotuneStore(s.path, other, "sm_90a")  # same path, other key (a copied file)
    with pytest.warns(UserWarning, match="another device"):
        assert t.get("forward", "fp16", P) is None


def _writer(args: tuple[str, int, int]) -> int:
    directory, worker, n = args
    s = at.AutotuneStore.for_key(KEY, "sm_90a", Path(directory))
    for i in range(n):
        p = Problem.make(N=1 + worker, C=8 * (1 + i), K=64, input=(28, 28), filter=(3, 3))
        s.put("forward", "fp16", p, [(f"k{worker}_{i}", 0, 0.1)])
    return n


def _reader(args: tuple[str, float]) -> int:
    directory, seconds = args
    path = Path(directory) / KEY.file_name()
    seen = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.is_file():
            json.loads(path.read_text())  # never a torn file
            seen += 1
    return seen


def test_processes_share_one_cache_file(tmp_path: Path) -> None:
    """4 processes add entries to one cache file while another reads it: no crash, no torn or
    lost write (the lock merges with what is on disk; os.replace makes each write whole)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(5) as pool:
        r = pool.map_async(_reader, [(str(tmp_path), 2.0)])
        counts = pool.map(_writer, [(str(tmp_path), w, 6) for w in range(4)])
        assert r.get(timeout=60)[0] >= 0
    db = json.loads((tmp_path / KEY.file_name()).read_text())
    assert sum(counts) == 24 and len(db["entries"]) == 24
    assert {e["kernel"] for e in db["entries"]} == {f"k{w}_{i}" for w in range(4) for i in range(6)}
    assert not list(tmp_path.glob("*.tmp"))


def _tune_writer(args: tuple[str, int]) -> None:
    from ckgen.tuning.tune import db_header, write_db

    path, worker = args
    for i in range(10):
        db = db_header("sm_90a", "G", 132)
        db["entries"] = [{"worker": worker, "i": i, "pad": "x" * 20000}]
        write_db(Path(path), db)


def test_processes_writing_one_tuning_database(tmp_path: Path) -> None:
    """`ckgen tune`'s writer from several processes: the file is always one whole database."""
    path = tmp_path / "db.json"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        pool.map(_tune_writer, [(str(path), w) for w in range(3)])
    db = json.loads(path.read_text())
    assert db["sm_count"] == 132 and len(db["entries"]) == 1


# ------------------------------------------------------------------ shipped database gate
def test_shipped_database_gate() -> None:
    from ckgen.resources import tuning_dir

    shipped = tuning_dir() / "sm_90a_H100.json"
    assert at.is_shipped(shipped) and not at.is_shipped(Path("/tmp/sm_90a_H100.json"))
    gpu, sm = at.db_device(shipped)
    assert gpu == "NVIDIA H100 80GB HBM3" and sm == 132
    assert at.device_mismatch(gpu, sm, gpu, sm) == ""
    assert "this GPU is 'NVIDIA H200'" in at.device_mismatch(gpu, sm, "NVIDIA H200", 132)
    assert "114" in at.device_mismatch(gpu, sm, gpu, 114)
    assert at.device_mismatch(gpu, sm, "", 0) == ""  # no GPU: nothing to compare


# ------------------------------------------------------------------ GPU: a built library
gpu_build = pytest.mark.skipif(
    not have("cmake", "ninja", "nvcc", "nvidia-smi"),
    reason="needs an NVIDIA GPU (nvidia-smi) and cmake, ninja, nvcc to build the library",
)

TINY = (
    "variant: forward\ndefaults: {ndim: 2, datatype: fp16, tile: [64, 64, 32], waves: [2, 2, 1]}\n"
    "spaces:\n  - {pipeline: multistage, stages: 3, vector: [8, 8, 8]}\n  - {vector: [1, 1, 1]}\n"
)


def build_tiny(tmp_path_factory):
    """The forward fp16 v1 + v8 library of TINY, built once per session (a shared JIT cache
    dir: the second module's build is a cache hit)."""
    from ckgen import Registry

    base = tmp_path_factory.getbasetemp()
    cfg = base / "tiny_forward.yaml"
    cfg.write_text(TINY)
    cache = os.environ.get("CKGEN_CACHE_DIR") or str(base / "ckgen-jit")
    return Registry.build([cfg], arch="sm_90a", max_workers=os.cpu_count() or 2, cache_dir=cache)


@pytest.fixture(scope="module")
def gpu_reg(tmp_path_factory):
    return build_tiny(tmp_path_factory)


@pytest.mark.gpu
@gpu_build
def test_repeated_select_is_cached(gpu_reg) -> None:
    r = gpu_reg
    r.clear_selection_cache()
    s1 = r.select(P, "forward", "fp16")
    s2 = r.select(P, "forward", "fp16")
    assert s1 is s2
    q = Problem.make(N=8, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)  # equal, not same
    assert r.select(q, "forward", "fp16").name == s1.name
    n = 2000
    t0 = time.perf_counter()
    for _i in range(n):
        r.select(P, "forward", "fp16")
    us = (time.perf_counter() - t0) / n * 1e6
    print(f"\nrepeated select(): {us:.2f} us")
    assert us < 20  # generous (a loaded CI host); bench/select_overhead.py measures it properly
    r._memo.clear()  # through the C cache
    r.select(P, "forward", "fp16")
    assert r.selection_cache_stats()["hits"] >= 1
    r.load_tuning_db(None)  # clears both
    assert r.selection_cache_stats()["size"] == 0


@pytest.mark.gpu
@gpu_build
def test_autotune_times_candidates_and_persists(gpu_reg, tmp_path: Path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    monkeypatch.setenv(at.DIR_ENV, str(tmp_path))
    r = gpu_reg
    r.clear_selection_cache()
    r._memo.store = None
    cands = r.candidates(P, "forward", "fp16", k=8)
    assert cands and cands[0].name == r.select(P, "forward", "fp16").name
    stream = torch.cuda.Stream()
    x = torch.randn(8, 56, 56, 64, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 3, 3, 64, device="cuda", dtype=torch.float16)
    y = torch.zeros(8, 56, 56, 64, device="cuda", dtype=torch.float16)
    sel = r.select(P, "forward", "fp16", autotune=True, stream=stream, tensors=(x, w, y))
    assert sel.autotuned and sel.source == "autotune", sel.why
    assert y.abs().sum().item() == 0, "autotune wrote into the caller's output"
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["entries"][0]["kernel"] == sel.name
    # a new process state (memo and C cache cleared) reads the pick from the file, times nothing
    r.clear_selection_cache()
    again = r.select(P, "forward", "fp16", autotune=True)
    assert again.name == sel.name and "cache file" in again.why
    # the file is a tuning database: loading it makes the pick the exact match
    assert r.load_tuning_db(files[0]) == 1
    assert r.select(P, "forward", "fp16").source == "tuning-db-exact"
    r.load_tuning_db(None)
    # run_with runs a candidate
    r.run_with(P, cands[-1].kernel, cands[-1].k_batch, x, w, y, stream=stream)
    torch.cuda.synchronize()
    assert y.abs().sum().item() > 0


@pytest.mark.gpu
@gpu_build
def test_autotune_never_times_during_graph_capture(gpu_reg, tmp_path: Path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    monkeypatch.setenv(at.DIR_ENV, str(tmp_path))
    r = gpu_reg
    r.clear_selection_cache()
    r._memo.store = None
    q = Problem.make(N=4, C=64, K=64, input=(20, 20), filter=(3, 3), pad=1)
    x = torch.randn(4, 20, 20, 64, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 3, 3, 64, device="cuda", dtype=torch.float16)
    y = torch.empty(4, 20, 20, 64, device="cuda", dtype=torch.float16)
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        r.select(q, "forward", "fp16")  # warm (no autotune)
        with torch.cuda.graph(g, stream=s):
            assert r.stream_is_capturing(s)
            sel = r.select(q, "forward", "fp16", autotune=True, stream=s)
            sel.run(q, x, w, y, stream=s)
    assert not sel.autotuned and not list(tmp_path.glob("*.json"))
    g.replay()
    torch.cuda.synchronize()
    assert not r.stream_is_capturing(s)


def test_db_text_is_one_entry_a_line_and_round_trips() -> None:
    db = {"ckgen_tuning_db": 1, "gpu": "G", "entries": [{"a": [1, 2], "b": "x"}, {"a": []}]}
    text = at.dumps_db(db)
    assert json.loads(text) == db
    assert text.splitlines()[4:6] == ['  {"a":[1,2],"b":"x"},', '  {"a":[]}']
    assert json.loads(at.dumps_db({"gpu": "G", "entries": []})) == {"gpu": "G", "entries": []}
