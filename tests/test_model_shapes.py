"""The model-zoo corpus (bench/shapes/models.csv, written by bench/model_shapes.py) and the random
layers (bench/random_layers.py): they parse with ckgen's shape loader; no torch needed."""

from __future__ import annotations

import csv
from pathlib import Path

import random_layers

from ckgen.model.problem import SHAPE_COLUMNS, load_shapes

BENCH = Path(__file__).resolve().parent.parent / "bench"
MODELS = {
    "resnet18": 32,
    "resnet50": 32,
    "resnext50_32x4d": 32,
    "wide_resnet50_2": 32,
    "mobilenet_v2": 32,
    "mobilenet_v3_large": 32,
    "shufflenet_v2_x1_0": 32,
    "densenet121": 32,
    "vgg16_bn": 32,
    "googlenet": 32,
    "retinanet_resnet50_fpn": 32,
    "r3d_18": 8,
    "r2plus1d_18": 8,
    "wav2vec2_base": 8,
}
NDIM = {"r3d_18": 3, "r2plus1d_18": 3, "wav2vec2_base": 1}


def _header(path: Path) -> list[str]:
    return next(line for line in path.read_text().splitlines() if not line.startswith("#")).split(
        ","
    )


def test_models_csv():
    path = BENCH / "shapes" / "models.csv"
    problems = load_shapes(path)
    # the profiler's columns plus the descriptive ones host/shapes.hpp accepts
    assert tuple(_header(path)) == (*SHAPE_COLUMNS, "model", "count")
    names = [p.name for p in problems]
    assert len(set(names)) == len(names)
    with (BENCH / "shapes" / "models_meta.csv").open() as f:
        meta = list(csv.DictReader(f))
    assert [m["name"] for m in meta] == names
    seen: dict[str, set[int]] = {}
    keys = set()
    with path.open() as f:
        own = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    assert [(r["model"], r["count"]) for r in own] == [(m["model"], m["count"]) for m in meta]
    for p, m in zip(problems, meta, strict=True):
        assert p.name.startswith(f"{m['model']}_b{m['batch']}_")
        assert int(m["batch"]) == p.N and int(m["count"]) >= 1
        assert p.ndim == NDIM.get(m["model"], 2)
        assert all(o >= 1 for o in p.output)
        seen.setdefault(m["model"], set()).add(p.N)
        keys.add((m["model"], p.key()))
    assert len(keys) == len(problems)  # unique within a model
    assert seen == {m: {b, 1} for m, b in MODELS.items()}


def test_random_layers(tmp_path):
    rl = random_layers
    text = rl.csv_text(7, 40)
    assert text == rl.csv_text(7, 40)
    assert text != rl.csv_text(8, 40)
    path = tmp_path / "r.csv"
    path.write_text(text)
    problems = load_shapes(path)
    assert len(problems) == 40 and len({p.name for p in problems}) == 40
    for p in problems:
        assert rl.MIN_FLOP <= p.flops() <= rl.MAX_FLOP
        assert all(o >= 1 for o in p.output)
        assert max(p.filter) <= 11 and max(p.stride) <= 3 and max(p.dilation) <= 3
    # the committed sample is the generator's output for its seed
    sample = BENCH / "shapes" / "random_seed1.csv"
    assert sample.read_text() == rl.csv_text(1, 100)
