"""ckgen.torch's native eager path: the convolution's autograd node and its launches in C++
(native_conv.cpp, compiled with torch.utils.cpp_extension on first use, once per PyTorch version
and source, under the ckgen cache directory).

The Python eager path pays an autograd.Function in Python per convolution and a call back into
Python (with the GIL) in the backward pass; the registered ops (what compiled graphs call) cross
into Python for their Autograd kernel and pay the Python implementation on top. The native path
builds a launch's key from the tensors' sizes, finds the prepared launch (made once per
signature by ops._prepared: checks and selection stay in Python) and calls ckgen_run, forward
and backward, without Python. Loading it also registers the ops' CUDA and AutogradCUDA kernels
in C++, so that a compiled graph's call runs no Python either (the ops' first CUDA call, in the
Python kernels, loads it).

CKGEN_TORCH_NATIVE=0 turns it off (the Python path serves every call); a build that fails warns
once and leaves the Python path in place.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

from ckgen.runtime.jit import cache_root
from ckgen.torch import ops

ENV = "CKGEN_TORCH_NATIVE"
SOURCE = Path(__file__).with_name("native_conv.cpp")
VARIANTS = ("forward", "backward_data", "backward_weight")  # native_conv.cpp's Variant codes

_mod: Any = None
_tried = False
_confs: dict[tuple, int] = {}
_conf_list: list[tuple] = []


def enabled() -> bool:
    """False when CKGEN_TORCH_NATIVE is 0 / false / no / off."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def module() -> Any:
    """The compiled extension, built on the first call; None where it is turned off or did not
    build (the warning says why)."""
    global _mod, _tried
    if _tried:
        return _mod
    _tried = True
    if not enabled():
        return None
    try:
        mod = build()
    except Exception as ex:  # a missing compiler, CUDA headers, ...: the Python path stays
        warnings.warn(
            f"ckgen.torch: the native eager path did not build ({str(ex)[:300]}); convolutions "
            f"take the Python path ({ENV}=0 skips the attempt)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    from ckgen.torch import registration

    mod.set_miss(_miss)
    mod.set_python(ops.autotune_enabled, registration.grad_forward, registration.grad_backward)
    _mod = mod
    return mod


def build(verbose: bool = False) -> Any:
    """Compile (or load the compiled) native_conv.cpp for this PyTorch; returns the module."""
    from torch.utils import cpp_extension

    tag = hashlib.sha256(SOURCE.read_bytes() + torch.__version__.encode()).hexdigest()[:16]
    name = f"ckgen_native_{tag}"
    out = cache_root() / "torch_native" / tag
    out.mkdir(parents=True, exist_ok=True)
    if not any(out.glob(f"{name}*.so")):
        print(
            f"ckgen.torch: compiling the native eager path into {out} (once per PyTorch "
            f"version; {ENV}=0 skips it)",
            file=sys.stderr,
            flush=True,
        )
    # only C++ sources: the device architectures do not matter, but torch asks a GPU for them
    arch_env = "TORCH_CUDA_ARCH_LIST"
    saved = os.environ.get(arch_env)
    if saved is None and not torch.cuda.is_available():
        os.environ[arch_env] = "9.0"
    try:
        return cpp_extension.load(
            name=name,
            sources=[str(SOURCE)],
            build_directory=str(out),
            extra_cflags=["-O2"],
            with_cuda=True,
            verbose=verbose,
        )
    finally:
        if saved is None:
            os.environ.pop(arch_env, None)


def conf_id(conf: tuple) -> int:
    """The id of a conf tuple (stride, padding_left, padding_right, dilation, groups, library):
    part of the native cache's key, and how a miss finds the tuple again."""
    i = _confs.get(conf)
    if i is None:
        i = _confs[conf] = len(_conf_list)
        _conf_list.append(conf)
    return i


def clear() -> None:
    """Forget the native path's prepared launches (ops.clear_cache calls it)."""
    if _mod is not None:
        _mod.clear()


def _conf_from_values(values: list[int]) -> tuple:
    """The conf tuple of native_conv.cpp's op_conf values: (n, stride...) (n, padding_left...)
    (n, padding_right...) (n, dilation...) groups library."""
    out: list[Any] = []
    i = 0
    for _ in range(4):
        n = values[i]
        out.append(tuple(values[i + 1 : i + 1 + n]))
        i += 1 + n
    return (*out, values[i], values[i + 1])


def _miss(
    variant: int, a: Any, b: Any, c: Any, cid: int, values: list[int], autotune: bool
) -> tuple:
    """A signature's first call from C++: ops' checks and selection, as the tuple native_conv.cpp
    reads (run, last_error, index, k_batch, ws_bytes, problem bytes, out shape, out strides,
    empty, device index, kernel name, cacheable). cid < 0: the registered op's parameter
    values."""
    name = VARIANTS[variant]
    conf = _conf_list[cid] if cid >= 0 else _conf_from_values(values)
    if variant == 0:
        extra = None if c is None else (c.shape, c.dtype, c.device)
    else:
        c = tuple(c)
        extra = c
    pr, cached = ops.prepared_entry(name, a, b, c, extra, conf, autotune)
    run = err = 0
    if not pr.empty:
        if pr.fn is None:
            raise ops.LaunchError(
                f"ckgen::conv_{name}: the native path needs the library's ckgen_run; "
                f"set {ENV}=0 for this library"
            )
        run = ctypes.cast(pr.fn, ctypes.c_void_p).value or 0
        err = ctypes.cast(pr.library._lib.ckgen_last_error, ctypes.c_void_p).value or 0
    return (
        run,
        err,
        pr.index,
        pr.k_batch,
        pr.ws_bytes,
        bytes(pr.cstruct) if pr.cstruct is not None else b"",
        list(pr.out_shape),
        list(pr.out_strides),
        pr.empty,
        pr.dev_index,
        pr.selection.name if pr.selection is not None else "",
        cached,
    )
