"""Which earlier tasks of the launch plan a new task must follow.

A task follows every earlier task that wrote a window of a buffer it reads or writes, or read
a window of a buffer it writes, where the two windows overlap; except that writers which
only add atomically into a buffer commute, the iterations of one ``pl.parallel`` loop run are
independent, and an untracked tensor (``no_dep_args=``, ``manual_dep``) orders nothing.
A window is a box of the buffer in its own element coordinates: an orchestration
``pl.slice`` of it (of a slice, ...); anything else — a kernel's own windows, a reshape — is
the whole buffer, which overlaps every window of it. Of the earlier tasks a task follows, those
it shares only buffers both add into atomically with gate its adds, not its start (its write
gates: (task, buffer) pairs).

The index (:class:`DepIndex`, native: ``csrc/compile/dep_index.hpp``) keeps, per buffer and
window, the tasks that read and that wrote it as bit sets, so each new task looks only at the
windows of the buffers it uses, those of a buffer searched by where they start, and combines
task sets a word at a time, never walking the earlier tasks one by one: a plan of tens of
thousands of tasks (a paged-attention decode over a batch) is made in time about linear in its
tasks. It was a Python class; a decode's plan spent a third of its time in it.
"""

from __future__ import annotations

from typing import NamedTuple

from pypto import _native

# A window: per dim, [start, stop) in the buffer's element coordinates; None: the whole buffer.
Box = tuple[tuple[int, int], ...] | None

# DepIndex().submit(uses, atomic, parallel) -> (the earlier tasks to follow, ascending; the
# write gates), the task then indexed as the next one. ``atomic``: the buffers the task writes
# only by atomic adds; ``parallel``: the (loop run, iteration) of each pl.parallel loop it is in.
DepIndex = _native.DepIndex


class Use(NamedTuple):
    """One tracked use of a buffer (``root``: its table index) by a task. A tuple: a plan makes
    a few per task, and the index reads them as tuples."""

    root: int
    box: Box
    reads: bool
    writes: bool
