"""The modules convert(model, fuse=True) puts in a model. Inference (model.eval()): FusedConv (a
convolution with its BatchNorm folded into the weight and a bias, the activation and an optional
residual add in the kernel's epilogue, ckgen::conv_fused) and FusedResidual (a residual block
whose last convolution adds the shortcut and applies the block's activation). Training:
FusedTrainConv (a convolution's bias and activation in the epilogue, its own Parameters, the
backward through conv_fused's gradient)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ckgen.torch import fused_grad, fused_op, ops, registration
from ckgen.torch.convert import conv_params
from ckgen.torch.layout import to_channels_last


def fold(conv: Any, norm: Any = None) -> tuple[Any, Any]:
    """(weight, bias) of conv followed by norm (a BatchNorm in eval mode, or torchvision's
    FrozenBatchNorm2d; None: conv alone), computed in fp64: weight in conv's dtype, bias fp32
    (zeros when there is neither a conv bias nor a norm); the weight channels-last, as the
    kernels read it."""
    w = conv.weight.detach().double()
    k = w.shape[0]
    if conv.bias is not None:
        b = conv.bias.detach().double()
    else:
        b = torch.zeros(k, dtype=torch.float64, device=w.device)
    if norm is not None:
        mean = norm.running_mean.detach().double()
        var = norm.running_var.detach().double()
        gamma = norm.weight.detach().double() if norm.weight is not None else torch.ones_like(mean)
        beta = norm.bias.detach().double() if norm.bias is not None else torch.zeros_like(mean)
        s = gamma / torch.sqrt(var + float(norm.eps))
        w = w * s.view(-1, *([1] * (w.dim() - 1)))
        b = (b - mean) * s + beta
    return to_channels_last(w.to(conv.weight.dtype)), b.float().contiguous()


class _FusedBase(nn.Module):
    """A convolution's geometry (channels, kernel size, groups, the ops' conf) and its repr."""

    fusion = ""
    _repr_tail = ""

    def _take_geometry(self, conv: Any, registry: Any) -> None:
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.kernel_size, self.groups = tuple(conv.kernel_size), int(conv.groups)
        stride, pl, pr, dil = conv_params(conv)
        self.ckgen_registry = registry
        self.conf = (stride, pl, pr, dil, self.groups, ops.library_id(registry))

    def extra_repr(self) -> str:
        stride, pl, pr, dil, groups = self.conf[:5]
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={stride}, padding={pl if pl == pr else (pl, pr)}, dilation={dil}, "
            f"groups={groups}, fusion={self.fusion}{self._repr_tail}"
        )


class FusedConv(_FusedBase):
    """``act(conv(x) * bn_scale + bias + beta * residual)`` as one ckgen kernel (ckgen::conv_fused
    with fusion ``bias[_<act>][_residual]``). weight and bias are buffers (bias stays fp32 through
    .half() / .to()); forward(x, residual=None)."""

    def __init__(
        self,
        conv: Any,
        norm: Any = None,
        activation: str = "none",
        alpha: float = 0.01,
        residual: bool = False,
        registry: Any = None,
        beta: float = 1.0,
    ) -> None:
        super().__init__()
        w, b = fold(conv, norm)
        self.register_buffer("weight", w)
        self.register_buffer("bias", b)
        parts = ["bias"] + ([activation] if activation != "none" else [])
        self.fusion = "_".join(parts + (["residual"] if residual else []))
        fused_op.epilogue(self.fusion)  # a spelling the vocabulary has
        self.activation, self.residual = activation, residual
        self.alpha, self.beta = float(alpha), float(beta)
        self._take_geometry(conv, registry)

    def forward(self, x: Any, residual: Any = None) -> Any:
        w = self.weight
        if x.is_cuda and torch.is_autocast_enabled("cuda"):
            dt = torch.get_autocast_dtype("cuda")
            x, w = x.to(dt), w.to(dt)
            residual = residual.to(dt) if residual is not None else None
        needs_grad = torch.is_grad_enabled() and x.requires_grad
        if needs_grad:
            raise fused_op.FusedGradientError(
                "FusedConv folds BatchNorm with its running statistics, for inference: run the "
                "model under torch.no_grad(), or convert(model.train(), fuse=True) to train"
            )
        if registration.fast(x, w):
            return fused_op.fused(
                x, w, self.bias, None, residual, self.beta, self.alpha, self.fusion, self.conf
            )
        return torch.ops.ckgen.conv_fused(
            x, w, self.bias, None, residual, self.beta, self.alpha, self.fusion, *self.conf
        )

    def reference(self, x: Any, residual: Any = None) -> Any:
        """forward() computed by PyTorch (fp32, then x's dtype)."""
        return fused_op.reference(
            x, self.weight, self.bias, None, residual, self.beta, self.alpha, self.fusion,
            self.conf,
        )  # fmt: skip

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        return _apply_fp32(self, "bias", fn, recurse)


def _apply_fp32(m: nn.Module, name: str, fn: Any, recurse: bool) -> nn.Module:
    """nn.Module._apply (.to(), .half(), .cuda() ...) keeping the fp32 buffer `name` fp32."""
    before = m._buffers[name]
    nn.Module._apply(m, fn, recurse)
    moved = m._buffers[name]
    if moved is not None and before is not None and moved.dtype != torch.float32:
        m._buffers[name] = before.to(device=moved.device, dtype=torch.float32)
    return m


class FusedTrainConv(_FusedBase):
    """``act(conv(x) + bias)`` for training, as one ckgen kernel (ckgen::conv_fused with fusion
    ``bias[_<act>]``) whose gradient is ckgen.torch.fused_grad's: the activation's derivative from
    the saved output, and db in the backward_weight kernel where the library has a bias_grad
    one. weight and bias are the convolution's own Parameters (an optimizer built before
    convert() keeps updating them); a convolution without a bias adds a zero fp32 buffer."""

    _repr_tail = ", training"

    def __init__(
        self, conv: Any, activation: str = "none", alpha: float = 0.01, registry: Any = None
    ) -> None:
        super().__init__()
        self.weight = conv.weight
        self.bias = conv.bias
        zero = torch.zeros(conv.out_channels, dtype=torch.float32, device=conv.weight.device)
        self.register_buffer("zero_bias", None if conv.bias is not None else zero, False)
        self.fusion = "_".join(["bias"] + ([activation] if activation != "none" else []))
        fused_op.epilogue(self.fusion)  # a spelling the vocabulary has
        self.activation, self.alpha = activation, float(alpha)
        self._take_geometry(conv, registry)

    def forward(self, x: Any) -> Any:
        w = self.weight
        b = self.bias.float() if self.bias is not None else self.zero_bias
        if x.is_cuda and torch.is_autocast_enabled("cuda"):
            dt = torch.get_autocast_dtype("cuda")
            x, w = x.to(dt), w.to(dt)
        if registration.fast(x, w, b):  # eager: the implementations, no dispatcher
            if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or b.requires_grad):
                return fused_grad.train_eager(x, w, b, self.alpha, self.fusion, self.conf)
            return fused_op.fused(x, w, b, None, None, 1.0, self.alpha, self.fusion, self.conf)
        return torch.ops.ckgen.conv_fused(
            x, w, b, None, None, 1.0, self.alpha, self.fusion, *self.conf
        )

    def reference(self, x: Any) -> Any:
        """forward() computed by PyTorch (fp32, then x's dtype)."""
        b = self.bias.float() if self.bias is not None else self.zero_bias
        return fused_op.reference(
            x, self.weight, b, None, None, 1.0, self.alpha, self.fusion, self.conf
        )

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        return _apply_fp32(self, "zero_bias", fn, recurse)


class FusedResidual(nn.Module):
    """A residual block as ``tail(body(x), shortcut(x))``: body the convolutions before the last
    (fused with their BatchNorm and activation), tail the last one fusing its BatchNorm, the
    residual add and the block's activation, shortcut the downsample path (None: x itself).
    Replaces torchvision's ResNet Bottleneck / BasicBlock and MobileNetV2's InvertedResidual."""

    def __init__(self, body: nn.Module, tail: FusedConv, shortcut: Any = None) -> None:
        super().__init__()
        self.body = body
        self.tail = tail
        self.shortcut = shortcut

    def forward(self, x: Any) -> Any:
        identity = x if self.shortcut is None else self.shortcut(x)
        return self.tail(self.body(x), identity)
