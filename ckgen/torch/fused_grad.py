"""Training through the fused forward op: the gradient of ``ckgen::conv_fused`` and the op
``ckgen::conv_backward_weight_bias``, which computes dw and the bias gradient db in one kernel.

conv_fused has a gradient where the epilogue's follows from its saved output y: operation
``bias`` (or none), activation none, relu, relu6 or leaky_relu with a slope >= 0 (the sign of y
is the sign of the activation's input), an optional residual add; not ``scale_shift`` (its
gradient needs the convolution before the scale) nor silu / gelu_tanh (theirs needs the
activation's input). Its backward:

- g = dy times the activation's derivative, read from y (PyTorch's own backward kernels of the
  activation, applied to y: relu's and relu6's masks and leaky_relu's slopes are the same there);
- d residual = beta * g; with a conversion (``to_<datatype>``), g is cast to x's dtype;
- dx = ckgen::conv_backward_data(g, w);
- (dw, db) = ckgen::conv_backward_weight_bias(x, g): a bias_grad kernel of the library (it sums g
  per channel while it reads it for dw) where one runs the problem and the cost model puts it no
  slower than the plain backward_weight kernel plus the least time of a separate sum; else that
  plain kernel and a sum of g. BIAS_GRAD_POLICY overrides the choice ("always": the bias_grad
  kernel wherever one runs the problem; "never": the plain kernel and a sum).

Other fusions, and a second derivative, raise FusedGradientError.
"""

from __future__ import annotations

from typing import Any

import torch

from ckgen.model.arch import get_arch
from ckgen.model.epilogue import Epilogue
from ckgen.model.vocab import Activation, ChannelOp
from ckgen.runtime.capi import CkgenRuntimeError
from ckgen.torch import checks as ck
from ckgen.torch import fused_op, ops, registration
from ckgen.torch.fused_op import FusedGradientError
from ckgen.torch.layout import channel_sum, empty_channels_last

BIAS_GRAD = Epilogue.parse("bias_grad")
BIAS_GRAD_POLICIES = ("auto", "always", "never")
BIAS_GRAD_POLICY = "auto"  # one of BIAS_GRAD_POLICIES; read when a signature is first prepared
# the activations whose derivative is a function of their output, and that function
_ACT_GRAD = {
    Activation.NONE: lambda dy, y, a: dy,
    Activation.RELU: lambda dy, y, a: torch.ops.aten.threshold_backward(dy, y, 0),
    Activation.RELU6: lambda dy, y, a: torch.ops.aten.hardtanh_backward(dy, y, 0.0, 6.0),
    Activation.LEAKY_RELU: lambda dy, y, a: torch.ops.aten.leaky_relu_backward(dy, y, a, True),
}


def why_not_differentiable(fusion: str | Epilogue, alpha: float = 0.01) -> str:
    """'' when conv_fused has a gradient for this fusion (and leaky_relu slope), else the
    reason."""
    ep = Epilogue.parse(fusion)
    if ep.stats:
        return "stats has no gradient here (the statistics are an output for a BatchNorm)"
    if ep.channel_op is ChannelOp.SCALE_SHIFT:
        return "scale_shift has no gradient here (its gradient needs the unscaled convolution)"
    if ep.activation not in _ACT_GRAD:
        return (
            f"{ep.activation} has no gradient here (it needs the activation's input; "
            f"these do: {', '.join(str(a) for a in _ACT_GRAD)})"
        )
    if ep.activation is Activation.LEAKY_RELU and alpha < 0:
        return f"leaky_relu with a negative slope ({alpha}) has no gradient from its output"
    return ""


def activation_grad(fusion: str | Epilogue, dy: Any, y: Any, alpha: float) -> Any:
    """dy times the derivative of the fusion's activation, read from its output y."""
    return _ACT_GRAD[Epilogue.parse(fusion).activation](dy, y, alpha)


# ---------------------------------------------------------------------- dw and db
_no_bias_grad: set[tuple] = set()  # signatures that take the plain kernel and a sum


def _estimate_us(pr: ops.Prepared) -> float | None:
    """The cost model's time of pr's selection, None where the library gives none."""
    try:
        return float(pr.selection.kernel.estimate_us(pr.problem, pr.selection.k_batch))
    except (AttributeError, CkgenRuntimeError):
        return None


def _fused_pays(fused: ops.Prepared, x: Any, dy: Any, size: tuple, conf: tuple) -> bool:
    """Whether the cost model puts the bias_grad launch `fused` at no more than the plain
    kernel plus the least time a separate sum of dy takes (its bytes at the target's
    bandwidth). True where the library gives no estimate or no target."""
    fused_us = _estimate_us(fused)
    if fused_us is None:
        return True
    try:
        gbs = get_arch(fused.library.arch).bandwidth_gbs
    except (AttributeError, KeyError, ValueError):
        return True
    plain_us = _estimate_us(ops._prepared("backward_weight", x, dy, size, size, conf))
    sum_us = dy.numel() * dy.element_size() / (gbs * 1e3)
    return plain_us is None or fused_us <= plain_us + sum_us


def _bias_grad_prepared(x: Any, dy: Any, size: tuple, conf: tuple) -> ops.Prepared | None:
    """The prepared bias_grad launch, or None where the plain kernel and a sum are to run (the
    library has no bias_grad kernel for the problem, or the cost model puts it slower)."""
    key = ("bias_grad", x.shape, dy.shape, size, x.dtype, dy.dtype, x.device, dy.device, conf)
    pr = ops._cache.get(key)
    if pr is not None or key in _no_bias_grad:
        return pr
    info = ck.check_backward_weight(x, dy, size, *conf[:5])
    if BIAS_GRAD_POLICY not in BIAS_GRAD_POLICIES:
        raise ck.ConvValueError(
            f"ckgen.torch.fused_grad.BIAS_GRAD_POLICY={BIAS_GRAD_POLICY!r}: one of "
            f"{', '.join(BIAS_GRAD_POLICIES)}"
        )
    if BIAS_GRAD_POLICY == "never":
        _no_bias_grad.add(key)
        return None
    try:
        pr = ops._prepare(
            key, "backward_weight", info, x.shape, size, size, x.device, conf[5], False, x.dtype,
            fusion=BIAS_GRAD,
        )  # fmt: skip
    except ops.NoKernelError:
        pr = None
    auto = BIAS_GRAD_POLICY == "auto"
    if auto and pr is not None and not pr.empty and not _fused_pays(pr, x, dy, size, conf):
        ops._cache.pop(key, None)
        pr = None
    if pr is None:
        _no_bias_grad.add(key)
    return pr


def weight_bias_grad(x: Any, dy: Any, weight_size: Any, conf: tuple) -> tuple[Any, Any]:
    """(dw, db): dw as ops.backward_weight computes it, db the fp32 sum of dy per output channel
    (conf as ops takes it)."""
    size = tuple(int(s) for s in weight_size)
    pr = _bias_grad_prepared(x, dy, size, conf)
    if pr is None:
        dw = ops.backward_weight(x, dy, size, conf)
        return dw, channel_sum(dy)
    db = torch.empty(int(dy.shape[1]), dtype=torch.float32, device=pr.device)
    if pr.empty:
        db.zero_()
        return torch.zeros(pr.out_shape, dtype=pr.dtype, device=pr.device), db
    dw = torch.empty_strided(pr.out_shape, pr.out_strides, dtype=pr.dtype, device=pr.device)
    x, px = ops._input(x, pr.fmt)
    dy, pdy = ops._input(dy, pr.fmt)
    pdw, pdb = dw.data_ptr(), db.data_ptr()
    fused_op.run_selection(pr, "conv_backward_weight_bias", px, pdw, pdy, db=pdb)
    return dw, db


def _impl(x, dy, weight_size, stride, pl, pr_, dil, groups, lid):
    return weight_bias_grad(x, dy, weight_size, ops.conf_of(stride, pl, pr_, dil, groups, lid))


SCHEMA = (
    "(Tensor x, Tensor dy, SymInt[] weight_size, SymInt[] stride, SymInt[] padding, "
    "SymInt[] padding_right, SymInt[] dilation, SymInt groups, int library) -> (Tensor, Tensor)"
)
_lib = torch.library.Library("ckgen", "FRAGMENT")
_lib.define("conv_backward_weight_bias" + SCHEMA)
_lib.impl("conv_backward_weight_bias", _impl, "CompositeExplicitAutograd")
conv_backward_weight_bias_op = torch.ops.ckgen.conv_backward_weight_bias.default


@torch.library.register_fake("ckgen::conv_backward_weight_bias", lib=_lib)
def _weight_bias_fake(x, dy, weight_size, stride, pl, pr_, dil, groups, lid):
    ck.check_backward_weight(x, dy, weight_size, stride, pl, pr_, dil, groups)
    db = torch.empty(int(dy.shape[1]), dtype=torch.float32, device=dy.device)
    return empty_channels_last(weight_size, x.dtype, x.device), db


def _weight_bias_autograd(keyset, x, dy, weight_size, stride, pl, pr_, dil, groups, lid):
    args = (x, dy, weight_size, stride, pl, pr_, dil, groups, lid)
    if registration._grad_enabled() and registration._any_requires_grad(x, dy):
        raise FusedGradientError(
            "ckgen::conv_backward_weight_bias has no derivative (no second derivative of a "
            "convolution)"
        )
    if registration._direct(keyset):
        return _impl(*args)
    return registration._redispatch(conv_backward_weight_bias_op, keyset, args)


_lib.impl("conv_backward_weight_bias", _weight_bias_autograd, "Autograd", with_keyset=True)


def _op_weight_bias_grad(x: Any, dy: Any, size: Any, conf: tuple) -> tuple[Any, Any]:
    if not registration._grad_enabled() and registration.fast(x, dy):
        return weight_bias_grad(x, dy, size, ops.conf_of(*conf))
    return torch.ops.ckgen.conv_backward_weight_bias(x, dy, list(size), *conf)


# ---------------------------------------------------------------------- conv_fused's gradient
class _FusedOp(torch.autograd.Function):
    """conv_fused's Autograd kernel where a gradient is needed (the last input is the call's
    dispatch key set; None: the eager fast path, plain tensors, nothing traces)."""

    @staticmethod
    def forward(ctx, x, w, bias, scale, residual, beta, alpha, fusion, *conf_keyset):
        *conf, keyset = conf_keyset
        args = (x, w, bias, scale, residual, beta, alpha, fusion, *conf)
        if keyset is None or registration._direct(keyset):
            y = fused_op._impl(*args)
        else:
            y = registration._redispatch(fused_op.conv_fused_op, keyset, args)
        ctx.save_for_backward(x, w, y)
        ctx.conf, ctx.beta, ctx.alpha, ctx.fusion = tuple(conf), beta, alpha, fusion
        return y

    @staticmethod
    def backward(ctx: Any, dy: Any) -> tuple:
        if torch.is_grad_enabled():
            raise FusedGradientError(
                "ckgen::conv_fused has no second derivative (create_graph=True)"
            )
        x, w, y = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g = activation_grad(ctx.fusion, dy, y, ctx.alpha)
        dres = g * ctx.beta if needs[4] else None
        g = g.to(x.dtype)  # a converting fusion's output gradient, in its inputs' dtype
        dx = registration._op_data_grad(g, w, x.shape, ctx.conf) if needs[0] else None
        dw = db = None
        if needs[2]:
            dw, db = _op_weight_bias_grad(x, g, w.shape, ctx.conf)
            dw = dw if needs[1] else None
        elif needs[1]:
            dw = registration._op_weight_grad(x, g, w.shape, ctx.conf)
        return (dx, dw, db, None, dres) + (None,) * (3 + len(ctx.conf) + 1)


def train_eager(x: Any, w: Any, bias: Any, alpha: float, fusion: str, conf: tuple) -> Any:
    """conv_fused with its gradient on the eager fast path (registration.fast(x, w): plain
    tensors, nothing traces), without the dispatcher's host time; fusion one that has a gradient
    (why_not_differentiable), conf as ops takes it."""
    return _FusedOp.apply(x, w, bias, None, None, 1.0, alpha, fusion, *conf, None)


def _fused_autograd(name: str, op: Any, impl: Any) -> Any:
    """The Autograd kernel of ckgen::<name> (conv_fused, or conv_fused_stats, whose fusions
    why_not_differentiable refuses): _FusedOp where a gradient is needed and the fusion has one,
    else impl (plain tensors) or op below autograd."""

    def kernel(keyset, *args):
        x, w, bias, scale, residual, beta, alpha, fusion = args[:8]
        if registration._grad_enabled() and registration._any_requires_grad(
            x, w, bias, scale, residual
        ):
            why = why_not_differentiable(fused_op.epilogue(fusion), alpha)
            if not why and scale is not None and scale.requires_grad:
                why = "scale has no gradient here"
            if why:
                raise FusedGradientError(
                    f"ckgen::{name} with fusion={fusion!r} cannot be trained through: {why}. Run "
                    "it under torch.no_grad() / torch.inference_mode(), or train without that "
                    "fusion"
                )
            return _FusedOp.apply(*args, keyset)
        if registration._direct(keyset):
            return impl(*args)
        return registration._redispatch(op, keyset, args)

    return kernel


_conv_fused = _fused_autograd("conv_fused", fused_op.conv_fused_op, fused_op._impl)
_conv_fused_stats = _fused_autograd(
    "conv_fused_stats", fused_op.conv_fused_stats_op, fused_op._stats_impl
)
fused_op._lib.impl("conv_fused", _conv_fused, "Autograd", with_keyset=True)
fused_op._lib.impl("conv_fused_stats", _conv_fused_stats, "Autograd", with_keyset=True)
