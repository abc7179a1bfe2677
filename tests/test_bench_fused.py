"""bench/fused_inference.py without a GPU: arguments, the row plan and its sections, the budget,
the CSV name and writer, the error measure, the summary and the issue's targets on made-up rows,
--report-only; and configs/forward/fused.yaml: every fusion convert(fuse=True) emits for the
benchmark's models has a scalar fallback instance per dtype."""

from __future__ import annotations

from pathlib import Path

import fused_inference as fi
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_parse_and_globs(capsys) -> None:
    a = fi.parse_args([])
    assert a.models == list(fi.MODELS) and a.dtypes == ["fp16", "bf16"]
    assert a.modes == list(fi.MODES) and a.batches == [32, 1]
    a = fi.parse_args(["--models", "resnet50,mobilenet_v2", "--modes", "all", "--batches", "1"])
    assert a.models == ["resnet50", "mobilenet_v2"] and a.batches == [1]
    with pytest.raises(SystemExit):
        fi.parse_args(["--models", "vgg"])
    assert fi.main(["--kernel-globs", "--dtypes", "bf16"]) == 0
    assert capsys.readouterr().out.split() == ["grouped_conv_fwd_bf16_2d_*"]


def test_plan_sections_and_order() -> None:
    a = fi.parse_args(["--batches", "1,32"])
    keys = list(fi.plan(a))
    assert len(keys) == 4 * 2 * 2 * len(fi.MODES)
    sections = [s for s, _ in keys]
    assert sections == sorted(sections)  # graph rows first, then compile, then compile_max
    first = [k for s, k in keys if s == 0]
    assert first[:2] == [fi.Key("resnet50", 1, "fp16", "cudnn_graph"),
                         fi.Key("resnet50", 1, "fp16", "ckgen_graph")]  # fmt: skip
    comp = [k for s, k in keys if s == 1]
    assert {k.mode for k in comp} == {"compile", "ckgen_compile"} and comp[0].batch == 32
    assert [k.model for k in comp[:8:2]] == list(fi.MODELS)
    assert [k.mode for k in comp[:2]] == ["compile", "ckgen_compile"]
    a = fi.parse_args(["--modes", "cudnn_graph,compile"])
    assert {k.mode for _, k in fi.plan(a)} == {"cudnn_graph", "compile"}


def test_budget_per_section() -> None:
    now = [0.0]
    b = fi.Budget(100.0, clock=lambda: now[0])
    assert b.allows(0, "cudnn_graph")  # 10 s estimate, 40 s section
    now[0] = 35.0
    assert not b.allows(0, "ckgen_graph") and b.allows(1, "ckgen_graph")
    b.record("compile", 20.0)
    assert b.allows(1, "compile") and not b.allows(1, "compile_max")
    now[0] = 64.0
    assert not b.allows(1, "compile") and b.allows(2, "compile")
    assert fi.Budget(0).allows(0, "compile_max")  # no limit


def test_csv_name_and_writer(tmp_path) -> None:
    assert (
        fi.gpu_tag("NVIDIA H200") == "H200"
        and fi.gpu_tag("NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB"
    )
    p = fi.csv_path(tmp_path, "NVIDIA H200", "2026-11-29")
    assert p.name == "2026-11-29_H200_fused_inference.csv"
    w = fi.Writer(p)
    w.write({"model": "resnet50", "batch": 32, "datatype": "fp16", "mode": "cudnn_graph",
             "ms": 2.5, "status": "ok"})  # fmt: skip
    w.close()
    rows = fi.read_rows(p)
    assert rows[0]["ms"] == "2.5" and list(rows[0]) == list(fi.COLUMNS)


def test_errors() -> None:
    torch = pytest.importorskip("torch")
    ref = [torch.tensor([1.0, -4.0]), torch.tensor([2.0])]
    out = [torch.tensor([1.5, -4.0]), torch.tensor([2.0])]
    assert fi.errors(out, ref) == (0.5, 0.125)
    assert fi.errors(out[:1], ref)[0] == float("inf")


def _rows(ck32: float, comp: float, layer: float = 1.0) -> list[dict]:
    """Rows of every model at batch 32; layer: the fused layers' conv time over the plain one."""
    rows = []
    for model in fi.MODELS:
        for mode, ms in (("cudnn_graph", 10.0), ("ckgen_graph", 10.0 / ck32), ("compile", comp)):
            rows.append({"model": model, "batch": "32", "datatype": "fp16", "mode": mode,
                         "ms": str(ms), "max_rel_err": "0.001", "status": "ok"})  # fmt: skip
            if mode == "ckgen_graph":
                rows[-1].update(conv_fused_ms=str(4.0 * layer), conv_plain_ms="4.0")
    rows.append({"model": "resnet50", "batch": "1", "datatype": "fp16", "mode": "compile_max",
                 "ms": "", "status": "skipped: budget"})  # fmt: skip
    return rows


def test_summary_and_targets() -> None:
    met = {t: v for t, v, _ in fi.targets(_rows(1.3, 9.0))}
    assert met["resnet50 batch 32: ckgen_graph >= 1.25x cudnn_graph"] == "met"
    assert met["mobilenet_v2: ckgen_graph >= 1.1x compile"] == "met"  # 9.0 / (10 / 1.3)
    layer = [t for t in met if t.startswith("fused layers' conv time within 5%")]
    assert len(layer) == 1 and met[layer[0]] == "met"
    missed = {t: v for t, v, _ in fi.targets(_rows(1.1, 8.0, 1.06))}
    assert set(missed.values()) == {"missed"}
    none = {t: v for t, v, _ in fi.targets([])}
    assert set(none.values()) == {"not measured"}
    text = fi.summary(_rows(1.3, 9.0))
    assert "resnet50" in text and "1.30x" in text and "1 skipped" in text and "[met]" in text
    assert "conv of the fused layers resnet50 b32 fp16: fused 4.000 ms, plain 4.000 ms" in text


def test_report_only(tmp_path, capsys) -> None:
    p = tmp_path / "r.csv"
    w = fi.Writer(p)
    for r in _rows(1.3, 9.0):
        w.write(r)
    w.close()
    assert fi.main(["--report-only", "--csv", str(p), "--summary", "--plot"]) == 0
    out = capsys.readouterr().out
    assert "targets (issue 51)" in out and ("plot ->" in out or "not installed" in out)


def test_fused_config_covers_the_converters_fusions() -> None:
    from ckgen.model.arch import get_arch
    from ckgen.space.expand import Filters, expand, load_configs

    exp = expand(load_configs([ROOT / "configs/forward/fused.yaml"]), get_arch("sm_90a"), Filters())
    names = [i.name for i in exp.instances]
    per_dtype = [sum(f"_{dt}_" in n for n in names) for dt in ("fp16", "bf16")]
    # one datatype builds in about a minute beside the default set
    assert all(60 <= c <= 130 for c in per_dtype) and not exp.rejected_count, per_dtype
    for dt in ("fp16", "bf16"):
        for fusion in ("bias", "bias_relu", "bias_relu6", "bias_res", "bias_relu_res"):
            scalar = [n for n in names if f"_{dt}_" in n and "_v1x1x1_" in n + "_"
                      and n.endswith("_" + fusion)]  # fmt: skip
            assert scalar, (dt, fusion)


def test_writer_resume(tmp_path) -> None:
    resume = tmp_path / "work.csv"
    w = fi.Writer(tmp_path / "a.csv", resume)
    assert not w.done and resume.is_file()
    w.write({"model": "resnet50", "batch": 32, "datatype": "fp16", "mode": "cudnn_graph",
             "ms": 2.0, "status": "ok"})  # fmt: skip
    w.write({"model": "resnet50", "batch": 32, "datatype": "fp16", "mode": "compile",
             "status": "skipped: budget"})  # fmt: skip
    w.close()
    w2 = fi.Writer(tmp_path / "b.csv", resume)
    w2.close()
    assert list(w2.done) == [fi.Key("resnet50", 32, "fp16", "cudnn_graph")]
    assert [r["mode"] for r in fi.read_rows(tmp_path / "b.csv")] == ["cudnn_graph"]


def test_fused_coverage(tmp_path, capsys) -> None:
    """bench/fused_coverage.py on a made-up profile: a layer whose best instance is a twin of a
    fused.yaml instance is covered (1.000x), one whose best splits k outside wavelet_tma is not."""
    import fused_coverage as fc

    twin = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8"
    win = "grouped_conv_fwd_fp16_2d_t64x64x64_w4x1x1_wt64x64x16_wltma4_lm1x8_swapab_cshuffle_v8x8x8"
    win += "_win"
    split = "grouped_conv_fwd_fp16_2d_t32x32x64_w2x2x1_wt16x8x16_ms3_v8x8x4_kb0_2st"
    assert fc.plain_twin(twin + "_bias_relu_res") == twin
    assert fc.fusable(twin) and fc.fusable(win) and not fc.fusable(split)
    prof = tmp_path / "p.csv"
    prof.write_text("shape,instance,ms,verified\na," + twin + ",1.0,none\nb," + twin
                    + ",2.0,none\nb," + split + ",1.0,none\n")  # fmt: skip
    cmap = tmp_path / "m.csv"
    cmap.write_text("shape,row,model,count\na,a,m1,3\nb,b,m2,1\n")
    cfg = str(ROOT / "configs/forward/fused.yaml")
    assert fc.main(["--profile", str(prof), "--config", cfg, "--map", str(cmap)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.split()[:5] == ["m1", "3", "1.000x", "1.000x", "1.000x"] for line in out), out
    assert any(line.split()[:5] == ["m2", "1", "2.000x", "1.000x", "2.000x"] for line in out), out


def test_best_ckgen_path_against_compile() -> None:
    """With ckgen_compile rows, a second verdict takes the faster of ckgen's two paths; the
    ckgen_graph verdict is kept as it was."""
    rows = _rows(1.3, 8.0)  # ckgen_graph 7.69 ms: 1.04x compile
    rows.append({"model": "mobilenet_v2", "batch": "32", "datatype": "fp16",
                 "mode": "ckgen_compile", "ms": "7.0", "status": "ok"})  # fmt: skip
    met = {t: (v, d) for t, v, d in fi.targets(rows)}
    assert met["mobilenet_v2: ckgen_graph >= 1.1x compile"][0] == "missed"
    best = met["mobilenet_v2: best of ckgen_graph / ckgen_compile >= 1.1x compile"]
    assert best == ("met", "b32 fp16 1.14x")
    assert not any(t.startswith("resnet50: best of") for t in met)  # no ckgen_compile row


def test_layer_counts(tmp_path, capsys) -> None:
    """--summary with --layers-csv: per model, batch and dtype, the fused layers within 5 % of
    their plain conv (each problem once) and the geomean fused / plain; --report-only reads it."""
    rows = [
        {"model": "resnet50", "batch": "32", "datatype": "fp16", "ratio": r}
        for r in ("1.000", "1.050", "1.060", "2.000")
    ] + [{"model": "resnet50", "batch": "1", "datatype": "fp16", "ratio": "0.980"},
         {"model": "mobilenet_v2", "batch": "32", "datatype": "bf16", "ratio": ""}]  # fmt: skip
    lines = fi.layer_counts(rows)
    assert lines == [
        "fused layers of resnet50 b32 fp16: 2 of 4 within 5% of their plain conv (geomean 1.221x)",
        "fused layers of resnet50 b1 fp16: 1 of 1 within 5% of their plain conv (geomean 0.980x)",
    ]
    import csv

    layers = tmp_path / "layers.csv"
    with layers.open("w", newline="") as f:
        w = csv.DictWriter(f, ["model", "batch", "datatype", "ratio"])
        w.writeheader()
        w.writerows(rows)
    main_csv = tmp_path / "rows.csv"
    main_csv.write_text(
        "model,batch,datatype,mode,ms,status,gpu\nresnet50,32,fp16,cudnn_graph,2.0,ok,G\n"
    )
    args = ["--report-only", "--csv", str(main_csv), "--summary", "--layers-csv", str(layers)]
    assert fi.main(args) == 0
    assert "fused layers of resnet50 b32 fp16: 2 of 4 within 5%" in capsys.readouterr().out


def test_layers_csv_rows(tmp_path) -> None:
    """--layers-csv: one row a fused layer, the header once, shapes spelled NxCxHxW."""
    pytest.importorskip("torch")
    import fused_measure

    key = fi.Key("resnet50", 32, "fp16", "ckgen_graph")
    layer = {
        "fusion": "bias_relu", "input": (32, 64, 56, 56), "weight": (64, 64, 3, 3),
        "conf": ((1, 1), (1, 1), (1, 1), (1, 1), 1), "calls": 3, "fused_us": 22.019,
        "plain_us": 14.8, "ratio": 22.019 / 14.8, "fused_kernel": "f", "plain_kernel": "p",
    }  # fmt: skip
    path = tmp_path / "layers.csv"
    fused_measure.write_layers(path, key, [layer])
    fused_measure.write_layers(path, key._replace(batch=1), [layer])
    rows = fi.read_rows(path)
    assert [r["batch"] for r in rows] == ["32", "1"]
    assert list(rows[0]) == list(fused_measure.LAYER_COLUMNS)
    r = rows[0]
    assert (r["input"], r["weight"], r["fused_us"], r["ratio"]) == (
        "32x64x56x56", "64x64x3x3", "22.02", "1.488",
    )  # fmt: skip
