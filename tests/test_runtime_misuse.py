"""Run-time misuse gets a clear error, never a crash or a silent wrong result: the Python checks
of tensors (pure Python), the C API's refusals before any launch (a built library; no GPU
needed: nothing launches), and on a GPU launch errors named by kernel and select() / run() from
8 threads on 4 streams."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import pytest
from test_select_cache import build_tiny

from ckgen.model.problem import Problem
from ckgen.runtime.capi import CkgenRuntimeError, tensor_arg

from conftest import have

P = Problem.make(N=8, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
V1 = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_basic_v1x1x1"
V8 = "grouped_conv_fwd_fp16_2d_t64x64x32_w2x2x1_wt16x8x16_ms3_v8x8x8"


# ------------------------------------------------------------------ pure Python: tensor checks
class _Dev:
    def __init__(self, kind: str, index: int | None) -> None:
        self.type, self.index = kind, index

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"


class FakeTensor:
    """The attributes of a torch tensor the checks read."""

    def __init__(self, shape, strides=None, dtype="torch.float16", cuda=True, index=0, ptr=4096):
        self.shape = tuple(shape)
        if strides is None:
            strides, acc = [], 1
            for n in reversed(self.shape):
                strides.insert(0, acc)
                acc *= n
        self._strides = tuple(strides)
        self.dtype = dtype
        self.is_cuda = cuda
        self.device = _Dev("cuda" if cuda else "cpu", index if cuda else None)
        self._ptr = ptr

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._strides

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def element_size(self) -> int:
        return 4 if "32" in self.dtype else 2


def test_tensor_checks_accept_channels_last() -> None:
    x = FakeTensor((8, 56, 56, 64))  # NHWC contiguous
    assert tensor_arg(x, "in", "fp16", P) == (4096, 8 * 56 * 56 * 64 * 2)
    # NCHW-shaped, channels-last memory (torch.channels_last)
    cl = FakeTensor((8, 64, 56, 56), strides=(56 * 56 * 64, 1, 56 * 64, 64))
    assert tensor_arg(cl, "in", "fp16", P)[1] == 8 * 56 * 56 * 64 * 2
    assert tensor_arg(None, "workspace", None) == (0, -1)
    assert tensor_arg(1234, "in", "fp16", P) == (1234, -1)


@pytest.mark.parametrize(
    "tensor, role, match",
    [
        (FakeTensor((8, 56, 56, 64), cuda=False), "in", "the kernels need GPU memory"),
        (FakeTensor((8, 56, 56, 64), dtype="torch.float32"), "in", "dtype torch.float32"),
        (FakeTensor((8, 56, 56, 64), dtype="torch.bfloat16"), "out", "computes in fp16"),
        (FakeTensor((8, 64, 56, 56)), "in", "channels-first in memory"),
        (FakeTensor((64, 64, 3, 3)), "wei", "channels-first in memory"),
        (
            FakeTensor((8, 56, 56, 64), strides=(56 * 56 * 128, 56 * 128, 128, 1)),
            "in",
            "not dense in memory",
        ),
        (FakeTensor((8, 56, 56, 64), strides=(0, 0, 0, 1)), "in", "not dense"),
    ],
)
def test_tensor_checks_refuse(tensor, role, match) -> None:
    with pytest.raises(CkgenRuntimeError, match=match):
        tensor_arg(tensor, role, "fp16", P)


def test_not_a_pointer() -> None:
    with pytest.raises(TypeError, match="not a device pointer"):
        tensor_arg("0x1000", "in", "fp16", P)


# ------------------------------------------------------------------ a built library, no launch
needs_build = pytest.mark.skipif(
    not have("cmake", "ninja", "nvcc"), reason="needs cmake, ninja and nvcc on PATH"
)


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    return build_tiny(tmp_path_factory)


def _c_run(r, name, p, x, w, y, ws=0, sizes=(-1, -1, -1, -1)):
    from ckgen.runtime.capi import c_problem

    lib = r._lib
    rc = lib.ckgen_run_checked(
        r[name].index,
        ctypes.byref(c_problem(p)),
        x,
        sizes[0],
        w,
        sizes[1],
        y,
        sizes[2],
        ws,
        sizes[3],
        0,
        0,
    )
    return rc, r._last_error()


@pytest.mark.slow
@needs_build
def test_c_api_refuses_bad_pointers_before_launch(reg) -> None:
    """Refused with CKGEN_E_INVALID and the kernel's name, nothing launched (works without a
    GPU: the refusals come first)."""
    rc, msg = _c_run(reg, V8, P, 0, 4096, 4096)
    assert rc == 3 and V8 in msg and "in (x / dx) pointer is NULL" in msg
    rc, msg = _c_run(reg, V8, P, 4096, 4096, 0)
    assert rc == 3 and "out (y / dy) pointer is NULL" in msg
    # v8 fp16 needs 16-byte pointers; v1 only 2-byte ones
    rc, msg = _c_run(reg, V8, P, 4096 + 8, 4096, 4096)
    assert rc == 3 and "not 16-byte aligned" in msg and "vector width 8" in msg, msg
    rc, msg = _c_run(reg, V1, P, 4096 + 1, 4096, 4096)
    assert rc == 3 and "not 2-byte aligned" in msg, msg
    # a buffer smaller than the problem's tensor
    need = 8 * 56 * 56 * 64 * 2
    rc, msg = _c_run(reg, V8, P, 4096, 4096, 4096, sizes=(need - 2, -1, -1, -1))
    assert rc == 3 and f"the problem needs {need}" in msg, msg
    rc, msg = _c_run(reg, V8, P, 4096, 4096, 4096, sizes=(need, 64 * 9 * 64 * 2, need // 2, -1))
    assert rc == 3 and "out (y / dy) buffer holds" in msg, msg


@pytest.mark.slow
@needs_build
def test_c_api_refuses_bad_problems(reg) -> None:
    """Zero, negative and overflowing dimensions: an error, never a division by zero or an
    int64 overflow."""
    from ckgen.runtime.capi import NoKernel

    k = reg[V1]
    cases = {
        "zero N": Problem(2, 1, 0, 8, 8, (1, 8, 8), (1, 3, 3)),
        "negative C": Problem(2, 1, 1, -8, 8, (1, 8, 8), (1, 3, 3)),
        "zero stride": Problem(2, 1, 1, 8, 8, (1, 8, 8), (1, 3, 3), stride=(1, 0, 1)),
        "negative pad": Problem(2, 1, 1, 8, 8, (1, 8, 8), (1, 3, 3), pad_l=(0, -5, 0)),
        "empty output": Problem.make(N=1, C=8, K=8, input=(2, 2), filter=(5, 5)),
        "huge N": Problem.make(N=2**40, C=8, K=8, input=(8, 8), filter=(3, 3)),
        "huge pad": Problem(2, 1, 1, 8, 8, (1, 8, 8), (1, 3, 3), pad_r=(0, 2**62, 0)),
        "int64 product": Problem.make(N=2**30, C=2**30, K=8, input=(2**30, 2**30), filter=(1, 1)),
    }
    for what, p in cases.items():
        assert "invalid problem" in k.is_supported(p), what
        with pytest.raises(NoKernel, match="invalid problem"):
            reg.select(p, "forward", "fp16")
        with pytest.raises(CkgenRuntimeError, match="invalid problem"):
            k.run(p, 4096, 4096, 4096)
    b = ctypes.c_int64(0)
    from ckgen.runtime.capi import c_problem

    rc = reg._lib.ckgen_tensor_bytes(
        ctypes.byref(c_problem(cases["int64 product"])), b"fp16", ctypes.byref(b), None, None
    )
    assert rc == 3 and "overflow" in reg._last_error()


@pytest.mark.slow
@needs_build
def test_unsupported_problem_lists_nearest_reasons(reg) -> None:
    from ckgen.runtime.capi import NoKernel

    p = Problem.make(N=2, C=3, K=6, input=(9, 9), filter=(3, 3), G=1)
    # C=3: the v1 instance runs it; K=6 with C=3 v8: refused with the vector reason
    assert reg.select(p, "forward", "fp16").name == V1
    with pytest.raises(NoKernel) as ei:
        reg.select(p, "backward_data", "fp16")
    assert "the library holds forward fp16 2D instances" in str(ei.value)
    p3d = Problem.make(N=2, C=8, K=8, input=(4, 9, 9), filter=(3, 3, 3))
    with pytest.raises(NoKernel, match="0 candidate"):
        reg.select(p3d, "forward", "fp16")
    with pytest.raises(CkgenRuntimeError, match="not fp16, bf16 or fp32"):
        reg.select(P, "forward", "fp8")


# ------------------------------------------------------------------ GPU
gpu_build = pytest.mark.skipif(
    not have("cmake", "ninja", "nvcc", "nvidia-smi"),
    reason="needs an NVIDIA GPU (nvidia-smi) and cmake, ninja, nvcc to build the library",
)


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _reference(torch, x, w, p):
    """y of the problem by PyTorch (NHWC tensors)."""
    xr = x.permute(0, 3, 1, 2).float()
    wr = w.permute(0, 3, 1, 2).float()
    y = torch.nn.functional.conv2d(xr, wr, stride=p.stride[1:], padding=p.pad_l[1:])
    return y.permute(0, 2, 3, 1)


@pytest.mark.gpu
@gpu_build
def test_torch_tensor_misuse_on_gpu(reg) -> None:
    torch = _torch_cuda()
    x = torch.randn(8, 56, 56, 64, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 3, 3, 64, device="cuda", dtype=torch.float16)
    y = torch.empty(8, 56, 56, 64, device="cuda", dtype=torch.float16)
    sel = reg.select(P, "forward", "fp16")
    with pytest.raises(CkgenRuntimeError, match="GPU memory"):
        sel.run(P, x.cpu(), w, y)
    with pytest.raises(CkgenRuntimeError, match="dtype torch.float32"):
        sel.run(P, x.float(), w, y)
    with pytest.raises(CkgenRuntimeError, match="channels-first"):
        sel.run(P, x.permute(0, 3, 1, 2).contiguous(), w, y)
    with pytest.raises(CkgenRuntimeError, match="buffer holds"):
        sel.run(P, x[:4], w, y)
    with pytest.raises(CkgenRuntimeError, match="not 16-byte aligned"):
        reg[V8].run(P, x.view(-1)[1:], w, y)
    if torch.cuda.device_count() > 1:
        with pytest.raises(CkgenRuntimeError, match="different GPUs"):
            sel.run(P, x, w.to("cuda:1"), y)
    sel.run(P, x, w, y)  # the right call still works
    torch.cuda.synchronize()
    ref = _reference(torch, x, w, P)
    assert torch.allclose(y.float(), ref, atol=0.5, rtol=0.02)


_LAUNCH_ERROR_CHILD = """
import ctypes, json, sys
import torch
from ckgen import Registry
from ckgen.model.problem import Problem
from ckgen.runtime.capi import CkgenRuntimeError
reg = Registry.load(sys.argv[1])
P = Problem.from_json(json.loads(sys.argv[2]))
x = torch.randn(8, 56, 56, 64, device="cuda", dtype=torch.float16)
w = torch.randn(64, 3, 3, 64, device="cuda", dtype=torch.float16)
y = torch.empty(8, 56, 56, 64, device="cuda", dtype=torch.float16)
sel = reg.select(P, "forward", "fp16")
handle = ctypes.c_void_p()
assert int(torch.cuda.cudart().cudaStreamCreate(ctypes.addressof(handle))) == 0
g = torch.cuda.CUDAGraph()
s = torch.cuda.ExternalStream(handle.value)
err = None
try:
    with torch.cuda.graph(g, stream=s, capture_error_mode="global"):
        try:
            sel.run(P, x, w, y, stream=1)
        except CkgenRuntimeError as ex:
            err = ex
except RuntimeError:
    pass
torch.cuda.synchronize()
print(json.dumps({"code": err.code if err else None, "msg": str(err), "name": sel.name}))
"""


@pytest.mark.gpu
@gpu_build
def test_launch_error_names_the_kernel(reg) -> None:
    """A launch the runtime refuses comes back as CKGEN_E_LAUNCH naming the kernel: a launch on
    the legacy stream while a blocking stream (cudaStreamCreate: it synchronises with the legacy
    stream, PyTorch's own streams do not) captures a graph in global mode is an implicit
    synchronisation with a capturing stream (cudaErrorStreamCaptureImplicit). In a child
    process: the failed capture leaves PyTorch's allocator and generator state unusable."""
    import json
    import subprocess
    import sys

    _torch_cuda()
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCH_ERROR_CHILD, str(reg.lib_path), json.dumps(P.to_json())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["code"] == 4 and res["name"] in res["msg"], res


@pytest.mark.gpu
@gpu_build
def test_select_and_run_from_8_threads_on_4_streams(reg) -> None:
    torch = _torch_cuda()
    reg.clear_selection_cache()
    shapes = [
        Problem.make(N=n, C=64, K=64, input=(hw, hw), filter=(3, 3), pad=1)
        for n, hw in ((2, 28), (4, 14), (1, 56), (3, 20))
    ]
    streams = [torch.cuda.Stream() for _ in range(4)]
    data = []
    for p in shapes:
        x = torch.randn(p.N, p.input[1], p.input[2], 64, device="cuda", dtype=torch.float16)
        w = torch.randn(64, 3, 3, 64, device="cuda", dtype=torch.float16)
        data.append((p, x, w, _reference(torch, x, w, p)))
    torch.cuda.synchronize()
    errors: list[str] = []

    def work(t: int) -> None:
        try:
            s = streams[t % 4]
            for i in range(25):
                p, x, w, ref = data[(t + i) % 4]
                # a fresh equal Problem each time: the value path of the cache, not identity
                q = Problem.from_json(p.to_json())
                sel = reg.select(q, "forward", "fp16")
                with torch.cuda.stream(s):
                    y = torch.empty_like(ref, dtype=torch.float16)
                    sel.run(q, x, w, y, stream=s)
                s.synchronize()
                if not torch.allclose(y.float(), ref, atol=0.5, rtol=0.02):
                    errors.append(f"thread {t} iteration {i}: wrong result on {sel.name}")
        except Exception as ex:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}: {type(ex).__name__}: {ex}")

    ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=300)
    assert not errors, errors[:5]
    assert reg.selection_cache_stats()["size"] >= 4


def _proc_select(args: tuple[str, str, int]) -> str:
    """A process loading a shared tuning database and selecting."""
    import json

    from ckgen import Registry

    lib, db, i = args
    r = Registry.load(lib)
    r.load_tuning_db(db)
    p = Problem.make(N=8, C=64, K=64, input=(56, 56), filter=(3, 3), pad=1)
    json.loads(Path(db).read_text())
    return r.select(p, "forward", "fp16").name


@pytest.mark.slow
@needs_build
def test_processes_share_a_tuning_database(reg, tmp_path: Path) -> None:
    """Several processes load the same tuning database while one rewrites it (`ckgen tune`'s
    writer): every process selects, no file is torn."""
    import multiprocessing

    from ckgen.tuning.tune import db_header, write_db

    db = tmp_path / "db.json"
    d = db_header("sm_90a", "", 0)
    d["entries"] = [
        {
            "variant": "forward",
            "datatype": "fp16",
            "shape": "s",
            "problem": P.to_json(),
            "kernel": V1,
            "k_batch": 0,
            "ms": 0.01,
            "ranking": [{"kernel": V1, "k_batch": 0, "ms": 0.01}],
        }
    ]
    write_db(db, d)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        res = pool.map_async(_proc_select, [(str(reg.lib_path), str(db), i) for i in range(8)])
        for _ in range(20):
            write_db(db, d)
        names = res.get(timeout=300)
    assert names == [V1] * 8


@pytest.mark.skipif(os.name != "posix", reason="fcntl")
def test_write_db_leaves_no_temporary(tmp_path: Path) -> None:
    from ckgen.tuning.tune import db_header, write_db

    write_db(tmp_path / "t.json", {**db_header("sm_90a", "G", 1), "entries": []})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json", "t.json.lock"]
