"""How well a fused instance list covers the fastest plain instances, from a forward profile: per
layer (a profile shape), the best time among the plain twins of the config's fused instances
(the same instance without its epilogue) against the best time of any profiled instance
('best'), and of any that could carry an epilogue ('fusable': its bias twin passes the
fusion rule of ckgen/space/rules/common.py). Per model
(with --map, the corpus map: shape, row, model, count) the geomean of those ratios and the ratio
of summed times, each layer counted as often as the model runs it; then the fusable instances
within --tol of a layer's best fusable time that have no twin in the config, by how many layer
runs they would serve.

    python3 bench/fused_coverage.py --profile prof/forward_fp16.csv.gz \\
        --config configs/forward/fused.yaml --map corpus_map.csv \\
        --models resnet50,resnext50_32x4d,mobilenet_v2,retinanet_resnet50_fpn
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

from ckgen.model.arch import get_arch
from ckgen.model.naming import instance_name, parse_instance_name
from ckgen.model.vocab import Activation, ChannelOp
from ckgen.space.expand import Filters, expand, load_configs
from ckgen.space.rules import NO_CONTEXT
from ckgen.space.rules.common import check_fusion
from ckgen.tuning.profile import read_rows

SM90 = get_arch("sm_90a")


def plain_twin(name: str) -> str:
    i = parse_instance_name(name)
    plain = dataclasses.replace(
        i, channel_op=ChannelOp.NONE, activation=Activation.NONE, residual=False
    )
    return instance_name(plain)


def fusable(name: str) -> bool:
    """Whether the instance could carry an epilogue: its bias twin passes the fusion rule."""
    i = dataclasses.replace(parse_instance_name(name), channel_op=ChannelOp.BIAS)
    return check_fusion(i, SM90, NO_CONTEXT) is None


def read_profile(path: Path) -> dict[str, dict[str, float]]:
    """shape -> instance -> ms (verified or unverified rows with a time)."""
    times: dict[str, dict[str, float]] = defaultdict(dict)
    for r in read_rows(path):
        ms = float(r.get("ms") or 0)
        if ms > 0 and r.get("verified") not in ("fail", "failed", "False"):
            old = times[r["shape"]].get(r["instance"])
            times[r["shape"]][r["instance"]] = min(ms, old or ms)
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", type=Path, required=True)
    p.add_argument("--config", type=Path, action="append", required=True)
    p.add_argument("--map", type=Path, help="corpus map CSV: shape, row, model, count")
    p.add_argument("--models", default="", help="comma-separated (default: every model)")
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--tol", type=float, default=0.03)
    a = p.parse_args(argv)
    times = read_profile(a.profile)
    exp = expand(load_configs(a.config), get_arch(a.arch), Filters())
    profiled = {n for t in times.values() for n in t}
    dtypes = {parse_instance_name(n).datatype for n in profiled}
    twins = {plain_twin(i.name) for i in exp.instances if i.datatype in dtypes}
    missing = sorted(twins - profiled)
    layers: dict[str, list[tuple[str, int]]] = defaultdict(list)
    if a.map:
        with a.map.open() as f:
            for r in csv.DictReader(f):
                if r["shape"] in times:
                    layers[r["model"]].append((r["shape"], int(r.get("count") or 1)))
    else:
        layers["all"] = [(s, 1) for s in times]
    wanted = [m for m in a.models.split(",") if m] or sorted(layers)
    print(f"{len(twins)} plain twins of the config's {', '.join(sorted(d.value for d in dtypes))} "
          f"instances; "
          f"{len(missing)} not in the profile{': ' + ', '.join(missing) if missing else ''}")  # fmt: skip
    print(f"{'model':<24} {'runs':>6} {'vs best':>8} {'vs fusable':>10} {'time vs best':>12}")
    uncovered: Counter[str] = Counter()
    for model in wanted:
        logs, logf, n, t_twin, t_best = 0.0, 0.0, 0, 0.0, 0.0
        for shape, count in layers.get(model, []):
            t = times[shape]
            best = min(t.values())
            fus = min((v for k, v in t.items() if fusable(k)), default=math.inf)
            twin = min((t[k] for k in twins if k in t), default=math.inf)
            logs += count * math.log(twin / best)
            logf += count * math.log(twin / fus)
            n, t_twin, t_best = n + count, t_twin + count * twin, t_best + count * best
            for k, v in t.items():
                if (
                    v <= fus * (1 + a.tol)
                    and fusable(k)
                    and k not in twins
                    and twin > fus * (1 + a.tol)
                ):
                    uncovered[k] += count
        if n:
            print(f"{model:<24} {n:>6} {math.exp(logs / n):>7.3f}x {math.exp(logf / n):>9.3f}x "
                  f"{t_twin / t_best:>11.3f}x")  # fmt: skip
    if uncovered:
        print(f"fusable instances within {a.tol:.0%} of the best fusable one where no twin is, "
              "by layer runs:")  # fmt: skip
        for k, c in uncovered.most_common(12):
            print(f"  {c:>4}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
