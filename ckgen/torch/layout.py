"""Channels-last layouts: ckgen's kernels read and write NHWGC / GKYXC / NHWGK memory, which is
PyTorch's channels_last / channels_last_3d (1D: (N, C, W) whose memory is N, W, C)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def channels_last_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a dense (N, C, *spatial) tensor whose memory is N, *spatial, C."""
    strides = [0] * len(shape)
    strides[1] = 1
    acc = max(int(shape[1]), 1)
    for i in range(len(shape) - 1, 1, -1):
        strides[i] = acc
        acc *= max(int(shape[i]), 1)
    strides[0] = acc
    return tuple(strides)


def channel_sum(t: Any) -> Any:
    """The fp32 sum of t (N, C, *spatial) over everything but the channels (a bias gradient).
    Where t is an fp16 / bf16 CUDA tensor laid out channels-last, a product of ones and its
    (N * spatial, C) view (a bandwidth-bound cuBLAS call, several times faster than PyTorch's
    strided sum over that layout); else the sum."""
    c = int(t.shape[1])
    flat = t.permute(0, *range(2, t.dim()), 1)
    if (
        t.is_cuda
        and t.dtype in (torch.float16, torch.bfloat16)
        and t.numel()
        and flat.is_contiguous()
    ):
        ones = torch.ones(1, t.numel() // c, dtype=t.dtype, device=t.device)
        try:
            return torch.mm(ones, flat.view(-1, c), out_dtype=torch.float32).view(c)
        except TypeError:  # a PyTorch whose mm has no out_dtype
            pass
    return t.sum(dim=[0, *range(2, t.dim())], dtype=torch.float32)


def empty_channels_last(shape: Sequence[int], dtype: Any, device: Any) -> Any:
    return torch.empty_strided(
        tuple(shape), channels_last_strides(shape), dtype=dtype, device=device
    )


def is_channels_last(t: Any) -> bool:
    nd = t.dim()
    if nd == 4:
        return bool(t.is_contiguous(memory_format=torch.channels_last))
    if nd == 5:
        return bool(t.is_contiguous(memory_format=torch.channels_last_3d))
    return bool(t.transpose(1, 2).is_contiguous())


def to_channels_last(t: Any) -> Any:
    """t itself when it is dense channels-last, else a channels-last copy."""
    nd = t.dim()
    if nd == 4:
        fmt = torch.channels_last
    elif nd == 5:
        fmt = torch.channels_last_3d
    else:
        return (
            t
            if t.transpose(1, 2).is_contiguous()
            else t.transpose(1, 2).contiguous().transpose(1, 2)
        )
    return t if t.is_contiguous(memory_format=fmt) else t.contiguous(memory_format=fmt)


def ready(t: Any) -> Any:
    """t as a kernel reads it: dense channels-last, 16-byte aligned (else a copy)."""
    t = to_channels_last(t)
    if t.data_ptr() & 15:  # a view at an odd offset
        c = empty_channels_last(t.shape, t.dtype, t.device)
        c.copy_(t)
        return c
    return t
