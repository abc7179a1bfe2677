"""Host time of ckgen.torch's Python path per convolution call, measured without a GPU (a
benchmark, not a test).

A stub libckgen_dispatch.so (every C API function returns at once; compiled here with cc) stands
in for a built library, so a real KernelLibrary selects and launches through ctypes; CPU tensors
stand in for CUDA ones (the CUDA device and stream queries are replaced by constants). What is
left is the Python / PyTorch host work ckgen adds around the launch: argument handling, the
prepared-launch cache, the output allocation, autograd. Per layer it prints microseconds per
call of:

  c_launch       ckgen_run through ctypes with a prebuilt problem struct (the floor; the stub
                 returns at once, so this is the ctypes call alone)
  selection_run  Selection.run with int pointers (the public Python API)
  ckgen_eager    ckgen.torch.conv, no grad (the eager path users take)
  ckgen_op       torch.ops.ckgen.conv_forward through the dispatcher, no grad
  ckgen_train    ckgen.torch.conv forward + backward (3 launches) with autograd
  op_train       the same step through torch.ops.ckgen.conv_forward (the registered op's
                 autograd kernel, backward through the registered backward ops)
  torch_train    the same training step of a stand-in autograd op of torch's own (y = x * 1,
                 backward: two muls and a sum) for the autograd engine's own cost

and "added" = ckgen_eager - c_launch. On a GPU the CUDA launch itself (~5 us) comes on top of
c_launch, and a CUDA allocation costs a little more than a CPU one; bench/torch_overhead.py
measures there.

    python3 bench/torch_host_cpu.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

import ckgen.torch as ct
from ckgen import Registry
from ckgen.runtime.capi import c_problem
from ckgen.torch import checks, ops, registration

STUB_C = r"""
#include <stdint.h>
#include <stddef.h>
int ckgen_api_version(void) { return 1; }
const char* ckgen_arch(void) { return "sm_90a"; }
int ckgen_num_kernels(void) { return 3; }
static const char* names[3] = {"stub_fwd", "stub_bwd_data", "stub_bwd_weight"};
static const char* infos[3] = {"forward fp16 2 128 128 32 0", "backward_data fp16 2 128 128 32 0",
                               "backward_weight fp16 2 128 128 32 0"};
const char* ckgen_kernel_name(int i) { return names[i]; }
const char* ckgen_kernel_info(int i) { return infos[i]; }
const char* ckgen_is_supported(int i, void* p, int kb) { return ""; }
int64_t ckgen_workspace_bytes(int i, void* p, int kb) { return 0; }
int ckgen_run(int i, void* p, void* a, void* b, void* c, void* ws, void* s, int kb) { return 0; }
static int pick(const char* v) { return v[0] == 'f' ? 0 : (v[9] == 'd' ? 1 : 2); }
int ckgen_select(void* p, const char* v, const char* d, int* kb, const char** why) {
  *kb = 0; *why = "stub"; return pick(v); }
int ckgen_select_cost_model(void* p, const char* v, const char* d, int* kb, const char** why) {
  *kb = 0; *why = "stub"; return pick(v); }
int ckgen_select_fused(void* p, const char* v, const char* d, void* ep, int* kb,
                       const char** why) { *kb = 0; *why = "stub"; return pick(v); }
int ckgen_kernel_epilogue(int i, void* ep) { return 0; }
int ckgen_run_fused(int i, void* p, void* a, int64_t na, void* b, int64_t nb, void* c, int64_t nc,
                    void* ea, void* w, int64_t nw, void* s, int kb) { return 0; }
double ckgen_estimate_us(int i, void* p, int kb) { return 1.0; }
int ckgen_load_tuning_db(const char* f) { return 0; }
void ckgen_set_compute_units(int n) {}
void ckgen_set_k_batch_candidates(int* k, int n) {}
const char* ckgen_last_error(void) { return ""; }
int ckgen_run_checked(int i, void* p, void* a, int64_t na, void* b, int64_t nb, void* c,
                      int64_t nc, void* w, int64_t nw, void* s, int kb) { return 0; }
int ckgen_tensor_bytes(void* p, const char* d, int64_t* a, int64_t* b, int64_t* c) { return 0; }
int ckgen_current_device(void) { return -1; }
int64_t ckgen_cache_epoch(void) { return 0; }
void ckgen_cache_clear(void) {}
void ckgen_cache_set_capacity(int64_t n) {}
void ckgen_cache_stats(int64_t* a, int64_t* b, int64_t* c) { *a = *b = *c = 0; }
int ckgen_cache_put(void* p, const char* v, const char* d, int i, int kb, const char* w) {
  return 0; }
int ckgen_candidates(void* p, const char* v, const char* d, int k, int* i, int* kb, double* e) {
  return 0; }
int ckgen_stream_is_capturing(void* s, int* c) { *c = 0; return 0; }
int ckgen_time_run(int i, void* p, void* a, void* b, void* c, void* w, void* s, int kb, int wu,
                   int it, float* ms) { return 1; }
int ckgen_device_info(int d, char* n, int len, int* sm, int* drv, int* rt) { return -1; }
int ckgen_device_alloc(int64_t n, void** p) { return -1; }
int ckgen_device_free(void* p) { return 0; }
"""

LAYERS = [  # N, C, K, HW, filter, stride, pad (as bench/torch_overhead.py)
    (1, 64, 64, 8, 3, 1, 1),
    (1, 256, 64, 8, 1, 1, 0),
    (1, 128, 128, 8, 3, 2, 1),
]


def build_stub(tmp: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SystemExit("no C compiler (cc, gcc or clang) for the stub library")
    src, so = tmp / "stub.c", tmp / "libckgen_dispatch.so"
    src.write_text(STUB_C)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return so


def cpu_stands_in_for_cuda() -> None:
    """CPU tensors pass where CUDA tensors are expected; device and stream are constants."""
    checks.TRACE_DEVICES = (*checks.TRACE_DEVICES, "cpu")
    torch.cuda.current_device = lambda: 0  # type: ignore[assignment]
    for mod in (ops, registration):
        if hasattr(mod, "_get_device"):
            mod._get_device = lambda: 0  # type: ignore[attr-defined]
        if hasattr(mod, "_raw_stream"):
            mod._raw_stream = lambda i: 0  # type: ignore[attr-defined]
    if hasattr(registration, "fast"):  # the fast path's test, less its `a.is_cuda`
        plain = (torch.Tensor, torch.nn.Parameter)

        def fast(a: Any, b: Any, c: Any = None) -> bool:
            if registration._is_compiling() or registration._functorch_active():
                return False
            if registration._dispatch_modes():
                return False
            return type(a) in plain and type(b) in plain and (c is None or type(c) in plain)

        registration.fast = fast  # type: ignore[assignment]
        ct.fast = fast  # type: ignore[attr-defined]
    else:  # the code before the fast path: registration.eager, less its `t.is_cuda`

        def eager(*ts: Any) -> bool:
            if torch.compiler.is_compiling():
                return False
            return all(t is None or type(t) is torch.Tensor for t in ts)

        registration.eager = eager  # type: ignore[attr-defined]
        ct.eager = eager  # type: ignore[attr-defined]


def host_us(fn: Any, calls: int, reps: int = 7) -> float:
    for _ in range(50):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


class _Ref(torch.autograd.Function):
    """torch_train's stand-in: one output, a backward of two muls and a sum."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any) -> Any:
        ctx.save_for_backward(x, w)
        return x * 1

    @staticmethod
    def backward(ctx: Any, dy: Any) -> Any:
        x, w = ctx.saved_tensors
        return dy * 1, w * 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cpu_stands_in_for_cuda()
    with tempfile.TemporaryDirectory() as tmp:
        reg = Registry.load(build_stub(Path(tmp)))
        rows = []
        for n, c, k, hw, f, s, p in LAYERS:
            dt = torch.float16
            x = torch.randn(n, c, hw, hw, dtype=dt).contiguous(memory_format=torch.channels_last)
            w = torch.randn(k, c, f, f, dtype=dt).contiguous(memory_format=torch.channels_last)
            y = ct.conv(x, w, None, s, p, registry=reg)
            prob = ct.make_problem(x.shape, w.shape, s, p)
            sel = reg.select(prob, "forward", "fp16")
            cp = ctypes.byref(c_problem(prob))
            run = reg._lib.ckgen_run
            idx, kb = sel.kernel.index, sel.k_batch
            px, pw, py = x.data_ptr(), w.data_ptr(), y.data_ptr()
            lid = ct.library_id(reg)
            conf = ([s, s], [p, p], [p, p], [1, 1], 1, lid)
            xg = x.clone().requires_grad_()
            wg = w.clone().requires_grad_()
            dy = torch.ones_like(y)
            dx_ref = torch.ones_like(x)

            def c_launch() -> None:
                run(idx, cp, px, pw, py, 0, 0, kb)

            def selection_run() -> None:
                sel.run(prob, px, pw, py, 0, 0)

            def ckgen_eager() -> None:
                with torch.no_grad():
                    ct.conv(x, w, None, s, p, registry=reg)

            def ckgen_op() -> None:
                with torch.no_grad():
                    torch.ops.ckgen.conv_forward(x, w, None, *conf)

            def ckgen_train() -> None:
                ct.conv(xg, wg, None, s, p, registry=reg).backward(dy)

            def op_train() -> None:
                torch.ops.ckgen.conv_forward(xg, wg, None, *conf).backward(dy)

            def torch_train() -> None:
                _Ref.apply(xg, wg).backward(dx_ref)

            r: dict[str, Any] = {"layer": f"n{n}c{c}k{k}_{hw}_f{f}s{s}p{p}"}
            for name, fn in [
                ("c_launch", c_launch),
                ("selection_run", selection_run),
                ("ckgen_eager", ckgen_eager),
                ("ckgen_op", ckgen_op),
                ("ckgen_train", ckgen_train),
                ("op_train", op_train),
                ("torch_train", torch_train),
            ]:
                r[name] = host_us(fn, args.calls)
            r["added"] = r["ckgen_eager"] - r["c_launch"]
            rows.append(r)
            print(
                f"{r['layer']:22} c_launch {r['c_launch']:5.2f}  "
                f"selection_run {r['selection_run']:5.2f}  ckgen_eager {r['ckgen_eager']:5.2f}  "
                f"ckgen_op {r['ckgen_op']:6.2f}  ckgen_train {r['ckgen_train']:6.2f}  "
                f"op_train {r['op_train']:6.2f}  "
                f"torch_train {r['torch_train']:6.2f}  added {r['added']:5.2f} us",
                flush=True,
            )
    worst = max(r["added"] for r in rows)
    print(f"added host time per ckgen.torch.conv call (worst layer, CPU stand-in): {worst:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
