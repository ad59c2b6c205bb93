"""Progress of the long steps of a traced run (writing its traces, building its timeline):
a tqdm bar on a terminal when tqdm is installed, otherwise a log line (``logging.INFO``) at
each tenth of the work, so a run in a job log still says where it is."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("pypto.progress")


class Progress:
    """``update(n)`` after each piece of ``total``; ``bar`` is the tqdm bar, if any."""

    def __init__(self, what: str, total: int, unit: str, bar: Any) -> None:
        self.what, self.total, self.unit, self.bar = what, max(total, 1), unit, bar
        self.done = 0
        self._tenths = 0

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        tenths = min(10, 10 * self.done // self.total)
        if tenths > self._tenths:
            self._tenths = tenths
            log.info("%s: %d of %d %s (%d%%)", self.what, self.done, self.total, self.unit, 10 * tenths)


def _tqdm(what: str, total: int, unit: str) -> Any:
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, unit=unit, leave=False)


@contextmanager
def progress(what: str, total: int, unit: str) -> Iterator[Progress]:
    """``with progress("writing traces", kernels, "kernel") as p: ... p.update()``."""
    bar = _tqdm(what, total, unit)
    try:
        yield Progress(what, total, unit, bar)
    finally:
        if bar is not None:
            bar.close()
