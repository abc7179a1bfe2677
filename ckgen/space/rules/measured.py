"""The "measured" rule: resources check-isa measured (spills, LDS) against the target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckgen.model.arch import ArchSpec
from ckgen.model.instance import KernelInstance
from ckgen.space.rules.context import RuleContext


def measured_failures(res: Mapping[str, Any], a: ArchSpec) -> list[str]:
    """Why measured resources make an instance unusable on ``a``: scratch (spills) or LDS over
    the target. check-isa and the "measured" rule both use this, so the limits live here only."""
    out = []
    scratch = int(res.get("scratch_bytes", 0))
    if scratch > 0:
        out.append(
            f"spills: {scratch} bytes of scratch per lane measured (VGPR {res.get('vgpr', 0)}, "
            f"VGPR spills {res.get('vgpr_spill', 0)}, SGPR spills {res.get('sgpr_spill', 0)}, "
            f"register estimate {res.get('estimate', '?')})"
        )
    lds = int(res.get("lds_bytes", 0))
    if lds > a.lds_bytes:
        out.append(f"LDS {lds} bytes measured > {a.lds_bytes} on {a.name}")
    return out


def check_measured(i: KernelInstance, a: ArchSpec, ctx: RuleContext) -> str | None:
    res = ctx.measured_for(a.name, i.name)
    if not res:
        return None
    bad = measured_failures(res, a)
    return bad[0] if bad else None
