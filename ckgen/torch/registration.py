"""The ckgen::conv_forward / conv_backward_data / conv_backward_weight custom ops as torch.library
registers them (real implementation, fake (meta) implementation, an Autograd kernel that runs the
implementation directly for plain tensors), and the eager fast
path: fast() says when the implementations may be called directly (nothing traces), and
ConvFunction, a plain autograd.Function over them, serves eager training without the
dispatcher's host time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ckgen.torch import native, ops
from ckgen.torch.checks import check_backward_data, check_backward_weight, check_forward
from ckgen.torch.layout import channel_sum, empty_channels_last

# ---------------------------------------------------------------------- registration
# The ops are defined with torch.library.Library rather than torch.library.custom_op: a custom_op
# call crosses from the dispatcher into Python twice (its autograd kernel, then its backend
# kernel behind a redispatch) through several wrapper layers, which compiled graphs pay per
# convolution. Here the Autograd kernel is ckgen's own: where nothing sits between autograd and
# the backend (plain CPU / CUDA tensors, no mode, no subclass, no functionalization) it runs the
# implementation itself, one crossing per call; otherwise (fake, meta, traced or transformed
# tensors) it redispatches below autograd, to the Meta (fake) kernel, a dispatch mode or the
# CompositeExplicitAutograd kernel, exactly where custom_op's kernel went.
_ARGS = (
    "SymInt[] stride, SymInt[] padding, SymInt[] padding_right, SymInt[] dilation, "
    "SymInt groups, int library"
)
SCHEMAS = {
    "conv_forward": f"(Tensor x, Tensor weight, Tensor? bias, {_ARGS}) -> Tensor",
    "conv_backward_data": f"(Tensor dy, Tensor weight, SymInt[] input_size, {_ARGS}) -> Tensor",
    "conv_backward_weight": f"(Tensor x, Tensor dy, SymInt[] weight_size, {_ARGS}) -> Tensor",
}

_lib = torch.library.Library("ckgen", "DEF")
for _name, _schema in SCHEMAS.items():
    _lib.define(_name + _schema)
    _lib.impl(_name, getattr(ops, _name[5:] + "_impl"), "CompositeExplicitAutograd")

conv_forward_op = torch.ops.ckgen.conv_forward.default
conv_backward_data_op = torch.ops.ckgen.conv_backward_data.default
conv_backward_weight_op = torch.ops.ckgen.conv_backward_weight.default


@torch.library.register_fake("ckgen::conv_forward", lib=_lib)
def _forward_fake(x, w, b, stride, pl, pr_, dil, groups, lid):
    info = check_forward(x, w, b, stride, pl, pr_, dil, groups)
    return empty_channels_last(info["out_shape"], x.dtype, x.device)


@torch.library.register_fake("ckgen::conv_backward_data", lib=_lib)
def _backward_data_fake(dy, w, input_size, stride, pl, pr_, dil, groups, lid):
    check_backward_data(dy, w, input_size, stride, pl, pr_, dil, groups)
    return empty_channels_last(input_size, dy.dtype, dy.device)


@torch.library.register_fake("ckgen::conv_backward_weight", lib=_lib)
def _backward_weight_fake(x, dy, weight_size, stride, pl, pr_, dil, groups, lid):
    check_backward_weight(x, dy, weight_size, stride, pl, pr_, dil, groups)
    return empty_channels_last(weight_size, x.dtype, x.device)


# ---------------------------------------------------------------------- autograd
_AFTER_AUTOGRAD = torch._C._after_autograd_keyset
_below_autograd = torch._C._AutoDispatchBelowAutograd
_any_requires_grad = torch._C._any_requires_grad
_grad_enabled = torch.is_grad_enabled
_DK = torch._C.DispatchKey
_BACKENDS = (_DK.CPU, _DK.CUDA)
_direct_keys: dict[int, bool] = {}


def _direct(keyset: Any) -> bool:
    """Whether an op called with this dispatch key set would reach the backend kernel next
    (nothing between autograd and a CPU / CUDA backend: no Python key for a dispatch mode or a
    tensor subclass, no functionalization or functorch layer, no conjugate / negative / zero
    view), so the Autograd kernel may run the implementation itself. Decided once per key set."""
    raw = keyset.raw_repr()
    hit = _direct_keys.get(raw)
    if hit is None:
        rest = (keyset & _AFTER_AUTOGRAD).remove(_DK.ADInplaceOrView)
        hit = _direct_keys[raw] = rest.highestPriorityTypeId() in _BACKENDS
    return hit


def _redispatch(op: Any, keyset: Any, args: tuple) -> Any:
    with _below_autograd():
        return op.redispatch(keyset & _AFTER_AUTOGRAD, *args)


def _grads(
    ctx: Any, dy: Any, data_grad: Callable[..., Any], weight_grad: Callable[..., Any]
) -> tuple:
    """conv_forward's input gradients (dx, dw, db): dx = data_grad(dy, w, x.shape, conf) and
    dw = weight_grad(x, dy, w.shape, conf) where needed, db summed from dy (layout.channel_sum)."""
    x, w = ctx.saved_tensors
    needs = ctx.needs_input_grad
    dx = data_grad(dy, w, x.shape, ctx.conf) if needs[0] else None
    dw = weight_grad(x, dy, w.shape, ctx.conf) if needs[1] else None
    db = channel_sum(dy).to(ctx.bias_dtype) if ctx.bias_dtype is not None and needs[2] else None
    return dx, dw, db


# conf: the op's parameters as it got them (lists). Where nothing traces and no graph of the
# gradient is built (create_graph would need the ops' autograd kernels), the implementations.
def _op_data_grad(dy: Any, w: Any, size: Any, conf: tuple) -> Any:
    if not _grad_enabled() and fast(dy, w):
        return ops.backward_data(dy, w, tuple(size), ops.conf_of(*conf))
    return torch.ops.ckgen.conv_backward_data(dy, w, list(size), *conf)


def _op_weight_grad(x: Any, dy: Any, size: Any, conf: tuple) -> Any:
    if not _grad_enabled() and fast(x, dy):
        return ops.backward_weight(x, dy, tuple(size), ops.conf_of(*conf))
    return torch.ops.ckgen.conv_backward_weight(x, dy, list(size), *conf)


_NONE7 = (None,) * 7  # the gradients of stride ... library and of the key set


class _ForwardOp(torch.autograd.Function):
    """conv_forward's Autograd kernel where a gradient is needed: forward below autograd (the
    implementation, or the redispatch when something traces), backward through the backward ops.
    The last input is the call's dispatch key set (None: call the op, which the gradient mode
    being off inside forward sends below autograd)."""

    @staticmethod
    def forward(ctx, x, w, b, stride, pl, pr_, dil, groups, lid, keyset):
        ctx.save_for_backward(x, w)
        ctx.conf = (stride, pl, pr_, dil, groups, lid)
        ctx.bias_dtype = None if b is None else b.dtype
        args = (x, w, b, stride, pl, pr_, dil, groups, lid)
        if keyset is None:  # from the native Autograd kernel: the op again, gradient off
            return conv_forward_op(*args)
        if _direct(keyset):
            return ops.forward(x, w, b, ops.conf_of(stride, pl, pr_, dil, groups, lid))
        return _redispatch(conv_forward_op, keyset, args)

    @staticmethod
    def backward(ctx: Any, dy: Any) -> tuple:
        return (*_grads(ctx, dy, _op_data_grad, _op_weight_grad), *_NONE7)


def _forward_autograd(keyset, x, w, b, stride, pl, pr_, dil, groups, lid):
    if _grad_enabled() and _any_requires_grad(x, w, b):
        return _ForwardOp.apply(x, w, b, stride, pl, pr_, dil, groups, lid, keyset)
    if _direct(keyset):
        if x.is_cuda:
            native.module()  # loads it: its C++ kernels serve the CUDA calls after this one
        return ops.forward(x, w, b, ops.conf_of(stride, pl, pr_, dil, groups, lid))
    return _redispatch(conv_forward_op, keyset, (x, w, b, stride, pl, pr_, dil, groups, lid))


class _NoDerivative(torch.autograd.Function):
    """A backward op's Autograd kernel where a gradient is asked for: the op's value, and an
    error when something differentiates through it (no second derivative of a convolution)."""

    @staticmethod
    def forward(ctx, op, a, b, size, stride, pl, pr_, dil, groups, lid, keyset):
        ctx.op = op
        if keyset is None:  # from the native Autograd kernel (see _ForwardOp)
            return op(a, b, size, stride, pl, pr_, dil, groups, lid)
        if _direct(keyset):
            fn = ops.backward_data if op is conv_backward_data_op else ops.backward_weight
            return fn(a, b, size, ops.conf_of(stride, pl, pr_, dil, groups, lid))
        return _redispatch(op, keyset, (a, b, size, stride, pl, pr_, dil, groups, lid))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        raise RuntimeError(
            f"Trying to backward through {ctx.op} but no autograd formula was registered: "
            "ckgen's backward ops have no derivative (no second derivative of a convolution)"
        )


def _backward_autograd(op: Any, impl: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(keyset, a, b, size, stride, pl, pr_, dil, groups, lid):
        if _grad_enabled() and _any_requires_grad(a, b):
            return _NoDerivative.apply(op, a, b, size, stride, pl, pr_, dil, groups, lid, keyset)
        if _direct(keyset):
            if a.is_cuda:
                native.module()  # as in _forward_autograd
            return impl(a, b, size, ops.conf_of(stride, pl, pr_, dil, groups, lid))
        return _redispatch(op, keyset, (a, b, size, stride, pl, pr_, dil, groups, lid))

    return kernel


_lib.impl("conv_forward", _forward_autograd, "Autograd", with_keyset=True)
_lib.impl(
    "conv_backward_data",
    _backward_autograd(conv_backward_data_op, ops.backward_data),
    "Autograd",
    with_keyset=True,
)
_lib.impl(
    "conv_backward_weight",
    _backward_autograd(conv_backward_weight_op, ops.backward_weight),
    "Autograd",
    with_keyset=True,
)


# What the native Autograd kernels (native_conv.cpp, registered for AutogradCUDA when the native
# module loads) call where a gradient is needed: the same autograd functions.
def grad_forward(x, w, b, stride, pl, pr_, dil, groups, lid):
    return _ForwardOp.apply(x, w, b, stride, pl, pr_, dil, groups, lid, None)


_BACKWARD_OPS = {
    "ckgen::conv_backward_data": conv_backward_data_op,
    "ckgen::conv_backward_weight": conv_backward_weight_op,
}


def grad_backward(name, a, b, size, stride, pl, pr_, dil, groups, lid):
    op = _BACKWARD_OPS[name]
    return _NoDerivative.apply(op, a, b, size, stride, pl, pr_, dil, groups, lid, None)


# ---------------------------------------------------------------------- eager fast path
class ConvFunction(torch.autograd.Function):
    """The eager training path: the same implementations as the ops, without the dispatcher's
    host time. conf = (stride, padding_left, padding_right, dilation, groups, library), tuples."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, conf: tuple) -> Any:
        ctx.save_for_backward(x, w)
        ctx.conf = conf
        ctx.bias_dtype = None if b is None else b.dtype
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
