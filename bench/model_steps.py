"""The PyTorch side of bench/models.py: builds a corpus model (bench/model_shapes.py) on the GPU in
channels-last memory, its ckgen twin (ckgen.torch.convert, with every conv whose problem the
library has no kernel for put back to PyTorch), one training step or inference forward, run
eagerly, captured in a CUDA graph or through torch.compile, timed side by side, and the conv
weight gradients against an fp32 cuDNN reference of the same step.

Precision: torch.autocast (AMP, the standard PyTorch recipe): parameters, BatchNorm and its
statistics stay fp32, convolutions run in fp16 / bf16; the training step is forward, backward
with a fixed random upstream gradient on every output (no loss scaler: a unit-scale gradient) and
a plain SGD update (torch._foreach_add_, capturable); gradients are set to None before each step.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
CONV_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_DROPOUT = nn.modules.dropout._DropoutNd


class RowError(Exception):
    """A row that cannot be measured; its message is the row's status."""


def outputs(out: Any) -> list[torch.Tensor]:
    """The tensors of a model's output (tensor, tuple / namedtuple, list, dict), in order."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in outputs(o)]
    return []


def to_channels_last(model: nn.Module, family: str) -> nn.Module:
    """Image models: channels_last; video: channels_last_3d; audio (Conv1d): each conv weight
    (K, C, X) stored as K, X, C, the memory order ckgen's 1D kernels read."""
    if family == "image":
        return model.to(memory_format=torch.channels_last)
    if family == "video":
        return model.to(memory_format=torch.channels_last_3d)
    for m in model.modules():
        if isinstance(m, nn.Conv1d):
            m.weight.data = m.weight.data.transpose(1, 2).contiguous().transpose(1, 2)
    return model


def conv_grads(model: nn.Module) -> dict[str, torch.Tensor]:
    """Each convolution's weight gradient by module path (ckgen's FusedTrainConv, which takes a
    convolution's place and Parameters, included)."""
    return {
        path: m.weight.grad.detach().float().clone()
        for path, m in model.named_modules()
        if (isinstance(m, CONV_TYPES) or type(m).__name__ == "FusedTrainConv")
        and m.weight.grad is not None
    }


# The largest finite fp16 value: a gradient element whose exact value lies beyond it is inf when
# rounded to nearest (IEEE; ckgen's kernels), the largest finite value where the conversion
# saturates (cuDNN's).
FP16_MAX = 65504.0


def grad_error(grads: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> float:
    """Worst conv layer's normalised L2 error ||g - g_ref|| / ||g_ref|| (nan when a gradient is
    missing or not finite); layers whose reference gradient is zero are left out. Elements whose
    reference lies beyond FP16_MAX are compared clamped to it: an fp16 gradient there is inf
    (rounded to nearest) or FP16_MAX (saturated), either is the representable answer."""
    worst = 0.0
    for path, r in ref.items():
        rn = float(r.norm())
        if rn == 0.0:
            continue
        g = grads.get(path)
        if g is None:
            return math.nan
        g = g.float()
        over = r.abs() > FP16_MAX
        if bool(over.any()):
            r = torch.where(over, r.clamp(-FP16_MAX, FP16_MAX), r)
            g = torch.where(over & (g.sign() == r.sign()), g.clamp(-FP16_MAX, FP16_MAX), g)
            rn = float(r.norm())
        e = float((g - r).norm()) / rn
        if not math.isfinite(e):
            return math.nan
        worst = max(worst, e)
    return worst


def amp(device_type: str, dtype: str | None) -> Any:
    """The row's autocast (dtype None: fp32, no autocast); no cast cache (CUDA graph capture)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=DTYPES[dtype], cache_enabled=False)


def _set_module(root: nn.Module, path: str, new: nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    (root.get_submodule(parent) if parent else root)._modules[name] = new


@contextlib.contextmanager
def fp32_exact() -> Any:
    """cuDNN without TF32 (and no benchmark: its default algorithms), matmuls without TF32."""
    b = torch.backends
    saved = (b.cudnn.benchmark, b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32)
    b.cudnn.benchmark, b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32 = False, False, False
    try:
        yield
    finally:
        b.cudnn.benchmark, b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32 = saved


def _layer_references(model: nn.Module, dtype: str, out: dict) -> list[Any]:
    """Hooks that put into out[path] each conv's weight gradient computed in fp32 (TF32 off) from
    the very inputs the low-precision step gave it (x and w cast to dtype as autocast casts them,
    dy as it arrived), summed over calls: the kernels' own error, free of the network's
    amplification of rounding."""
    low = DTYPES[dtype]

    def dw_ref(m: Any, x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor | None:
        nd = x.dim() - 2
        pad = m.padding
        if isinstance(pad, str):
            tot = [d * (k - 1) for k, d in zip(m.kernel_size, m.dilation, strict=True)]
            if pad == "same" and any(t % 2 for t in tot):
                return None  # asymmetric: not expressible here
            pad = [t // 2 if pad == "same" else 0 for t in tot]
        with fp32_exact():
            return torch.ops.aten.convolution_backward(
                dy.float(), x.to(low).float(), m.weight.detach().to(low).float(), None,
                list(m.stride), list(pad), list(m.dilation), False, [0] * nd, m.groups,
                [False, True, False],
            )[1]  # fmt: skip

    def forward_hook(path: str) -> Any:
        def fwd(m: Any, args: tuple, y: Any) -> None:
            if not isinstance(y, torch.Tensor) or not y.requires_grad:
                return
            x = args[0].detach()

            def on_grad(dy: torch.Tensor) -> None:
                r = dw_ref(m, x, dy)
                if r is not None:
                    out[path] = out[path] + r if path in out else r

            y.register_hook(on_grad)

        return fwd

    return [
        m.register_forward_hook(forward_hook(path))
        for path, m in model.named_modules()
        if isinstance(m, CONV_TYPES)
    ]


class Entry:
    """One corpus model on the device: the PyTorch model, its initial state (restored before every
    row, so each backend starts from the same weights), inputs, upstream gradients, the fp32
    reference gradients and the ckgen twins per dtype."""

    def __init__(self, spec: Any, device: str) -> None:
        self.spec, self.name, self.family, self.device = spec, spec.name, spec.family, device
        torch.manual_seed(0)
        with torch.device(device):
            base = spec.build()
        self.base = to_channels_last(base, spec.family)
        self.init = {k: v.detach().clone() for k, v in self.base.state_dict().items()}
        self._x: dict[int, torch.Tensor] = {}
        self._g: dict[tuple, torch.Tensor] = {}
        self._ref: dict[int, dict[str, torch.Tensor]] = {}
        self._ck: dict[str, tuple[nn.Module, int, int, list[str]]] = {}

    def input(self, batch: int) -> torch.Tensor:
        x = self._x.get(batch)
        if x is None:
            gen = torch.Generator(self.device).manual_seed(batch)
            x = torch.randn(batch, *self.spec.sample, device=self.device, generator=gen)
            fmt = {"image": torch.channels_last, "video": torch.channels_last_3d}
            if self.family in fmt:
                x = x.contiguous(memory_format=fmt[self.family])
            self._x[batch] = x
        return x

    def upstream(self, batch: int, i: int, out: torch.Tensor) -> torch.Tensor:
        """The fixed upstream gradient of output i, in the output's dtype (values representable
        in fp16 and bf16 alike, so every dtype sees the same gradient)."""
        key = (batch, i, out.dtype, out.stride())
        g = self._g.get(key)
        if g is None:
            gen = torch.Generator(self.device).manual_seed(1000 + i)
            ref = torch.randn(out.shape, device=self.device, generator=gen).bfloat16()
            g = self._g[key] = torch.empty_like(out).copy_(ref)  # the output's layout
        return g

    # --------------------------------------------------------------- steps
    def step(
        self, model: Any, batch: int, dtype: str | None, train: bool, lr: float
    ) -> Callable[[], None]:
        """One training step (train) or inference forward of model on the fixed input; dtype None
        runs fp32 (no autocast)."""
        x = self.input(batch)
        params = [p for p in model.parameters() if p.requires_grad]
        dev = x.device.type

        if not train:

            def forward() -> None:
                with torch.no_grad(), amp(dev, dtype):
                    model(x)

            return forward

        def train_step() -> None:
            for p in params:
                p.grad = None
            with amp(dev, dtype):
                outs = [o for o in outputs(model(x)) if o.requires_grad]
            grads = [self.upstream(batch, i, o) for i, o in enumerate(outs)]
            torch.autograd.backward(outs, grads)
            if lr:
                ps = [p for p in params if p.grad is not None]
                with torch.no_grad():
                    torch._foreach_add_(ps, [p.grad for p in ps], alpha=-lr)

        return train_step

    def check_grads(
        self, model: nn.Module, batch: int, dtype: str | None, layers: dict | None = None
    ) -> dict[str, Any]:
        """Conv weight gradients of one step (no update) from the initial state, dropout off.
        layers (a dict): filled with each conv's fp32 weight gradient from the inputs it saw."""
        model.load_state_dict(self.init)
        model.train()
        drops = [m for m in model.modules() if isinstance(m, _DROPOUT)]
        for d in drops:
            d.eval()
        hooks = _layer_references(model, dtype, layers) if layers is not None and dtype else []
        try:
            self.step(model, batch, dtype, True, 0.0)()
            return conv_grads(model)
        finally:
            for h in hooks:
                h.remove()
            for d in drops:
                d.train()
            for p in model.parameters():
                p.grad = None
            model.load_state_dict(self.init)

    def reference(self, batch: int) -> dict[str, torch.Tensor]:
        """fp32 cuDNN gradients of the step (TF32 off), computed once."""
        ref = self._ref.get(batch)
        if ref is None:
            with fp32_exact():
                ref = self._ref[batch] = self.check_grads(self.base, batch, None)
        return ref

    # --------------------------------------------------------------- ckgen twin
    def ckgen(
        self, dtype: str, reg: Any, runs: list[tuple[int, bool]], fuse: bool = False
    ) -> tuple:
        """(model, converted, left, notes): a copy of the model through ckgen.torch.convert for
        dtype (fuse: convert(fuse=True) in train mode, the training fusions first); a conv whose
        problem (in any of runs, (batch, training); backward variants where training needs
        them) the library has no kernel for is put back to PyTorch, with the reason."""
        hit = self._ck.get((dtype, fuse))
        if hit is not None:
            return hit
        import ckgen.torch as ct
        from ckgen.runtime.capi import CkgenRuntimeError
        from ckgen.torch.convert import _CkgenConvMixin, conv_params

        model = copy.deepcopy(self.base)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            model = ct.convert(model.train(), registry=reg, dtype=DTYPES[dtype], fuse=fuse)
        notes = [str(d) for d in ct.report(model) if not d.converted]
        shapes = self._conv_inputs(runs)
        dt = dtype
        for path, mod in list(model.named_modules()):
            if not isinstance(mod, _CkgenConvMixin):
                continue
            m: Any = mod
            why = ""
            stride, pl, pr, dil = conv_params(m)
            for shape, needs_dx, train in shapes.get(path, ()):
                p = ct.make_problem(shape, m.weight.shape, stride, pl, dil, m.groups, pr)
                variants = ["forward"] + (["backward_weight"] if train else [])
                variants += ["backward_data"] if needs_dx else []
                for v in variants:
                    try:
                        reg.select(p, v, dt)
                    except CkgenRuntimeError as ex:
                        why = f"{v} {list(shape)}: {getattr(ex, 'reason', ex)}"
                        break
                if why:
                    break
            if why:
                _set_module(model, path, copy.deepcopy(self.base.get_submodule(path)))
                notes.append(f"PyTorch {path}: no ckgen kernel for {why}")
        fused = sum(isinstance(m, ct.FusedTrainConv) for m in model.modules())
        n = sum(isinstance(m, CONV_TYPES) for m in model.modules()) + fused
        conv = sum(isinstance(m, _CkgenConvMixin) for m in model.modules()) + fused
        self._ck[dtype, fuse] = (model, conv, n - conv, notes)
        return self._ck[dtype, fuse]

    def _conv_inputs(self, runs: list[tuple[int, bool]]) -> dict[str, set[tuple]]:
        """Per conv module path: (input shape, input needs a gradient, training) of each call, from
        a forward on the meta device per run (batch, training)."""
        with torch.device("meta"):
            meta = self.spec.build()
        seen: dict[str, set[tuple[tuple, bool, bool]]] = {}
        state = {"train": False}

        def hook(path: str) -> Any:
            def record(_m: Any, args: tuple, _out: Any) -> None:
                a = args[0]
                item = (tuple(a.shape), bool(a.requires_grad), state["train"])
                seen.setdefault(path, set()).add(item)

            return record

        for path, m in meta.named_modules():
            if isinstance(m, CONV_TYPES):
                m.register_forward_hook(hook(path))
        for b, train in runs:
            state["train"] = train
            meta.train(train)
            with torch.set_grad_enabled(state["train"]):
                meta(torch.empty((b, *self.spec.sample), device="meta"))
        return seen


# ------------------------------------------------------------------- timing and modes
def set_backend(backend: str, reg: Any, clear: bool = True) -> None:
    """cuDNN's benchmark flag (on but for backend 'cudnn'; the convs ckgen leaves use it too),
    ckgen.torch.benchmark (autotune) for 'ckgen_tune', and (clear) no cached ckgen selection
    carried from one backend to the next (an autotuned pick must not become the heuristic's).
    clear=False switches between steps already warmed, each keeping its prepared launches."""
    torch.backends.cudnn.benchmark = backend != "cudnn"
    if reg is not None:
        import ckgen.torch as ct

        ct.benchmark = backend == "ckgen_tune"
        if clear:
            ct.clear_cache()
            reg.clear_selection_cache()


def time_ms(
    fn: Callable[[], Any], warmup: int, iters: int, repeats: int, target_ms: float, cuda: bool
) -> float:
    """Median over repeats of the mean ms per call: CUDA events around back-to-back calls (after
    warmup calls); iterations per repeat: about target_ms worth, between 3 and iters."""

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for _ in range(warmup):
        fn()
    sync()
    t = time.perf_counter()
    fn()
    sync()
    est = (time.perf_counter() - t) * 1e3
    n = max(3, min(iters, math.ceil(target_ms / max(est, 1e-3))))
    samples = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / n)
        else:
            t = time.perf_counter()
            for _ in range(n):
                fn()
            samples.append((time.perf_counter() - t) * 1e3 / n)
    return statistics.median(samples)


def capture(step: Callable[[], None], params: list[torch.Tensor], warm: int = 3) -> Any:
    """The whole step as one CUDA graph (torch.cuda.graphs' whole-network recipe: warm-up on a side
    stream, gradients set to None before capture so backward allocates them in the graph's pool)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            step()
    torch.cuda.current_stream().wait_stream(s)
    for p in params:
        p.grad = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    return g


def graph_breaks(model: nn.Module, x: torch.Tensor, dtype: str, train: bool) -> tuple:
    """(graph breaks, those inside ckgen's package, reasons) of torch._dynamo.explain over one
    forward of the model under the row's autocast and grad mode."""
    import ckgen

    pkg = str(Path(ckgen.__file__).resolve().parent)
    torch._dynamo.reset()
    try:
        with torch.set_grad_enabled(train), amp(x.device.type, dtype):
            ex = torch._dynamo.explain(model)(x)
    finally:
        torch._dynamo.reset()
    n_ck, reasons = 0, []
    for r in getattr(ex, "break_reasons", None) or []:
        text = (str(getattr(r, "reason", r)).splitlines() or [""])[0][:200]
        files = [str(getattr(f, "filename", "")) for f in getattr(r, "user_stack", None) or []]
        ck = "ckgen" in text or any(f.startswith(pkg) for f in files)
        n_ck += ck
        reasons.append(("[ckgen] " if ck else "") + text)
    return int(getattr(ex, "graph_break_count", len(reasons))), n_ck, reasons


def short(ex: BaseException) -> str:
    msg = str(ex).strip().splitlines()
    return f"{type(ex).__name__}: {msg[0][:160] if msg else ''}"


def check_breaks(entry: Entry, key: Any, row: dict, reg: Any, args: Any, log: Callable) -> None:
    """A compile row's graph breaks (graph_breaks, ckgen_breaks): torch._dynamo.explain over the
    row's model. It resets dynamo, so a group's checks all run before any of its compiles."""
    model = _row_model(entry, key, row, reg, args, log)
    n, n_ck, reasons = graph_breaks(model, entry.input(key.batch), key.dtype, key.phase == "train")
    row["graph_breaks"], row["ckgen_breaks"] = n, n_ck
    for r in reasons[:5]:
        log(f"    graph break: {r}")


def _row_model(
    entry: Entry, key: Any, row: dict, reg: Any, args: Any, log: Callable, clear: bool = True
) -> Any:
    """The row's model (the base, or its ckgen twin; converted / left noted in row), with the
    initial weights, in the row's train / eval mode, the backend's flags set (set_backend)."""
    cuda = entry.device.startswith("cuda")
    set_backend(key.backend, reg if cuda else None, clear)
    train = key.phase == "train"
    if key.backend.startswith("ckgen"):
        if not cuda:
            raise RowError("error: ckgen needs a CUDA device")
        if reg is None:
            raise RowError(f"skipped: no ckgen library ({args.lib_error})")
        fuse = key.backend == "ckgen_fused"
        if fuse and not train:
            raise RowError("skipped: ckgen_fused is the training fusion (convert(fuse=True))")
        model, conv, left, notes = entry.ckgen(key.dtype, reg, args.runs[entry.name], fuse)
        row["converted"], row["left"] = conv, left
        if conv == 0:
            raise RowError("no_ckgen_convs")
        if notes and not getattr(model, "_bench_logged", False):
            model._bench_logged = True
            log(f"  {entry.name} {key.dtype}: {conv} convs through ckgen, {left} left to PyTorch:")
            for n in notes[:12]:
                log(f"    {n}")
    else:
        model = entry.base
    if key.mode == "graph" and not cuda:
        raise RowError("error: CUDA graphs need a CUDA device")
    model.load_state_dict(entry.init)
    model.train(train)
    return model


def prepare(
    entry: Entry, key: Any, row: dict, reg: Any, args: Any, log: Callable, clear: bool = True
) -> Callable[[], Any]:
    """The row's step, warmed (args.warmup calls; a compile row compiled, a graph row captured),
    with the gradient errors of an eager training row in row; the compile row's graph breaks
    must be in row already (check_breaks). clear: ckgen's caches emptied first (set_backend).
    Steps timed side by side are prepared with clear only for the first: each keeps its prepared
    launches, keyed by the autotune flag, so 'ckgen' prepared before 'ckgen_tune' keeps the
    heuristic's picks (a selection made after autotuning would be the autotuned one)."""
    model = _row_model(entry, key, row, reg, args, log, clear)
    train = key.phase == "train"
    if train and key.mode == "eager":
        ref = entry.reference(key.batch)
        layers: dict[str, torch.Tensor] = {}
        grads = entry.check_grads(model, key.batch, key.dtype, layers)
        row["grad_err"] = grad_error(grads, ref)
        row["layer_grad_err"] = grad_error(grads, layers)
        model.load_state_dict(entry.init)
        model.train(train)
    params = [p for p in model.parameters() if p.requires_grad]
    fn: Callable[[], Any]
    if key.mode == "compile":
        cm = torch.compile(model, mode=args.compile_mode or None)
        fn = entry.step(cm, key.batch, key.dtype, train, args.lr)
        try:
            for _ in range(2):  # compiles forward, then backward
                fn()
        except Exception as ex:  # noqa: BLE001 - recorded as the row's status
            raise RowError("compile_error: " + short(ex)) from ex
    elif key.mode == "graph":
        g = capture(entry.step(model, key.batch, key.dtype, train, args.lr), params)
        fn = g.replay
    else:
        fn = entry.step(model, key.batch, key.dtype, train, args.lr)
    for _ in range(args.warmup):
        fn()
    return fn


def interleaved_ms(
    steps: dict[str, Callable[[], Any]], args: Any, before: Callable[[str], None], cuda: bool
) -> dict[str, float]:
    """Median ms per call of each warmed step, timed in args.repeats interleaved rounds (each
    round runs every step n times, one after the other: host-bound steps drift with the CPU's
    state, so backends are compared within a round); n: about args.target_ms of the slowest step
    per round, between 3 and args.iters."""
    from timing import interleaved_ms as rounds_ms

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    est = max(rounds_ms(steps, 1, 1, before, sync)[name][0] for name in steps)
    n = max(3, min(args.iters, math.ceil(args.target_ms / max(est, 1e-3))))
    times = rounds_ms(steps, args.repeats, n, before, sync)
    return {name: statistics.median(t) for name, t in times.items()}
