"""A KernelLibrary's compiled kernels (Kernel), what select() answers (Selection) and the
pairs worth timing (Candidate), with the checks every launch makes."""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ckgen.model.problem import Problem
from ckgen.runtime.capi import (
    CkgenRuntimeError,
    UnsupportedProblem,
    c_problem,
    stream_arg,
    tensor_arg,
    tensor_device,
)

if TYPE_CHECKING:
    from ckgen.runtime.library import KernelLibrary


@dataclass
class Kernel:
    """One compiled instance of a KernelLibrary."""

    registry: KernelLibrary
    index: int
    name: str
    variant: str
    datatype: str
    ndim: int
    tile: tuple[int, int, int]

    def is_supported(self, problem: Problem, k_batch: int = 0) -> str:
        """'' when the kernel can run the problem, else the reason."""
        r = self.registry._lib.ckgen_is_supported(
            self.index, ctypes.byref(c_problem(problem)), k_batch
        )
        return r.decode()

    def workspace_bytes(self, problem: Problem, k_batch: int = 0) -> int:
        n = self.registry._lib.ckgen_workspace_bytes(
            self.index, ctypes.byref(c_problem(problem)), k_batch
        )
        if n < 0:
            raise CkgenRuntimeError(self.registry._last_error())
        return int(n)

    def estimate_us(self, problem: Problem, k_batch: int = 0) -> float:
        """The cost model's estimate (host only, no GPU); UnsupportedProblem when it cannot run."""
        v = self.registry._lib.ckgen_estimate_us(
            self.index, ctypes.byref(c_problem(problem)), k_batch
        )
        if v < 0:
            raise UnsupportedProblem(self.name, self.registry._last_error())
        return float(v)

    def run(
        self,
        problem: Problem,
        in_ptr: Any,
        wei_ptr: Any,
        out_ptr: Any,
        workspace_ptr: Any = 0,
        stream: Any = 0,
        k_batch: int = 0,
    ) -> None:
        """Enqueue on stream (device pointers: ints or tensors). UnsupportedProblem carries the
        is_supported reason; other failures raise CkgenRuntimeError."""
        lib = self.registry._lib
        if type(in_ptr) is int and type(wei_ptr) is int and type(out_ptr) is int:
            # bare pointers: nothing to check on the Python side (sizes unknown: -1)
            pi, pw, po, bi, bw, bo = in_ptr, wei_ptr, out_ptr, -1, -1, -1
            pws, bws = tensor_arg(workspace_ptr, "workspace", None)
            if type(workspace_ptr) is not int and workspace_ptr is not None:
                check_devices(lib, workspace_ptr)
        else:
            pi, bi = tensor_arg(in_ptr, "in", self.datatype, problem)
            pw, bw = tensor_arg(wei_ptr, "wei", self.datatype, problem)
            po, bo = tensor_arg(out_ptr, "out", self.datatype, problem)
            pws, bws = tensor_arg(workspace_ptr, "workspace", None)
            check_devices(lib, in_ptr, wei_ptr, out_ptr, workspace_ptr)
        rc = lib.ckgen_run_checked(
            self.index,
            ctypes.byref(c_problem(problem)),
            pi,
            bi,
            pw,
            bw,
            po,
            bo,
            pws,
            bws,
            stream_arg(stream),
            k_batch,
        )
        if rc == 0:
            return
        msg = self.registry._last_error()
        if rc == 2:
            raise UnsupportedProblem(self.name, msg.split(": ", 1)[-1])
        raise CkgenRuntimeError(msg, code=rc)

    def __repr__(self) -> str:
        return f"Kernel({self.index}, {self.name!r})"


@dataclass
class Selection:
    """What KernelLibrary.select chose: the kernel, the k_batch to run it with, and why."""

    kernel: Kernel
    k_batch: int
    why: str
    autotuned: bool = field(default=False, compare=False)

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def source(self) -> str:
        return self.why.split(":", 1)[0]

    def workspace_bytes(self, problem: Problem) -> int:
        return self.kernel.workspace_bytes(problem, self.k_batch)

    def run(
        self,
        problem: Problem,
        in_ptr: Any,
        wei_ptr: Any,
        out_ptr: Any,
        workspace_ptr: Any = 0,
        stream: Any = 0,
    ) -> None:
        self.kernel.run(problem, in_ptr, wei_ptr, out_ptr, workspace_ptr, stream, self.k_batch)


@dataclass(frozen=True)
class Candidate:
    """One (kernel, k_batch) pair of KernelLibrary.candidates, with the cost model's estimate."""

    kernel: Kernel
    k_batch: int
    estimate_us: float

    @property
    def name(self) -> str:
        return self.kernel.name


def supported(kernels: Iterable[Kernel], problem: Problem, k_batch: int = 0) -> list[Kernel]:
    return [k for k in kernels if not k.is_supported(problem, k_batch)]


def check_devices(lib: Any, *xs: Any) -> None:
    """Tensors on different GPUs, or on another GPU than the current one (where the kernel
    launches), are refused."""
    devs = {d for d in (tensor_device(x) for x in xs) if d is not None}
    if not devs:
        return
    if len(devs) > 1:
        raise CkgenRuntimeError(
            f"tensors on different GPUs ({sorted(devs)}); put them on one device", code=3
        )
    cur = lib.ckgen_current_device()
    if cur >= 0 and devs != {cur}:
        raise CkgenRuntimeError(
            f"tensors on cuda:{devs.pop()} but the current device is cuda:{cur} (the kernel "
            "launches there): torch.cuda.set_device / a device guard",
            code=3,
        )
