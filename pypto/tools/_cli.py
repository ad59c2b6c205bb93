"""What the report-writing commands share: how a write ends."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def write_report(write: Callable[[], Path], errors: tuple[type[Exception], ...]) -> int:
    """The exit status of a command that writes one file: 0 after printing where ``write()``
    wrote it, 1 after printing the error, for the expected failures in ``errors``."""
    try:
        out = write()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0
