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
    libckgen_dispatch.so or its build directory), loaded once; that one selects with the tuning
    database shipped for this GPU (configs/tuning) unless CKGEN_TUNING_DB names another."""
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
        if not os.environ.get("CKGEN_TUNING_DB"):
            reg.load_shipped_tuning_db(quiet=True)
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
    """Everything a launch of one signature needs, built on its first call (after the argument
    checks): the selection, the C problem struct, the output's shape, strides, dtype and device,
    and the memory format the inputs are read in. Later calls with the same signature reuse it:
    only the data pointers and the stream change."""

    __slots__ = (
        "variant", "problem", "selection", "library", "fn", "index", "cref", "cstruct",
        "k_batch", "ws_bytes", "out_shape", "out_strides", "dev_index", "empty", "bias_view",
        "dtype", "device", "fmt",
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
    dtype: Any
    device: Any
    fmt: Any  # torch.channels_last(_3d); None for 1D (layout.ready checks those)

    def __repr__(self) -> str:
        return (
            f"Prepared({self.variant}, {self.selection.name if self.selection else None}, "
            f"k_batch={self.k_batch}, out={list(self.out_shape)})"
        )


_cache: dict[tuple, Prepared] = {}


def clear_cache() -> None:
    """Forget every prepared launch (the next call of each problem checks and selects again),
    the native path's too, and fused_grad's choices of the plain kernel and a sum."""
    _cache.clear()
    native = sys.modules.get("ckgen.torch.native")
    if native is not None:
        native.clear()
    fused_grad = sys.modules.get("ckgen.torch.fused_grad")
    if fused_grad is not None:
        fused_grad._no_bias_grad.clear()


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


_FORMATS = {4: torch.channels_last, 5: torch.channels_last_3d}


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
    dtype: Any = None,
    fusion: Any = None,
) -> Prepared:
    """A new cache entry; fusion (an Epilogue, forward): select a kernel fusing exactly those
    operations (the cost model's pick, never autotuned), launched through its run()."""
    pr = Prepared()
    pr.variant = variant
    pr.dev_index = device.index if device.index is not None else torch.cuda.current_device()
    pr.dtype, pr.device = dtype, device
    pr.out_shape = tuple(int(s) for s in out_shape)
    pr.out_strides = channels_last_strides(pr.out_shape)
    pr.fmt = _FORMATS.get(len(pr.out_shape))
    pr.bias_view = (1, -1) + (1,) * info["nd"]
    pr.empty = int(info["N"]) == 0
    p = pr.problem = _problem(info, x_shape, w_shape)
    pr.selection = pr.library = pr.fn = pr.cstruct = pr.cref = None
    pr.index = pr.k_batch = pr.ws_bytes = 0
    if pr.empty:  # nothing to launch
        _cache[key] = pr
        return pr
    reg = pr.library = _library(lid, pr.dev_index)
    kwargs: dict[str, Any] = {}
    if fusion is not None:
        kwargs["fusion"] = fusion
    elif autotune and _select_accepts_autotune(reg):
        kwargs["autotune"] = autotune
    try:
        sel = reg.select(p, variant, info["dt"], **kwargs)
    except NoKernel as ex:
        what = f"{info['dt']} {fusion}" if fusion is not None else info["dt"]
        raise NoKernelError(
            f"ckgen::conv_{variant}: no {what} kernel of {reg} runs "
            f"{_describe(info, x_shape, w_shape)}: {ex.reason}"
        ) from None
    pr.selection = sel
    pr.k_batch = int(sel.k_batch)
    pr.ws_bytes = int(sel.workspace_bytes(p))
    # the C entry point directly, with a struct built once; the Selection's own run() otherwise
    clib = getattr(reg, "_lib", None)
    fn = getattr(clib, "ckgen_run", None)
    kernel = getattr(sel, "kernel", None)
    plain = fusion is None and fn is not None and len(getattr(fn, "argtypes", None) or ()) == 8
    if plain and kernel is not None:
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


def _miss_forward(key: tuple, x: Any, w: Any, b: Any, conf: tuple, autotune: bool) -> Prepared:
    info = check_forward(x, w, b, *conf[:5])
    return _prepare(
        key, "forward", info, x.shape, w.shape, info["out_shape"], x.device, conf[5], autotune,
        x.dtype,
    )  # fmt: skip


def _miss_backward_data(
    key: tuple, dy: Any, w: Any, size: Sequence[int], conf: tuple, autotune: bool
) -> Prepared:
    info = check_backward_data(dy, w, size, *conf[:5])
    return _prepare(
        key, "backward_data", info, size, w.shape, size, dy.device, conf[5], autotune, dy.dtype
    )


def _miss_backward_weight(
    key: tuple, x: Any, dy: Any, size: Sequence[int], conf: tuple, autotune: bool
) -> Prepared:
    info = check_backward_weight(x, dy, size, *conf[:5])
    return _prepare(
        key, "backward_weight", info, x.shape, size, size, x.device, conf[5], autotune, x.dtype
    )


_MISS = {
    "forward": _miss_forward,
    "backward_data": _miss_backward_data,
    "backward_weight": _miss_backward_weight,
}


def _prepared(variant: str, a: Any, b: Any, c: Any, extra: Any, conf: tuple) -> Prepared:
    """The prepared launch of the op `variant` on the tensors a, b it reads and c (the bias, or
    the gradient's size; extra: what of it fixes the problem) with conf = (stride, padding_left,
    padding_right, dilation, groups, library): the cache's when this signature ran before, else
    the argument checks (which raise the ops' errors), the selection and a new entry.

    The key holds everything the checks and the selection depend on: the op, both tensors'
    shapes, dtypes and devices, extra, the parameters, the library and whether the pick is
    autotuned. What may change between calls with one key (the data pointers, the inputs'
    memory layout and alignment, the stream) is handled per call."""
    return prepared_entry(variant, a, b, c, extra, conf, autotune_enabled())[0]


def prepared_entry(
    variant: str, a: Any, b: Any, c: Any, extra: Any, conf: tuple, autotune: bool
) -> tuple[Prepared, bool]:
    """_prepared with the autotune flag given, and whether the launch is cached (not when it is
    an autotuned pick made while a CUDA graph captures)."""
    key = (variant, a.shape, b.shape, a.dtype, b.dtype, a.device, b.device, extra, conf, autotune)
    pr = _cache.get(key)
    if pr is None:
        pr = _MISS[variant](key, a, b, c, conf, autotune)
        return pr, _cache.get(key) is pr
    return pr, True


def conf_of(
    stride: Sequence[int],
    pl: Sequence[int],
    pr_: Sequence[int],
    dil: Sequence[int],
    groups: int,
    lid: int,
) -> tuple:
    """The registered ops' parameters (lists) as the hashable conf tuple of _prepared."""
    return (tuple(stride), tuple(pl), tuple(pr_), tuple(dil), groups, lid)


# ---------------------------------------------------------------------- launches
_get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(dev_index: int) -> int:
    if _raw_stream is not None:
        return int(_raw_stream(dev_index))
    return int(torch.cuda.current_stream(dev_index).cuda_stream)


def _input(t: Any, fmt: Any) -> tuple[Any, int]:
    """(t as a kernel reads it, its data pointer): t itself when it is dense channels-last and
    16-byte aligned, else a copy (layout.ready)."""
    if fmt is not None and t.is_contiguous(memory_format=fmt):
        p = t.data_ptr()
        if not p & 15:
            return t, p
    t = ready(t)
    return t, t.data_ptr()


def _launch(pr: Prepared, pa: int, pb: int, pc: int) -> None:
    """ckgen_run(in=pa, wei=pb, out=pc) on the current stream of the prepared device."""
    ws = torch.empty(pr.ws_bytes, dtype=torch.uint8, device=pr.device) if pr.ws_bytes else None
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


# ---------------------------------------------------------------------- implementations
# forward / backward_data / backward_weight take conf = (stride, padding_left, padding_right,
# dilation, groups, library) as tuples (the eager path calls them directly); the *_impl
# functions are what the registered ops run (their parameters arrive as lists).
def forward(x: Any, w: Any, b: Any, conf: tuple) -> Any:
    pr = _prepared("forward", x, w, b, None if b is None else (b.shape, b.dtype, b.device), conf)
    y = torch.empty_strided(pr.out_shape, pr.out_strides, dtype=pr.dtype, device=pr.device)
    if pr.empty:
        return y
    x, px = _input(x, pr.fmt)
    w, pw = _input(w, pr.fmt)
    _launch(pr, px, pw, y.data_ptr())
    if b is not None:
        y.add_(b.view(pr.bias_view))
    return y


def backward_data(dy: Any, w: Any, input_size: Sequence[int], conf: tuple) -> Any:
    pr = _prepared("backward_data", dy, w, input_size, tuple(input_size), conf)
    dx = torch.empty_strided(pr.out_shape, pr.out_strides, dtype=pr.dtype, device=pr.device)
    if pr.empty:
        return dx
    dy, pdy = _input(dy, pr.fmt)
    w, pw = _input(w, pr.fmt)
    _launch(pr, dx.data_ptr(), pw, pdy)
    return dx


def backward_weight(x: Any, dy: Any, weight_size: Sequence[int], conf: tuple) -> Any:
    pr = _prepared("backward_weight", x, dy, weight_size, tuple(weight_size), conf)
    if pr.empty:  # no samples: a zero gradient
        return torch.zeros(pr.out_shape, dtype=pr.dtype, device=pr.device).as_strided(
            pr.out_shape, pr.out_strides
        )
    dw = torch.empty_strided(pr.out_shape, pr.out_strides, dtype=pr.dtype, device=pr.device)
    x, px = _input(x, pr.fmt)
    dy, pdy = _input(dy, pr.fmt)
    _launch(pr, px, dw.data_ptr(), pdy)
    return dw


def _op_impl(fn: Any, name: str) -> Any:
    """The registered op's implementation of fn (forward, backward_data or backward_weight): its
    parameters as the op's schema passes them, conf made of the lists."""

    def impl(
        a: Any,
        b: Any,
        c: Any,
        stride: Sequence[int],
        pl: Sequence[int],
        pr_: Sequence[int],
        dil: Sequence[int],
        groups: int,
        lid: int,
    ) -> Any:
        return fn(a, b, c, conf_of(stride, pl, pr_, dil, groups, lid))

    impl.__name__ = impl.__qualname__ = name
    return impl


forward_impl = _op_impl(forward, "forward_impl")
backward_data_impl = _op_impl(backward_data, "backward_data_impl")
backward_weight_impl = _op_impl(backward_weight, "backward_weight_impl")
