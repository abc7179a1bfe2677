"""bench/offline_dispatch.py: the real dispatcher over the instances profiler CSVs name, each
supported exactly where it was timed (host compiler only, no GPU)."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
V8 = "grouped_conv_fwd_fp16_2d_t128x128x64_w8x1x1_wt64x128x16_wltma4_lm1x8_cshuffle_v8x8x8"
V1 = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v1x1x1"
COLS = (
    "shape,variant,datatype,instance,ms,verified,k_batch,"
    "ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right"
)


def _row(shape: str, inst: str, ms: float, c: int) -> dict[str, str]:
    vals = [shape, "forward", "fp16", inst, str(ms), "none", "0", "2", "1", "2", str(c), "64"]
    return dict(
        zip(COLS.split(","), [*vals, "56x56", "3x3", "1x1", "1x1", "1x1", "1x1"], strict=True)
    )


def test_offline_library_selects_among_measured_entries(tmp_path: Path) -> None:
    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        pytest.skip("no host C++ compiler")
    prof = tmp_path / "prof.csv"
    rows = [
        _row("even", V8, 0.01, 64),
        _row("even", V1, 0.05, 64),
        _row("odd", V8 + "_cpad", 0.02, 61),
    ]
    with open(prof, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLS.split(","))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "off"
    r = subprocess.run(
        [sys.executable, str(REPO / "bench" / "offline_dispatch.py"), "--out", str(out), str(prof)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "3 instances, 3 measured" in r.stdout
    from ckgen.model.problem import Problem
    from ckgen.runtime.library import KernelLibrary, NoKernel

    lib = KernelLibrary.load(out)
    assert sorted(k.name for k in lib.kernels) == sorted([V1, V8, V8 + "_cpad"])
    even = Problem.make(N=2, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
    odd = Problem.make(N=2, C=61, K=64, input=(56, 56), filter=(3, 3), pad=1)
    assert lib.select(even, "forward", "fp16", cost_model_only=True).name in (V1, V8)
    assert lib.select(odd, "forward", "fp16", cost_model_only=True).name == V8 + "_cpad"
    assert lib[V8 + "_cpad"].is_supported(even) == "not measured"
    with pytest.raises(NoKernel):
        lib.select(
            Problem.make(N=4, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1), "forward", "fp16"
        )


def test_masked_names_outside_the_fused_lists_are_faces() -> None:
    """A profile of `--fusion drelu` times fused twins and mask-copy faces under the same kind of
    name: a gradient mask's name that configs/backward_data/fused.yaml does not hold is a face."""
    import offline_dispatch as od

    twin = (
        "grouped_conv_bwd_data_fp16_2d_t128x128x64_w8x1x1_wt64x128x16_wltma4_lm1x8_cshuffle_v8x8x8"
        "_drelu"
    )
    face = "grouped_conv_bwd_data_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8_drelu"
    plain = "grouped_conv_bwd_data_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8"
    fused = [REPO / "configs" / "backward_data" / "fused.yaml"]
    faces = od.mask_copy_faces([twin, face, plain], fused)
    assert faces == {face}
    assert "k.mask_copy = true" in od.key_line(face, faces)
    assert "k.mask_copy = false" in od.key_line(twin, faces)
    assert od.mask_copy_faces([face], []) == frozenset()  # no lists: every name as timed
