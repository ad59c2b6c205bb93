"""Python's cycle collector held off around work that makes many short-lived objects and no
cycles worth collecting: a launch plan of thousands of tasks. Each of the collector's passes
walks every live container, and their number grows with the objects made, so on a decode of
16,448 tasks the passes took a quarter of the call.

What the block made and kept (the plan: some 370 thousand tuples, sets and instances for that
decode) would then all be young, and the first pass after it would walk them all (0.15-0.26 s
of a 3 s call). They are moved to the oldest generation instead (``gc.freeze`` then
``gc.unfreeze``, which puts the frozen objects back there), so only a full collection looks at
them: cycles made in the block are still collected, by that one (a call of that decode makes
none). The caller's young objects are collected first (a young pass, ~0.3 ms when a compile
plans), so its garbage cycles are not among those moved, which would keep them until a full
collection. A process that froze objects of its own (a pre-fork server) keeps them frozen:
then nothing is moved."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(pause: bool = True) -> Iterator[None]:
    """The collector off for the block when ``pause`` and it was on (left as found after)."""
    if not pause or not gc.isenabled():
        yield
        return
    aging = not gc.get_freeze_count()
    if aging:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if aging and not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        gc.enable()
