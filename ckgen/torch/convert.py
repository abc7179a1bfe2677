"""ckgen's nn.Conv1d / Conv2d / Conv3d, and convert(model): each convolution ckgen can serve
becomes its ckgen twin holding the same Parameter objects; the others stay PyTorch's, with the
reason."""

from __future__ import annotations

import importlib
import weakref
from dataclasses import dataclass
from typing import Any

from torch import nn

from ckgen.torch import checks as ck
from ckgen.torch import ops


def conv_params(m: Any) -> tuple[tuple, tuple, tuple, tuple]:
    """(stride, padding_left, padding_right, dilation) of an nn.ConvNd, its padding strings
    ('same', 'valid') resolved."""
    nd = len(m.kernel_size)
    stride = ck.ints(m.stride, nd, "stride", 1)
    dil = ck.ints(m.dilation, nd, "dilation", 1)
    if isinstance(m.padding, str):
        if m.padding == "valid":
            return stride, (0,) * nd, (0,) * nd, dil
        if m.padding == "same":
            left, right = ck.same_padding(m.kernel_size, dil)
            return stride, left, right, dil
        raise ck.ConvValueError(f"padding={m.padding!r}: expected 'same', 'valid' or ints")
    pad = ck.ints(m.padding, nd, "padding", 0)
    return stride, pad, pad, dil


class _CkgenConvMixin:
    """forward() through ckgen; the rest is nn.ConvNd's (parameters, state_dict, repr)."""

    ckgen_registry: Any = None
    _ck_conf: Any = None
    _ck_src: Any = None

    def _ck_setup(self, registry: Any) -> None:
        m: Any = self
        if m.padding_mode != "zeros":
            raise ck.ConvValueError(
                f"padding_mode={m.padding_mode!r}: ckgen convolutions pad with zeros only"
            )
        self.ckgen_registry = registry
        self._ck_refresh()

    def _ck_refresh(self) -> None:
        m: Any = self
        src = (m.stride, m.padding, m.dilation, m.groups, m.padding_mode)
        stride, pl, pr, dil = conv_params(m)
        self._ck_conf = (stride, pl, pr, dil, int(m.groups), ops.library_id(self.ckgen_registry))
        self._ck_src = src

    def forward(self, x: Any) -> Any:
        m: Any = self
        if self._ck_src != (m.stride, m.padding, m.dilation, m.groups, m.padding_mode):
            self._ck_setup(self.ckgen_registry)  # attributes changed since the last call
        from ckgen.torch import _conv_with_conf

        return _conv_with_conf(x, m.weight, m.bias, self._ck_conf)

    def extra_repr(self) -> str:
        return super().extra_repr() + ", ckgen=True"  # type: ignore[misc]


class Conv1d(_CkgenConvMixin, nn.Conv1d):
    """torch.nn.Conv1d whose forward and backward run ckgen kernels."""

    def __init__(self, *args: Any, registry: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ck_setup(registry)


class Conv2d(_CkgenConvMixin, nn.Conv2d):
    """torch.nn.Conv2d whose forward and backward run ckgen kernels."""

    def __init__(self, *args: Any, registry: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ck_setup(registry)


class Conv3d(_CkgenConvMixin, nn.Conv3d):
    """torch.nn.Conv3d whose forward and backward run ckgen kernels."""

    def __init__(self, *args: Any, registry: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ck_setup(registry)


_TWINS: dict[type, type] = {nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}
_NDIM: dict[type, int] = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}
# The methods that compute an nn.ConvNd's output: a subclass that keeps them computes the base's
# convolution (torchvision's Conv3DSimple, a class only to carry a helper) and is served.
_COMPUTE = ("forward", "_conv_forward")


def _base(t: type) -> type | None:
    """The nn.ConvNd that t is or derives from (None for anything else)."""
    return next((b for b in _TWINS if issubclass(t, b)), None)


def _overrides(t: type, base: type) -> str:
    """The first of _COMPUTE that subclass t defines anew ('' when none)."""
    return next((f for f in _COMPUTE if getattr(t, f, None) is not getattr(base, f, None)), "")


def _twin_class(t: type) -> type:
    """ckgen's class for modules of type t: the twin of nn.ConvNd, or for a subclass that keeps
    the base's forward a class deriving from both (still an instance of the user's class),
    defined once per subclass in this module so that it pickles by name."""
    if t in _TWINS:
        return _TWINS[t]
    base = _base(t)
    assert base is not None
    name = f"{_SUB_PREFIX}{t.__module__.replace('.', '|')}:{t.__qualname__.replace('.', '|')}"
    cls = globals().get(name)
    if cls is None:
        cls = type(name, (_TWINS[base], t), {"__module__": __name__, "__qualname__": name})
        globals()[name] = cls
    return cls


_SUB_PREFIX = "Ckgen:"


def __getattr__(name: str) -> Any:
    """A subclass twin named by _twin_class, rebuilt on lookup (unpickling in a new process)."""
    if not name.startswith(_SUB_PREFIX):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    mod, _, qual = name[len(_SUB_PREFIX) :].partition(":")
    obj: Any = importlib.import_module(mod.replace("|", "."))
    for part in qual.split("|"):
        obj = getattr(obj, part)
    return _twin_class(obj)


@dataclass
class Decision:
    """One convolution of the model: replaced by ckgen or left to PyTorch, and why."""

    name: str
    kind: str
    converted: bool
    reason: str

    def __str__(self) -> str:
        what = "ckgen  " if self.converted else "PyTorch"
        return f"{what} {self.name or '<root>'} ({self.kind}): {self.reason}"


_reports: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def report(model: Any) -> list[Decision]:
    """The decisions of the last convert() of this model."""
    return list(_reports.get(model, []))


def _why_not(m: Any, registry: Any, dtype: Any) -> str:
    """'' when ckgen can serve the module, else the reason."""
    t = type(m)
    if isinstance(m.weight, nn.parameter.UninitializedParameter):
        return "lazy module not initialized yet (run one forward first)"
    base = _base(t)
    assert base is not None
    if f := _overrides(t, base):
        return f"a subclass of nn.{base.__name__} that defines its own {f}(); left as is"
    w = m.weight
    if m.padding_mode != "zeros":
        return f"padding_mode={m.padding_mode!r} (ckgen pads with zeros only)"
    try:
        conv_params(m)
    except ck.ConvValueError as ex:
        return str(ex)
    dt = dtype or w.dtype
    name = str(dt).replace("torch.", "")
    if name not in ck.DTYPES:
        return f"dtype {dt} (ckgen runs float16, bfloat16, float32)"
    if registry is not None and hasattr(registry, "find"):
        nd = _NDIM[base]
        if not registry.find(variant="forward", datatype=ck.DTYPES[name], ndim=nd):
            return f"the library has no {ck.DTYPES[name]} {nd}D forward kernel"
    return ""


def _twin(m: Any, registry: Any) -> Any:
    """The ckgen module holding m's own Parameter objects, buffers and hooks."""
    cls: Any = _twin_class(type(m))
    new = cls.__new__(cls)
    new.__dict__.update(m.__dict__)
    for attr in ("_parameters", "_buffers", "_modules"):
        new.__dict__[attr] = m.__dict__[attr].copy()  # same objects, own dicts
    new._ck_setup(registry)
    return new


def convert(
    model: Any,
    registry: Any = None,
    *,
    dtype: Any = None,
    verbose: bool = True,
    fuse: bool = False,
) -> Any:
    """Replace every nn.Conv1d / Conv2d / Conv3d of model that ckgen can serve by a ckgen twin
    holding the same weight and bias Parameters (an optimizer built before keeps working); the
    others stay PyTorch's. Returns the model (a new root when model itself is a convolution).

    dtype: the dtype the model will run in, when it differs from the weights' now (a model
    converted before .half()). With a registry, modules whose dtype / ndim it has no kernel for
    are left to PyTorch. verbose prints one line per convolution; report(model) returns them.

    fuse=True first fuses the patterns of ckgen.torch.fuse. With model.eval() (inference): each
    Conv + BatchNorm (+ activation), and the residual tail of torchvision's ResNet / MobileNetV2
    blocks, into FusedConv modules (ckgen::conv_fused; folded copies of the weights, no
    gradient). With model.train(): each Conv + relu / relu6 / leaky_relu, and each Conv with a
    bias, into a FusedTrainConv (the same Parameters; bias and activation in the forward kernel,
    db in the backward_weight kernel). The convolutions it cannot fuse go through the plain
    pass, the reason beside them."""
    decisions: list[Decision] = []
    left: dict[str, str] = {}
    if fuse:
        from ckgen.torch.fuse import fuse_model

        model, done = fuse_model(model, registry, dtype)
        decisions += [Decision(p, "FusedConv", True, why) for p, why in done.fused.items()]
        left = done.left

    def visit(mod: Any, prefix: str) -> Any:
        if isinstance(mod, _CkgenConvMixin):
            decisions.append(Decision(prefix, type(mod).__name__, True, "already ckgen"))
            return mod
        if isinstance(mod, tuple(_TWINS)):
            why = _why_not(mod, registry, dtype)
            text = why or _summary(mod)
            if left.get(prefix, why) != why:
                text += f" (not fused: {left[prefix]})"
            decisions.append(Decision(prefix, type(mod).__name__, not why, text))
            return mod if why else _twin(mod, registry)
        for name, child in list(mod._modules.items()):
            if child is None:
                continue
            new = visit(child, f"{prefix}.{name}" if prefix else name)
            if new is not child:
                mod._modules[name] = new
        return mod

    root = visit(model, "")
    _reports[root] = decisions
    if verbose:
        n = sum(d.converted for d in decisions)
        print(f"ckgen.torch.convert: {n} of {len(decisions)} convolutions run through ckgen")
        for d in decisions:
            print(f"  {d}")
    return root


def _summary(m: Any) -> str:
    stride, pl, pr, dil = conv_params(m)
    pad = list(pl) if pl == pr else f"{list(pl)}/{list(pr)}"
    return (
        f"{m.in_channels}->{m.out_channels} kernel {list(m.kernel_size)} stride {list(stride)} "
        f"padding {pad} dilation {list(dil)} groups {m.groups}"
    )
