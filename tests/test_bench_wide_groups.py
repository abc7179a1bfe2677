"""bench/wide_groups.py without a GPU: the layers it writes (the corpus' groups of the asked sizes,
the seeded random family) and its report's ratios on made-up profiler and cuDNN rows."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import wide_groups as wg


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_shapes_take_the_asked_groups_and_a_seeded_family(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    assert wg.main(["shapes", "--out", str(out), "--count", "10"]) == 0
    rows = _rows(out)
    corpus = [r for r in rows if not r["name"].startswith("rand")]
    assert len(rows) == len(corpus) + 10 and corpus
    assert all(int(r["G"]) > 1 and r["C"] == r["K"] and r["C"] in ("16", "32") for r in rows)
    assert all(r["name"].startswith("resnext50_32x4d") for r in corpus)
    again = tmp_path / "t.csv"
    wg.main(["shapes", "--out", str(again), "--count", "10"])
    assert out.read_text() == again.read_text()  # seeded: the same layers every time
    wide = tmp_path / "u.csv"
    wg.main(["shapes", "--out", str(wide), "--count", "10", "--channels", "8,16,32"])
    assert {r["C"] for r in _rows(wide) if not r["name"].startswith("rand")} == {"8", "16", "32"}


def test_report_compares_candidates_with_the_rest_and_cudnn(tmp_path: Path, capsys) -> None:
    cand = "grouped_conv_fwd_fp16_2d_t16x64x16_w4x1x1_wt16x8x16_direct_v8x8x8"
    narrow8 = "grouped_conv_fwd_fp16_2d_t16x64x8_w2x1x1_wt16x8x16_direct_v8x8x8"
    plain8 = "grouped_conv_fwd_fp16_2d_t32x64x8_w4x1x1_wt16x8x16_direct_v8x8x8"
    gemm = "grouped_conv_fwd_fp16_2d_t128x16x32_w4x1x1_wt16x8x16_ms3_v8x8x8"
    prof = tmp_path / "prof.csv"
    prof.write_text(
        "shape,variant,datatype,instance,ms\n"
        f"a,forward,fp16,{cand},0.010\n"
        f"a,forward,fp16,{gemm},0.020\n"
        f"rand00_x,forward,fp16,{narrow8},0.004\n"
        f"rand00_x,forward,fp16,{plain8},0.002\n"
        f"rand00_x,forward,fp16,{gemm},\n"
        f"b,forward,fp16,{gemm},0.030\n"
    )
    cudnn = tmp_path / "cudnn.csv"
    cudnn.write_text(
        "shape,variant,datatype,cudnn_ms,cudnn_tflops,gpu\n"
        "a,forward,fp16,0.015,1,H200\na,backward_data,fp16,0.001,1,H200\n"
        "rand00_x,forward,fp16,0.003,1,H200\n"
    )
    out = tmp_path / "rows.csv"
    args = ["report", str(prof), str(cudnn), "--variant", "forward", "--out", str(out)]
    assert wg.main(args) == 0
    rows = {r["shape"]: r for r in _rows(out)}
    assert set(rows) == {"a", "rand00_x"}  # b has no candidate time
    a = rows["a"]
    assert a["candidate"] == cand and a["other"] == gemm
    assert float(a["other_over_candidate"]) == pytest.approx(2.0)
    assert float(a["cudnn_over_best_before"]) == pytest.approx(0.75)
    assert float(a["cudnn_over_best_after"]) == pytest.approx(1.5)
    r = rows["rand00_x"]  # the 16-pixel 8-channel block is a candidate, the 32-pixel one is not
    assert r["candidate"] == narrow8 and r["other"] == plain8
    assert float(r["cudnn_over_best_after"]) == pytest.approx(1.5)
    printed = capsys.readouterr().out
    assert "forward fp16 corpus (1 shapes)" in printed
    assert "forward fp16 random (1 shapes)" in printed


def test_random_layers_take_the_asked_channels_and_strides(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    args = ["shapes", "--out", str(out), "--count", "40", "--channels", "8"]
    assert wg.main([*args, "--random-channels", "8,32", "--random-strides", "2,3"]) == 0
    rand = [r for r in _rows(out) if r["name"].startswith("rand")]
    assert len(rand) == 40
    assert {r["C"] for r in rand} == {"8", "32"} and all(r["C"] == r["K"] for r in rand)
    assert {r["stride"] for r in rand} == {"2x2", "3x3"}
    default = tmp_path / "d.csv"  # the defaults draw the layers they always drew
    wg.main(["shapes", "--out", str(default), "--count", "5"])
    again = tmp_path / "e.csv"
    wg.main(["shapes", "--out", str(again), "--count", "5", "--random-channels", "16,32",
             "--random-strides", "1,1,2"])  # fmt: skip
    assert default.read_text() == again.read_text()


def test_report_takes_a_candidate_pattern(tmp_path: Path) -> None:
    gemm = "grouped_conv_bwd_data_fp16_2d_t128x16x32_w4x1x1_wt16x8x16_ms3_v8x8x8"
    eight = "grouped_conv_bwd_data_fp16_2d_t32x64x8_w4x1x1_wt16x8x16_direct_v8x8x8"
    prof = tmp_path / "prof.csv"
    prof.write_text(
        "shape,variant,datatype,instance,ms\n"
        f"rand00_s2,backward_data,fp16,{eight},0.002\nrand00_s2,backward_data,fp16,{gemm},0.004\n"
    )
    cudnn = tmp_path / "cudnn.csv"
    cudnn.write_text(
        "shape,variant,datatype,cudnn_ms,cudnn_tflops,gpu\nrand00_s2,backward_data,fp16,0.003,1,H200\n"
    )
    out = tmp_path / "rows.csv"
    base = ["report", str(prof), str(cudnn), "--variant", "backward_data", "--out", str(out)]
    assert wg.main(base) == 1  # the default candidates (16 / 32 channels, 16 pixels): none here
    assert wg.main([*base, "--candidate", "_wt16x8x16_direct_"]) == 0
    (row,) = _rows(out)
    assert row["candidate"] == eight and row["other"] == gemm
    assert float(row["cudnn_over_best_after"]) == pytest.approx(1.5)
