"""The part of a run's tensor table after the arguments — the plan's scratch tensors
(``pl.create_tensor``), its views, and the read-only repeats of some entries — kept from one
run of a plan to the next.

A decode's plan has tens of thousands of small scratch tensors and views; made one numpy call
each, they cost a call 40 ms. Here the scratch tensors are views into one arena, set to their
initial values again before each run (one memset when they all start at +0), and every entry
that does not depend on the arguments is made once. The views of the arguments are made again
only when an argument's memory differs from the last run's: a view is a function of its base's
address, shape, strides, dtype and writability, so equal keys give views of the same bytes.

The views of the arguments are made over memory found by address, so the table keeps none of
the caller's arrays alive between calls. A table is used by one run at a time: its owner
(``CompiledProgram``, for its calls and warm calls) takes it for a run and keeps it afterwards,
so a run on another thread meanwhile makes its own.
"""

from __future__ import annotations

import ctypes
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from pypto.runtime.dtypes import INPUT, flagged
from pypto.runtime.marshal import scratch_dtype, scratch_fill, table_entry

Entry = tuple[np.ndarray, int]  # (array, flagged dtype code), as the run takes it
_ALIGN = 64  # each scratch tensor on its own cache lines, as the allocator's larger blocks are


class ScratchTable:
    """The table after ``n_params`` arguments for ``intermediates`` and ``extra`` (one plan)."""

    news: list[tuple]  # the "new" entries of intermediates: the arena's tensors
    arena: np.ndarray
    fills: list[tuple[np.ndarray, Any]]  # the tensors not starting at +0, with their values
    new_entries: list[Entry]
    clean: bool  # the arena holds the initial values
    released: bool  # let go of its arena (KeptTables): fits no plan

    def __init__(
        self,
        intermediates: Sequence[tuple],
        extra: Sequence[int],
        n_params: int,
        old: ScratchTable | None = None,
    ) -> None:
        """``old``: the table of the plan before (a replan), whose arena this one takes over
        when the plan makes the same scratch tensors."""
        self.intermediates, self.extra, self.n_params = intermediates, extra, n_params
        news = [e for e in intermediates if e[0] == "new"]
        self.released = False
        if old is not None and not old.released and old.news == news:  # a replan, the same scratch
            self.news, self.arena, self.fills, new_entries = old.news, old.arena, old.fills, old.new_entries
            self.clean = old.clean
        else:
            self.news = news
            self.arena, self.fills, new_entries = _arena(news)
            self.clean = True  # as made
        self.new_entries = new_entries
        # Entries of the tail made from the arguments (views of them, their repeats): made per
        # argument key; the others once, here.
        self.tail: list[Any] = [None] * (len(intermediates) + len(extra))
        self.derived: list[int] = []
        derived = [False] * n_params + [False] * len(intermediates)
        table: list[Any] = [None] * n_params
        fresh = iter(new_entries)
        for k, e in enumerate(intermediates):
            if e[0] == "new":
                entry = next(fresh)
            elif derived[e[1]] or e[1] < n_params:
                derived[n_params + k] = True
                self.derived.append(k)
                entry = None
            else:
                entry = table_entry(e, table)
            table.append(entry)
            self.tail[k] = entry
        m = len(intermediates)
        for r, j in enumerate(extra):
            if j < n_params or derived[j]:
                self.derived.append(m + r)
            else:
                self.tail[m + r] = (table[j][0], flagged(table[j][1], INPUT))
        self.key: list[tuple] | None = None  # the arguments the derived entries were made from

    def fits(self, intermediates: Sequence[tuple], extra: Sequence[int]) -> bool:
        return intermediates is self.intermediates and extra is self.extra and not self.released

    def release(self) -> None:
        """Lets go of the arena and the entries (kept tables past the process's budget): the
        table no longer fits any plan, and a later run makes a new one."""
        self.released = True
        self.arena = np.zeros(0, np.uint8)
        self.news, self.fills, self.new_entries, self.tail, self.derived = [], [], [], [], []

    def table(self, params: list[Entry]) -> list[Entry]:
        """The whole table for a run on ``params`` (the arguments' entries), the scratch
        tensors at their initial values."""
        if not self.clean:
            self.arena.fill(0)
            for array, value in self.fills:
                array.fill(value)
        self.clean = False  # the run may write it
        if self.derived:
            key = [_key(entry) for entry in params]
            if key != self.key:
                self._derive(params)
                self.key = key
        return params + self.tail

    def _derive(self, params: list[Entry]) -> None:
        """The entries made from the arguments, as views of arrays that do not own (nor keep
        alive) the arguments' memory: the table keeps them for the next run, which uses them
        only when its arguments lie at the same addresses, so no array of the caller's
        outlives its call here."""
        n, m, tail = self.n_params, len(self.intermediates), self.tail
        table = [(_unowned(array), code) for array, code in params] + tail  # a view's base comes first
        for k in self.derived:
            if k < m:
                table[n + k] = tail[k] = table_entry(self.intermediates[k], table)
            else:
                j = self.extra[k - m]
                table[n + k] = tail[k] = (table[j][0], flagged(table[j][1], INPUT))


class KeptTables:
    """The tables kept between runs, by all the programs of the process, within a budget of
    arena bytes: past it the least recently kept let go of theirs (``ScratchTable.release``),
    so many compiled programs with scratch tensors do not each hold theirs for good. A table
    taken for a run is never let go of meanwhile: only kept ones are."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._tables: OrderedDict[int, weakref.ref[ScratchTable]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, table: ScratchTable) -> None:
        """``table`` is in use by a run: not let go of until it is kept again."""
        with self._lock:
            self._tables.pop(id(table), None)

    def keep(self, table: ScratchTable) -> None:
        with self._lock:
            self._tables.pop(id(table), None)
            self._tables[id(table)] = weakref.ref(table)
            live = [(key, ref()) for key, ref in self._tables.items()]
            held = sum(t.arena.nbytes for _, t in live if t is not None)
            for key, t in live:
                if t is None:
                    del self._tables[key]
                elif held > self.budget and t is not table:
                    held -= t.arena.nbytes
                    t.release()
                    del self._tables[key]


# A decode's 85 MB of scratch and a few smaller programs'.
KEPT = KeptTables(256 << 20)


def _arena(news: list[tuple]) -> tuple[np.ndarray, list[tuple[np.ndarray, Any]], list[Entry]]:
    """One buffer holding every scratch tensor of ``news`` ("new" entries), each at its initial
    value: (the buffer, the tensors not starting at +0 with their fill values, the entries)."""
    offsets = []
    size = 0
    for _, shape, dtype, _init in news:
        offsets.append(size)
        size += -(-max(math.prod(shape) * scratch_dtype(dtype)[0].itemsize, 1) // _ALIGN) * _ALIGN
    arena = np.zeros(size + _ALIGN, np.uint8)
    start = -arena.ctypes.data % _ALIGN
    entries, fills = [], []
    for offset, (_, shape, dtype, init) in zip(offsets, news):
        storage, code = scratch_dtype(dtype)
        array = np.ndarray(shape, storage, buffer=arena, offset=start + offset)
        fill = scratch_fill(dtype, init)
        if fill is not None:
            array.fill(fill)
            fills.append((array, fill))
        entries.append((array, code))
    return arena, fills, entries


def _unowned(array: np.ndarray) -> np.ndarray:
    """``array`` over its memory, as found by address: an array that holds no reference to
    ``array``. The table's arguments are C-contiguous (marshal copies any other input and
    refuses any other output); one that is not is kept as it is rather than misread."""
    if not array.flags.c_contiguous:
        return array
    memory = (ctypes.c_char * array.nbytes).from_address(array.ctypes.data)
    view = np.ndarray(array.shape, array.dtype, buffer=memoryview(memory))
    view.flags.writeable = array.flags.writeable
    return view


def _key(entry: Entry) -> tuple:
    """What a view of ``entry``'s array depends on: its bytes' address and layout, and its code."""
    array, code = entry
    return (array.__array_interface__["data"], array.shape, array.strides, array.dtype, code)
