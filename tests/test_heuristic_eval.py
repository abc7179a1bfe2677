"""The corpus tooling's pure-Python parts: bench/heuristic_eval.py's scoring (synthetic profiler
rows and pick functions, no library), bench/corpus_shapes.py's deduplication and
bench/corpus_report.py's merge."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import corpus_report as cr
import corpus_shapes as cs
import heuristic_eval as he
import pytest


def row(shape, inst, ms, variant="forward", dt="fp16", kb=0, verified="none"):
    return {
        "shape": shape,
        "variant": variant,
        "datatype": dt,
        "instance": inst,
        "ms": "" if ms is None else str(ms),
        "verified": verified,
        "k_batch": str(kb),
        "gpu": "G",
        "tflops": "1.0",
    }


ROWS = [
    row("s1", "a", 1.0),
    row("s1", "b", 1.05),
    row("s1", "c", 2.0),
    row("s1", "a", 0.9),  # a repeated run: the faster counts
    row("s1", "d", 0.1, verified="fail"),  # failed rows never count
    row("s1", "e", None),  # not timed
    row("s2", "a", 3.0),
    row("s2", "b", 1.0),
    row("s2", "c", 1.02),
    row("s3", "a", 1.0),
]
LAYERS = [
    he.Layer("m1", "m1_s1", "s1", 2),
    he.Layer("m1", "m1_s2", "s2", 1),
    he.Layer("m2", "m2_s2", "s2", 1),  # s2 is shared by m1 and m2
    he.Layer("m2", "m2_s3", "s3", 1),
    he.Layer("m3", "m3_s9", "s9", 1),  # never measured: no outcome
]


def test_timings_keep_the_fastest_valid_row():
    t = he.timings_from_rows(ROWS)
    assert t[("forward", "fp16", "s1")] == {("a", 0): 0.9, ("b", 0): 1.05, ("c", 0): 2.0}
    assert he.best_of(t[("forward", "fp16", "s2")]) == (("b", 0), 1.0)


def test_score_and_summarize():
    t = he.timings_from_rows(ROWS)
    picks = {"s1": [("b", 0)], "s2": [("a", 0)], "s3": [("zz", 0)]}  # zz: never measured

    def pick(v, d, layer):
        return picks[layer.shape], "test"

    out = he.score("cost", LAYERS, t, pick, ["forward"], ["fp16"])
    assert [(o.row, o.pick, o.ratio) for o in out] == [
        ("m1_s1", "b", pytest.approx(1.05 / 0.9)),
        ("m1_s2", "a", 3.0),
        ("m2_s2", "a", 3.0),
        ("m2_s3", "zz", None),
    ]
    s = he.summarize(out, tol=0.10, tight=0.03)
    assert s["layers"] == 4 and s["unmeasured"] == 1
    assert s["within_tol"] == 0.0  # 1.167, 3, 3 and a miss
    assert s["geomean"] == pytest.approx(math.exp((math.log(1.05 / 0.9) + 2 * math.log(3)) / 3))
    assert s["worst"] == 3.0
    # count-weighted: (2 x 1.05 + 3 + 3) / (2 x 0.9 + 1 + 1)
    assert s["weighted"] == pytest.approx((2 * 1.05 + 6) / (2 * 0.9 + 2))


def test_topk_takes_the_fastest_measured_candidate():
    t = he.timings_from_rows(ROWS)

    def pick(v, d, layer):
        return [("c", 0), ("zz", 0), ("b", 0), ("a", 0)], "top"

    top2 = he.score("top2", LAYERS[:2], t, pick, ["forward"], ["fp16"], topk=2)
    assert [(o.pick, o.pick_ms) for o in top2] == [("c", 2.0), ("c", 1.02)]
    top3 = he.score("top3", LAYERS[:2], t, pick, ["forward"], ["fp16"], topk=3)
    assert [(o.pick, o.pick_ms) for o in top3] == [("b", 1.05), ("b", 1.0)]
    s = he.summarize(top3, tol=0.10, tight=0.03)
    assert s["within_tol"] == 0.5 and s["within_tight"] == 0.5 and s["exact"] == 0.5


def test_no_pick_is_a_miss_and_other_variants_are_separate():
    rows = [*ROWS, row("s1", "w", 5.0, variant="backward_weight", kb=4)]
    t = he.timings_from_rows(rows)
    out = he.score(
        "cost", LAYERS, t, lambda v, d, x: ([], "none"), ["forward", "backward_weight"], ["fp16"]
    )
    assert len(out) == 5
    bw = [o for o in out if o.variant == "backward_weight"]
    assert [(o.row, o.best, o.best_ms, o.pick) for o in bw] == [("m1_s1", "w", 5.0, "")]
    assert he.summarize(out)["within_tol"] == 0.0


def test_lomo_shapes_leave_out_every_problem_of_the_held_out_model():
    assert he.lomo_shapes(LAYERS, "m1") == {"s3", "s9"}  # s2 is m2's too, but m1 runs it
    assert he.lomo_shapes(LAYERS, "m2") == {"s1", "s9"}
    assert he.lomo_shapes(LAYERS, "m3") == {"s1", "s2", "s3"}


def test_read_rows_csv_and_cut_gzip(tmp_path: Path):
    text = "shape,variant,datatype,instance,ms,verified,k_batch,best,gpu\n"
    text += "".join(f"s{i},forward,fp16,k{i},1.{i},none,0,0,G\n" for i in range(2000))
    (tmp_path / "a.csv").write_text(text + "s_cut,forward,fp16\n")  # a line cut short
    gz = gzip.compress(text.encode())
    (tmp_path / "b.csv.gz").write_bytes(gz[: len(gz) // 2])  # an archive cut short
    a = he.read_rows([tmp_path / "a.csv"])
    assert len(a) == 2000 and a[0]["instance"] == "k0" and a[0]["tflops"] == ""
    b = he.read_rows([tmp_path / "b.csv.gz"])
    assert 0 < len(b) < 2000


def test_profile_rows_drop_a_last_line_cut_mid_field(tmp_path: Path):
    from ckgen.tuning.profile import read_rows

    head = "shape,instance,ms\n"
    (tmp_path / "c.csv").write_text(head + "s0,k0,1.25\ns1,k1,1.2")  # "1.2" of "1.25", unfinished
    assert [r["shape"] for r in read_rows(tmp_path / "c.csv")] == ["s0"]
    (tmp_path / "d.csv.gz").write_bytes(
        gzip.compress((head + "s0,k0,1.25\ns1,k1,2.5,extra\n").encode())
    )
    assert [r["ms"] for r in read_rows(tmp_path / "d.csv.gz")] == [
        "1.25"
    ]  # a row with more fields dropped


def test_summary_markdown_lists_methods_and_models():
    t = he.timings_from_rows(ROWS)
    out = he.score("cost", LAYERS, t, lambda v, d, x: ([("a", 0)], "c"), ["forward"], ["fp16"])
    out += he.score("lomo_db", LAYERS, t, lambda v, d, x: ([("b", 0)], "d"), ["forward"], ["fp16"])
    md = he.summary_markdown(out, notes=["a note"])
    assert "| cost | forward | fp16 | 4 |" in md and "| lomo_db | forward | fp16 | 4 |" in md
    assert "| m1 | forward | fp16 | 2 |" in md and "- a note" in md


def test_corpus_dedupe_round_robin():
    def r(name, model, cells):
        return cs.CorpusRow(name, model, 1, cells)

    a, b, c = ("2", "1"), ("2", "2"), ("2", "3")
    rows = [r("x1", "x", a), r("x2", "x", b), r("x3", "x", c), r("y1", "y", b), r("y2", "y", a)]
    unique, mapping = cs.dedupe(rows)
    assert [u.name for u in unique] == ["x1", "x2", "x3"]  # y's problems are x's
    assert [(s, m.name) for s, m in mapping] == [
        ("x1", "x1"),
        ("x2", "x2"),
        ("x3", "x3"),
        ("x2", "y1"),
        ("x1", "y2"),
    ]
    rows.append(r("y3", "y", ("3", "9")))
    unique, _ = cs.dedupe(rows)
    assert [u.name for u in unique] == ["x1", "y3", "x2", "x3"]  # one of each model in turn


def test_corpus_file_dedupes(tmp_path: Path):
    rows = cs.read_corpus()
    unique, mapping = cs.dedupe(rows)
    assert len(mapping) == len(rows) and len(unique) < len(rows)
    assert len({u.cells for u in unique}) == len(unique)
    cs.write_shapes(tmp_path / "c.csv", unique)
    from ckgen.model.problem import load_shapes

    assert [p.name for p in load_shapes(tmp_path / "c.csv")] == [u.name for u in unique]


def test_report_merge_one_row_per_model():
    mapping = [
        {"shape": "s1", "row": "m1_s1", "model": "m1"},
        {"shape": "s2", "row": "m1_s2", "model": "m1"},
        {"shape": "s2", "row": "m2_s2", "model": "m2"},
        {"shape": "s3", "row": "m2_s3", "model": "m2"},
    ]
    cudnn = {
        ("s1", "forward", "fp16"): {"cudnn_ms": "1.8", "cudnn_tflops": "5", "gpu": "G"},
        ("s2", "forward", "fp16"): {"cudnn_ms": "0.5", "cudnn_tflops": "5", "gpu": "G"},
    }
    rows, missing = cr.merge(ROWS, cudnn, mapping)
    assert [(r["shape"], r["model"], r["instance"], r["speedup"]) for r in rows] == [
        ("m1_s1", "m1", "a", "2.000"),
        ("m1_s2", "m1", "b", "0.500"),
        ("m2_s2", "m2", "b", "0.500"),
    ]
    assert missing == {"no_instance": 0, "no_cudnn": 1}
    assert list(rows[0]) == list(cr.COLUMNS)
    md = cr.table(rows, mapping, missing)
    assert "| m1 | 2 | 1.00 (0.50) |" in md and "| all (unique) | 2 | **1.00** |" in md
