"""The hot-spot table from a task's records (pypto.report.hotspots.chunk_of: one native pass
over the row-major table): per source line and pipe, the cycles and count of its operations,
flag and barrier rows left out, equal to summing the rows one by one; a row whose source-line
id or pipe is out of range is an error naming it. A report keeps its table until a task is
given other records."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pypto.report.hotspots import NO_LINE, chunk_of, chunks_of, hot_lines
from pypto.report.run_report import PIPES, RECORD_COLUMNS, InstrTrace, RunReport, TaskReport

COL = {name: i for i, name in enumerate(RECORD_COLUMNS)}


def records(rows: int, seed: int) -> dict:
    """A records table with operations and sync rows over a few lines and pipes."""
    rng = np.random.default_rng(seed)
    table = np.zeros((rows, len(RECORD_COLUMNS)), np.int64)
    table[:, COL["kind"]] = rng.choice([0, 0, 0, 1, 2, 3], rows)
    table[:, COL["pipe"]] = rng.integers(0, len(PIPES), rows)
    table[:, COL["start"]] = rng.integers(0, 1 << 40, rows)
    table[:, COL["end"]] = table[:, COL["start"]] + rng.integers(0, 5000, rows)
    strings = ["", "k.py:3:5", "k.py:4:9", "k.py:7:1"]
    loc = rng.integers(0, len(strings), rows).astype(np.int32)
    return {"table": table, "name_id": np.zeros(rows, np.int32), "loc_id": loc, "strings": strings}


def by_rows(raws: list[dict]) -> dict[tuple[str, str], list[int]]:
    sums: dict[tuple[str, str], list[int]] = {}
    for raw in raws:
        for row, loc in zip(raw["table"].tolist(), raw["loc_id"].tolist()):
            if row[COL["kind"]] != 0:
                continue
            slot = sums.setdefault((raw["strings"][loc] or NO_LINE, PIPES[row[COL["pipe"]]]), [0, 0])
            slot[0] += row[COL["end"]] - row[COL["start"]]
            slot[1] += 1
    return sums


def test_the_native_sums_equal_the_rows_summed_one_by_one():
    raws = [records(5000, 1), records(3000, 2), records(0, 3)] + [records(6, seed) for seed in range(4, 200)]
    rows = hot_lines([chunk_of(r) for r in raws])
    assert {(r.source, r.pipe): [r.cycles, r.count] for r in rows} == by_rows(raws)
    # a task's sums are added as they are; any other chunk is summed per site first: one table
    assert hot_lines([dataclasses.replace(chunk_of(r), summed=False) for r in raws]) == rows
    assert [r.cycles for r in rows] == sorted((r.cycles for r in rows), reverse=True)
    assert abs(sum(r.share for r in rows) - 1.0) < 1e-9


def test_short_tasks_of_one_string_table_summed_together_equal_each_summed_alone():
    """Short tasks sharing a string table take one pass over their tables joined; long ones and
    other tables their own: the table is the same as from a pass per task, and a bad row of a
    joined table is still named by its own task's row."""
    raws = [records(5000, 1), records(0, 3)] + [records(6, seed) for seed in range(4, 200)]
    raws += [{**records(9, seed), "strings": ["", "m.py:1:1", "m.py:2:2", "m.py:3:3"]} for seed in range(3)]
    chunks = chunks_of(raws)
    assert len(chunks) == 3  # the long task, and one per string table of the short ones
    assert hot_lines(chunks) == hot_lines([chunk_of(r) for r in raws])
    bad = records(8, 300)
    bad["table"][:, COL["kind"]] = 0
    bad["loc_id"][5] = len(bad["strings"])
    with pytest.raises(IndexError, match="records row 5: its source-line id or pipe is out of range"):
        chunks_of([records(7, 301), bad])


def test_a_row_out_of_range_is_named():
    raw = records(100, 4)
    raw["table"][:, COL["kind"]] = 0
    raw["loc_id"][57] = len(raw["strings"])
    with pytest.raises(IndexError, match="records row 57: its source-line id or pipe is out of range"):
        chunk_of(raw)
    raw = records(100, 5)
    raw["table"][:, COL["kind"]] = 0
    raw["table"][12, COL["pipe"]] = len(PIPES)
    with pytest.raises(IndexError, match="records row 12"):
        chunk_of(raw)


def test_a_report_keeps_its_table_until_a_task_gets_other_records(monkeypatch: pytest.MonkeyPatch):
    tasks = [TaskReport("k", core, 0, 10, {}, 400) for core in range(2)]
    for t, seed in zip(tasks, (6, 7)):
        t.trace = InstrTrace(records(400, seed))
    report = RunReport("a2a3sim", 10, {}, 800, tasks)
    passes = []
    monkeypatch.setattr(
        "pypto.report.hotspots.chunks_of", lambda raws: passes.append(raws) or chunks_of(raws)
    )
    first = report.hot_lines()
    assert report.hot_lines() == first and report.hot_lines(top=2) == first[:2] and len(passes) == 1
    report.hot_lines().clear()  # a caller's list, not the kept one
    assert report.hot_lines() == first
    tasks[1].trace = InstrTrace(records(400, 8))  # as attach_records gives a task its records
    again = report.hot_lines()
    assert len(passes) == 2
    sums = {(r.source, r.pipe): [r.cycles, r.count] for r in again}
    assert sums == by_rows([records(400, 6), records(400, 8)])
