"""The C API of libckgen_dispatch.so through ctypes: the problem struct, pointer and stream
arguments, and loading the library with its function signatures."""

from __future__ import annotations

import ctypes
import keyword
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError
from ckgen.model.problem import C_PROBLEM_FIELDS, Problem


class CkgenRuntimeError(CkgenError):
    """A call into the compiled library failed; .code is the C API's error code."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class UnsupportedProblem(CkgenRuntimeError):
    """The kernel cannot run the problem; .reason is its is_supported() answer."""

    def __init__(self, kernel: str, reason: str) -> None:
        super().__init__(f"{kernel}: {reason}", code=2)
        self.kernel = kernel
        self.reason = reason


class NoKernel(CkgenRuntimeError):
    """select() found no kernel that supports the problem; .reason says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, code=5)
        self.reason = reason


_CTYPES = {"int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64}


def _ctypes_field(name: str, ctype: str, count: int) -> tuple[str, Any]:
    t = _CTYPES[ctype]
    return (name + "_" if keyword.iskeyword(name) else name, t * count if count else t)


class CProblem(ctypes.Structure):
    """ckgen_problem (ckgen.model.problem.C_PROBLEM_FIELDS)."""

    _fields_ = [_ctypes_field(n, t, c) for n, t, c, _ in C_PROBLEM_FIELDS]


def c_problem(p: Problem) -> CProblem:
    args: list[Any] = []
    for _name, ctype, count, attr in C_PROBLEM_FIELDS:
        v: Any = getattr(p, attr) if attr else 0
        args.append((_CTYPES[ctype] * count)(*v) if count else v)
    return CProblem(*args)


def ptr_arg(x: Any) -> int:
    """A device pointer from an int, a torch tensor (data_ptr) or anything with
    __cuda_array_interface__."""
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    if hasattr(x, "data_ptr"):
        return int(x.data_ptr())
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai:
        return int(cai["data"][0])
    raise TypeError(f"not a device pointer: {type(x).__name__}")


def stream_arg(s: Any) -> int:
    if s is None:
        return 0
    if isinstance(s, int):
        return s
    for attr in ("cuda_stream", "handle"):
        if hasattr(s, attr):
            return int(getattr(s, attr))
    raise TypeError(f"not a stream: {type(s).__name__}")


def load_lib(path: Path) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as ex:
        raise CkgenRuntimeError(f"cannot load {path}: {ex}") from None
    P = ctypes.POINTER(CProblem)
    sig = {
        "ckgen_api_version": (ctypes.c_int, []),
        "ckgen_arch": (ctypes.c_char_p, []),
        "ckgen_num_kernels": (ctypes.c_int, []),
        "ckgen_kernel_name": (ctypes.c_char_p, [ctypes.c_int]),
        "ckgen_kernel_info": (ctypes.c_char_p, [ctypes.c_int]),
        "ckgen_is_supported": (ctypes.c_char_p, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_workspace_bytes": (ctypes.c_int64, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_run": (
            ctypes.c_int,
            [
                ctypes.c_int,
                P,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_int,
            ],
        ),
        "ckgen_select": (
            ctypes.c_int,
            [
                P,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_char_p),
            ],
        ),
        "ckgen_select_cost_model": (
            ctypes.c_int,
            [
                P,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_char_p),
            ],
        ),
        "ckgen_estimate_us": (ctypes.c_double, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_load_tuning_db": (ctypes.c_int, [ctypes.c_char_p]),
        "ckgen_set_compute_units": (None, [ctypes.c_int]),
        "ckgen_set_k_batch_candidates": (None, [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
        "ckgen_last_error": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sig.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise CkgenRuntimeError(
                f"{path}: missing C API function {name} (stale library?)"
            ) from None
        f.restype = res
        f.argtypes = args
    return lib
