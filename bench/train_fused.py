"""Training with fused conv epilogues (ckgen.torch's convert(model.train(), fuse=True)) against the
unfused ops, on the GPU, every time by CUDA-graph replay in one process.

    python3 bench/train_fused.py layers SHAPES.csv --out-dir OUT [--dtype fp16]
    python3 bench/train_fused.py nets --out-dir OUT [--dtype fp16] [--batch 32]

`layers`: per 2D layer of SHAPES.csv (bench/fused_pairs.py shapes writes the corpus ones), the
weight and bias gradients three ways: ckgen::conv_backward_weight_bias (the bias_grad kernel, dw
and db in one pass, where the cost model prefers it), ckgen's plain backward_weight kernel plus a
separate sum of dy (layout.channel_sum: what the unfused ops run), and cuDNN's
(aten.convolution_backward, dw and db). `nets`: a training step (forward + backward, fp32 loss of the output's sum) of networks built
of Conv + bias + ReLU: torchvision's VGG-16 feature stack and a RetinaNet-style head (four
3x3 256-channel Conv + ReLU, then the class convolution) on a 100x152 map. Backends: cuDNN
(benchmark=True), ckgen plain (convert()), ckgen fused (convert(fuse=True)).

Writes <date>_<gpu>_train_fused_{layers,nets}.csv under OUT and prints the geomeans.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import math
import sys
from pathlib import Path
from typing import Any

import result_rows
import torch
from model_steps import capture, time_ms
from torch import nn

import ckgen.torch as ct
from ckgen.model.problem import load_shapes
from ckgen.torch import fused_grad, ops
from ckgen.torch.layout import channel_sum

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
REPS = 10  # calls per captured graph in `layers`


def _gpu() -> str:
    return torch.cuda.get_device_name().replace("NVIDIA ", "").replace(" ", "_")


def _geomean(v: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def graph_ms(fn: Any, reps: int = 1) -> float:
    """ms per fn() call, by replaying one CUDA graph of `reps` calls (model_steps.capture: warm-up
    outside the capture, so selections are not made while capturing)."""

    def calls() -> None:
        for _ in range(reps):
            fn()

    return time_ms(capture(calls, [], warm=2).replay, 3, 200, 3, 20.0, True) / reps


LAYER_COLUMNS = (
    "shape", "datatype", "fused_instance", "fused_ms", "unfused_ms", "plain_ms", "sum_ms",
    "cudnn_ms", "fused_over_unfused", "error",
)  # fmt: skip
NET_COLUMNS = (
    "net", "datatype", "batch", "cudnn_ms", "ckgen_ms", "ckgen_fused_ms", "fused_over_plain",
    "fused_over_cudnn", "ckgen_grad_err", "ckgen_fused_grad_err",
)  # fmt: skip


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    return f"{v:.5f}" if isinstance(v, float) else str(v)


def writer(path: Path, columns: tuple[str, ...]) -> Any:
    """Rows written as they are measured (a run cut short keeps what it measured)."""
    return result_rows.Writer(path, None, columns, key=lambda r: id(r), fmt=_fmt).write


def layer_rows(shapes: Path, dtype: str, out: Any, log: Any = print) -> list[dict[str, Any]]:
    dt = DTYPES[dtype]
    rows = []
    for p in load_shapes(shapes):
        if p.ndim != 2:
            continue
        lo = 1
        x = torch.randn(p.N, p.G * p.C, *p.input[lo:], device="cuda", dtype=dt)
        x = x.contiguous(memory_format=torch.channels_last)
        dy = torch.randn(p.N, p.G * p.K, *p.output[lo:], device="cuda", dtype=dt)
        dy = dy.contiguous(memory_format=torch.channels_last)
        w = torch.empty(p.G * p.K, p.C, *p.filter[lo:], device="cuda", dtype=dt)
        w = w.contiguous(memory_format=torch.channels_last)
        stride, dil = tuple(p.stride[lo:]), tuple(p.dilation[lo:])
        pl, pr = tuple(p.pad_l[lo:]), tuple(p.pad_r[lo:])
        conf = (stride, pl, pr, dil, p.G, 0)
        row: dict[str, Any] = {"shape": p.name, "datatype": dtype}
        try:
            row["fused_ms"] = graph_ms(lambda: fused_grad.weight_bias_grad(x, dy, w.shape, conf))
            row["unfused_ms"] = graph_ms(
                lambda: (
                    ops.backward_weight(x, dy, w.shape, conf),
                    channel_sum(dy),
                )
            )
            row["plain_ms"] = graph_ms(lambda: ops.backward_weight(x, dy, w.shape, conf))
            row["sum_ms"] = graph_ms(lambda: channel_sum(dy), REPS)
        except (RuntimeError, ValueError) as ex:
            row["error"] = str(ex).splitlines()[0][:160]
        if pl == pr:
            row["cudnn_ms"] = graph_ms(
                lambda: torch.ops.aten.convolution_backward(
                    dy,
                    x,
                    w,
                    [p.G * p.K],
                    list(stride),
                    list(pl),
                    list(dil),
                    False,
                    [0, 0],
                    p.G,
                    [False, True, True],
                ),  # fmt: skip
            )
        fused_pr = [v for k, v in ct.cache_info().items() if k[0] == "bias_grad"]
        row["fused_instance"] = fused_pr[-1].selection.name if fused_pr else "(plain + sum)"
        ct.clear_cache()
        if "fused_ms" in row:
            row["fused_over_unfused"] = row["fused_ms"] / row["unfused_ms"]
            log(
                f"{p.name}: fused {row['fused_ms'] * 1e3:.1f} us, plain + sum "
                f"{row['unfused_ms'] * 1e3:.1f} us, ratio {row['fused_over_unfused']:.3f}"
            )
        out(row)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------- networks
def _head() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(4):
        layers += [nn.Conv2d(256, 256, 3, padding=1), nn.ReLU()]
    layers.append(nn.Conv2d(256, 9 * 91, 3, padding=1))
    return nn.Sequential(*layers)


def _vgg() -> nn.Module:
    import torchvision

    return torchvision.models.vgg16().features


NETS = {"retinanet_head": (_head, (256, 100, 152)), "vgg16_features": (_vgg, (3, 224, 224))}


def net_rows(dtype: str, batch: int, out: Any, log: Any = print) -> list[dict[str, Any]]:
    dt = DTYPES[dtype]
    rows = []
    for name, (make, chw) in NETS.items():
        torch.manual_seed(0)
        base = make().cuda().to(dt).to(memory_format=torch.channels_last).train()
        x = torch.randn(batch, *chw, device="cuda", dtype=dt).contiguous(
            memory_format=torch.channels_last
        )
        times: dict[str, float] = {}
        grads: dict[str, list[torch.Tensor]] = {}
        for backend in ("cudnn", "ckgen", "ckgen_fused"):
            m = copy.deepcopy(base)
            torch.backends.cudnn.benchmark = True
            if backend != "cudnn":
                m = ct.convert(m, fuse=backend == "ckgen_fused", verbose=False)
            params = list(m.parameters())

            def step(m: nn.Module = m) -> None:
                m(x).float().sum().backward()

            g = capture(step, params)
            times[backend] = time_ms(g.replay, 3, 100, 5, 200.0, True)
            grads[backend] = [p.grad.float().clone() for p in params]
            ct.clear_cache()
        err = {
            b: max(
                ((a - r).abs().max() / (r.abs().max() + 1e-6)).item()
                for a, r in zip(grads[b], grads["cudnn"], strict=True)
            )
            for b in ("ckgen", "ckgen_fused")
        }
        row = {"net": name, "datatype": dtype, "batch": batch}
        row.update({f"{b}_ms": t for b, t in times.items()})
        row["fused_over_plain"] = times["ckgen_fused"] / times["ckgen"]
        row["fused_over_cudnn"] = times["ckgen_fused"] / times["cudnn"]
        row.update({f"{b}_grad_err": e for b, e in err.items()})
        log(
            f"{name} b{batch} {dtype}: cudnn {times['cudnn']:.3f} ms, ckgen {times['ckgen']:.3f}, "
            f"ckgen fused {times['ckgen_fused']:.3f} (fused / plain {row['fused_over_plain']:.3f}, "
            f"/ cudnn {row['fused_over_cudnn']:.3f}); grad err vs cudnn {err}"
        )
        out(row)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["layers", "nets"])
    ap.add_argument("shapes", nargs="?", type=Path)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--dtype", choices=list(DTYPES), default="fp16")
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args(argv)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{datetime.date.today()}_{_gpu()}_train_fused_{a.dtype}"
    if a.what == "layers":
        if a.shapes is None:
            ap.error("layers needs a shapes CSV")
        rows = layer_rows(
            a.shapes, a.dtype, writer(a.out_dir / f"{stem}_layers.csv", LAYER_COLUMNS)
        )
        r = [x["fused_over_unfused"] for x in rows if "fused_over_unfused" in x]
        big = [x["fused_over_unfused"] for x in rows if x.get("unfused_ms", 0) > 0.02]
        print(
            f"{len(r)} layers: bias_grad kernel / (plain kernel + sum) geomean {_geomean(r):.3f}, "
            f"worst {max(r, default=float('nan')):.3f}; unfused > 20 us: {_geomean(big):.3f} "
            f"({len(big)}); slower than unfused: {sum(x > 1.0 for x in r)}"
        )
    else:
        net_rows(a.dtype, a.batch, writer(a.out_dir / f"{stem}_nets.csv", NET_COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
