"""The fused forward op, ``ckgen::conv_fused``: ``y = act(op(conv(x, weight)) + beta * residual)``
in one kernel whose epilogue applies the operations in fp32 before the conversion (fusion: a
spelling such as ``bias_relu_residual``; op ``bias`` adds ``bias``, ``scale_shift`` computes
``acc * scale + bias``; ``alpha`` is leaky_relu's slope; a last part ``to_<datatype>`` writes the
output in that dtype, e.g. ``bias_relu_to_fp32`` on fp16 inputs). bias and scale are fp32 vectors
of one value per output channel, residual a tensor of the output's shape and dtype. A fusion
with ``stats`` also writes each output channel's fp32 sum and sum of squares of y (what a
training BatchNorm reads of it): ``ckgen::conv_fused_stats`` returns (y, stats), stats of shape
(2, out_channels).

Registered with torch.library like the plain ops (real and fake implementation), so
torch.compile traces it and CUDA graphs capture it; its gradient, for the fusions that have one,
is fused_grad's (which registers the op's Autograd kernel). reference() is the same computation
in PyTorch (fp32, then the output's dtype).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import torch
import torch.nn.functional as F

from ckgen.model.epilogue import Epilogue
from ckgen.model.vocab import STATS
from ckgen.runtime.capi import CkgenRuntimeError, UnsupportedProblem
from ckgen.torch import checks as ck
from ckgen.torch import ops
from ckgen.torch.layout import empty_channels_last

_ARGS = (
    "(Tensor x, Tensor weight, Tensor? bias, Tensor? scale, Tensor? residual, float beta, "
    "float alpha, str fusion, SymInt[] stride, SymInt[] padding, SymInt[] padding_right, "
    "SymInt[] dilation, SymInt groups, int library)"
)
SCHEMA = _ARGS + " -> Tensor"
STATS_SCHEMA = _ARGS + " -> (Tensor, Tensor)"


class FusedGradientError(RuntimeError):
    """A gradient was asked of ckgen::conv_fused that it cannot give (fused_grad)."""


@functools.lru_cache(maxsize=64)
def epilogue(fusion: str) -> Epilogue:
    """The Epilogue of a fusion spelling; ConvValueError for one that is not a fused epilogue."""
    try:
        ep = Epilogue.parse(fusion)
    except ValueError as ex:
        raise ck.ConvValueError(f"fusion: {ex}") from None
    if not ep.fused:
        raise ck.ConvValueError("fusion='none': use ckgen::conv_forward for a plain convolution")
    return ep


def writes_stats(fusion: str) -> bool:
    """Whether a fusion spelling has the stats part: a word test torch.compile traces through
    (the ops' own checks parse the spelling fully)."""
    return STATS in fusion.split("_")


def stats_epilogue(fusion: str, stats: bool) -> Epilogue:
    """epilogue(fusion), which must have stats exactly when the op returns them (stats)."""
    ep = epilogue(fusion)
    if ep.stats != stats:
        raise ck.ConvValueError(
            f"fusion={fusion!r} writes statistics: ckgen::conv_fused_stats returns (y, stats)"
            if ep.stats
            else f"fusion={fusion!r} writes no statistics: use ckgen::conv_fused"
        )
    return ep


def out_dtype(ep: Epilogue, x_dtype: Any) -> Any:
    """The output's torch dtype: the fusion's conversion's (to_<datatype>), else x's."""
    return x_dtype if ep.out_datatype is None else ck.torch_dtype(ep.out_datatype.value)


def _vector(t: Any, what: str, out_channels: int) -> None:
    ck.tensor(t, what)
    if t.dtype != torch.float32:
        raise ck.ConvTypeError(f"{what} has dtype {t.dtype}: the epilogue reads fp32 vectors")
    if tuple(t.shape) != (out_channels,):
        raise ck.ConvValueError(
            f"{what} has shape {list(t.shape)}: expected ({out_channels},), one per output channel"
        )


def check_fused(
    x: Any, w: Any, bias: Any, scale: Any, residual: Any, fusion: str, conf: tuple
) -> tuple[dict[str, Any], Epilogue]:
    """The forward checks plus the epilogue's: each operand present exactly when the fusion
    reads it, of the right dtype, shape and device."""
    ep = epilogue(fusion)
    info = ck.check_forward(x, w, None, *conf[:5])
    k = int(w.shape[0])
    named = [(x, "x")]
    for t, what, needed in (
        (bias, "bias", ep.needs_bias),
        (scale, "scale", ep.needs_scale),
        (residual, "residual", ep.residual),
    ):
        if needed and t is None:
            raise ck.ConvValueError(f"fusion={fusion!r} reads {what}, which is None")
        if t is not None and not needed:
            raise ck.ConvValueError(f"fusion={fusion!r} does not read {what}: pass None")
        if t is None:
            continue
        if what == "residual":
            ck.tensor(t, what)
            want = out_dtype(ep, x.dtype)
            if t.dtype != want:
                raise ck.ConvTypeError(
                    f"residual has dtype {t.dtype}: the output's, {want}, is expected "
                    f"(fusion={fusion!r})"
                )
            if tuple(t.shape) != tuple(info["out_shape"]):
                raise ck.ConvValueError(
                    f"residual has shape {list(t.shape)}: expected the output's "
                    f"{list(info['out_shape'])}"
                )
        else:
            _vector(t, what, k)
        named.append((t, what))
    ck.devices(named)
    return info, ep


def _meta(t: Any) -> Any:
    return None if t is None else (t.shape, t.dtype, t.device)


_Key = tuple


def _prepared(
    x: Any, w: Any, bias: Any, scale: Any, residual: Any, fusion: str, conf: tuple
) -> ops.Prepared:
    extra = (fusion, _meta(bias), _meta(scale), _meta(residual))
    key: _Key = ("fused", x.shape, w.shape, x.dtype, w.dtype, x.device, w.device, extra, conf)
    pr = ops._cache.get(key)
    if pr is None:
        info, ep = check_fused(x, w, bias, scale, residual, fusion, conf)
        pr = ops._prepare(
            key, "forward", info, x.shape, w.shape, info["out_shape"], x.device, conf[5], False,
            x.dtype, fusion=ep,
        )  # fmt: skip
    return pr


def run_selection(pr: ops.Prepared, what: str, pa: int, pb: int, pc: int, **operands: Any) -> None:
    """pr's selection run on the pointers pa, pb, pc (the variant's input, weight and output
    roles) with a workspace of its size and the epilogue's operands (pointers, beta, alpha), on
    the current stream of pr's device; what names the op in errors."""
    ws = torch.empty(pr.ws_bytes, dtype=torch.uint8, device=pr.device) if pr.ws_bytes else None
    other = ops._get_device() != pr.dev_index
    with torch.cuda.device(pr.dev_index) if other else contextlib.nullcontext():
        try:
            pr.selection.run(
                pr.problem, pa, pb, pc, 0 if ws is None else ws.data_ptr(),
                ops._stream(pr.dev_index), **operands,
            )  # fmt: skip
        except UnsupportedProblem as ex:
            raise ops.UnsupportedProblemError(ex.kernel, ex.reason) from None
        except CkgenRuntimeError as ex:
            raise ops.LaunchError(f"ckgen::{what}: {ex}", code=ex.code) from None


def _ptr(t: Any) -> int | None:
    return None if t is None else t.data_ptr()


def launch(
    pr: ops.Prepared, x: Any, w: Any, y: Any, operands: tuple, beta: float, alpha: float,
    stats: Any = None,
) -> None:  # fmt: skip
    """The fused kernel of pr on (x, w) into y with operands = (bias, scale, residual) (and the
    statistics output stats), on the current stream of pr's device (the selection's run(): the
    epilogue's operands are checked against the kernel before the launch)."""
    bias, scale, residual = operands
    run_selection(
        pr, "conv_fused", x.data_ptr(), w.data_ptr(), y.data_ptr(), bias=_ptr(bias),
        scale=_ptr(scale), residual=_ptr(residual), beta=float(beta), alpha=float(alpha),
        stats=_ptr(stats),
    )  # fmt: skip


def fused_with_stats(
    x: Any, w: Any, bias: Any, scale: Any, residual: Any, beta: float, alpha: float,
    fusion: str, conf: tuple,
) -> tuple[Any, Any]:  # fmt: skip
    """The implementation (conf: stride, padding_left, padding_right, dilation, groups,
    library as tuples): (y, stats), stats None unless the fusion writes them ((2, K) fp32: the
    sums of y per output channel, then the sums of y squared)."""
    pr = _prepared(x, w, bias, scale, residual, fusion, conf)
    ep = epilogue(fusion)
    y = torch.empty_strided(
        pr.out_shape, pr.out_strides, dtype=out_dtype(ep, pr.dtype), device=pr.device
    )
    k = int(pr.out_shape[1])
    st = torch.empty(2, k, dtype=torch.float32, device=pr.device) if ep.stats else None
    if pr.empty:
        if st is not None:
            st.zero_()
        return y, st
    x, _ = ops._input(x, pr.fmt)
    w, _ = ops._input(w, pr.fmt)
    if residual is not None:
        residual, _ = ops._input(residual, pr.fmt)
    bias = None if bias is None else bias.contiguous()
    scale = None if scale is None else scale.contiguous()
    launch(pr, x, w, y, (bias, scale, residual), beta, alpha, st)
    return y, st


def fused(
    x: Any, w: Any, bias: Any, scale: Any, residual: Any, beta: float, alpha: float,
    fusion: str, conf: tuple,
) -> Any:  # fmt: skip
    """y of a fusion without stats (fused_with_stats)."""
    stats_epilogue(fusion, False)
    return fused_with_stats(x, w, bias, scale, residual, beta, alpha, fusion, conf)[0]


def _impl(x, w, bias, scale, residual, beta, alpha, fusion, stride, pl, pr_, dil, groups, lid):
    conf = ops.conf_of(stride, pl, pr_, dil, groups, lid)
    return fused(x, w, bias, scale, residual, beta, alpha, fusion, conf)


def _stats_impl(
    x, w, bias, scale, residual, beta, alpha, fusion, stride, pl, pr_, dil, groups, lid
):
    conf = ops.conf_of(stride, pl, pr_, dil, groups, lid)
    stats_epilogue(fusion, True)
    return fused_with_stats(x, w, bias, scale, residual, beta, alpha, fusion, conf)


# ---------------------------------------------------------------------- registration
_lib = torch.library.Library("ckgen", "FRAGMENT")
_lib.define("conv_fused" + SCHEMA)
_lib.impl("conv_fused", _impl, "CompositeExplicitAutograd")
conv_fused_op = torch.ops.ckgen.conv_fused.default
_lib.define("conv_fused_stats" + STATS_SCHEMA)
_lib.impl("conv_fused_stats", _stats_impl, "CompositeExplicitAutograd")
conv_fused_stats_op = torch.ops.ckgen.conv_fused_stats.default


def _fake_y(x, w, bias, scale, residual, fusion, conf, stats: bool) -> Any:
    """The checked fake output of conv_fused (stats False) or conv_fused_stats (True)."""
    stats_epilogue(fusion, stats)
    info, ep = check_fused(x, w, bias, scale, residual, fusion, conf)
    return empty_channels_last(info["out_shape"], out_dtype(ep, x.dtype), x.device)


@torch.library.register_fake("ckgen::conv_fused", lib=_lib)
def _fused_fake(x, w, bias, scale, residual, beta, alpha, fusion, *conf):
    return _fake_y(x, w, bias, scale, residual, fusion, conf, False)


@torch.library.register_fake("ckgen::conv_fused_stats", lib=_lib)
def _fused_stats_fake(x, w, bias, scale, residual, beta, alpha, fusion, *conf):
    y = _fake_y(x, w, bias, scale, residual, fusion, conf, True)
    return y, x.new_empty((2, int(w.shape[0])), dtype=torch.float32)


# ---------------------------------------------------------------------- reference
_ACT = {
    "none": lambda y, a: y,
    "relu": lambda y, a: F.relu(y),
    "relu6": lambda y, a: F.hardtanh(y, 0.0, 6.0),
    "leaky_relu": lambda y, a: F.leaky_relu(y, a),
    "silu": lambda y, a: F.silu(y),
    "gelu_tanh": lambda y, a: F.gelu(y, approximate="tanh"),
}
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def stats_of(y: Any) -> Any:
    """What a stats fusion writes of its output y: (2, channels) fp32, the sums of y (as stored)
    per channel, then the sums of y squared (in fp64, then fp32)."""
    dims = [d for d in range(y.dim()) if d != 1]
    yd = y.double()
    return torch.stack([yd.sum(dims), (yd * yd).sum(dims)]).float()


def reference(
    x: Any, w: Any, bias: Any, scale: Any, residual: Any, beta: float, alpha: float,
    fusion: str, conf: tuple,
) -> Any:  # fmt: skip
    """conv_fused in PyTorch: the convolution and the epilogue in fp32, then the output's dtype
    (x's, or the fusion's conversion's)."""
    ep = epilogue(fusion)
    stride, pl, pr_, dil, groups = conf[:5]
    xf = x.float()
    if tuple(pl) != tuple(pr_):
        xf = F.pad(xf, [p for lr in zip(reversed(pl), reversed(pr_), strict=True) for p in lr])
        pad: Any = 0
    else:
        pad = tuple(pl)
    y = _CONV[x.dim() - 2](xf, w.float(), None, tuple(stride), pad, tuple(dil), groups)
    view = (1, -1) + (1,) * (x.dim() - 2)
    if scale is not None:
        y = y * scale.float().view(view)
    if bias is not None:
        y = y + bias.float().view(view)
    if ep.residual:
        y = y + beta * residual.float()
    return _ACT[str(ep.activation)](y, alpha).to(out_dtype(ep, x.dtype))
