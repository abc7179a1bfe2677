"""bench/fused_pairs.py without a GPU: the corpus layers it profiles and the per-layer report of
fused twins against their plain tiles on made-up profiler rows."""

from __future__ import annotations

import csv
from pathlib import Path

import fused_pairs as fp
from corpus_shapes import read_corpus


def test_corpus_shapes_are_unique_and_leave_out_depthwise() -> None:
    corpus = read_corpus()
    rows = fp.corpus_layers(corpus, fp.MODELS, 2, 32)
    assert len(rows) > 100
    keys = [r.cells for r in rows]
    assert len(keys) == len(set(keys))
    assert all(r.ndim == 2 and int(r.cells[fp._N]) == 32 for r in rows)
    assert not any(r.cells[fp._C] == "1" and r.cells[fp._K] == "1" for r in rows)
    assert fp.corpus_layers(corpus, ("no_such_model",), 2, 32) == []


def _row(shape: str, inst: str, ms: float) -> dict[str, str]:
    return {"shape": shape, "instance": inst, "ms": str(ms)}


def test_pairs_take_the_best_of_each_kind_and_the_twin() -> None:
    rows = [
        _row("a", "t1", 1.0), _row("a", "t2", 2.0), _row("a", "t1_bgrad", 1.2),
        _row("a", "t2_bgrad", 1.1), _row("b", "t1", 3.0),  # b: no fused time, left out
    ]  # fmt: skip
    out = fp.pairs(rows, "_bgrad")
    assert [o["shape"] for o in out] == ["a"]
    o = out[0]
    assert (o["plain_instance"], o["fused_instance"]) == ("t1", "t2_bgrad")
    assert o["twin_ms"] == "1.20000" and o["best_fused_over_best_plain"] == "1.1000"
    assert "1 layers: best fused / best plain 1.100" in fp.summary(out)
    assert fp.summary([]) == "no layer has both a fused and a plain time"


def test_other_fusions_of_the_run_are_neither_kind() -> None:
    rows = [
        _row("a", "t1", 1.0), _row("a", "t1_ofp32", 1.1), _row("a", "t1_obf16", 0.5),
    ]  # fmt: skip
    o = fp.pairs(rows, "_ofp32", ("_obf16",))[0]
    assert (o["plain_instance"], o["fused_instance"], o["twin_ms"]) == ("t1", "t1_ofp32", "1.10000")
    assert fp.pairs(rows, "_ofp32")[0]["plain_instance"] == "t1_obf16"  # without: a "plain" one
    assert "the best plain's fused twin / it: 1.100 (1 layers)" in fp.summary([o])


def test_cli_report_writes_the_pairs(tmp_path: Path, capsys) -> None:
    prof = tmp_path / "prof.csv"
    with prof.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["shape", "instance", "ms"])
        w.writeheader()
        w.writerows([_row("a", "t1", 0.05), _row("a", "t1_bgrad", 0.0525)])
    out = tmp_path / "pairs.csv"
    assert fp.main(["report", str(prof), "--out", str(out)]) == 0
    assert "plain > 20 us: 1 layers, 1.050" in capsys.readouterr().out
    assert next(csv.DictReader(out.open()))["best_fused_over_best_plain"] == "1.0500"
    assert fp.main(["shapes", "--out", str(tmp_path / "s.csv"), "--models", "nope"]) == 2


def test_torch_report_against_the_sum_and_the_bandwidth_bound(tmp_path: Path) -> None:
    """dy of 2 x 64 x 10 x 10 fp16 = 25,600 bytes: at sm_90a's 4,800 GB/s, 0.0053 us."""
    shapes = tmp_path / "s.csv"
    shapes.write_text(
        "name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right\n"
        "a,2,1,2,32,64,10x10,3x3,1x1,1x1,1x1,1x1\n"
    )
    row = {"shape": "a", "datatype": "fp16", "fused_ms": "0.010", "unfused_ms": "0.020",
           "plain_ms": "0.010"}  # fmt: skip
    text = fp.torch_report([row, {"shape": "a", "fused_ms": ""}], shapes, "sm_90a")
    assert "1 layers" in text and "(plain kernel + PyTorch's sum) 0.500" in text
    bound = 0.010 / (0.010 + 25600 / 4.8e12 * 1e3)
    assert f"at 4800 GB/s) {bound:.3f}" in text and "slower: 0" in text
    assert fp.torch_report([], shapes, "sm_90a") == "no layer has a fused time"


def test_the_separate_pass_report_names_its_operation(tmp_path: Path) -> None:
    """bench/bn_stats.py report: the fused instance against the best plain one plus PyTorch's
    separate pass (batch_norm_stats, or a cast for a conversion)."""
    import bn_stats

    pairs = tmp_path / "pairs.csv"
    pairs.write_text("shape,plain_ms,fused_ms,twin_ms\na,1.0,1.2,1.1\nb,2.0,2.0,\n")
    passes = tmp_path / "cast.csv"
    passes.write_text("shape,out_elems,op,pass_ms\na,10,fp32,0.5\nb,10,fp32,1.0\n")
    text = bn_stats.report(pairs, passes)
    # a: 1.2 / 1.5 = 0.8, b: 2.0 / 3.0 = 0.667 -> geomean 0.730; vs plain 1.2 and 1.0 -> 1.095
    assert text.startswith("2 layers: best to_fp32 / (best plain + cast to fp32) 0.730")
    assert "faster on 2" in text and "best plain alone 1.095" in text


def test_the_unfused_path_is_plain_plus_the_mask(tmp_path: Path, capsys) -> None:
    rows = [_row("a", "t1", 0.010), _row("a", "t1_drelu", 0.012), _row("b", "t1", 0.02)]
    rows.append(_row("b", "t2_drelu", 0.018))
    out = fp.pairs(rows, "_drelu")
    # dy of 4.8 MB: the least mask time at 4,800 GB/s is 3 us
    fp.add_unfused(out, {"a": 0.004}, {"a": 4_800_000, "b": 4_800_000}, 4800.0)
    a, b = out
    assert a["unfused_ms"] == "0.01400" and a["fused_over_unfused"] == "0.8571"
    assert a["fused_over_least_unfused"] == "0.9231"
    assert b["unfused_ms"] == "nan" and b["fused_over_least_unfused"] == "0.7826"
    s = fp.unfused_summary(out)
    assert "PyTorch's mask): 0.857" in s and "slower on 0 of 1" in s
    assert "least time): 0.850" in s and "slower on 0 of 2" in s
    # the command line: --unfused needs the shapes whose dy it sizes
    prof = tmp_path / "prof.csv"
    with prof.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["shape", "instance", "ms"])
        w.writeheader()
        w.writerows(rows)
    mask = tmp_path / "mask.csv"
    mask.write_text("shape,mask_ms\na,0.004\n")
    assert fp.main(["report", str(prof), "--suffix", "_drelu", "--unfused", str(mask)]) == 2
    assert "--unfused needs --shapes" in capsys.readouterr().err


def test_picks_are_scored_against_the_best_of_their_kind(tmp_path: Path, capsys) -> None:
    rows = [
        _row("a", "t1", 1.0), _row("a", "t2", 1.05), _row("a", "t1_drelu", 1.5),
        _row("a", "t2_drelu", 1.1), _row("b", "t1", 2.0), _row("b", "t1_drelu", 2.2),
    ]  # fmt: skip
    prof = tmp_path / "prof.csv"
    with open(prof, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["shape", "instance", "ms"])
        w.writeheader()
        w.writerows(rows)
    picks = tmp_path / "picks.csv"
    got = [
        ("a", "none", "db", "t1"), ("a", "drelu", "db", "t1_drelu"),
        ("b", "none", "db", "t1"), ("b", "drelu", "db", "t9_drelu"),  # t9: never timed
    ]  # fmt: skip
    with open(picks, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shape", "fusion", "source", "instance", "k_batch"])
        w.writerows([*g, "1"] for g in got)
    out = tmp_path / "pairs.csv"
    rc = fp.main(
        ["report", str(prof), "--suffix", "_drelu", "--picks", str(picks), "--out", str(out)]
    )
    assert rc == 0
    text = capsys.readouterr().out
    # a: the fused pick t1_drelu (1.5) over the best fused t2_drelu (1.1); b's fused pick untimed
    assert "pick_db_fused: pick / best 1.364 geomean" in text, text
    assert "within 10 % on 0 of 2 (1 untimed)" in text, text
    assert "pick_db_plain: pick / best 1.000 geomean (worst 1.000), within 10 % on 2 of 2" in text
    with open(out, newline="") as fh:
        a = next(csv.DictReader(fh))
    assert a["pick_db_fused"] == "t1_drelu" and a["pick_db_fused_over_best"] == "1.3636"
