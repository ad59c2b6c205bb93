"""TaskIds as values, as model code passes them around: ``with pl.at(...) as tid`` names a
task, ``pl.array.create(n, pl.TASK_ID)`` collects them (``tids[i] = tid`` in a loop), a
``@pl.jit.inline`` helper hands one back through an array parameter, and
``pl.system.task_dummy(deps=[...])`` joins several; ``deps=`` takes any of them (a
comprehension over a compile-time range included). The launch plan turns them into the
task-graph edges the report shows; they never reach a kernel."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.frontend import parse_text
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
N = 4


@pl.jit.inline
def publish(tids: pl.Array[2, pl.TASK_ID], t: pl.TaskId):
    tids[1] = t


@pl.jit
def fan_in(
    x: pl.Tensor[[N * 16, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[N * 16, 64], pl.FP32]],
    s: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
):
    tids = pl.array.create(N, pl.TASK_ID)
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]) as tid:
            out[i * 16 : i * 16 + 16, :] = pl.muls(x[i * 16 : i * 16 + 16, :], 2.0)
        tids[i] = tid
    pair = pl.array.create(2, pl.TASK_ID)
    pair[0] = tids[0]
    publish(pair, tids[3])
    join = pl.system.task_dummy(deps=[pair[i] for i in range(2)])
    with pl.at(level=pl.Level.CORE_GROUP, deps=[join, tids[2]]):
        s[:, :] = pl.adds(x[0:16, :], 1.0)
    return out, s


def test_task_ids_collected_in_arrays_joined_and_passed_back_become_edges():
    x = np.ones((N * 16, 64), np.float32)
    out, s = np.zeros_like(x), np.zeros((16, 64), np.float32)
    fan_in(x, out, s, config=CFG)
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_array_equal(s, 2.0)
    # the producers overlap (no_dep_args); the consumer waits for tids 0 and 3 (the join) and 2
    assert [t.deps for t in fan_in.last_report.tasks] == [(), (), (), (), (0, 2, 3)]


def test_the_task_graph_is_printed_and_read_back():
    x = np.ones((N * 16, 64), np.float32)
    text = fan_in.lower(x, np.zeros_like(x), np.zeros((16, 64), np.float32), config=CFG).as_python()
    assert 'pl.system.task_of("tid")' in text and "pl.system.task_dummy(deps=[" in text
    assert parse_text(text).as_python() == text


@pl.jit
def manual(a: pl.Tensor[[N * 16, 64], pl.FP32], out: pl.Out[pl.Tensor[[N * 16, 64], pl.FP32]]):
    with pl.manual_scope():  # nothing inferred: the four writers of `out` overlap
        for i in pl.range(N):
            with pl.at(level=pl.Level.CORE_GROUP) as w:
                out[i * 16 : i * 16 + 16, :] = pl.muls(a[i * 16 : i * 16 + 16, :], 2.0)
    with pl.scope(mode=pl.ScopeMode.AUTO):  # noqa: SIM117 - a kernel region holds one scope each
        with pl.at(level=pl.Level.CORE_GROUP, deps=[w]):  # the manual tasks are not tracked
            out[0:16, :] = pl.adds(out[0:16, :], 1.0)
    return out


@pl.jit
def manual_forgotten(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.manual_scope():  # noqa: SIM117 - a kernel region holds one scope each
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:, :] = pl.muls(a, 2.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:, :] = pl.adds(out, 1.0)
    return out


def test_a_manual_scope_infers_no_dependency_and_a_forgotten_edge_is_a_race():
    a = np.ones((N * 16, 64), np.float32)
    out = np.zeros_like(a)
    manual(a, out, config=CFG)
    assert out[0, 0] == 3.0 and (out[16:] == 2.0).all()
    assert [t.deps for t in manual.last_report.tasks] == [(), (), (), (), (0, 1, 2, 3)]
    text = manual.lower(a, out, config=CFG).as_python()
    assert "with pl.manual_scope():" in text and "with pl.scope():" in text
    assert parse_text(text).as_python() == text
    from pypto.errors import RaceError

    with pytest.raises(RaceError, match="no dependency between them"):
        manual_forgotten(a[:16].copy(), np.zeros((16, 64), np.float32), config=CFG)


@pl.jit
def join_handles(
    x: pl.Tensor[[32, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    s: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]) as low:
        out[0:16, :] = pl.muls(x[0:16, :], 2.0)
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]) as high:
        out[16:32, :] = pl.muls(x[16:32, :], 3.0)
    done = pl.system.task_dummy(deps=[low, high])  # the `as` names themselves, listed
    with pl.at(level=pl.Level.CORE_GROUP, deps=[done]):
        s[:, :] = pl.adds(x[0:16, :], 1.0)
    return out, s


def test_task_dummy_joins_the_handles_of_earlier_scopes():
    x = np.ones((32, 64), np.float32)
    out, s = np.zeros_like(x), np.zeros((16, 64), np.float32)
    join_handles(x, out, s, config=CFG)
    np.testing.assert_array_equal(out[:16], 2.0)
    np.testing.assert_array_equal(out[16:], 3.0)
    np.testing.assert_array_equal(s, 2.0)
    assert [t.deps for t in join_handles.last_report.tasks] == [(), (), (0, 1)]
