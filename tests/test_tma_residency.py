"""The resident blocks a wavelet_tma instance's launch bounds ask for (tma_min_blocks), as the
instance header passes them to pipeline::TmaWs."""

from __future__ import annotations

from dataclasses import replace

from ckgen.emit.render import render_instance_header
from ckgen.model.arch import get_arch
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import Activation, ChannelOp, Variant
from ckgen.space.estimate.tma import tma_min_blocks

SM90A = get_arch("sm_90a")
# two warpgroups of 64 accumulators a thread, three stages: two blocks fit
PLAIN = parse_instance_name(
    "grouped_conv_fwd_fp16_2d_t128x128x64_w8x1x1_wt64x128x16_wltma3_lm1x8_cshuffle_v8x8x8"
)
BIAS_RELU = replace(PLAIN, channel_op=ChannelOp.BIAS, activation=Activation.RELU)


def test_forward_tiles_ask_for_two_resident_blocks_where_they_fit() -> None:
    """A forward tile of at most 64 accumulators a thread whose two blocks fit shared memory asks
    its launch bounds for two resident blocks, plain or with a channel op and activation; not with
    a residual or stats, not a deeper ring, a tile of more accumulators or a backward variant."""
    a = SM90A
    assert tma_min_blocks(PLAIN, a) == 2
    assert tma_min_blocks(BIAS_RELU, a) == 2
    assert "/*min_blocks*/ 2>" in render_instance_header(BIAS_RELU, a)
    assert tma_min_blocks(replace(BIAS_RELU, residual=True), a) == 1
    assert tma_min_blocks(replace(BIAS_RELU, stats=True), a) == 1
    deep = replace(BIAS_RELU, stages=4)  # two blocks no longer fit
    assert tma_min_blocks(deep, a) == 1
    assert "min_blocks" not in render_instance_header(deep, a)
    assert (
        tma_min_blocks(replace(BIAS_RELU, tile=(256, 128, 64)), a) == 1
    )  # 128 accumulators a thread
    for v in (Variant.BACKWARD_DATA, Variant.BACKWARD_WEIGHT):
        assert tma_min_blocks(replace(PLAIN, variant=v), a) == 1
