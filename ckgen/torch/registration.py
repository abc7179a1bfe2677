"""The ckgen::conv_forward / conv_backward_data / conv_backward_weight custom ops as torch.library
registers them (real implementation, fake (meta) implementation, autograd), and the eager fast
path: a plain autograd.Function over the same implementations, without the dispatcher's host
time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

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
def _save(ctx: Any, x: Any, w: Any, b: Any, conf: tuple) -> None:
    """What the backward of conv_forward needs: x, w, the parameters and whether there is a bias."""
    ctx.save_for_backward(x, w)
    ctx.conf = conf
    ctx.has_bias = b is not None


def _grads(
    ctx: Any, dy: Any, data_grad: Callable[..., Any], weight_grad: Callable[..., Any]
) -> tuple:
    """conv_forward's input gradients: dx = data_grad(dy, w, x.shape, *conf) and
    dw = weight_grad(x, dy, w.shape, *conf) where needed, db summed from dy."""
    x, w = ctx.saved_tensors
    dx = dw = db = None
    if ctx.needs_input_grad[0]:
        dx = data_grad(dy, w, x.shape, *ctx.conf)
    if ctx.needs_input_grad[1]:
        dw = weight_grad(x, dy, w.shape, *ctx.conf)
    if ctx.has_bias and ctx.needs_input_grad[2]:
        db = dy.sum(dim=[0, *range(2, dy.dim())])
    return dx, dw, db, None, None, None, None, None, None


def _op_data_grad(dy: Any, w: Any, size: Any, *conf: Any) -> Any:
    return torch.ops.ckgen.conv_backward_data(dy, w, list(size), *conf)


def _op_weight_grad(x: Any, dy: Any, size: Any, *conf: Any) -> Any:
    return torch.ops.ckgen.conv_backward_weight(x, dy, list(size), *conf)


def _setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
    x, w, b, stride, pl, pr_, dil, groups, lid = inputs
    _save(ctx, x, w, b, (stride, pl, pr_, dil, groups, lid))


def _backward(ctx: Any, dy: Any) -> tuple:
    return _grads(ctx, dy, _op_data_grad, _op_weight_grad)


conv_forward_op.register_autograd(_backward, setup_context=_setup_context)


# ---------------------------------------------------------------------- eager fast path
class ConvFunction(torch.autograd.Function):
    """The eager path: the same implementations, without the dispatcher's host time."""

    @staticmethod
    def forward(
        ctx: Any,
        x: Any,
        w: Any,
        b: Any,
        stride: tuple,
        pl: tuple,
        pr_: tuple,
        dil: tuple,
        groups: int,
        lid: int,
    ) -> Any:
        _save(ctx, x, w, b, (stride, pl, pr_, dil, groups, lid))
        return forward_impl(x, w, b, stride, pl, pr_, dil, groups, lid)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, dy: Any) -> tuple:
        return _grads(ctx, dy, backward_data_impl, backward_weight_impl)


_Tensor = torch.Tensor


def eager(*tensors: Any) -> bool:
    """True when the fast path may run: not traced (torch.compile, make_fx, fake or functional
    tensors) and plain CUDA tensors."""
    if torch.compiler.is_compiling():
        return False
    for t in tensors:
        if t is not None and (type(t) is not _Tensor or not t.is_cuda):
            return False
    return True
