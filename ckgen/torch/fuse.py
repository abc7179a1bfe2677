"""convert(model, fuse=True)'s pattern pass, over each nn.Sequential's children in order.

Inference (model.eval()): Conv → BatchNorm → activation (either optional, at least one) becomes
one FusedConv; the residual blocks of torchvision (ResNet's Bottleneck and BasicBlock,
MobileNetV2's InvertedResidual with its shortcut) become a FusedResidual whose last convolution
adds the shortcut (and applies ReLU) in its epilogue.

A Conv with a bias and nothing to fold after it, in a sequence or alone anywhere in the model,
becomes a FusedConv (inference) or FusedTrainConv (training) adding its bias in the epilogue:
a separate bias add reads and writes the whole output again.

Training (model.train()): Conv → activation becomes a FusedTrainConv (the bias and activation
in the forward epilogue, db in the backward_weight kernel); an activation whose gradient needs
its input (silu, gelu) stays separate. A BatchNorm in training mode needs the convolution's
output for its batch statistics: its convolution is left.

What cannot be fused is left as it was, with the reason, for the plain pass of convert()."""

from __future__ import annotations

import inspect
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ckgen.torch import checks as ck
from ckgen.torch.convert import _NDIM, _TWINS, _summary, _why_not
from ckgen.torch.fused_grad import why_not_differentiable
from ckgen.torch.fused_modules import FusedConv, FusedResidual, FusedTrainConv

_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
# containers whose forward() runs their children in order, like nn.Sequential
_IN_ORDER = {("torchvision.models._utils", "IntermediateLayerGetter")}
# models whose forward() runs these children one after the other (and uses them nowhere else)
_STEMS = {("torchvision.models.resnet", "ResNet"): ("conv1", "bn1", "relu")}


@dataclass
class FuseResult:
    """What the pass did: fused convolutions (path -> description) and the patterns it left
    (path of the convolution -> reason)."""

    fused: dict[str, str] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)


def _is_norm(m: Any) -> bool:
    return isinstance(m, _NORMS) or type(m).__name__ == "FrozenBatchNorm2d"


def norm_why_not(m: Any, conv: Any) -> str:
    """'' when m is a BatchNorm that folds into conv (eval mode, running statistics, one
    feature per output channel; torchvision's FrozenBatchNorm2d too), else the reason."""
    frozen = type(m).__name__ == "FrozenBatchNorm2d" and hasattr(m, "running_var")
    if not (isinstance(m, _NORMS) or frozen):
        return f"{type(m).__name__} is not a BatchNorm"
    if isinstance(m, _NORMS):
        if m.training:
            return "BatchNorm in training mode (call model.eval())"
        if m.running_mean is None or m.running_var is None:
            return "BatchNorm without running statistics"
    if int(m.running_mean.numel()) != int(conv.out_channels):
        return f"BatchNorm of {m.running_mean.numel()} features after {conv.out_channels} channels"
    return ""


def activation(m: Any) -> tuple[str, float] | None:
    """(activation spelling, leaky_relu slope) of an activation module the epilogue has, else
    None."""
    t = type(m)
    if t is nn.ReLU:
        return "relu", 0.01
    if t is nn.ReLU6 or (t is nn.Hardtanh and (m.min_val, m.max_val) == (0.0, 6.0)):
        return "relu6", 0.01
    if t is nn.LeakyReLU:
        return "leaky_relu", float(m.negative_slope)
    if t is nn.SiLU:
        return "silu", 0.01
    if t is nn.GELU and m.approximate == "tanh":
        return "gelu_tanh", 0.01
    return None


def _is_conv(m: Any) -> bool:
    return type(m) in _TWINS


def _has_fused_kernel(
    registry: Any, dt: str, nd: int, fusion: str, variant: str = "forward"
) -> bool:
    find = getattr(registry, "find", None)
    if find is None:
        return True
    try:
        if "fusion" not in inspect.signature(find).parameters:
            return True
    except (TypeError, ValueError):
        return True
    return bool(find(variant=variant, datatype=dt, ndim=nd, fusion=fusion))


class Fuser:
    """One pass over a model (registry, dtype: as convert() takes them)."""

    def __init__(self, registry: Any, dtype: Any, training: bool = False) -> None:
        self.registry, self.dtype, self.training = registry, dtype, training
        self.result = FuseResult()

    def make(
        self, conv: Any, norm: Any, act: Any, residual: bool, path: str
    ) -> FusedConv | FusedTrainConv | None:
        """The FusedConv of conv (+ norm) (+ act) (+ a residual add), in training the
        FusedTrainConv of conv (+ act), or None with the reason noted under path."""
        why = _why_not(conv, self.registry, self.dtype)
        if not why and norm is not None:
            why = norm_why_not(norm, conv)
        spelled = activation(act) if act is not None else ("none", 0.01)
        if not why and spelled is None:
            why = f"{type(act).__name__} is not an epilogue activation"
        if not why and self.training and spelled is not None:
            why = why_not_differentiable(spelled[0], spelled[1])
        if why or spelled is None:
            self.result.left[path] = why
            return None
        fc: FusedConv | FusedTrainConv
        if self.training:
            fc = FusedTrainConv(conv, spelled[0], spelled[1], self.registry)
        else:
            fc = FusedConv(conv, norm, spelled[0], spelled[1], residual, self.registry)
        dt = ck.DTYPES[str(self.dtype or conv.weight.dtype).replace("torch.", "")]
        nd = _NDIM[type(conv)]
        if not _has_fused_kernel(self.registry, dt, nd, fc.fusion):
            self.result.left[path] = f"the library has no {dt} {nd}D {fc.fusion} kernel"
            return None
        parts = [type(m).__name__ for m in (norm, act) if m is not None]
        what = f"fused {fc.fusion}" + (f" ({' + '.join(parts)} folded in)" if parts else "")
        if self.training:
            db = _has_fused_kernel(self.registry, dt, nd, "bias_grad", "backward_weight")
            what += ", training: db " + (
                "in the backward_weight kernel" if db else "summed apart (no bias_grad kernel)"
            )
        what += f": {_summary(conv)}"
        self.result.fused[path] = what
        return fc

    def sequential(self, seq: Any, prefix: str, names: Any = None) -> None:
        """Conv → [BatchNorm] → [activation] runs of seq's children (names: those children,
        in the order forward() runs them; default all), each into one FusedConv (the folded
        modules become nn.Identity)."""
        names = list(seq._modules) if names is None else list(names)
        mods = seq._modules
        i = 0
        while i < len(names):
            conv = mods[names[i]]
            if not _is_conv(conv):
                i += 1
                continue
            j, norm, act = i + 1, None, None
            nxt = mods[names[j]] if j < len(names) else None
            if nxt is not None and _is_norm(nxt):
                why = norm_why_not(nxt, conv)
                if self.training:
                    why = f"{type(nxt).__name__} follows: training needs the convolution's output"
                if why:  # one that cannot fold: the convolution stays
                    self.result.left[_join(prefix, names[i])] = why
                    i = j
                    continue
                norm, j = nxt, j + 1
            spelled = activation(mods[names[j]]) if j < len(names) else None
            apart = ""  # training: an activation left beside the fused convolution, and why
            if spelled is not None and self.training:
                apart = why_not_differentiable(*spelled)
            if spelled is not None and not apart:
                act, j = mods[names[j]], j + 1
            alone = conv.bias is not None
            if norm is not None or act is not None or alone:
                path = _join(prefix, names[i])
                fc = self.make(conv, norm, act, False, path)
                if fc is not None:
                    mods[names[i]] = fc
                    for k in names[i + 1 : j]:
                        mods[k] = nn.Identity()
                    if apart:
                        self.result.fused[path] += f" ({names[j]} stays apart: {apart})"
            i = j

    def residual_block(self, m: Any, path: str) -> FusedResidual | None:
        """m as a FusedResidual when it is one of torchvision's residual blocks whose last
        convolution fuses (inference), else None."""
        if self.training:
            return None
        cls = type(m)
        name, mod = cls.__name__, cls.__module__
        if mod == "torchvision.models.resnet" and name in ("Bottleneck", "BasicBlock"):
            if type(getattr(m, "relu", None)) is not nn.ReLU:
                return None
            n = 3 if name == "Bottleneck" else 2
            body: OrderedDict[str, Any] = OrderedDict()
            for i in range(1, n):
                body[f"conv{i}"] = getattr(m, f"conv{i}")
                body[f"bn{i}"] = getattr(m, f"bn{i}")
                body[f"relu{i}"] = m.relu
            tail = (getattr(m, f"conv{n}"), getattr(m, f"bn{n}"), m.relu)
            shortcut = m.downsample
        elif mod == "torchvision.models.mobilenetv2" and name == "InvertedResidual":
            layers = list(m.conv._modules.items())
            if not getattr(m, "use_res_connect", False) or len(layers) < 2:
                return None
            body = OrderedDict(layers[:-2])
            conv, bn = layers[-2][1], layers[-1][1]
            tail, shortcut = (conv, bn, None), None
        else:
            return None
        conv, norm, act = tail
        if not _is_conv(conv):
            return None
        why = norm_why_not(norm, conv)
        if why:
            self.result.left[_join(path, "tail")] = f"residual block left unfused: {why}"
            return None
        fc = self.make(conv, norm, act, True, _join(path, "tail"))
        if not isinstance(fc, FusedConv):  # None (noted why); in inference never a training one
            return None
        block = FusedResidual(nn.Sequential(body), fc, shortcut)
        self.visit(block, path)
        return block

    def visit(self, mod: Any, prefix: str) -> None:
        cls = type(mod)
        if isinstance(mod, nn.Sequential) or (cls.__module__, cls.__name__) in _IN_ORDER:
            self.sequential(mod, prefix)
        elif (cls.__module__, cls.__name__) in _STEMS:
            self.sequential(mod, prefix, _STEMS[cls.__module__, cls.__name__])
        for name, child in list(mod._modules.items()):
            if child is None or isinstance(child, (FusedConv, FusedResidual, FusedTrainConv)):
                continue
            path = _join(prefix, name)
            if _is_conv(child):
                if child.bias is not None and path not in self.result.left:
                    fc = self.make(child, None, None, False, path)
                    if fc is not None:
                        mod._modules[name] = fc
                continue
            block = self.residual_block(child, path)
            if block is not None:
                mod._modules[name] = block
            else:
                self.visit(child, path)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def fuse_model(model: Any, registry: Any = None, dtype: Any = None) -> tuple[Any, FuseResult]:
    """The pattern pass over model (in place; returns the model and what it did): the inference
    patterns in eval mode (BatchNorm folds with its running statistics), the training ones in
    train mode."""
    fuser = Fuser(registry, dtype, training=bool(getattr(model, "training", False)))
    if isinstance(model, nn.Module):
        block = fuser.residual_block(model, "")
        if block is not None:
            return block, fuser.result
        fuser.visit(model, "")
    return model, fuser.result
