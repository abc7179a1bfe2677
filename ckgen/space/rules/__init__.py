"""The validity rules (the table in ckgen.space.rules.table, the rules by kernel family beside
it)."""

from ckgen.space.rules.context import NO_CONTEXT, RuleContext
from ckgen.space.rules.measured import measured_failures
from ckgen.space.rules.table import ALL, DIRECT, GEMM, RULES, Rule, check

__all__ = [
    "ALL",
    "DIRECT",
    "GEMM",
    "NO_CONTEXT",
    "RULES",
    "Rule",
    "RuleContext",
    "check",
    "measured_failures",
]
