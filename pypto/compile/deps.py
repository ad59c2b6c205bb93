"""Which earlier tasks of the launch plan a new task must follow.

A task follows every earlier task that wrote a window of a buffer it reads or writes, or read
a window of a buffer it writes, where the two windows overlap; except that writers which
only add atomically into a buffer commute, the iterations of one ``pl.parallel`` loop run are
independent, and an untracked tensor (``no_dep_args=``, ``manual_dep``) orders nothing.
A window is a box of the buffer in its own element coordinates: an orchestration
``pl.slice`` of it (of a slice, ...); anything else — a kernel's own windows, a reshape — is
the whole buffer, which overlaps every window of it.

The index keeps, per buffer and window, the tasks that read and that wrote it as Python ints
used as bit sets (bit i: task i), so each new task looks only at the windows of the buffers
it uses and combines task sets in C, never walking the earlier tasks one by one: a plan of
tens of thousands of tasks (a paged-attention decode over a batch) is made in time about
linear in its tasks.
"""

from __future__ import annotations

import bisect
from dataclasses import field
from typing import NamedTuple

import numpy as np

from pypto._dataclass import dataclass

# A window: per dim, [start, stop) in the buffer's element coordinates; None: the whole buffer.
Box = tuple[tuple[int, int], ...] | None


class Use(NamedTuple):
    """One tracked use of a buffer (``root``: its table index) by a task. A tuple: a plan makes
    a few per task, and a frozen dataclass's ``__init__`` cost several times a tuple's."""

    root: int
    box: Box
    reads: bool
    writes: bool


def overlap(a: Box, b: Box) -> bool:
    """Whether two windows of one buffer share an element."""
    if a is None or b is None:
        return True
    return all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(a, b))


class _Window:
    __slots__ = ("readers", "writers")

    def __init__(self) -> None:
        self.readers = 0
        self.writers = 0


class _Buffer:
    """The tasks that used windows of one buffer: by window, and all of them (a use of the whole
    buffer overlaps every window), with the windows ordered by where they start on the first
    dim (a box overlaps only those starting less than the longest window's length before it).
    Slotted and built by hand: a plan makes one per intermediate, thousands of them."""

    __slots__ = ("windows", "starts", "boxes", "longest", "all", "atomic")

    def __init__(self) -> None:
        self.windows: dict[Box, _Window] = {}
        self.starts: list[tuple[int, int]] = []  # (first-dim start, window number)
        self.boxes: list[Box] = []  # the windows with a box, by number
        self.longest = 0  # the longest window on the first dim
        self.all = _Window()
        self.atomic = 0  # the tasks that only added into it atomically

    def overlapping(self, box: Box) -> list[_Window]:
        if box is None:
            return [self.all]
        found = [self.windows[None]] if None in self.windows else []
        lo, hi = box[0]
        starts = self.starts
        # By index, not over a slice: a slice would copy the whole tail of a buffer's windows
        # (thousands: a KV cache read block by block) to look at the one or two that overlap.
        i, end = bisect.bisect_left(starts, (lo - self.longest + 1, -1)), len(starts)
        while i < end:
            start, n = starts[i]
            if start >= hi:
                break
            if overlap(box, self.boxes[n]):
                found.append(self.windows[self.boxes[n]])
            i += 1
        return found

    def window(self, box: Box) -> _Window:
        w = self.windows.get(box)
        if w is None:
            w = self.windows[box] = _Window()
            if box is not None:
                bisect.insort(self.starts, (box[0][0], len(self.boxes)))
                self.boxes.append(box)
                self.longest = max(self.longest, box[0][1] - box[0][0])
        return w


@dataclass
class DepIndex:
    """The tasks submitted so far, by the windows they used (see the module's text)."""

    buffers: dict[int, _Buffer] = field(default_factory=dict)
    loops: dict[int, int] = field(default_factory=dict)  # pl.parallel loop run -> its tasks
    iterations: dict[tuple[int, int], int] = field(default_factory=dict)  # (run, iteration) -> tasks
    count: int = 0

    def follow(
        self, uses: list[Use], atomic: frozenset[int], parallel: list[tuple[int, int]]
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """The earlier tasks a task with ``uses`` must follow, in order, and its write gates:
        the (task, buffer) pairs of those that share only buffers both add into atomically
        (``atomic``: the buffers this task writes only so), which gate its writes, not its
        start. ``parallel``: the (loop run, iteration) of each pl.parallel loop it is in."""
        siblings = 0
        for run, it in parallel:
            siblings |= self.loops.get(run, 0) & ~self.iterations.get((run, it), 0)
        if not atomic:  # the common case: every buffer orders alike, so one set for all of them
            return members(self._found(uses, siblings)), []
        shared: dict[int, int] = {}  # buffer -> the earlier tasks it orders this one after
        for u in uses:
            buffer = self.buffers.get(u.root)
            if buffer is None:
                continue
            found = self._found((u,), siblings)
            if u.root in atomic and buffer.atomic:
                found &= ~buffer.atomic
            shared[u.root] = shared[u.root] | found if u.root in shared else found
        ordered = plain = 0
        for root, tasks in shared.items():
            ordered |= tasks
            if root not in atomic:
                plain |= tasks
        gated = members(ordered & ~plain)  # tasks that share only atomically added buffers
        gates = [(i, root) for i in gated for root in sorted(atomic) if shared.get(root, 0) >> i & 1]
        return members(ordered), gates

    def _found(self, uses: tuple[Use, ...] | list[Use], siblings: int) -> int:
        """The earlier tasks whose windows conflict with ``uses``, but ``siblings``. Each
        operation on a set makes a new int as long as the plan so far: none is made for
        nothing (an or with an empty set, a mask of no siblings)."""
        found = 0
        for u in uses:
            buffer = self.buffers.get(u.root)
            if buffer is None:
                continue
            for w in buffer.overlapping(u.box):
                if w.writers:
                    found |= w.writers
                if u.writes and w.readers:
                    found |= w.readers
        if siblings and found:
            found &= ~siblings
        return found

    def add(self, uses: list[Use], atomic: frozenset[int], parallel: list[tuple[int, int]]) -> None:
        """Index the next task (number ``count``)."""
        bit = 1 << self.count
        self.count += 1
        buffers = self.buffers
        for root, box, reads, writes in uses:
            buffer = buffers.get(root)
            if buffer is None:  # (setdefault would make a _Buffer for every use)
                buffer = buffers[root] = _Buffer()
            window, whole = buffer.window(box), buffer.all
            if reads:
                window.readers |= bit
                whole.readers |= bit
            if writes:
                window.writers |= bit
                whole.writers |= bit
            if root in atomic:
                buffer.atomic |= bit
        for run, it in parallel:
            self.loops[run] = self.loops.get(run, 0) | bit
            self.iterations[(run, it)] = self.iterations.get((run, it), 0) | bit


def members(bits: int) -> list[int]:
    """The set bits of ``bits``, ascending. A task set may hold thousands of tasks, but a
    task mostly follows a few recent ones: when they lie within 64 tasks of each other they
    are read from that stretch alone (three operations on the long int); a few dozen spread
    further (a decode's end of batch follows its blocks' tasks) are found in the stretch's
    binary text, one search each (three times numpy's speed there); more are unpacked by numpy
    (every bit of a 16,448-task set one by one took a tenth of a decode's plan)."""
    if not bits:
        return []
    first = (bits & -bits).bit_length() - 1
    stretch = bits >> first
    if stretch.bit_length() <= 64:
        out = []
        while stretch:
            low = stretch & -stretch
            out.append(first + low.bit_length() - 1)
            stretch ^= low
        return out
    if bits.bit_count() <= 64:
        text = bin(stretch)[:1:-1]  # bit i of the stretch is character i
        out = []
        i = text.find("1")
        while i >= 0:
            out.append(first + i)
            i = text.find("1", i + 1)
        return out
    raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), np.uint8)
    return np.unpackbits(raw, bitorder="little").nonzero()[0].tolist()
