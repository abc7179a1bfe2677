"""The corpus of real conv layers: every unique conv of a model zoo, at training and inference
batch, as a shapes CSV (bench/shapes/models.csv) plus its sidecar (bench/shapes/models_meta.csv).

    /tmp/tv/bin/python bench/model_shapes.py                 # writes both files, prints a summary
    /tmp/tv/bin/python bench/model_shapes.py --models resnet50,r3d_18 --out /tmp/x.csv

Each model is built on PyTorch's `meta` device (no weights, no downloads, no memory) and run
once on a meta tensor with forward hooks on every nn.Conv1d/2d/3d, which record the input
shape, the weight shape, stride, padding, dilation and groups. Needs torch and torchvision;
torchaudio for wav2vec2 (skipped with a note when it is missing). From ckgen it takes only the
shapes CSV's columns (ckgen.model.problem.SHAPE_COLUMNS; ckgen installed, or PYTHONPATH=.).

models.csv is the profiler's shapes format (name,ndim,G,N,C,K,input,filter,stride,dilation,
pad_left,pad_right; C and K per group, as ckgen.model.problem.load_shapes and the C++
host/shapes.hpp read it). The C++ parser refuses columns it does not know, so the model, batch,
occurrence count and module paths of each row live in models_meta.csv, joined by `name`.

Rows are unique within a (model, batch): a problem met several times in one forward is one row
whose `count` says how many times. A layer shared by several models is a row of each. Inputs:
224x224 images (ImageNet models), 800x800 for RetinaNet (what its transform makes of an 800x800
image: min_size 800, sizes a multiple of 32; fed to backbone + FPN + heads directly, since the
transform and the box post-processing are not convolutions), 16x112x112 clips for the video
models, 16000 samples (1 s at 16 kHz) for wav2vec2's feature encoder. Training batch 32 (video
and audio 8) with the model in train mode (GoogLeNet's auxiliary heads run), inference batch 1
in eval mode. Convs with a padding_mode other than 'zeros' are left out and printed (none in
this zoo); string padding ('same', 'valid') is resolved to numbers ('same': the extra pad on
the right, as PyTorch does).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ckgen.model.problem import SHAPE_COLUMNS

HERE = Path(__file__).resolve().parent

META_COLUMNS = ("name", "model", "batch", "count", "modules")

# Module-path abbreviations for row names (applied to each dotted path component).
_ABBREV = {
    "backbone": "",
    "body": "",
    "layer1": "l1",
    "layer2": "l2",
    "layer3": "l3",
    "layer4": "l4",
    "features": "f",
    "downsample": "ds",
    "classification_head": "cls",
    "regression_head": "reg",
    "bbox_reg": "bbox",
    "cls_logits": "logits",
    "feature_extractor": "fe",
    "conv_layers": "cl",
    "inner_blocks": "inner",
    "layer_blocks": "outer",
    "extra_blocks": "extra",
    "denseblock": "db",
    "denselayer": "dl",
    "transition": "tr",
    "inception": "inc",
    "branch": "br",
}


@dataclass(frozen=True)
class Conv:
    """One conv call: C and K per group, spatial tuples outermost first."""

    ndim: int
    G: int
    N: int
    C: int
    K: int
    input: tuple[int, ...]
    filter: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_l: tuple[int, ...]
    pad_r: tuple[int, ...]


@dataclass(frozen=True)
class Model:
    name: str
    family: str  # "image", "video", "audio"
    build: Callable[[], object]
    sample: tuple[int, ...]  # input shape less the batch
    train_batch: int


def _tv():
    import torchvision

    return torchvision.models


def _retinanet():
    """backbone + FPN + heads of torchvision's RetinaNet (no transform, no post-processing)."""
    import torch

    det = _tv().detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None)

    class BackboneHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = det.backbone
            self.head = det.head

        def forward(self, x):
            return self.head(list(self.backbone(x).values()))

    return BackboneHead()


def _wav2vec2():
    import torch
    import torchaudio

    fe = torchaudio.models.wav2vec2_base().feature_extractor

    class FeatureEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.feature_extractor = fe

        def forward(self, x):
            return self.feature_extractor(x, None)

    return FeatureEncoder()


def _image(name: str, **kw) -> Callable[[], object]:
    return lambda: getattr(_tv(), name)(weights=None, **kw)


def _video(name: str) -> Callable[[], object]:
    return lambda: getattr(_tv().video, name)(weights=None)


MODELS: tuple[Model, ...] = (
    Model("resnet18", "image", _image("resnet18"), (3, 224, 224), 32),
    Model("resnet50", "image", _image("resnet50"), (3, 224, 224), 32),
    Model("resnext50_32x4d", "image", _image("resnext50_32x4d"), (3, 224, 224), 32),
    Model("wide_resnet50_2", "image", _image("wide_resnet50_2"), (3, 224, 224), 32),
    Model("mobilenet_v2", "image", _image("mobilenet_v2"), (3, 224, 224), 32),
    Model("mobilenet_v3_large", "image", _image("mobilenet_v3_large"), (3, 224, 224), 32),
    Model("shufflenet_v2_x1_0", "image", _image("shufflenet_v2_x1_0"), (3, 224, 224), 32),
    Model("densenet121", "image", _image("densenet121"), (3, 224, 224), 32),
    Model("vgg16_bn", "image", _image("vgg16_bn"), (3, 224, 224), 32),
    # init_weights=False: no values are made on meta anyway; silences torchvision's warning
    Model("googlenet", "image", _image("googlenet", init_weights=False), (3, 224, 224), 32),
    Model("retinanet_resnet50_fpn", "image", _retinanet, (3, 800, 800), 32),
    Model("r3d_18", "video", _video("r3d_18"), (3, 16, 112, 112), 8),
    Model("r2plus1d_18", "video", _video("r2plus1d_18"), (3, 16, 112, 112), 8),
    Model("wav2vec2_base", "audio", _wav2vec2, (16000,), 8),
)
INFER_BATCH = 1


def _pads(padding, kernel, dilation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * nd, (0,) * nd
        if padding == "same":
            tot = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
            return tuple(t // 2 for t in tot), tuple(t - t // 2 for t in tot)
        raise ValueError(f"unknown padding {padding!r}")
    p = tuple(int(v) for v in padding)
    return p, p


def conv_calls(model: Model, batch: int) -> tuple[list[tuple[str, Conv]], list[str]]:
    """(module path, Conv) of every conv call of one forward at `batch`, in call order; and
    notes on the convs left out."""
    import torch

    with torch.device("meta"):
        m = model.build()
    m.train(batch != INFER_BATCH)
    calls: list[tuple[str, Conv]] = []
    notes: list[str] = []
    conv_types = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)

    def hook(path: str):
        def record(mod, args, _out):
            x = args[0]
            nd = x.dim() - 2
            if mod.padding_mode != "zeros":
                notes.append(f"{model.name} {path}: padding_mode={mod.padding_mode!r}, left out")
                return
            G = int(mod.groups)
            k = tuple(int(v) for v in mod.weight.shape[2:])
            dil = tuple(int(v) for v in mod.dilation)
            pl, pr = _pads(mod.padding, k, dil)
            conv = Conv(
                ndim=nd,
                G=G,
                N=int(x.shape[0]),
                C=int(x.shape[1]) // G,
                K=int(mod.weight.shape[0]) // G,
                input=tuple(int(v) for v in x.shape[2:]),
                filter=k,
                stride=tuple(int(v) for v in mod.stride),
                dilation=dil,
                pad_l=pl,
                pad_r=pr,
            )
            assert conv.C == int(mod.weight.shape[1]), (path, conv)
            calls.append((path, conv))

        return record

    for path, mod in m.named_modules():
        if isinstance(mod, conv_types):
            mod.register_forward_hook(hook(path))
        elif isinstance(mod, torch.nn.modules.conv._ConvNd):
            notes.append(f"{model.name} {path}: {type(mod).__name__} is not a plain conv, left out")
    x = torch.empty((batch, *model.sample), device="meta")
    with torch.no_grad():
        m(x)
    return calls, notes


def _dims(v: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in v)


def _short(v: tuple[int, ...]) -> str:
    """'2' for (2, 2), '1x2x2' otherwise."""
    return str(v[0]) if len(set(v)) == 1 else _dims(v)


def _path_name(path: str) -> str:
    """backbone.body.layer3.0.conv2 -> l3_0_conv2 (the abbreviations of _ABBREV)."""
    parts = []
    for p in path.split("."):
        for long, short in _ABBREV.items():
            rest = p[len(long) :]
            if p.startswith(long) and (not rest or rest[0].isdigit()):
                p = short + rest
                break
        if p:
            parts.append(p)
    return "_".join(parts) or "conv"


def row_name(model: str, path: str, c: Conv) -> str:
    """e.g. resnet50_b32_l3_0_conv2_3x3s2_256_256_28 (filter, stride[, dilation][, groups],
    C and K in total, input size)."""
    tag = f"{_dims(c.filter)}s{_short(c.stride)}"
    if set(c.dilation) != {1}:
        tag += f"d{_short(c.dilation)}"
    if c.G != 1:
        tag += f"g{c.G}"
    return f"{model}_b{c.N}_{_path_name(path)}_{tag}_{c.C * c.G}_{c.K * c.G}_{_short(c.input)}"


@dataclass
class Row:
    name: str
    model: str
    batch: int
    count: int
    modules: list[str]  # every module path that runs this problem, first-call order
    conv: Conv

    def shape_cells(self) -> list[str]:
        c = self.conv
        return [
            self.name,
            str(c.ndim),
            str(c.G),
            str(c.N),
            str(c.C),
            str(c.K),
            _dims(c.input),
            _dims(c.filter),
            _dims(c.stride),
            _dims(c.dilation),
            _dims(c.pad_l),
            _dims(c.pad_r),
        ]


def model_rows(model: Model, batch: int, notes: list[str]) -> tuple[list[Row], int]:
    """The unique convs of one forward (first-call order) and the number of conv calls."""
    calls, n = conv_calls(model, batch)
    notes.extend(n)
    rows: dict[Conv, Row] = {}
    for path, c in calls:
        if c in rows:
            rows[c].count += 1
            if path not in rows[c].modules:
                rows[c].modules.append(path)
        else:
            rows[c] = Row(row_name(model.name, path, c), model.name, batch, 1, [path], c)
    return list(rows.values()), len(calls)


def write(rows: list[Row], out: Path, meta: Path, versions: str) -> None:
    names = [r.name for r in rows]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"duplicate row names: {sorted(dup)[:5]}")
    head = [
        "# The conv layers of a model zoo (bench/model_shapes.py; " + versions + ").",
        "# C and K per group; model, and how often it runs the layer. Module paths: "
        + meta.name
        + " (by name).",
    ]
    with out.open("w", newline="") as f:
        f.write("\n".join(head) + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow((*SHAPE_COLUMNS, "model", "count"))
        w.writerows([*r.shape_cells(), r.model, r.count] for r in rows)
    with meta.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(META_COLUMNS)
        w.writerows([r.name, r.model, r.batch, r.count, " ".join(r.modules)] for r in rows)


def _versions() -> str:
    import torch
    import torchvision

    def ver(mod) -> str:
        return mod.__version__.split("+")[0]

    v = f"torch {ver(torch)}, torchvision {ver(torchvision)}"
    try:
        import torchaudio

        v += f", torchaudio {ver(torchaudio)}"
    except ImportError:
        pass
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "shapes" / "models.csv")
    ap.add_argument("--meta", type=Path, help="sidecar CSV (default: <out stem>_meta.csv)")
    ap.add_argument(
        "--models", help="comma-separated subset of: " + ",".join(m.name for m in MODELS)
    )
    a = ap.parse_args(argv)
    meta = a.meta or a.out.with_name(a.out.stem + "_meta.csv")
    wanted = a.models.split(",") if a.models else [m.name for m in MODELS]
    unknown = set(wanted) - {m.name for m in MODELS}
    if unknown:
        ap.error(f"unknown model(s): {', '.join(sorted(unknown))}")

    rows: list[Row] = []
    notes: list[str] = []
    print(f"{'model':24} {'batch':>5} {'convs':>6} {'unique':>6}")
    for model in (m for m in MODELS if m.name in wanted):
        if model.family == "audio":
            try:
                import torchaudio  # noqa: F401
            except ImportError as ex:
                notes.append(f"{model.name}: skipped, torchaudio is not importable ({ex})")
                continue
        for batch in (model.train_batch, INFER_BATCH):
            r, n = model_rows(model, batch, notes)
            rows.extend(r)
            print(f"{model.name:24} {batch:>5} {n:>6} {len(r):>6}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    write(rows, a.out, meta, _versions())
    for n in notes:
        print("note:", n)
    print(f"{len(rows)} rows -> {a.out} (+ {meta.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
