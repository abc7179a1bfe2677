"""The ckgen::conv_forward / conv_backward_data / conv_backward_weight custom ops as torch.library
registers them (real implementation, fake (meta) implementation, autograd), and the eager fast
path: fast() says when the implementations may be called directly (nothing traces), and
ConvFunction, a plain autograd.Function over them, serves eager training without the
dispatcher's host time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ckgen.torch import ops
from ckgen.torch.checks import check_backward_data, check_backward_weight, check_forward
from ckgen.torch.layout import empty_channels_last
from ckgen.torch.ops import backward_data_impl, backward_weight_impl, forward_impl

# ---------------------------------------------------------------------- registration
_ARGS = (
    "SymInt[] stride, SymInt[] padding, SymInt[] padding_right, SymInt[] dilation, "
    "SymInt groups, int library"
)
SCHEMAS = {
    "conv_forward": f"(Tensor x, Tensor weight, Tensor? bias, {_ARGS}) -> Tensor",
    "conv_backward_data": f"(Tensor dy, Tensor weight, SymInt[] input_size, {_ARGS}) -> Tensor",
    "conv_backward_weight": f"(Tensor x, Tensor dy, SymInt[] weight_size, {_ARGS}) -> Tensor",
}

conv_forward_op = torch.library.custom_op(
    "ckgen::conv_forward", forward_impl, mutates_args=(), schema=SCHEMAS["conv_forward"]
)
conv_backward_data_op = torch.library.custom_op(
    "ckgen::conv_backward_data",
    backward_data_impl,
    mutates_args=(),
    schema=SCHEMAS["conv_backward_data"],
)
conv_backward_weight_op = torch.library.custom_op(
    "ckgen::conv_backward_weight",
    backward_weight_impl,
    mutates_args=(),
    schema=SCHEMAS["conv_backward_weight"],
)


@conv_forward_op.register_fake
def _forward_fake(x, w, b, stride, pl, pr_, dil, groups, lid):
    info = check_forward(x, w, b, stride, pl, pr_, dil, groups)
    return empty_channels_last(info["out_shape"], x.dtype, x.device)


@conv_backward_data_op.register_fake
def _backward_data_fake(dy, w, input_size, stride, pl, pr_, dil, groups, lid):
    check_backward_data(dy, w, input_size, stride, pl, pr_, dil, groups)
    return empty_channels_last(input_size, dy.dtype, dy.device)


@conv_backward_weight_op.register_fake
def _backward_weight_fake(x, dy, weight_size, stride, pl, pr_, dil, groups, lid):
    check_backward_weight(x, dy, weight_size, stride, pl, pr_, dil, groups)
    return empty_channels_last(weight_size, x.dtype, x.device)


# ---------------------------------------------------------------------- autograd
def _grads(
    ctx: Any, dy: Any, data_grad: Callable[..., Any], weight_grad: Callable[..., Any]
) -> tuple:
    """conv_forward's input gradients (dx, dw, db): dx = data_grad(dy, w, x.shape, conf) and
    dw = weight_grad(x, dy, w.shape, conf) where needed, db summed from dy."""
    x, w = ctx.saved_tensors
    needs = ctx.needs_input_grad
    dx = data_grad(dy, w, x.shape, ctx.conf) if needs[0] else None
    dw = weight_grad(x, dy, w.shape, ctx.conf) if needs[1] else None
    db = dy.sum(dim=[0, *range(2, dy.dim())]) if ctx.has_bias and needs[2] else None
    return dx, dw, db


def _op_data_grad(dy: Any, w: Any, size: Any, conf: tuple) -> Any:
    return torch.ops.ckgen.conv_backward_data(dy, w, list(size), *conf)


def _op_weight_grad(x: Any, dy: Any, size: Any, conf: tuple) -> Any:
    return torch.ops.ckgen.conv_backward_weight(x, dy, list(size), *conf)


def _setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
    x, w, b, stride, pl, pr_, dil, groups, lid = inputs
    ctx.save_for_backward(x, w)
    ctx.conf = (stride, pl, pr_, dil, groups, lid)
    ctx.has_bias = b is not None


def _backward(ctx: Any, dy: Any) -> tuple:
    return (*_grads(ctx, dy, _op_data_grad, _op_weight_grad), None, None, None, None, None, None)


conv_forward_op.register_autograd(_backward, setup_context=_setup_context)


# ---------------------------------------------------------------------- eager fast path
class ConvFunction(torch.autograd.Function):
    """The eager training path: the same implementations as the ops, without the dispatcher's
    host time. conf = (stride, padding_left, padding_right, dilation, groups, library), tuples."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, conf: tuple) -> Any:
        ctx.save_for_backward(x, w)
        ctx.conf = conf
        ctx.has_bias = b is not None
        return ops.forward(x, w, b, conf)

    @staticmethod
    def backward(ctx: Any, dy: Any) -> tuple:
        if torch.is_grad_enabled():  # create_graph: a second derivative raises when asked for
            return _backward_once(ctx, dy)
        return (*_grads(ctx, dy, ops.backward_data, ops.backward_weight), None)


@torch.autograd.function.once_differentiable
def _backward_once(ctx: Any, dy: Any) -> tuple:
    return (*_grads(ctx, dy, ops.backward_data, ops.backward_weight), None)


_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_is_compiling = torch.compiler.is_compiling
_functorch_active = torch._C._are_functorch_transforms_active
_dispatch_modes = torch._C._len_torch_dispatch_stack


def fast(a: Any, b: Any, c: Any = None) -> bool:
    """True when the eager path may call the implementations directly: nothing traces or
    transforms (torch.compile, make_fx, functorch, a TorchDispatchMode, fake or functional
    tensors) and a, b (and c, where not None) are plain tensors or Parameters, a on a CUDA
    device. The other arguments' devices are checked with the rest on a signature's first
    call."""
    if _is_compiling() or _functorch_active() or _dispatch_modes():
        return False
    t = type(a)
    if t is not _Tensor and t is not _Parameter:
        return False
    t = type(b)
    if t is not _Tensor and t is not _Parameter:
        return False
    if c is not None:
        t = type(c)
        if t is not _Tensor and t is not _Parameter:
            return False
    return bool(a.is_cuda)
