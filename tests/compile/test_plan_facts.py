"""A program planned at every call keeps what its plans read of its kernels (PlanFacts): the
plans made with it are the plans made without it, whatever values steer them."""

from __future__ import annotations

import numpy as np
from read_kernels import first_n

import pypto.language as pl
from pypto.compile.plan import PlanFacts, plan_orchestration


@pl.jit
def other(x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.muls(x, 3.0)
    return y


def _args(n: int) -> tuple:
    x = np.zeros((8, 64), np.float32)
    return np.full((1, 8), n, np.int32), x, np.zeros_like(x)


def _plan(compiled, n: int, facts: PlanFacts | None):
    program = compiled.program
    plan = plan_orchestration(program, program.entry, compiled.scalar_values, _args(n), facts)
    return plan.launch_specs(), plan.table_entries()


def test_plans_made_with_kept_facts_are_the_plans_made_without():
    compiled = first_n.compile(*_args(3))
    facts = PlanFacts(compiled.program)
    for n in (3, 6, 0, 8):
        kept, fresh = _plan(compiled, n, facts), _plan(compiled, n, None)
        assert kept == fresh and len(kept[0]) == n
        # each task writes all of y (the rows are sliced in the kernels): it follows every one before
        assert [spec[4] for spec in kept[0]] == [tuple(range(k)) for k in range(n)]


def test_facts_of_another_program_are_not_used():
    compiled = first_n.compile(*_args(4))
    stranger = PlanFacts(other.compile(np.zeros((8, 64), np.float32), np.zeros((8, 64), np.float32)).program)
    assert _plan(compiled, 4, stranger) == _plan(compiled, 4, None)
