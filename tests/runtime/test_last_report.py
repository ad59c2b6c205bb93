"""A compiled program's call keeps its RunReport to be built when first read: the report of the
task list that call ran, even when a later run of the program planned another."""

from __future__ import annotations

import numpy as np
from read_kernels import first_n

from pypto.runtime import RunConfig


def _args(n: int) -> tuple:
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    return np.full((1, 8), n, np.int32), x, np.zeros_like(x)


def test_a_calls_report_is_of_the_task_list_it_ran(tmp_path):
    compiled = first_n.compile(*_args(3), config=RunConfig(output_dir=tmp_path))
    assert compiled.last_report is None
    args = _args(3)
    compiled(*args)
    np.testing.assert_array_equal(args[2][:3], 2 * args[1][:3])
    later = compiled.run(*_args(6))  # planned again: six tasks
    assert [t.deps for t in later.tasks] == [tuple(range(k)) for k in range(6)]
    report = compiled.last_report  # built now, from the three-task call
    assert [t.deps for t in report.tasks] == [(), (0,), (0, 1)]
    assert report.cycles > 0 and compiled.last_report is report
