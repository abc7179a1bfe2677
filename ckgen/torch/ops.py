"""What the ckgen::conv_forward / conv_backward_data / conv_backward_weight ops run: the library an
op uses (a registry handed to it, else the default of the tensors' device), and the real
implementations, each a cached prepared launch per problem (the selection, the C problem struct
and the output's layout, built on the first call).

The ops are registered with torch.library (ckgen.torch.registration), so torch.compile, make_fx /
AOTAutograd and CUDA graphs see one opaque node per convolution. In eager mode the public
functions skip the dispatcher (a plain autograd.Function calls the same implementation): the
dispatcher costs more host time than the launch.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import sys
from collections.abc import Sequence
from typing import Any

import torch

from ckgen.errors import CkgenError
from ckgen.model.problem import Problem
from ckgen.runtime.capi import CkgenRuntimeError, NoKernel, UnsupportedProblem, c_problem
from ckgen.torch import checks as ck
from ckgen.torch.checks import check_backward_data, check_backward_weight, check_forward
from ckgen.torch.layout import channels_last_strides, ready
from ckgen.torch.layout import empty_channels_last as empty_channels_last
from ckgen.torch.layout import is_channels_last as is_channels_last
from ckgen.torch.layout import to_channels_last as to_channels_last

LIBRARY_ENV = "CKGEN_TORCH_LIB"
AUTOTUNE_ENV = "CKGEN_AUTOTUNE"


class NoKernelError(NoKernel, RuntimeError):
    """No kernel of the library runs this convolution (the message says why)."""


class UnsupportedProblemError(UnsupportedProblem, RuntimeError):
    """The selected kernel refused the problem at launch (its is_supported reason)."""


class LaunchError(CkgenRuntimeError, RuntimeError):
    """A kernel launch through the C API failed (the message names the kernel)."""


# ---------------------------------------------------------------------- libraries
# An op carries its library as an int: 0 = the default library of the tensors' device, resolved
# when the op runs; n > 0 = a library handed to the op by registry=... (kept alive here).
_libs: dict[int, Any] = {}
_lib_ids: dict[int, int] = {}
_defaults: dict[int | None, Any] = {}


def library_id(registry: Any) -> int:
    if registry is None:
        return 0
    lid = _lib_ids.get(id(registry))
    if lid is None:
        lid = len(_libs) + 1
        _libs[lid] = registry
        _lib_ids[id(registry)] = lid
    return lid


def _device_index(device: Any) -> int | None:
    if device is None:
        return None
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != "cuda":
        raise ck.ConvDeviceError(f"device: expected a CUDA device, got {d}")
    return d.index if d.index is not None else 0


def set_default_registry(registry: Any, device: Any = None) -> None:
    """The library the ops use when given no registry=...: for every device (device=None) or
    for one CUDA device (an index, 'cuda:1' or a torch.device)."""
    _defaults[_device_index(device)] = registry
    clear_cache()


def default_registry(device: Any = None) -> Any:
    """The default library of a device: set_default_registry's, else CKGEN_TORCH_LIB (a built
    libckgen_dispatch.so or its build directory), loaded once."""
    idx = _device_index(device)
    reg = _defaults.get(idx) if idx is not None else None
    if reg is None:
        reg = _defaults.get(None)
    if reg is None:
        lib = os.environ.get(LIBRARY_ENV)
        if not lib:
            raise CkgenError(
                "no ckgen registry: pass registry=..., call ckgen.torch.set_default_registry(), "
                f"or set {LIBRARY_ENV} to a built libckgen_dispatch.so"
            )
        from ckgen.runtime.library import KernelLibrary

        reg = _defaults[None] = KernelLibrary.load(lib)
    return reg


def _library(lid: int, dev_index: int) -> Any:
    if lid == 0:
        return default_registry(dev_index)
    try:
        return _libs[lid]
    except KeyError:
        raise ck.ConvValueError(
            f"library: no ckgen library with id {lid} in this process"
        ) from None


# ---------------------------------------------------------------------- autotune
def _env_autotune() -> bool:
    return os.environ.get(AUTOTUNE_ENV, "0").strip().lower() not in ("", "0", "false", "no", "off")


_ENV_AUTOTUNE = _env_autotune()


def autotune_enabled() -> bool:
    """ckgen.torch.benchmark, or CKGEN_AUTOTUNE=1 in the environment when ckgen.torch was
    imported."""
    pkg = sys.modules.get("ckgen.torch")
    return bool(getattr(pkg, "benchmark", False)) or _ENV_AUTOTUNE


def _select_accepts_autotune(reg: Any) -> bool:
    try:
        return "autotune" in inspect.signature(reg.select).parameters
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------- prepared launches
class Prepared:
    """Everything a launch of one (variant, shapes, dtype, device, parameters, library) needs,
    built on the first call: the selection, the C problem struct, the output's strides."""

    __slots__ = (
        "variant", "problem", "selection", "library", "fn", "index", "cref", "cstruct",
        "k_batch", "ws_bytes", "out_shape", "out_strides", "dev_index", "empty", "bias_view",
    )  # fmt: skip
    variant: str
    problem: Problem
    selection: Any
    library: Any
    fn: Any
    index: int
    cref: Any
    cstruct: Any
    k_batch: int
    ws_bytes: int
    out_shape: tuple[int, ...]
    out_strides: tuple[int, ...]
    dev_index: int
    empty: bool
    bias_view: tuple[int, ...]

    def __repr__(self) -> str:
        return (
            f"Prepared({self.variant}, {self.selection.name if self.selection else None}, "
            f"k_batch={self.k_batch}, out={list(self.out_shape)})"
        )


_cache: dict[tuple, Prepared] = {}


def clear_cache() -> None:
    """Forget every prepared launch (the next call of each problem selects again)."""
    _cache.clear()


def cache_info() -> dict[tuple, Prepared]:
    """The prepared launches, by key (a copy)."""
    return dict(_cache)


def _problem(info: dict[str, Any], x_shape: Sequence[int], w_shape: Sequence[int]) -> Problem:
    return Problem.make(
        G=info["G"],
        N=max(int(info["N"]), 1),
        C=info["C"],
        K=info["K"],
        input=[int(s) for s in x_shape[2:]],
        filter=[int(s) for s in w_shape[2:]],
        stride=info["stride"],
        dilation=info["dilation"],
        pad_l=info["pad_l"],
        pad_r=info["pad_r"],
    )


def _prepare(
    key: tuple,
    variant: str,
    info: dict[str, Any],
    x_shape: Sequence[int],
    w_shape: Sequence[int],
    out_shape: Sequence[int],
    device: Any,
    lid: int,
    autotune: bool,
) -> Prepared:
    pr = Prepared()
    pr.variant = variant
    pr.dev_index = device.index if device.index is not None else torch.cuda.current_device()
    pr.out_shape = tuple(int(s) for s in out_shape)
    pr.out_strides = channels_last_strides(pr.out_shape)
    pr.bias_view = (1, -1) + (1,) * info["nd"]
    pr.empty = int(info["N"]) == 0
    p = pr.problem = _problem(info, x_shape, w_shape)
    pr.selection = pr.library = pr.fn = pr.cstruct = pr.cref = None
    pr.index = pr.k_batch = pr.ws_bytes = 0
    if pr.empty:  # nothing to launch
        _cache[key] = pr
        return pr
    reg = pr.library = _library(lid, pr.dev_index)
    kwargs = {"autotune": autotune} if autotune and _select_accepts_autotune(reg) else {}
    try:
        sel = reg.select(p, variant, info["dt"], **kwargs)
    except NoKernel as ex:
        raise NoKernelError(
            f"ckgen::conv_{variant}: no {info['dt']} kernel of {reg} runs "
            f"{_describe(info, x_shape, w_shape)}: {ex.reason}"
        ) from None
    pr.selection = sel
    pr.k_batch = int(sel.k_batch)
    pr.ws_bytes = int(sel.workspace_bytes(p))
    # the C entry point directly, with a struct built once; the Selection's own run() otherwise
    clib = getattr(reg, "_lib", None)
    fn = getattr(clib, "ckgen_run", None)
    kernel = getattr(sel, "kernel", None)
    if fn is not None and len(getattr(fn, "argtypes", None) or ()) == 8 and kernel is not None:
        pr.fn = fn
        pr.index = int(kernel.index)
        pr.cstruct = c_problem(p)
        pr.cref = ctypes.byref(pr.cstruct)
    capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
    if not (autotune and capturing):  # a pick made while capturing is not the tuned one
        _cache[key] = pr
    return pr


def _describe(info: dict[str, Any], x_shape: Sequence[int], w_shape: Sequence[int]) -> str:
    return (
        f"input {list(x_shape)} weight {list(w_shape)} stride {list(info['stride'])} "
        f"padding {list(info['pad_l'])}/{list(info['pad_r'])} dilation {list(info['dilation'])} "
        f"groups {info['G']}"
    )


_get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(dev_index: int) -> int:
    if _raw_stream is not None:
        return int(_raw_stream(dev_index))
    return int(torch.cuda.current_stream(dev_index).cuda_stream)


def _launch(pr: Prepared, a: Any, b: Any, c: Any) -> None:
    """ckgen_run(in=a, wei=b, out=c) on the current stream of the tensors' device."""
    pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
    ws = torch.empty(pr.ws_bytes, dtype=torch.uint8, device=a.device) if pr.ws_bytes else None
    pws = ws.data_ptr() if ws is not None else 0
    if _get_device() != pr.dev_index:
        with torch.cuda.device(pr.dev_index):
            _run(pr, pa, pb, pc, pws)
    else:
        _run(pr, pa, pb, pc, pws)


def _run(pr: Prepared, pa: int, pb: int, pc: int, pws: int) -> None:
    stream = _stream(pr.dev_index)
    if pr.fn is None:
        try:
            pr.selection.run(pr.problem, pa, pb, pc, pws, stream)
        except UnsupportedProblem as ex:
            raise UnsupportedProblemError(ex.kernel, ex.reason) from None
        except CkgenRuntimeError as ex:
            raise LaunchError(f"ckgen::conv_{pr.variant}: {ex}", code=ex.code) from None
        return
    rc = pr.fn(pr.index, pr.cref, pa, pb, pc, pws, stream, pr.k_batch)
    if rc:
        last = getattr(pr.library, "_last_error", None)
        msg = last() if last is not None else ""
        if rc == 2:
            raise UnsupportedProblemError(pr.selection.name, msg.split(": ", 1)[-1])
        raise LaunchError(f"ckgen::conv_{pr.variant}: {msg or f'error {rc}'}", code=rc)


def _key(
    tag: str,
    lid: int,
    a: Any,
    b: Any,
    extra: Any,
    stride: Sequence[int],
    pl: Sequence[int],
    pr_: Sequence[int],
    dil: Sequence[int],
    groups: int,
    autotune: bool,
) -> tuple:
    """A prepared launch's cache key: the op (tag), the library, both tensors' shapes, dtypes and
    devices, what else fixes the problem (extra: the bias, or the size of the gradient), the
    parameters and whether the pick is autotuned."""
    return (
        tag,
        lid,
        a.shape,
        b.shape,
        a.dtype,
        b.dtype,
        a.device,
        b.device,
        extra,
        tuple(stride),
        tuple(pl),
        tuple(pr_),
        tuple(dil),
        groups,
        autotune,
    )


def forward_impl(
    x: Any,
    w: Any,
    b: Any,
    stride: Sequence[int],
    pl: Sequence[int],
    pr_: Sequence[int],
    dil: Sequence[int],
    groups: int,
    lid: int,
) -> Any:
    autotune = autotune_enabled()
    key = _key(
        "f",
        lid,
        x,
        w,
        None if b is None else (b.shape, b.dtype, b.device),
        stride,
        pl,
        pr_,
        dil,
        groups,
        autotune,
    )
    prep = _cache.get(key)
    if prep is None:
        info = check_forward(x, w, b, stride, pl, pr_, dil, groups)
        prep = _prepare(
            key, "forward", info, x.shape, w.shape, info["out_shape"], x.device, lid, autotune
        )
    y = torch.empty_strided(prep.out_shape, prep.out_strides, dtype=x.dtype, device=x.device)
    if prep.empty:
        return y
    _launch(prep, ready(x), ready(w), y)
    if b is not None:
        y.add_(b.view(prep.bias_view))
    return y


def backward_data_impl(
    dy: Any,
    w: Any,
    input_size: Sequence[int],
    stride: Sequence[int],
    pl: Sequence[int],
    pr_: Sequence[int],
    dil: Sequence[int],
    groups: int,
    lid: int,
) -> Any:
    autotune = autotune_enabled()
    key = _key("d", lid, dy, w, tuple(input_size), stride, pl, pr_, dil, groups, autotune)
    prep = _cache.get(key)
    if prep is None:
        info = check_backward_data(dy, w, input_size, stride, pl, pr_, dil, groups)
        prep = _prepare(
            key, "backward_data", info, input_size, w.shape, input_size, dy.device, lid, autotune
        )
    dx = torch.empty_strided(prep.out_shape, prep.out_strides, dtype=dy.dtype, device=dy.device)
    if prep.empty:
        return dx
    _launch(prep, dx, ready(w), ready(dy))
    return dx


def backward_weight_impl(
    x: Any,
    dy: Any,
    weight_size: Sequence[int],
    stride: Sequence[int],
    pl: Sequence[int],
    pr_: Sequence[int],
    dil: Sequence[int],
    groups: int,
    lid: int,
) -> Any:
    autotune = autotune_enabled()
    key = _key("w", lid, x, dy, tuple(weight_size), stride, pl, pr_, dil, groups, autotune)
    prep = _cache.get(key)
    if prep is None:
        info = check_backward_weight(x, dy, weight_size, stride, pl, pr_, dil, groups)
        prep = _prepare(
            key, "backward_weight", info, x.shape, weight_size, weight_size, x.device, lid, autotune
        )
    if prep.empty:  # no samples: a zero gradient
        return torch.zeros(prep.out_shape, dtype=x.dtype, device=x.device).as_strided(
            prep.out_shape, prep.out_strides
        )
    dw = torch.empty_strided(prep.out_shape, prep.out_strides, dtype=x.dtype, device=x.device)
    _launch(prep, ready(x), dw, ready(dy))
    return dw
