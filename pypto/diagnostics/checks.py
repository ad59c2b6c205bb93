"""The perf-hint rules run on a lowered program, and the pass entry that runs them.

Each rule is ``(program, platform) -> list[PerfHint]``; ``check_perf_hints`` feeds them all
into the compile's hint sink (which drops disabled rules and merges repeats) and returns
the program unchanged, so it sits in the pass list like any analysis pass.
Test: tests/diagnostics/test_ph001.py
"""

from __future__ import annotations

from collections.abc import Callable

from pypto.diagnostics import granularity
from pypto.diagnostics.hints import PerfHint
from pypto.ir.stmt import Program
from pypto.platforms import Platform

Rule = Callable[[Program, Platform], list[PerfHint]]

RULES: dict[str, Rule] = {
    granularity.RULE: granularity.check_program,
}
CODES: dict[str, str] = {granularity.CODE: granularity.RULE}


def check_perf_hints(program: Program, ctx) -> Program:  # ctx: pypto.passes.context.PassContext
    """Runs every rule not disabled in ``ctx.hints`` and emits what they find."""
    sink = ctx.hints
    for rule, run in RULES.items():
        code = next((c for c, r in CODES.items() if r == rule), "")
        if rule in sink.disabled or code in sink.disabled:
            continue
        for hint in run(program, ctx.platform):
            sink.emit(hint)
    return program
