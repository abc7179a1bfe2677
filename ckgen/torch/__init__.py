"""ckgen convolutions as PyTorch ops: torch.ops.ckgen.conv_forward / conv_backward_data /
conv_backward_weight, registered with torch.library (fake implementations and autograd
included), so torch.compile, AOTAutograd and CUDA graphs take them like any ATen op.

Tensors follow PyTorch's conv conventions (logical N, C, *spatial). ckgen's kernels read and
write channels-last memory (torch.channels_last / channels_last_3d; 1D: (N, C, W) whose memory is
N, W, C): that order is exactly ckgen's NHWGC / GKYXC / NHWGK. Inputs in another layout
(contiguous NCHW, non-contiguous views) are copied into channels-last first, which costs a copy
per call: keep models channels-last (`model.to(memory_format=torch.channels_last)`). Outputs are
always channels-last. The kernels run on the tensors' device, on its current stream.

    import ckgen.torch as ct
    reg = ckgen.Registry.build("default", kernels=["*_fp16_2d_*"], max_workers=16)
    ct.set_default_registry(reg)                       # or pass registry=reg per call
    model = ct.convert(model)                          # nn.ConvNd -> ckgen, same Parameters
    y  = ct.conv(x, w, bias, stride=1, padding=1)      # differentiable
    y  = ct.conv_forward(x, w, stride=1, padding=1)
    dx = ct.conv_backward_data(dy, w, x.shape, stride=1, padding=1)
    dw = ct.conv_backward_weight(x, dy, w.shape, stride=1, padding=1)
    m  = ct.Conv2d(64, 64, 3, padding=1)               # drop-in nn.Module
    ct.benchmark = True                                # autotune each problem's first call
    y  = ct.conv_fused(x, w, b, residual=r, fusion="bias_relu_residual", padding=1)
    model = ct.convert(model.eval(), fuse=True)        # Conv+BN+act(+residual) fused, inference

The default registry can also come from CKGEN_TORCH_LIB (a built libckgen_dispatch.so or its
build directory); set_default_registry(reg, device=i) gives one device its own. Autotuning
(`benchmark = True`, or CKGEN_AUTOTUNE=1 when this module is imported) is passed to the library's
select() where the library supports it.
"""

from __future__ import annotations

from typing import Any

try:
    import torch
except ImportError as _ex:  # pragma: no cover - depends on the environment
    raise ImportError("ckgen.torch needs PyTorch (pip install torch)") from _ex

from ckgen.torch import checks as _ck
from ckgen.torch import fused_grad as _fused_grad  # noqa: F401  (conv_fused's gradient)
from ckgen.torch import native as _native
from ckgen.torch import ops as _ops
from ckgen.torch.checks import ConvDeviceError, ConvTypeError, ConvValueError
from ckgen.torch.convert import Conv1d, Conv2d, Conv3d, Decision, convert, report
from ckgen.torch.fused_modules import FusedConv, FusedResidual, FusedTrainConv
from ckgen.torch.fused_op import FusedGradientError
from ckgen.torch.ops import _ENV_AUTOTUNE as _ENV_AUTOTUNE
from ckgen.torch.ops import (
    LaunchError,
    NoKernelError,
    UnsupportedProblemError,
    autotune_enabled,
    cache_info,
    clear_cache,
    default_registry,
    library_id,
    set_default_registry,
)
from ckgen.torch.registration import SCHEMAS, ConvFunction, fast

__all__ = [
    "SCHEMAS",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvDeviceError",
    "ConvTypeError",
    "ConvValueError",
    "Decision",
    "FusedConv",
    "FusedGradientError",
    "FusedResidual",
    "FusedTrainConv",
    "LaunchError",
    "NoKernelError",
    "UnsupportedProblemError",
    "autotune_enabled",
    "benchmark",
    "cache_info",
    "clear_cache",
    "conv",
    "conv_backward_data",
    "conv_backward_weight",
    "conv_forward",
    "conv_fused",
    "convert",
    "default_registry",
    "make_problem",
    "report",
    "set_default_registry",
]

# ckgen's cudnn.benchmark: time the cost model's best candidates on each problem's first call
# and keep the fastest (where the library's select() supports autotune).
benchmark: bool = _ENV_AUTOTUNE

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_grad_enabled = torch.is_grad_enabled
_autocast_enabled = torch.is_autocast_enabled


def _params(
    nd: int, w: Any, stride: Any, padding: Any, dilation: Any, padding_right: Any
) -> tuple[tuple, tuple, tuple, tuple]:
    """(stride, padding_left, padding_right, dilation) as tuples of nd ints, checked (w: the
    weight, or its shape; 'same' padding reads the filter size from it)."""
    st = _ck.ints(stride, nd, "stride", 1)
    dil = _ck.ints(dilation, nd, "dilation", 1)
    if isinstance(padding, str):
        if padding == "valid":
            pl = pr = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in st):
                raise ConvValueError(f"padding='same' needs stride 1, got stride={list(st)}")
            shape = getattr(w, "shape", w)
            pl, pr = _ck.same_padding([int(s) for s in shape[2:]], dil)
        else:
            raise ConvValueError(f"padding={padding!r}: expected 'same', 'valid' or ints")
        if padding_right is not None:
            raise ConvValueError("padding_right: only with numeric padding")
    else:
        pl = _ck.ints(padding, nd, "padding", 0)
        pr = pl if padding_right is None else _ck.ints(padding_right, nd, "padding_right", 0)
    return st, pl, pr, dil


def _plain(v: Any) -> bool:
    """Whether v, as a cache key, equals only arguments that check the same: an int, a str, None
    or a tuple of ints (True == 1 and 1.0 == 1, but the checks refuse bools and floats)."""
    t = type(v)
    if t is int or t is str or v is None:
        return True
    if t is tuple:
        for e in v:
            if type(e) is not int:
                return False
        return True
    return False


_conf_cache: dict[tuple, tuple] = {}


def _conf(
    nd: int,
    w: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
    registry: Any,
    padding_right: Any,
) -> tuple:
    """The ops' parameters (stride, padding_left, padding_right, dilation, groups, library id)
    of a call, checked; remembered per distinct plain arguments, so a repeated call skips the
    checks (an argument that is not plain is checked on every call)."""
    lid = library_id(registry)
    key = None
    if (
        _plain(stride)
        and _plain(padding)
        and _plain(dilation)
        and type(groups) is int
        and _plain(padding_right)
    ):
        filt = tuple(getattr(w, "shape", w)[2:]) if type(padding) is str else None
        key = (nd, stride, padding, dilation, groups, padding_right, lid, filt)
        hit = _conf_cache.get(key)
        if hit is not None:
            return hit
    conf = (*_params(nd, w, stride, padding, dilation, padding_right), _groups(groups), lid)
    if key is not None:
        if len(_conf_cache) >= 4096:
            _conf_cache.clear()
        _conf_cache[key] = conf
    return conf


def _nd(x: Any, what: str = "x") -> int:
    t = type(x)
    if t is not _Tensor and t is not _Parameter:
        _ck.tensor(x, what)
    nd = x.dim() - 2
    if not 1 <= nd <= 3:
        raise ConvValueError(
            f"{what} has {x.dim()} dims {list(x.shape)}: expected 3, 4 or 5 (N, C, *spatial)"
        )
    return nd


def _groups(groups: Any) -> int:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ConvValueError(f"groups: expected an int >= 1, got {groups!r}")
    return groups


def _autocast(*ts: Any) -> tuple:
    """Under torch.autocast (CUDA), the floating tensors in autocast's dtype, as F.conv* does."""
    dt = torch.get_autocast_dtype("cuda")
    return tuple(
        t.to(dt) if t is not None and t.is_floating_point() and t.dtype != dt else t for t in ts
    )


def _conv_with_conf(x: Any, weight: Any, bias: Any, conf: tuple) -> Any:
    """conv_forward with checked parameters conf: the implementation itself where nothing traces
    and no gradient is needed, ConvFunction where one is, else the registered op."""
    if x.is_cuda and _autocast_enabled("cuda"):
        x, weight, bias = _autocast(x, weight, bias)
    if fast(x, weight, bias):
        nat = _native.module()
        if nat is not None:
            return nat.conv(x, weight, bias, _native.conf_id(conf), autotune_enabled())
        if _grad_enabled() and (
            x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
        ):
            return ConvFunction.apply(x, weight, bias, conf)
        return _ops.forward(x, weight, bias, conf)
    return torch.ops.ckgen.conv_forward(x, weight, bias, *conf)


def conv(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """Differentiable convolution like F.conv1d/2d/3d (padding: ints, 'same' or 'valid';
    padding_right: asymmetric padding's right side): forward, backward_data and backward_weight
    all run ckgen kernels."""
    conf = _conf(_nd(x), weight, stride, padding, dilation, groups, registry, padding_right)
    return _conv_with_conf(x, weight, bias, conf)


def conv_forward(
    x: Any,
    weight: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
    bias: Any = None,
) -> Any:
    """y = conv(x, weight) (+ bias), channels-last; differentiable like conv()."""
    return conv(x, weight, bias, stride, padding, dilation, groups, registry, padding_right)


def conv_fused(
    x: Any,
    weight: Any,
    bias: Any = None,
    scale: Any = None,
    residual: Any = None,
    *,
    fusion: str,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    beta: float = 1.0,
    alpha: float = 0.01,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """y = act(op(conv(x, weight)) + beta * residual) in one kernel (ckgen::conv_fused), fusion
    e.g. 'bias_relu_residual': bias (and scale, for scale_shift) fp32, one per output channel;
    residual of the output's shape and dtype; alpha: leaky_relu's slope; a last part
    '_to_<datatype>' writes y in that dtype. A fusion with '_stats' returns (y, stats): stats
    (2, out_channels) fp32, each channel's sum of y and sum of y squared (ckgen::conv_fused_stats).
    Differentiable where the gradient follows from the output (bias, relu / relu6 / leaky_relu,
    residual: see ckgen.torch.fused_grad); other fusions are inference only."""
    from ckgen.torch import fused_op

    conf = _conf(_nd(x), weight, stride, padding, dilation, groups, registry, padding_right)
    operands = (x, weight, bias, scale, residual)
    needs = _grad_enabled() and any(t is not None and t.requires_grad for t in operands)
    stats = fused_op.writes_stats(fusion)
    if fast(x, weight) and not needs:
        out = fused_op.fused_with_stats(x, weight, bias, scale, residual, beta, alpha, fusion, conf)
        return out if stats else out[0]
    op = torch.ops.ckgen.conv_fused_stats if stats else torch.ops.ckgen.conv_fused
    return op(x, weight, bias, scale, residual, beta, alpha, fusion, *conf)


def conv_backward_data(
    dy: Any,
    weight: Any,
    input_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """dx (of shape input_size) from dy and weight, channels-last."""
    params = (stride, padding, dilation, groups, registry, padding_right)
    return _gradient("backward_data", dy, weight, input_size, _nd(dy, "dy"), params)


def conv_backward_weight(
    x: Any,
    dy: Any,
    weight_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    registry: Any = None,
    padding_right: Any = None,
) -> Any:
    """dw (of shape weight_size, GKYXC memory: channels-last) from x and dy."""
    params = (stride, padding, dilation, groups, registry, padding_right)
    return _gradient("backward_weight", x, dy, weight_size, _nd(x), params)


def _gradient(variant: str, a: Any, b: Any, out_size: Any, nd: int, params: tuple) -> Any:
    """A backward op on (a, b) whose output has shape out_size (input_size or weight_size),
    params: the call's (stride, padding, dilation, groups, registry, padding_right): its
    implementation on the eager path, else the registered op (which takes the size as a list).
    'same' padding reads the filter from the weight (backward_data) or from weight_size."""
    what = "input_size" if variant == "backward_data" else "weight_size"
    size = _ck.ints(out_size, nd + 2, what, 0)
    conf = _conf(nd, b if variant == "backward_data" else size, *params)
    if fast(a, b):
        return getattr(_ops, variant)(a, b, size, conf)
    return getattr(torch.ops.ckgen, "conv_" + variant)(a, b, list(size), *conf)


def make_problem(
    input_shape: Any,
    weight_shape: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_right: Any = None,
) -> Any:
    """ckgen Problem of a PyTorch conv: input (N, G*C, *spatial), weight (G*K, C, *filter)."""
    from ckgen.torch.ops import _problem

    info = _ck.conv_shapes(
        list(input_shape), list(weight_shape), stride, padding, padding_right, dilation, groups
    )
    return _problem(info, list(input_shape), list(weight_shape))
