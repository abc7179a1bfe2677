"""The measuring half of bench/fused_inference.py (GPU): the models, the four modes, the rows."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import fused_inference as fi
import torch
from model_steps import outputs, short, time_ms
from torch import nn

DT = {"fp16": torch.float16, "bf16": torch.bfloat16}


class RetinaNetCore(nn.Module):
    """retinanet_resnet50_fpn's backbone, FPN and heads: the head outputs of every level."""

    def __init__(self, det: nn.Module) -> None:
        super().__init__()
        self.backbone, self.head = det.backbone, det.head

    def forward(self, x: torch.Tensor) -> Any:
        feats = list(self.backbone(x).values())
        out = self.head(feats)
        return out["cls_logits"], out["bbox_regression"]


_built: dict[tuple[str, int], nn.Module] = {}


def build(name: str, size: int = 224, device: str = "cuda") -> nn.Module:
    """The fp32 model in eval mode: seeded random weights, BatchNorm statistics calibrated on one
    seeded random batch (else a randomly initialised deep network's activations grow past
    fp16's range); built once per (model, input size), a copy each call."""
    key = (name, size)
    if key not in _built:
        import torchvision

        torch.manual_seed(0)
        if name == "retinanet_resnet50_fpn":
            det = torchvision.models.detection.retinanet_resnet50_fpn(
                weights=None, weights_backbone=None
            )
            model: nn.Module = RetinaNetCore(det)
        else:
            model = getattr(torchvision.models, name)(weights=None)
        model = model.to(device).train()
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.momentum = None  # a cumulative average: the batch's statistics
        g = torch.Generator(device=device).manual_seed(2)
        with torch.no_grad():
            model(torch.randn(4, 3, size, size, device=device, generator=g))
        _built[key] = model.eval().cpu()
    return copy.deepcopy(_built[key]).to(device)


def count(model: nn.Module) -> tuple[int, int]:
    """(FusedConv modules, convolutions left to PyTorch)."""
    import ckgen.torch as ct

    fused = sum(isinstance(m, ct.FusedConv) for m in model.modules())
    left = sum(not d.converted for d in ct.report(model))
    return fused, left


def graph_fn(model: nn.Module, x: torch.Tensor) -> tuple[Any, Any]:
    """(replay, static outputs) of model(x) captured as one CUDA graph (warm-up on a side
    stream first: cuDNN's benchmark and ckgen's selections run there)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        out = model(x)
    return g.replay, out


class Case:
    """One (model, batch, dtype): its input, the unfused model, its eager outputs in the dtype
    (the error reference) and in fp32, and the fused model on first use."""

    def __init__(self, name: str, batch: int, dt: str, args: Any, reg: Any) -> None:
        size = args.detection_size if name.startswith("retinanet") else args.image_size
        self.m32 = build(name, size).to(memory_format=torch.channels_last)
        g = torch.Generator(device="cuda").manual_seed(1)
        x32 = torch.randn(batch, 3, size, size, device="cuda", generator=g)
        self.x32 = x32.contiguous(memory_format=torch.channels_last)
        self.x = self.x32.to(DT[dt])
        self.model = copy.deepcopy(self.m32).to(DT[dt])
        self.dt, self.reg, self._fused = dt, reg, None
        with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            self.ref = [t.clone() for t in outputs(self.model(self.x))]
            ref32 = outputs(self.m32(self.x32))
        self.fp32_err = fi.errors(self.ref, ref32)[1]

    def fused(self) -> nn.Module:
        if self._fused is None:
            import ckgen.torch as ct

            dt = DT[self.dt]  # the dtype it will run in: the library's kernels are of that
            m = ct.convert(copy.deepcopy(self.m32), self.reg, fuse=True, dtype=dt, verbose=False)
            for d in ct.report(m):
                if not d.converted or "not fused" in d.reason:
                    print(f"  {d}", flush=True)
            self._fused = m.to(dt)
        return self._fused


LAYER_COLUMNS = (
    "model", "batch", "datatype", "fusion", "input", "weight", "conf", "calls", "fused_us",
    "plain_us", "ratio", "fused_kernel", "plain_kernel",
)  # fmt: skip


def _picks() -> dict[tuple, str]:
    """{(fused or "", input shape, weight shape): kernel name} of ckgen.torch's prepared launches."""
    from ckgen.torch import ops

    names = {}
    for key, pr in ops.cache_info().items():
        if pr.selection is None:
            continue
        if key[0] == "fused":
            names[(key[7][0], tuple(key[1]), tuple(key[2]))] = pr.selection.name
        elif key[0] == "forward":
            names[("", tuple(key[1]), tuple(key[2]))] = pr.selection.name
    return names


def conv_sums(model: nn.Module, x: torch.Tensor, args: Any) -> tuple[float, float, str, list[dict]]:
    """(fused ms, plain ms, worst layers, per-layer rows): the sums over the fused model's
    FusedConv calls in model(x) of each one's time alone (one call under a CUDA graph, on the
    input it sees) and of ckgen's plain convolution of the same problem (select() without the
    epilogue); a problem met n times counts n times. worst: the three layers of the largest
    fused / plain ratio; the rows (LAYER_COLUMNS but the case's) name both picks."""
    import ckgen.torch as ct

    seen: dict[tuple, list] = {}

    def hook(m: nn.Module, inputs: tuple) -> None:
        k = (m.fusion, m.conf[:5], tuple(m.weight.shape), *(tuple(t.shape) for t in inputs))
        if k in seen:
            seen[k][2] += 1
        else:
            seen[k] = [m, inputs, 1]

    hooks = [m.register_forward_pre_hook(hook) for m in model.modules()
             if isinstance(m, ct.FusedConv)]  # fmt: skip
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    fused_ms = plain_ms = 0.0
    ratios = []
    layers: list[dict] = []
    for m, inputs, n in seen.values():

        def plain(m: Any = m, xi: Any = inputs[0]) -> Any:
            stride, pl, pr, dil, groups = m.conf[:5]
            return ct.conv(xi, m.weight, None, stride, pl, dil, groups, m.ckgen_registry, pr)

        times = []
        for fn in (lambda m=m, inputs=inputs: m(*inputs), plain):
            replay, _ = graph_fn(_Call(fn), inputs[0])
            times.append(time_ms(replay, 3, 200, args.repeats, 20.0, True))
        fused_ms, plain_ms = fused_ms + n * times[0], plain_ms + n * times[1]
        ratios.append((times[0] / times[1], f"{tuple(inputs[0].shape)}: {m.extra_repr()}"))
        layers.append({
            "fusion": m.fusion, "input": tuple(inputs[0].shape), "weight": tuple(m.weight.shape),
            "conf": m.conf[:5], "calls": n, "fused_us": 1e3 * times[0],
            "plain_us": 1e3 * times[1], "ratio": times[0] / times[1],
        })  # fmt: skip
    names = _picks()
    for r in layers:
        shapes = (r["input"], r["weight"])
        r["fused_kernel"] = names.get((r["fusion"], *shapes), "")
        r["plain_kernel"] = names.get(("", *shapes), "")
    worst = "; ".join(f"{r:.2f}x {what}" for r, what in sorted(ratios, reverse=True)[:3])
    return fused_ms, plain_ms, worst, layers


def write_layers(path: Path, key: Any, layers: list[dict]) -> None:
    """Append the per-layer rows of one case to path (the header first when it is new)."""
    import csv

    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, LAYER_COLUMNS)
        if new:
            w.writeheader()
        for r in layers:
            w.writerow({
                "model": key.model, "batch": key.batch, "datatype": key.datatype, **r,
                "input": "x".join(map(str, r["input"])), "weight": "x".join(map(str, r["weight"])),
                "conf": repr(r["conf"]), "fused_us": f"{r['fused_us']:.2f}",
                "plain_us": f"{r['plain_us']:.2f}", "ratio": f"{r['ratio']:.3f}",
            })  # fmt: skip


class _Call(nn.Module):
    """fn() as a module (graph_fn's model(x) form; x unused)."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> Any:
        return self.fn()


def measure(case: Case, key: fi.Key, row: dict, args: Any) -> None:
    if key.mode in ("cudnn_graph", "ckgen_graph"):
        model = case.model if key.mode == "cudnn_graph" else case.fused()
        if key.mode == "ckgen_graph":
            row["fused"], row["left"] = count(model)
            if args.conv_sums:
                try:
                    row["conv_fused_ms"], row["conv_plain_ms"], worst, layers = conv_sums(
                        model, case.x, args
                    )
                    print(f"  slowest fused layers against plain: {worst}", flush=True)
                    if args.layers_csv:
                        write_layers(args.layers_csv, key, layers)
                except Exception as ex:  # noqa: BLE001 - the model's own time is still measured
                    print(f"  conv sums failed: {short(ex)}", flush=True)
                torch.cuda.empty_cache()
        fn, out = graph_fn(model, case.x)
        fn()
    else:
        mode = fi.COMPILE_MODE[key.mode]
        torch._dynamo.reset()
        compiled = torch.compile(
            case.fused() if key.mode == "ckgen_compile" else case.model, mode=mode
        )

        def fn() -> Any:
            with torch.no_grad():
                return compiled(case.x)

        out = fn()
    torch.cuda.synchronize()
    row["max_err"], row["max_rel_err"] = fi.errors(outputs(out), case.ref)
    row["fp32_err"] = case.fp32_err
    row["ms"] = time_ms(fn, 3, 200, args.repeats, args.target_ms, True)
    row["status"] = "ok"


def run(args: Any) -> tuple[list[dict], Path]:
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to PyTorch")
    torch.backends.cudnn.benchmark = True
    gpu = torch.cuda.get_device_name()
    path = args.csv or fi.csv_path(args.out_dir, gpu)
    reg, lib_error = None, ""
    try:
        import ckgen.torch as ct
        from ckgen.runtime.library import KernelLibrary

        reg = KernelLibrary.load(args.lib) if args.lib else ct.default_registry()
        ct.set_default_registry(reg)
        print(f"ckgen library: {reg}", flush=True)
    except Exception as ex:  # noqa: BLE001 - the ckgen rows say why
        lib_error = short(ex)
        print(f"no ckgen library: {lib_error}", flush=True)
    writer = fi.Writer(path, args.resume)
    budget = fi.Budget(args.budget_s)
    cases: dict[tuple, Any] = {}
    ref_ms = {k[:3]: v for k, v in fi._ms(list(writer.done.values())).items()
              if k.mode == fi.REFERENCE}  # fmt: skip
    dead = ""
    try:
        for section, key in fi.plan(args):
            if key in writer.done:
                continue
            row: dict[str, Any] = {**key._asdict(), "gpu": gpu, "status": "skipped: budget"}
            ck = (key.model, key.batch, key.datatype)
            if dead:
                row["status"] = f"skipped: CUDA failed before ({dead})"
            elif key.mode in fi.CKGEN_MODES and reg is None:
                row["status"] = f"skipped: no ckgen library ({lib_error})"
            elif budget.allows(section, key.mode):
                t0 = time.monotonic()
                try:
                    if ck not in cases:
                        cases.clear()
                        torch.cuda.empty_cache()
                        cases[ck] = Case(*ck, args, reg)
                    measure(cases[ck], key, row, args)
                except torch.cuda.OutOfMemoryError:
                    row["status"] = "oom"
                except Exception as ex:  # noqa: BLE001 - the row records it, the run goes on
                    row["status"] = "error: " + short(ex)
                try:
                    torch.cuda.synchronize()
                except Exception as ex:  # noqa: BLE001 - the context is gone
                    dead = short(ex)
                budget.record(key.mode, time.monotonic() - t0)
                if key.mode == fi.REFERENCE and fi.num(row.get("ms")):
                    ref_ms[ck] = row["ms"]
                if fi.num(row.get("ms")) and ck in ref_ms:
                    row["speedup_vs_cudnn"] = ref_ms[ck] / row["ms"]
                print(" ".join(f"{k}={fi.fmt(row.get(k))}" for k in fi.COLUMNS[:-1]), flush=True)
            writer.write(row)
    finally:
        writer.close()
    print(f"rows -> {path}", flush=True)
    return writer.rows, path
