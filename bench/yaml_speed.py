#!/usr/bin/env python3
"""YAML loading speed: ckgen's bounded loader (ckgen.config.loader.load_yaml) on a generated
instance list of about --mb megabytes, against the bare event stream of the same parser (the
ceiling: what LibYAML's Python binding costs before anything is built). Target: >= 5 MB/s with
LibYAML on a 2-core machine.

    python bench/yaml_speed.py [--mb 5] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import yaml

from ckgen.config.loader import HAVE_LIBYAML, load_yaml

TILES = ([128, 128, 32], [64, 64, 32], [256, 128, 32], [128, 64, 32])


def instance_list(megabytes: float, seed: int = 1) -> str:
    """A valid forward instance list of about ``megabytes`` MB (7 fields per instance)."""
    rng = random.Random(seed)
    out = ["variant: forward", "instances:"]
    size, limit = 0, int(megabytes * 1e6)
    while size < limit:
        t = rng.choice(TILES)
        entry = (
            "  - datatype: fp16\n"
            f"    tile: [{t[0]}, {t[1]}, {t[2]}]\n"
            "    waves: [2, 2, 1]\n"
            "    vector: [8, 8, 8]\n"
            "    pipeline: multistage\n"
            f"    stages: {rng.choice((2, 3, 4))}\n"
            "    ndim: 2"
        )
        out.append(entry)
        size += len(entry) + 1
    return "\n".join(out) + "\n"


def best_of(repeat: int, fn: object) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    text = instance_list(args.mb)
    parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def events() -> None:
        get = parser(text).get_event
        while get().__class__ is not yaml.StreamEndEvent:
            pass

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instances.yaml"
        path.write_text(text)
        t_load = best_of(args.repeat, lambda: load_yaml(path))
    t_events = best_of(args.repeat, events)
    mb = len(text) / 1e6
    print(f"parser: {'LibYAML (C)' if HAVE_LIBYAML else 'pure Python'}; file {mb:.2f} MB")
    print(f"load_yaml:          {mb / t_load:5.2f} MB/s ({t_load:.2f} s, best of {args.repeat})")
    print(f"bare event stream:  {mb / t_events:5.2f} MB/s (the parser binding's ceiling)")


if __name__ == "__main__":
    main()
