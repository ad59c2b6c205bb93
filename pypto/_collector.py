"""Python's cycle collector held off around work that makes many short-lived objects and no
cycles worth collecting: a launch plan of thousands of tasks. Each of the collector's passes
walks every live container, and their number grows with the objects made, so on a decode of
16,448 tasks the passes took a quarter of the call. Cycles made meanwhile are collected by the
next pass after it."""

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
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
