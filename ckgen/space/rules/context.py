"""What the rules know beyond the instance and the target: the resources check-isa measured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RuleContext:
    """Measured resources fed back from `ckgen check-isa` (`generate --resources FILE`): instance
    name -> what the compiler reported on target ``arch`` (InstanceResources.to_json). Empty by
    default; the "measured" rule is the only reader."""

    arch: str = ""
    measured: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def measured_for(self, arch: str, name: str) -> Mapping[str, Any] | None:
        """What was measured for instance ``name`` on target ``arch``, if anything."""
        return self.measured.get(name) if arch == self.arch else None


NO_CONTEXT = RuleContext()
