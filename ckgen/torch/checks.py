"""Argument checks of the ckgen.torch ops, shared by the real and the fake (meta) implementation,
so a misuse raises the same clear error while tracing (torch.compile, meta tensors) as when the op
runs. Each message names the argument."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ckgen.errors import CkgenError

# torch dtype name -> ckgen datatype
DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def torch_dtype(datatype: str) -> Any:
    """The torch dtype of a ckgen datatype name (fp16, bf16, fp32): DTYPES the other way."""
    import torch

    return getattr(torch, next(k for k, v in DTYPES.items() if v == datatype))


# tensors that are never handed to a kernel: the fake (meta) implementation runs on them
TRACE_DEVICES = ("meta",)


class ConvValueError(CkgenError, ValueError):
    """A shape or parameter of a ckgen.torch op is wrong."""


class ConvTypeError(CkgenError, TypeError):
    """An argument of a ckgen.torch op has the wrong type or dtype."""


class ConvDeviceError(CkgenError, RuntimeError):
    """A tensor of a ckgen.torch op is not on a CUDA device, or not on the same one."""


def ints(v: Any, n: int, what: str, minimum: int) -> tuple[int, ...]:
    """v (an int or n ints) as n ints, each >= minimum."""
    if isinstance(v, bool):
        raise ConvTypeError(f"{what}: expected an int or {n} ints, got {v!r}")
    if isinstance(v, int):
        t: tuple[int, ...] = (v,) * n
    else:
        try:
            t = tuple(v)
        except TypeError:
            raise ConvTypeError(
                f"{what}: expected an int or {n} ints, got {type(v).__name__}"
            ) from None
        if any(isinstance(x, bool) or not hasattr(x, "__index__") for x in t):
            raise ConvTypeError(f"{what}: expected {n} ints, got {list(t)}")
        t = tuple(int(x) for x in t)
    if len(t) != n:
        raise ConvValueError(f"{what}: expected {n} values for a {n}D convolution, got {list(t)}")
    if any(x < minimum for x in t):
        raise ConvValueError(f"{what}: every value must be >= {minimum}, got {list(t)}")
    return t


def datatype(t: Any, what: str) -> str:
    name = str(t.dtype).replace("torch.", "")
    dt = DTYPES.get(name)
    if dt is None:
        raise ConvTypeError(
            f"{what} has dtype {t.dtype}: ckgen.torch runs float16, bfloat16 and float32 tensors"
        )
    return dt


def tensor(t: Any, what: str) -> None:
    if not (hasattr(t, "dim") and hasattr(t, "dtype") and hasattr(t, "device")):
        raise ConvTypeError(f"{what}: expected a torch.Tensor, got {type(t).__name__}")


def same_dtype(a: Any, a_name: str, b: Any, b_name: str) -> str:
    dt = datatype(a, a_name)
    if b.dtype != a.dtype:
        raise ConvTypeError(
            f"{b_name} has dtype {b.dtype} but {a_name} has {a.dtype}: they must be the same "
            f"(cast one, e.g. {b_name}.to({a_name}.dtype))"
        )
    return dt


def devices(tensors: Sequence[tuple[Any, str]]) -> Any:
    """The common CUDA (or meta) device of the named tensors."""
    first, first_name = tensors[0]
    dev = first.device
    if dev.type != "cuda" and dev.type not in TRACE_DEVICES:
        raise ConvDeviceError(
            f"{first_name} is on {dev}: ckgen kernels run on CUDA devices (move it with .cuda())"
        )
    for t, name in tensors[1:]:
        if t.device != dev:
            raise ConvDeviceError(
                f"{name} is on {t.device} but {first_name} is on {dev}: they must be on the same "
                "device"
            )
    return dev


def conv_shapes(
    x_shape: Sequence[int],
    w_shape: Sequence[int],
    stride: Any,
    padding: Any,
    padding_right: Any,
    dilation: Any,
    groups: Any,
    x_name: str = "x",
    w_name: str = "weight",
) -> dict[str, Any]:
    """Checks a convolution of input x_shape (N, G*C, *spatial) and weight w_shape
    (G*K, C, *filter); returns its parameters and the output shape."""
    if not 3 <= len(x_shape) <= 5:
        raise ConvValueError(
            f"{x_name} has {len(x_shape)} dims {list(x_shape)}: expected 3, 4 or 5 "
            "(N, C, *spatial) for a 1D, 2D or 3D convolution"
        )
    nd = len(x_shape) - 2
    if len(w_shape) != len(x_shape):
        raise ConvValueError(
            f"{w_name} has {len(w_shape)} dims {list(w_shape)} but {x_name} has {len(x_shape)} "
            f"{list(x_shape)}: a {nd}D convolution's weight is (K, C/groups, *filter)"
        )
    if isinstance(groups, bool) or not hasattr(groups, "__index__") or int(groups) < 1:
        raise ConvValueError(f"groups: expected an int >= 1, got {groups!r}")
    g = int(groups)
    n, gc = x_shape[0], x_shape[1]
    gk, c = w_shape[0], w_shape[1]
    for what, shape in ((x_name, x_shape), (w_name, w_shape)):
        bad = [i for i, s in enumerate(shape) if s < 1 and not (what == x_name and i == 0)]
        if bad:
            raise ConvValueError(
                f"{what} has shape {list(shape)}: dim {bad[0]} is zero-size (only the batch N "
                "may be 0)"
            )
    if gc != g * c:
        raise ConvValueError(
            f"{x_name} has {gc} channels but {w_name} {list(w_shape)} with groups={g} expects "
            f"{g * c} (groups * {w_name}.shape[1])"
        )
    if gk % g:
        raise ConvValueError(f"{w_name} has {gk} output channels, not divisible by groups={g}")
    st = ints(stride, nd, "stride", 1)
    dil = ints(dilation, nd, "dilation", 1)
    pl = ints(padding, nd, "padding", 0)
    pr = pl if padding_right is None else ints(padding_right, nd, "padding_right", 0)
    out = []
    for i in range(nd):
        eff = (w_shape[2 + i] - 1) * dil[i] + 1
        span = x_shape[2 + i] + pl[i] + pr[i] - eff
        if span < 0:
            raise ConvValueError(
                f"{x_name} spatial dim {i} is {x_shape[2 + i]} (+ padding {pl[i]}+{pr[i]}), "
                f"smaller than the dilated filter {eff}: the output would be empty"
            )
        out.append(span // st[i] + 1)
    return {
        "nd": nd,
        "G": g,
        "N": n,
        "C": c,
        "K": gk // g,
        "stride": st,
        "dilation": dil,
        "pad_l": pl,
        "pad_r": pr,
        "out_shape": (n, gk, *out),
    }


def same_padding(filter_size: Sequence[int], dilation: Sequence[int]) -> tuple[tuple, tuple]:
    """PyTorch's padding='same' (stride 1): total d*(k-1), the extra one on the right."""
    total = [d * (k - 1) for k, d in zip(filter_size, dilation, strict=True)]
    left = tuple(t // 2 for t in total)
    return left, tuple(t - lft for t, lft in zip(total, left, strict=True))


# ---------------------------------------------------------------------- per op (real and fake)
def check_forward(
    x: Any, w: Any, b: Any, stride: Any, pl: Any, pr: Any, dil: Any, groups: Any
) -> dict[str, Any]:
    tensor(x, "x")
    tensor(w, "weight")
    named = [(x, "x"), (w, "weight")]
    if b is not None:
        tensor(b, "bias")
        named.append((b, "bias"))
    dt = same_dtype(x, "x", w, "weight")
    if b is not None:
        same_dtype(x, "x", b, "bias")
    devices(named)
    info = conv_shapes(x.shape, w.shape, stride, pl, pr, dil, groups)
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise ConvValueError(
            f"bias has shape {list(b.shape)}: expected ({w.shape[0]},), one per output channel"
        )
    info["dt"] = dt
    return info


def check_backward_data(
    dy: Any, w: Any, input_size: Any, stride: Any, pl: Any, pr: Any, dil: Any, groups: Any
) -> dict[str, Any]:
    tensor(dy, "dy")
    tensor(w, "weight")
    dt = same_dtype(dy, "dy", w, "weight")
    devices([(dy, "dy"), (w, "weight")])
    size = ints(input_size, len(input_size), "input_size", 0)
    info = conv_shapes(size, w.shape, stride, pl, pr, dil, groups, x_name="input_size")
    _check_dy(dy, info["out_shape"], "input_size", size)
    info["dt"] = dt
    return info


def check_backward_weight(
    x: Any, dy: Any, weight_size: Any, stride: Any, pl: Any, pr: Any, dil: Any, groups: Any
) -> dict[str, Any]:
    tensor(x, "x")
    tensor(dy, "dy")
    dt = same_dtype(x, "x", dy, "dy")
    devices([(x, "x"), (dy, "dy")])
    size = ints(weight_size, len(weight_size), "weight_size", 0)
    info = conv_shapes(x.shape, size, stride, pl, pr, dil, groups, w_name="weight_size")
    _check_dy(dy, info["out_shape"], "weight_size", size)
    info["dt"] = dt
    return info


def _check_dy(dy: Any, expected: Sequence[int], what: str, size: Sequence[int]) -> None:
    if tuple(dy.shape) != tuple(expected):
        raise ConvValueError(
            f"dy has shape {list(dy.shape)}: the convolution's output with {what}={list(size)} "
            f"has shape {list(expected)}"
        )
