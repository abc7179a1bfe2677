"""bench/models.py without a GPU: argument parsing, the row plan and its order, the kernel globs,
the budget, the CSV writer and --resume, the summary and the issue's targets on made-up rows;
with PyTorch (CPU), the gradient error and one small model's cuDNN rows end to end."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import models as bm
import pytest

NAMES = ["resnet50", "mobilenet_v2", "r3d_18"]


def spec(name: str, family: str = "image", batch: int = 32):
    return SimpleNamespace(name=name, family=family, train_batch=batch)


SPECS = [spec("resnet50"), spec("mobilenet_v2"), spec("r3d_18", "video", 8)]


def test_parse_defaults_and_lists() -> None:
    a = bm.parse_args([], names=NAMES)
    assert a.models == NAMES and a.compile_models == NAMES
    assert a.dtypes == ["fp16", "bf16"] and a.modes == ["eager", "graph", "compile"]
    assert a.backends == ["cudnn_bench", "cudnn", "ckgen", "ckgen_tune"]
    a = bm.parse_args(
        ["--models", "r3d_18,resnet50", "--backends", "all", "--batch", "r3d_18=2"], names=NAMES
    )
    assert a.models == ["r3d_18", "resnet50"] and a.batches == {"r3d_18": 2}
    assert bm.parse_args(["--compile-models", "none"], names=NAMES).compile_models == []
    for bad in (
        ["--models", "resnet50,nope"],
        ["--dtypes", "fp8"],
        ["--batch", "resnet50"],
        ["--models", "none"],
    ):
        with pytest.raises(SystemExit):
            bm.parse_args(bad, names=NAMES)


def test_plan_order_and_batches() -> None:
    a = bm.parse_args(
        ["--compile-models", "resnet50", "--dtypes", "fp16", "--infer-batches", "1,32",
         "--batch", "r3d_18=4"], names=NAMES,
    )  # fmt: skip
    keys = list(bm.plan(a, SPECS))
    assert keys[0] == bm.Key("resnet50", 32, "train", "fp16", "eager", "cudnn_bench")
    assert [k.backend for k in keys[:4]] == list(bm.DEFAULT_BACKENDS)  # the reference first
    phases = [k.phase for k in keys]
    assert phases == sorted(phases, key=bm.PHASES.index)  # every training row first
    train = [k for k in keys if k.phase == "train"]
    assert [k.mode for k in train] == sorted((k.mode for k in train), key=bm.MODES.index)
    assert {k.model for k in keys if k.mode == "compile"} == {"resnet50"}
    assert {k.batch for k in train if k.model == "r3d_18"} == {4}
    assert {k.batch for k in keys if k.phase == "infer"} == {1, 32}
    assert len(keys) == len(set(keys))


def test_kernel_globs_follow_models_and_dtypes() -> None:
    a = bm.parse_args(["--models", "resnet50,r3d_18", "--dtypes", "bf16,fp16"], names=NAMES)
    assert bm.kernel_globs(a, SPECS) == [
        "grouped_conv_*_bf16_2d_*", "grouped_conv_*_bf16_3d_*",
        "grouped_conv_*_fp16_2d_*", "grouped_conv_*_fp16_3d_*",
    ]  # fmt: skip


def test_budget_uses_the_last_row_of_a_mode() -> None:
    now = [0.0]
    b = bm.Budget(200.0, clock=lambda: now[0])
    assert b.allows("eager") and b.allows("compile")
    now[0] = 185.0
    assert b.allows("eager") and not b.allows("compile")
    b.record("eager", 20.0)
    assert not b.allows("eager")
    assert bm.Budget(0.0).allows("compile")  # no budget


def _row(key, ms=None, **kw) -> dict:
    return {**key._asdict(), "ms": ms, "status": "ok" if ms else "skipped", "gpu": "G", **kw}


def test_writer_resume(tmp_path: Path) -> None:
    k1 = bm.Key("resnet50", 32, "train", "fp16", "eager", "cudnn_bench")
    k2 = k1._replace(backend="ckgen")
    resume, out = tmp_path / "all.csv", tmp_path / "out" / "m.csv"
    w = bm.Writer(out, resume)
    w.write(_row(k1, 10.0, grad_err=0.5))
    w.write(_row(k2))  # skipped: measured again next time
    w.write(_row(k1._replace(dtype="bf16"), status="skipped: no ckgen library (x)"))
    w.close()
    assert [r["status"][:7] for r in csv.DictReader(out.open())] == ["ok", "skipped", "skipped"]
    w = bm.Writer(tmp_path / "second.csv", resume)
    assert set(w.done) == {k1}
    w.write(_row(k2, 8.0, speedup_vs_cudnn=1.25))
    w.close()
    rows = list(csv.DictReader((tmp_path / "second.csv").open()))
    assert [(r["backend"], r["ms"], r["speedup_vs_cudnn"]) for r in rows] == [
        ("cudnn_bench", "10.0000", ""), ("ckgen", "8.0000", "1.2500"),
    ]  # fmt: skip
    assert len(list(csv.DictReader(resume.open()))) == 2
    assert list(rows[0]) == list(bm.COLUMNS)


def _rows(speedups: dict, mode: str = "eager", breaks: int = 0) -> list[dict]:
    rows = []
    for model, (ck, tune) in speedups.items():
        k = bm.Key(model, 32, "train", "fp16", mode, "cudnn_bench")
        rows.append(_row(k, 10.0, speedup_vs_cudnn=1.0, graph_breaks=0, ckgen_breaks=0))
        for be, s in (("ckgen", ck), ("ckgen_tune", tune)):
            if s is None:
                rows.append(_row(k._replace(backend=be), None, status="error: NoKernelError: x"))
            else:
                extra = dict(ckgen_breaks=breaks, grad_err=0.3, cudnn_grad_err=0.3)
                rows.append(_row(k._replace(backend=be), 10.0 / s, speedup_vs_cudnn=s, **extra))
    return [{k: bm.fmt(v) for k, v in r.items()} for r in rows]


def _verdicts(rows: list[dict]) -> dict:
    return {(t.split()[0], be): v for t, be, v, _ in bm.targets(rows)}


def test_targets() -> None:
    rows = _rows({"resnet50": (1.2, 1.3), "mobilenet_v2": (0.9, 1.05)})
    rows += _rows({"resnet50": (1.05, 1.15), "mobilenet_v2": (1.0, None)}, mode="graph")
    rows += _rows({"resnet50": (1.1, 1.1)}, mode="compile", breaks=1)
    v = _verdicts(rows)
    assert v[("eager", "ckgen")] == "NOT met" and v[("eager", "ckgen_tune")] == "met"
    assert v[("CUDA-graph", "ckgen")] == "NOT met"  # resnet50 needs 1.10x
    assert v[("CUDA-graph", "ckgen_tune")] == "incomplete"  # mobilenet_v2's row failed
    assert v[("torch.compile", "ckgen")] == "NOT met"  # a ckgen graph break
    text = bm.summary(rows)
    assert "mobilenet_v2 fp16 0.90x" in text and "[met] ckgen_tune: eager" in text
    assert "0.95x" not in text and "1.30x" in text
    v = _verdicts(_rows({"resnet50": (1.2, 1.3)}))
    assert v[("CUDA-graph", "ckgen")] == "not measured" and v[("eager", "ckgen")] == "met"


def test_report_only(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=bm.COLUMNS)
        w.writeheader()
        w.writerows(_rows({"resnet50": (1.2, 1.3)}))
    assert bm.main(["--report-only", "--csv", str(path), "--summary"]) == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "1.20x" in out and "targets" in out


# ------------------------------------------------------------------ with PyTorch, on the CPU
def test_grad_error_and_outputs() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: model_steps untested")
    import model_steps as ms

    r = {"a": torch.ones(4), "b": torch.zeros(3)}
    assert ms.grad_error({"a": torch.ones(4) * 1.1, "b": torch.ones(3)}, r) == pytest.approx(0.1)
    assert ms.grad_error({}, r) != ms.grad_error({}, r)  # missing: nan
    # an element beyond fp16's range: inf (rounded to nearest) and 65504 (saturated) both agree
    big = {"a": torch.tensor([1.0, 70000.0])}
    for g in (torch.tensor([1.0, float("inf")]), torch.tensor([1.0, 65504.0])):
        assert ms.grad_error({"a": g}, big) == pytest.approx(0.0)
    assert ms.grad_error({"a": torch.tensor([1.0, float("-inf")])}, big) != 0.0  # wrong sign
    nan = ms.grad_error({"a": torch.tensor([float("inf"), 1.0])}, big)
    assert nan != nan  # inf where the reference is in range
    t = torch.zeros(1)
    assert ms.outputs({"x": t, "y": (t, [t]), "z": None}) == [t, t, t]
    conv = ms.to_channels_last(torch.nn.Sequential(torch.nn.Conv1d(4, 6, 3)), "audio")[0]
    assert conv.weight.stride() == (12, 1, 4)  # K, X, C: ckgen's 1D weight layout


def test_cudnn_rows_on_cpu(tmp_path: Path, monkeypatch) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: model_steps untested")
    from torch import nn

    def build():
        return nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Dropout(0.5), nn.Linear(8, 5),
        )  # fmt: skip

    tiny = SimpleNamespace(
        name="tiny", family="image", build=build, sample=(3, 8, 8), train_batch=4
    )
    monkeypatch.setattr(bm, "_models", lambda: [tiny])
    monkeypatch.setenv("CKGEN_AUTOTUNE", "0")
    a = bm.parse_args(
        ["--device", "cpu", "--dtypes", "bf16", "--modes", "eager,graph", "--backends",
         "cudnn_bench,cudnn,ckgen", "--warmup", "1", "--iters", "2", "--repeats", "1",
         "--image-batch", "4"], names=["tiny"],
    )  # fmt: skip
    w = bm.Writer(tmp_path / "m.csv")
    saved = torch.backends.cudnn.benchmark
    try:
        bm.measure_all(a, w, log=lambda s: None)
    finally:
        torch.backends.cudnn.benchmark = saved
        w.close()
    rows = {
        (r["phase"], r["mode"], r["backend"]): r
        for r in csv.DictReader((tmp_path / "m.csv").open())
    }
    ok = rows[("train", "eager", "cudnn")]
    assert ok["status"] == "ok" and float(ok["ms"]) > 0 and float(ok["speedup_vs_cudnn"]) > 0
    assert 0 < float(ok["layer_grad_err"]) < 0.05  # bf16 against fp32 on the same inputs
    assert float(ok["grad_err"]) < 0.5 and ok["cudnn_grad_err"]
    assert rows[("infer", "eager", "cudnn_bench")]["status"] == "ok"
    assert rows[("train", "eager", "ckgen")]["status"].startswith("error: ckgen needs a CUDA")
    assert rows[("train", "graph", "cudnn")]["status"].startswith("error: CUDA graphs need")
