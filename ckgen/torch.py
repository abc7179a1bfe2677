"""PyTorch custom ops over a ckgen Registry (torch is optional: imported on first use).

Tensors follow PyTorch's conv conventions (logical N, C, *spatial shapes) and must live in
channels-last memory (torch.channels_last / channels_last_3d; 1D: (N, C, W) whose memory is
N, W, C): that memory order is exactly ckgen's NHWGC / GKYXC / NHWGK. Other tensors are copied
into channels-last first.

    import ckgen.torch as ct
    reg = ckgen.Registry.build("default", kernels=["*_fp16_2d_*"], max_workers=16)
    ct.set_default_registry(reg)                       # or pass registry=reg per call
    y  = ct.conv_forward(x, w, stride=1, padding=1)
    dx = ct.conv_backward_data(dy, w, x.shape, stride=1, padding=1)
    dw = ct.conv_backward_weight(x, dy, w.shape, stride=1, padding=1)
    y  = ct.conv(x, w, bias, stride=1, padding=1)      # autograd: all three ops
    m  = ct.Conv2d(64, 64, 3, padding=1)               # drop-in nn.Module

The default registry can also come from CKGEN_TORCH_LIB (a built libckgen_dispatch.so or its
build directory).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ckgen.errors import CkgenError
from ckgen.model.problem import Problem

_default_registry: Any = None
_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise CkgenError("ckgen.torch needs PyTorch (pip install torch)") from None
    return torch


def set_default_registry(registry: Any) -> None:
    global _default_registry
    _default_registry = registry


def default_registry() -> Any:
    global _default_registry
    if _default_registry is None:
        lib = os.environ.get("CKGEN_TORCH_LIB")
        if not lib:
            raise CkgenError(
                "no ckgen registry: pass registry=..., call ckgen.torch.set_default_registry(), "
                "or set CKGEN_TORCH_LIB to a built libckgen_dispatch.so"
            )
        from ckgen.runtime.library import KernelLibrary

        _default_registry = KernelLibrary.load(lib)
    return _default_registry


def _tuple(v: int | Sequence[int], n: int, what: str) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) != n:
        raise CkgenError(f"{what}: expected {n} values, got {list(t)}")
    return t


def _channels_last(t: Any) -> Any:
    torch = _torch()
    if t.dim() == 4:
        return (
            t
            if t.is_contiguous(memory_format=torch.channels_last)
            else t.contiguous(memory_format=torch.channels_last)
        )
    if t.dim() == 5:
        fmt = torch.channels_last_3d
        return t if t.is_contiguous(memory_format=fmt) else t.contiguous(memory_format=fmt)
    if t.dim() == 3:  # (N, C, W) with memory N, W, C
        if (
            t.stride(1) == 1
            and t.stride(2) == t.shape[1]
            and t.stride(0) == t.shape[1] * t.shape[2]
        ):
            return t
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    raise CkgenError(f"expected a 3D, 4D or 5D tensor (N, C, *spatial), got {t.dim()}D")


def _empty_channels_last(shape: Sequence[int], like: Any) -> Any:
    torch = _torch()
    if len(shape) == 4:
        return torch.empty(
            shape, dtype=like.dtype, device=like.device, memory_format=torch.channels_last
        )
    if len(shape) == 5:
        return torch.empty(
            shape, dtype=like.dtype, device=like.device, memory_format=torch.channels_last_3d
        )
    n, c, w = shape
    return torch.empty((n, w, c), dtype=like.dtype, device=like.device).transpose(1, 2)


def _dtype(t: Any) -> str:
    name = str(t.dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise CkgenError(f"unsupported dtype {t.dtype}: ckgen has fp16, bf16 and fp32")
    return _DTYPES[name]


def make_problem(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_right: Any = None,
) -> Problem:
    """ckgen Problem of a PyTorch conv: input (N, G*C, *spatial), weight (G*K, C, *filter)."""
    nd = len(input_shape) - 2
    if not 1 <= nd <= 3 or len(weight_shape) != nd + 2:
        raise CkgenError(
            f"input {list(input_shape)} / weight {list(weight_shape)}: need N,C,*spatial with 1..3 "
            "dims"
        )
    n, gc = int(input_shape[0]), int(input_shape[1])
    gk, c = int(weight_shape[0]), int(weight_shape[1])
    if gc != groups * c or gk % groups:
        raise CkgenError(
            f"channels do not match groups={groups}: input has {gc}, weight {list(weight_shape)}"
        )
    pl = _tuple(padding, nd, "padding")
    pr = pl if padding_right is None else _tuple(padding_right, nd, "padding_right")
    return Problem.make(
        G=groups,
        N=n,
        C=c,
        K=gk // groups,
        input=list(input_shape[2:]),
        filter=list(weight_shape[2:]),
        stride=_tuple(stride, nd, "stride"),
        dilation=_tuple(dilation, nd, "dilation"),
        pad_l=pl,
        pad_r=pr,
    )


def _launch(variant: str, p: Problem, x: Any, w: Any, y: Any, registry: Any) -> None:
    torch = _torch()
    reg = registry or default_registry()
    sel = reg.select(p, variant, _dtype(x if variant != "backward_data" else y))
    ws_bytes = sel.workspace_bytes(p)
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device=x.device) if ws_bytes else None
    stream = torch.cuda.current_stream(x.device).cuda_stream
    sel.run(
        p, x.data_ptr(), w.data_ptr(), y.data_ptr(), ws.data_ptr() if ws is not None else 0, stream
    )


def conv_forward(
    x: Any,
    weight: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """y = conv(x, weight) (no bias), channels-last."""
    p = make_problem(x.shape, weight.shape, stride, padding, dilation, groups, padding_right)
    x, w = _channels_last(x), _channels_last(weight.to(x.dtype))
    y = _empty_channels_last([p.N, p.G * p.K, *p.output[3 - p.ndim :]], x)
    _launch("forward", p, x, w, y, registry)
    return y


def conv_backward_data(
    dy: Any,
    weight: Any,
    input_shape: Sequence[int],
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """dx from dy and weight, channels-last."""
    p = make_problem(input_shape, weight.shape, stride, padding, dilation, groups, padding_right)
    dy, w = _channels_last(dy), _channels_last(weight.to(dy.dtype))
    dx = _empty_channels_last(list(input_shape), dy)
    _launch("backward_data", p, dx, w, dy, registry)
    return dx


def conv_backward_weight(
    x: Any,
    dy: Any,
    weight_shape: Sequence[int],
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """dw from x and dy, channels-last (GKYXC memory)."""
    p = make_problem(x.shape, weight_shape, stride, padding, dilation, groups, padding_right)
    x, dy = _channels_last(x), _channels_last(dy.to(x.dtype))
    dw = _empty_channels_last(list(weight_shape), x)
    _launch("backward_weight", p, x, dw, dy, registry)
    return dw


def _function() -> Any:
    torch = _torch()

    class CkgenConvFunction(torch.autograd.Function):  # type: ignore[name-defined]
        @staticmethod
        def forward(
            ctx: Any,
            x: Any,
            w: Any,
            b: Any,
            stride: Any,
            padding: Any,
            dilation: Any,
            groups: int,
            registry: Any,
        ) -> Any:
            ctx.save_for_backward(x, w)
            ctx.conf = (stride, padding, dilation, groups, registry, b is not None)
            y = conv_forward(x, w, stride, padding, dilation, groups, registry)
            if b is not None:
                y = y + b.view(1, -1, *([1] * (x.dim() - 2))).to(y.dtype)
            return y

        @staticmethod
        def backward(ctx: Any, dy: Any) -> Any:
            x, w = ctx.saved_tensors
            stride, padding, dilation, groups, registry, has_bias = ctx.conf
            dx = dw = db = None
            if ctx.needs_input_grad[0]:
                dx = conv_backward_data(dy, w, x.shape, stride, padding, dilation, groups, registry)
            if ctx.needs_input_grad[1]:
                dw = conv_backward_weight(
                    x, dy, w.shape, stride, padding, dilation, groups, registry
                ).to(w.dtype)
            if has_bias and ctx.needs_input_grad[2]:
                db = dy.sum(dim=[0, *range(2, dy.dim())])
            return dx, dw, db, None, None, None, None, None

    return CkgenConvFunction


_FN: Any = None


def conv(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
) -> Any:
    """Differentiable convolution: forward, backward_data and backward_weight all run ckgen
    kernels."""
    global _FN
    if _FN is None:
        _FN = _function()
    return _FN.apply(x, weight, bias, stride, padding, dilation, groups, registry)


def Conv2d(*args: Any, registry: Any = None, **kwargs: Any) -> Any:
    """torch.nn.Conv2d whose forward (and backward) run ckgen kernels."""
    torch = _torch()

    class _CkgenConv2d(torch.nn.Conv2d):  # type: ignore[name-defined]
        def forward(self, x: Any) -> Any:
            if self.padding_mode != "zeros" or isinstance(self.padding, str):
                raise CkgenError("ckgen.torch.Conv2d supports numeric zero padding only")
            return conv(
                x,
                self.weight,
                self.bias,
                self.stride,
                self.padding,
                self.dilation,
                self.groups,
                registry,
            )

    return _CkgenConv2d(*args, **kwargs)
