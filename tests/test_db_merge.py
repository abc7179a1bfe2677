"""bench/db_merge_profile.py: a later profile's rows join a tuning database's rankings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _merge():
    spec = importlib.util.spec_from_file_location(
        "db_merge", REPO / "bench" / "db_merge_profile.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.merge


def test_a_faster_new_instance_leads_the_ranking_of_its_entry_only() -> None:
    merge = _merge()
    rank = [{"kernel": "a", "k_batch": 0, "ms": 0.02}, {"kernel": "b", "k_batch": 0, "ms": 0.03}]
    db = {
        "entries": [
            {
                "variant": "forward",
                "datatype": "fp16",
                "shape": "s1",
                "kernel": "a",
                "k_batch": 0,
                "ms": 0.02,
                "ranking": list(rank),
            },
            {
                "variant": "forward",
                "datatype": "fp16",
                "shape": "s2",
                "kernel": "a",
                "k_batch": 0,
                "ms": 0.02,
                "ranking": list(rank),
            },
        ]
    }
    row = {"variant": "forward", "datatype": "fp16", "k_batch": "0", "verified": "pass"}
    rows = [
        {**row, "shape": "s1", "instance": "pw", "ms": "0.01"},
        {**row, "shape": "s2", "instance": "pw", "ms": "0.05"},  # slower than the kept two
        {**row, "shape": "s2", "instance": "bad", "ms": "0.001", "verified": "FAIL"},
        {**row, "shape": "s3", "instance": "pw", "ms": "0.01"},  # no such entry
    ]
    assert merge(db, rows) == 1
    e1, e2 = db["entries"]
    assert [c["kernel"] for c in e1["ranking"]] == ["pw", "a"]
    assert (e1["kernel"], e1["ms"]) == ("pw", 0.01)
    assert e2["ranking"] == rank and e2["kernel"] == "a"
