"""bench/mask_chain.py without a GPU: how many buffer sets a replay walks and the summary."""

from __future__ import annotations

import mask_chain as mc


def test_buffer_sets_exceed_twice_the_l2_cache() -> None:
    l2 = 50 << 20
    assert mc.buffer_sets(1 << 20, l2) == 16  # capped
    assert mc.buffer_sets(30 << 20, l2) == 4  # 4 x 30 MiB >= 100 MiB
    assert mc.buffer_sets(25 << 20, l2) == 4
    assert mc.buffer_sets(26 << 20, l2) == 4
    assert mc.buffer_sets(200 << 20, l2) == 1
    assert mc.buffer_sets(0, l2) == 16


def test_summary_counts_slower_layers_per_pair_kind() -> None:
    rows = [
        {"shape": "a", "best_ratio": "0.9", "pick_db_ratio": "1.2"},
        {"shape": "b", "best_ratio": "1.02"},
        {"shape": "c", "best_ratio": "1.1"},
    ]
    text = mc.summary(rows).splitlines()
    assert text[0].startswith("best: fused / (PyTorch mask + plain) ")
    assert "worst 1.100; slower on 2 of 3, > 5 %: 1" in text[0]
    assert "slower on 1 of 1, > 5 %: 1" in text[1]
    assert len(text) == 2
