"""The modules convert(model, fuse=True) puts in a model: FusedConv (a convolution with its
BatchNorm folded into the weight and a bias, the activation and an optional residual add in the
kernel's epilogue, ckgen::conv_fused) and FusedResidual (a residual block whose last convolution
adds the shortcut and applies the block's activation). Inference only."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ckgen.torch import fused_op, ops, registration
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


class FusedConv(nn.Module):
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
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.kernel_size, self.groups = tuple(conv.kernel_size), int(conv.groups)
        stride, pl, pr, dil = conv_params(conv)
        self.ckgen_registry = registry
        self.conf = (stride, pl, pr, dil, self.groups, ops.library_id(registry))

    def forward(self, x: Any, residual: Any = None) -> Any:
        w = self.weight
        if x.is_cuda and torch.is_autocast_enabled("cuda"):
            dt = torch.get_autocast_dtype("cuda")
            x, w = x.to(dt), w.to(dt)
            residual = residual.to(dt) if residual is not None else None
        needs_grad = torch.is_grad_enabled() and x.requires_grad
        if registration.fast(x, w) and not needs_grad:
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
        bias = self._buffers["bias"]
        super()._apply(fn, recurse)
        moved = self._buffers["bias"]
        if moved is not None and bias is not None and moved.dtype != torch.float32:
            self._buffers["bias"] = bias.to(device=moved.device, dtype=torch.float32)
        return self

    def extra_repr(self) -> str:
        stride, pl, pr, dil, groups = self.conf[:5]
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={stride}, padding={pl if pl == pr else (pl, pr)}, dilation={dil}, "
            f"groups={groups}, fusion={self.fusion}"
        )


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
