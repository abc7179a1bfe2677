"""bench/merge_runs.py on tiny stand-in bench/device.sh folders (one variant each)."""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import merge_runs
import pytest

COMPARE = "shape,variant,datatype,instance,ms,tflops,cudnn_ms,cudnn_tflops,speedup,gpu,floor_ms,frac_of_floor\n"  # noqa: E501
CUDNN = "shape,variant,datatype,cudnn_ms,cudnn_tflops,floor_ms\n"
PROF = "shape,variant,datatype,instance,ms,tflops,gbps,verified\n"


def _run(
    tmp: Path, name: str, variant: str, speedups: dict[str, float], cudnn_variants: tuple[str, ...]
) -> Path:
    d = tmp / name
    d.mkdir()
    compare = COMPARE + "".join(
        f"{s},{variant},fp16,inst_{s},1.0,{100 * x:.1f},{x},1,{x:.3f},GPU,0.1,0.1\n"
        for s, x in speedups.items()
    )
    (d / "compare.csv").write_text(compare)
    # the peer times every variant; only the run's own variant may be taken from it
    (d / "cudnn.csv").write_text(
        CUDNN
        + "".join(
            f"{s},{v},fp16,{x if v == variant else 99},1,0.1\n"
            for s, x in speedups.items()
            for v in cudnn_variants
        )
    )
    prof = PROF + "".join(
        f"{s},{variant},fp16,inst_{s},1.0,1,1,pass\n{s},{variant},fp16,slow_{s},2.0,1,1,pass\n"
        for s in speedups
    )
    with tarfile.open(d / "logs.tar.gz", "w:gz") as tar:
        for fname, text in ((f"./prof_set_{variant}_fp16.csv", prof), ("./build.log", "ok\n")):
            data = text.encode()
            info = tarfile.TarInfo(fname)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return d


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


def test_merges_each_variant_with_its_own_runs_cudnn(tmp_path: Path, capsys) -> None:
    both = ("forward", "backward_data")
    fwd = _run(tmp_path, "fwd", "forward", {"r50_a": 0.5, "head_box_3x3_256_36_7": 2.0}, both)
    bd = _run(tmp_path, "bd", "backward_data", {"r50_a": 1.5, "dw_3x3": 0.8}, both)
    rn = tmp_path / "rn.csv"
    rn.write_text("name,ndim\nr50_a,2\n")
    out, rep = tmp_path / "m" / "all.csv", tmp_path / "rep"
    assert (
        merge_runs.main(
            [
                "--out",
                str(out),
                "--report-inputs",
                str(rep),
                "--retinanet",
                str(rn),
                str(fwd),
                str(bd),
            ]
        )
        == 0
    )
    rows = _rows(out)
    assert [(r["shape"], r["variant"]) for r in rows] == [
        ("dw_3x3", "backward_data"),
        ("head_box_3x3_256_36_7", "forward"),
        ("r50_a", "backward_data"),
        ("r50_a", "forward"),
    ]
    assert len(_rows(rep / "profiles.csv")) == 8
    peer = {(r["shape"], r["variant"]): r["cudnn_ms"] for r in _rows(rep / "cudnn.csv")}
    assert peer == {
        ("r50_a", "forward"): "0.5",
        ("head_box_3x3_256_36_7", "forward"): "2.0",
        ("r50_a", "backward_data"): "1.5",
        ("dw_3x3", "backward_data"): "0.8",
    }
    text = capsys.readouterr().out
    assert (
        "forward fp16: RetinaNet geomean 0.500 over 1, lowest r50_a 0.500; K=36 heads "
        "head_box_3x3_256_36_7 2.00;" in text
    )
    assert (
        "backward_data fp16: RetinaNet geomean 1.500 over 1" in text
        and "grouped / depthwise dw_3x3 0.80;" in text
    )


def test_a_variant_in_two_runs_is_an_error(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path, "a", "forward", {"r50_a": 1.0}, ("forward",))
    b = _run(tmp_path, "b", "forward", {"r50_a": 1.1}, ("forward",))
    out = tmp_path / "all.csv"
    assert merge_runs.main(["--out", str(out), str(a), str(b)]) == 2
    assert "variant forward is in two runs" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("missing", ["compare.csv", "cudnn.csv", "logs.tar.gz"])
def test_a_folder_without_the_run_files_is_an_error(tmp_path: Path, capsys, missing: str) -> None:
    a = _run(tmp_path, "a", "forward", {"r50_a": 1.0}, ("forward",))
    (a / missing).unlink()
    assert merge_runs.main(["--out", str(tmp_path / "all.csv"), str(a)]) == 2
    assert f"no {missing}" in capsys.readouterr().err


def test_logs_without_the_variants_profiler_rows_are_an_error(tmp_path: Path, capsys) -> None:
    # e.g. device.sh's logs.tar.gz packed inside another archive: compare.csv has the rows, the
    # report inputs would silently lose the variant
    a = _run(tmp_path, "a", "forward", {"r50_a": 1.0}, ("forward",))
    with tarfile.open(a / "logs.tar.gz", "w:gz") as tar:
        data = b"ok\n"
        info = tarfile.TarInfo("./build.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    out = tmp_path / "all.csv"
    assert merge_runs.main(["--out", str(out), str(a)]) == 2
    err = capsys.readouterr().err
    assert "no profiler rows" in err and "forward" in err
    assert not out.exists()


def test_an_override_run_replaces_the_rows_it_measured(tmp_path: Path) -> None:
    fwd = _run(tmp_path, "fwd", "forward", {"r50_a": 0.5, "conv3d_a": 0.4}, ("forward",))
    late = _run(tmp_path, "late", "forward", {"conv3d_a": 1.2}, ("forward",))
    out, rep = tmp_path / "all.csv", tmp_path / "rep"
    assert (
        merge_runs.main(
            ["--out", str(out), "--report-inputs", str(rep), "--override", str(late), str(fwd)]
        )
        == 0
    )
    assert {r["shape"]: r["speedup"] for r in _rows(out)} == {"conv3d_a": "1.200", "r50_a": "0.500"}
    assert {r["shape"]: r["cudnn_ms"] for r in _rows(rep / "cudnn.csv")} == {
        "conv3d_a": "1.2",
        "r50_a": "0.5",
    }
    assert sorted((r["shape"], r["instance"]) for r in _rows(rep / "profiles.csv")) == [
        ("conv3d_a", "inst_conv3d_a"),
        ("conv3d_a", "slow_conv3d_a"),
        ("r50_a", "inst_r50_a"),
        ("r50_a", "slow_r50_a"),
    ]
    # the base run's conv3d_a profiler rows are gone: the override's two are the only ones
    assert len(_rows(rep / "profiles.csv")) == 4
