"""A KernelLibrary's compiled kernels (Kernel), what select() answers (Selection) and the
pairs worth timing (Candidate), with the checks every launch makes."""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ckgen.model.epilogue import PLAIN, Epilogue
from ckgen.model.problem import Problem
from ckgen.runtime.capi import (
    CEpilogueArgs,
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
    epilogue: Epilogue = PLAIN

    @property
    def out_datatype(self) -> str:
        """The datatype of y: a forward's output is written in its fused conversion's datatype
        when it converts; dy of the backward variants is in the inputs' datatype."""
        if self.variant != "forward":
            return self.datatype
        return self.epilogue.output_datatype(self.datatype).value

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
        *,
        bias: Any = None,
        scale: Any = None,
        residual: Any = None,
        beta: float = 1.0,
        alpha: float = 0.01,
        y: Any = None,
        db: Any = None,
        stats: Any = None,
    ) -> None:
        """Enqueue on stream (device pointers: ints or tensors). UnsupportedProblem carries the
        is_supported reason; other failures raise CkgenRuntimeError.

        A fused kernel (self.epilogue) takes its operands: bias and scale (G*K fp32), residual
        (the output's shape, layout and dtype), beta (the residual's scale) and alpha
        (leaky_relu's and dleaky_relu's slope); a backward gradient mask y (the saved forward
        output: dy's shape, layout and dtype) and bias_grad db (G*K fp32, overwritten with the
        bias gradient); a forward with stats writes stats (2*G*K fp32: the sums of the output
        per channel, then the sums of its squares); the operands its operations do not read
        must be None."""
        operands = (bias, scale, residual, y, db, stats)
        if self.epilogue.fused or any(o is not None for o in operands):
            self._run_fused(
                problem,
                (in_ptr, wei_ptr, out_ptr, workspace_ptr),
                stream,
                k_batch,
                operands,
                beta,
                alpha,
            )
            return
        lib = self.registry._lib
        if type(in_ptr) is int and type(wei_ptr) is int and type(out_ptr) is int:
            # bare pointers: nothing to check on the Python side (sizes unknown: -1)
            pi, pw, po, bi, bw, bo = in_ptr, wei_ptr, out_ptr, -1, -1, -1
            pws, bws = tensor_arg(workspace_ptr, "workspace", None)
            if type(workspace_ptr) is not int and workspace_ptr is not None:
                check_devices(lib, workspace_ptr)
        else:
            pi, bi, pw, bw, po, bo, pws, bws = self._tensor_args(
                problem, in_ptr, wei_ptr, out_ptr, workspace_ptr
            )
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
        if rc != 0:
            self._raise(rc)

    def _tensor_args(self, problem: Problem, x: Any, w: Any, y: Any, ws: Any) -> tuple[Any, ...]:
        """(pointer, bytes) of input, weight, output and workspace, each checked (tensor_arg)."""
        pi, bi = tensor_arg(x, "in", self.datatype, problem)
        pw, bw = tensor_arg(w, "wei", self.datatype, problem)
        po, bo = tensor_arg(y, "out", self.out_datatype, problem)
        pws, bws = tensor_arg(ws, "workspace", None)
        return pi, bi, pw, bw, po, bo, pws, bws

    def _raise(self, rc: int) -> None:
        msg = self.registry._last_error()
        if rc == 2:
            raise UnsupportedProblem(self.name, msg.split(": ", 1)[-1])
        raise CkgenRuntimeError(msg, code=rc)

    def _run_fused(
        self,
        problem: Problem,
        tensors: tuple[Any, Any, Any, Any],
        stream: Any,
        k_batch: int,
        operands: tuple[Any, Any, Any, Any, Any, Any],
        beta: float,
        alpha: float,
    ) -> None:
        lib = self.registry._lib
        x, w, out, ws = tensors
        bias, scale, residual, saved, db, stats = operands
        pi, bi, pw, bw, po, bo, pws, bws = self._tensor_args(problem, x, w, out, ws)
        gk = problem.G * problem.K
        pb = _vector_arg(bias, "bias", gk)
        ps = _vector_arg(scale, "scale", gk)
        pd = _vector_arg(db, "db", gk)
        pst = _vector_arg(stats, "stats", 2 * gk)
        pr, br = tensor_arg(residual, "residual", self.out_datatype, problem)
        if br >= 0 and bo >= 0 and br != bo:
            raise CkgenRuntimeError(f"residual: {br} bytes, the output has {bo}", code=3)
        py, by = tensor_arg(saved, "y", self.datatype, problem)
        if by >= 0 and bo >= 0 and by != bo:
            raise CkgenRuntimeError(f"y: {by} bytes, dy has {bo}", code=3)
        check_devices(lib, x, w, out, ws, *operands)
        args = CEpilogueArgs(
            pb or None,
            ps or None,
            pr or None,
            float(beta),
            float(alpha),
            py or None,
            pd or None,
            pst or None,
        )
        rc = lib.ckgen_run_fused(
            self.index,
            ctypes.byref(c_problem(problem)),
            pi,
            bi,
            pw,
            bw,
            po,
            bo,
            ctypes.byref(args),
            pws,
            bws,
            stream_arg(stream),
            k_batch,
        )
        if rc != 0:
            self._raise(rc)

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
    def epilogue(self) -> Epilogue:
        return self.kernel.epilogue

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
        **epilogue: Any,
    ) -> None:
        """Kernel.run with the selection's k_batch; a fused selection takes the epilogue's
        operands as keywords (bias, scale, residual, beta, alpha, stats; backward: y, db)."""
        self.kernel.run(
            problem, in_ptr, wei_ptr, out_ptr, workspace_ptr, stream, self.k_batch, **epilogue
        )


@dataclass(frozen=True)
class Candidate:
    """One (kernel, k_batch) pair of KernelLibrary.candidates, with the cost model's estimate."""

    kernel: Kernel
    k_batch: int
    estimate_us: float

    @property
    def name(self) -> str:
        return self.kernel.name


def _vector_arg(x: Any, role: str, elems: int) -> int:
    """The pointer of a per-channel fp32 vector of `elems` values (0 for None)."""
    ptr, nbytes = tensor_arg(x, role, "fp32")
    if nbytes >= 0 and nbytes != 4 * elems:
        raise CkgenRuntimeError(
            f"{role}: {nbytes // 4} fp32 values, the problem needs "
            f"{'2*G*K' if role == 'stats' else 'G*K'} = {elems}",
            code=3,
        )
    return ptr


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
