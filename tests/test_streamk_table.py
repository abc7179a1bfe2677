"""bench/streamk_table.py on a tiny synthetic profiler CSV (same columns as the profiler's
--csv)."""

from __future__ import annotations

from pathlib import Path

import streamk_table

HEADER = (
    "shape,variant,datatype,instance,ms,tflops,gbps,verified,k_batch,best,max_abs_err,ndim,G,N,C,K,"
    "input,filter,stride,dilation,pad_left,pad_right,timing,gpu"
)
T64 = "grouped_conv_bwd_weight_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8"
T128 = "grouped_conv_bwd_weight_fp16_2d_t128x128x32_w2x2x1_wt16x8x16_ms3_v8x8x8"
P1 = "2,1,32,256,64,56x56,1x1,1x1,1x1,0x0,0x0"
P2 = "2,1,2,512,512,7x7,3x3,1x1,1x1,1x1,1x1"


def row(shape: str, problem: str, inst: str, ms: float, kb: int, verified: str = "pass") -> str:
    return f"{shape},backward_weight,fp16,{inst},{ms},1,1,{verified},{kb},0,0,{problem},graph,NVIDIA H200"  # noqa: E501


def _csv(tmp_path: Path) -> Path:
    rows = [
        # shape a, 128x128: split-K best 0.020 (kb 32, two-stage beats one-stage), StreamK tree
        # 0.010
        row("a", P1, T128, 0.030, 8),
        row("a", P1, T128, 0.024, 32),
        row("a", P1, T128 + "_2st", 0.020, 32),
        row("a", P1, T128 + "_sklin", 0.016, 0),
        row("a", P1, T128 + "_sktree", 0.010, 0),
        row("a", P1, T128 + "_sktree_persist", 0.012, 0),
        # a faster StreamK row that failed verification must not count
        row("a", P1, T128 + "_sklin_persist", 0.001, 0, verified="fail"),
        # shape a, 64x64: split-K 0.010 (kb 1), StreamK linear persistent 0.020 -> 0.50x
        row("a", P1, T64, 0.010, 1),
        row("a", P1, T64 + "_sklin_persist", 0.020, 0),
        # shape b: 128x128 split-K only; 64x64 StreamK only
        row("b", P2, T128, 0.005, 2),
        row("b", P2, T64 + "_sktree", 0.004, 0),
    ]
    p = tmp_path / "streamk.csv"
    p.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return p


def test_classify_names() -> None:
    c = streamk_table.classify
    assert c(T128 + "_sktree_persist", "0") == ("128x128x32", "streamk", "tree persistent")
    assert c(T64 + "_sklin", "0") == ("64x64x32", "streamk", "linear")
    assert c(T64, "16") == ("64x64x32", "splitk", "kb16")
    assert c(T64 + "_2st", "4") == ("64x64x32", "splitk", "kb4 2st")
    assert c("not_an_instance", "1") is None


def test_table_ratios_winners_and_failures(tmp_path: Path, capsys) -> None:
    out = tmp_path / "table.md"
    assert streamk_table.main([str(_csv(tmp_path)), "--out", str(out)]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    lines = text.splitlines()
    assert (
        lines[0]
        == "| Shape | 64x64x32 Split-K | 64x64x32 StreamK | 128x128x32 Split-K | 128x128x32 "
        "StreamK |"
    )
    # 64x64: 0.010 / 0.020; 128x128: 0.020 (kb32 2st) / 0.010 (tree)
    assert (
        lines[2]
        == "| 1x1 256->64 N=32 56x56 | 1.00x | 0.50x (linear persistent) | 1.00x | 2.00x (tree) |"
    )
    assert lines[3] == "| 3x3 512->512 N=2 7x7 | n/a | (tree) | 1.00x | n/a |"
    assert (
        "| 1x1 256->64 N=32 56x56 | 128x128x32 | kb32 2st | 0.0200 | tree | 0.0100 | 0.0160 | "
        "0.0100 |" in lines
    )
    assert "1 row(s) left out: verification failed or errored." in text


def test_no_rows_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "empty.csv"
    p.write_text(HEADER + "\n")
    assert streamk_table.main([str(p)]) == 1


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    assert streamk_table.main([str(tmp_path / "none.csv")]) == 1
