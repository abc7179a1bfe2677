"""The C API of libckgen_dispatch.so through ctypes: the problem struct, pointer and stream
arguments, and loading the library with its function signatures."""

from __future__ import annotations

import ctypes
import keyword
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ckgen.errors import CkgenError
from ckgen.model.epilogue import C_EPILOGUE_ARGS_FIELDS, C_EPILOGUE_FIELDS
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


_CTYPES: dict[str, Any] = {
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "float": ctypes.c_float,
    "const float*": ctypes.c_void_p,
    "float*": ctypes.c_void_p,
    "const void*": ctypes.c_void_p,
}


def _ctypes_field(name: str, ctype: str, count: int) -> tuple[str, Any]:
    t = _CTYPES[ctype]
    return (name + "_" if keyword.iskeyword(name) else name, t * count if count else t)


class CProblem(ctypes.Structure):
    """ckgen_problem (ckgen.model.problem.C_PROBLEM_FIELDS)."""

    _fields_ = [_ctypes_field(n, t, c) for n, t, c, _ in C_PROBLEM_FIELDS]


class CEpilogue(ctypes.Structure):
    """ckgen_epilogue (ckgen.model.epilogue.C_EPILOGUE_FIELDS)."""

    _fields_ = [_ctypes_field(n, t, c) for n, t, c in C_EPILOGUE_FIELDS]


class CEpilogueArgs(ctypes.Structure):
    """ckgen_epilogue_args (ckgen.model.epilogue.C_EPILOGUE_ARGS_FIELDS)."""

    _fields_ = [_ctypes_field(n, t, c) for n, t, c in C_EPILOGUE_ARGS_FIELDS]


# Problems seen lately -> their C struct (built once: select() and run() of a repeated problem
# pass the same struct). Keyed by the Problem's value; cleared when it grows past the cap.
_C_PROBLEMS: dict[Problem, CProblem] = {}
_C_PROBLEMS_CAP = 4096


# The same, by the Problem object's identity (the object is kept, so its id is not reused):
# hashing a Problem's value costs more than the rest of a launch from Python.
_C_PROBLEMS_BY_ID: dict[int, tuple[Problem, CProblem]] = {}


def c_problem(p: Problem) -> CProblem:
    """The C struct of p, shared by the calls on an equal problem (never modify it)."""
    hit = _C_PROBLEMS_BY_ID.get(id(p))
    if hit is not None and hit[0] is p:
        return hit[1]
    c = _C_PROBLEMS.get(p)
    if c is None:
        if len(_C_PROBLEMS) >= _C_PROBLEMS_CAP:
            _C_PROBLEMS.clear()
        c = _C_PROBLEMS[p] = _build_c_problem(p)
    if len(_C_PROBLEMS_BY_ID) >= _C_PROBLEMS_CAP:
        _C_PROBLEMS_BY_ID.clear()
    _C_PROBLEMS_BY_ID[id(p)] = (p, c)
    return c


def _build_c_problem(p: Problem) -> CProblem:
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


# The torch / numpy dtype names of each datatype word.
_DTYPE_NAMES = {
    "fp16": ("float16", "half"),
    "bf16": ("bfloat16",),
    "fp32": ("float32", "float"),
}


def _dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the elements fill one block of memory without gaps or overlap (any dim order)."""
    expect = 1
    for size, stride in sorted(
        ((n, st) for n, st in zip(shape, strides, strict=True) if n != 1), key=lambda t: t[1]
    ):
        if stride != expect:
            return False
        expect *= size
    return True


def _logical_shapes(p: Problem) -> dict[str, tuple[int, ...]]:
    """The tensors' shapes as a framework writes them channels-first (N, C, D, H, W order): a
    tensor of this shape must be channels-last in memory."""
    lo = 3 - p.ndim
    return {
        "in": (p.N, p.G * p.C, *tuple(p.input)[lo:]),
        "out": (p.N, p.G * p.K, *tuple(p.output)[lo:]),
        "wei": (p.G * p.K, p.C, *tuple(p.filter)[lo:]),
        "residual": (p.N, p.G * p.K, *tuple(p.output)[lo:]),
        "y": (p.N, p.G * p.K, *tuple(p.output)[lo:]),
    }


def tensor_arg(
    x: Any, role: str, datatype: str | None, problem: Problem | None = None
) -> tuple[int, int]:
    """(device pointer, bytes behind it or -1 when unknown) of an int, a torch tensor or an
    object with __cuda_array_interface__. A tensor on the CPU, of another dtype than the kernel's,
    not dense in memory, or shaped channels-first (N, C, ...) without channels-last memory is
    refused with CkgenRuntimeError (nothing is launched)."""
    if x is None:
        return 0, -1
    if isinstance(x, int):
        return x, -1
    if hasattr(x, "data_ptr"):
        if getattr(x, "is_cuda", True) is False:
            raise CkgenRuntimeError(
                f"{role}: a tensor on {getattr(x, 'device', 'the CPU')}; the kernels need "
                "GPU memory",
                code=3,
            )
        if datatype is not None and hasattr(x, "dtype"):
            name = str(x.dtype).rsplit(".", 1)[-1]
            if name not in _DTYPE_NAMES.get(datatype, (name,)):
                raise CkgenRuntimeError(
                    f"{role}: dtype {x.dtype}, the kernel computes in {datatype}", code=3
                )
        nbytes = -1
        if hasattr(x, "numel") and hasattr(x, "element_size"):
            nbytes = int(x.numel()) * int(x.element_size())
        if hasattr(x, "stride") and hasattr(x, "shape"):
            shape, strides = tuple(x.shape), tuple(x.stride())
            if not _dense(shape, strides):
                raise CkgenRuntimeError(
                    f"{role}: not dense in memory (shape {list(shape)}, strides {list(strides)}): "
                    "pass a contiguous / channels-last tensor",
                    code=3,
                )
            if problem is not None and role in ("in", "out", "wei", "residual", "y"):
                cf = _logical_shapes(problem)[role]
                if shape == cf and len(shape) > 2 and strides[1] != 1 and cf[1] > 1:
                    raise CkgenRuntimeError(
                        f"{role}: shape {list(shape)} is channels-first in memory (strides "
                        f"{list(strides)}); the kernels read channels-last (NHWGC / GKYXC): use "
                        ".contiguous(memory_format=torch.channels_last)",
                        code=3,
                    )
        return int(x.data_ptr()), nbytes
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai:
        return int(cai["data"][0]), -1
    raise TypeError(f"{role}: not a device pointer: {type(x).__name__}")


def tensor_device(x: Any) -> int | None:
    """The CUDA device index of a torch tensor (None for anything else)."""
    dev = getattr(x, "device", None)
    if dev is None or getattr(dev, "type", None) != "cuda":
        return None
    idx = getattr(dev, "index", None)
    return int(idx) if idx is not None else None


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
    I64P = ctypes.POINTER(ctypes.c_int64)
    # ckgen_run's (index, problem, in, wei, out, workspace, stream, k_batch); ckgen_time_run
    # takes the same, then warmup, iters and ms_out
    RUN = [ctypes.c_int, P, *[ctypes.c_void_p] * 5, ctypes.c_int]
    # both selects' (problem, variant, datatype, k_batch_out, source_out)
    SELECT = [
        P,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_char_p),
    ]
    sig = {
        "ckgen_api_version": (ctypes.c_int, []),
        "ckgen_arch": (ctypes.c_char_p, []),
        "ckgen_num_kernels": (ctypes.c_int, []),
        "ckgen_kernel_name": (ctypes.c_char_p, [ctypes.c_int]),
        "ckgen_kernel_info": (ctypes.c_char_p, [ctypes.c_int]),
        "ckgen_is_supported": (ctypes.c_char_p, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_workspace_bytes": (ctypes.c_int64, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_run": (ctypes.c_int, RUN),
        "ckgen_select": (ctypes.c_int, SELECT),
        "ckgen_select_cost_model": (ctypes.c_int, SELECT),
        "ckgen_select_fused": (
            ctypes.c_int,
            [
                P,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.POINTER(CEpilogue),
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_char_p),
            ],
        ),
        "ckgen_kernel_epilogue": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(CEpilogue)]),
        "ckgen_run_fused": (
            ctypes.c_int,
            [
                ctypes.c_int,
                P,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.POINTER(CEpilogueArgs),
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int,
            ],
        ),
        "ckgen_estimate_us": (ctypes.c_double, [ctypes.c_int, P, ctypes.c_int]),
        "ckgen_load_tuning_db": (ctypes.c_int, [ctypes.c_char_p]),
        "ckgen_set_compute_units": (None, [ctypes.c_int]),
        "ckgen_set_k_batch_candidates": (None, [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
        "ckgen_last_error": (ctypes.c_char_p, []),
        "ckgen_run_checked": (
            ctypes.c_int,
            [
                ctypes.c_int,
                P,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.c_void_p,
                ctypes.c_int,
            ],
        ),
        "ckgen_tensor_bytes": (
            ctypes.c_int,
            [P, ctypes.c_char_p, I64P, I64P, I64P],
        ),
        "ckgen_current_device": (ctypes.c_int, []),
        "ckgen_cache_epoch": (ctypes.c_int64, []),
        "ckgen_cache_clear": (None, []),
        "ckgen_cache_set_capacity": (None, [ctypes.c_int64]),
        "ckgen_cache_stats": (None, [I64P, I64P, I64P]),
        "ckgen_cache_put": (
            ctypes.c_int,
            [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_char_p],
        ),
        "ckgen_candidates": (
            ctypes.c_int,
            [
                P,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_double),
            ],
        ),
        "ckgen_stream_is_capturing": (
            ctypes.c_int,
            [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)],
        ),
        "ckgen_time_run": (
            ctypes.c_int,
            [*RUN, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_float)],
        ),
        "ckgen_device_info": (
            ctypes.c_int,
            [
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_int),
            ],
        ),
        "ckgen_device_alloc": (ctypes.c_int, [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]),
        "ckgen_device_free": (ctypes.c_int, [ctypes.c_void_p]),
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
