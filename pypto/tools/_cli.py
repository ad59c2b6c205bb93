"""What the commands share: how a write ends, and how any failure ends."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path


def write_report(write: Callable[[], Path], errors: tuple[type[Exception], ...]) -> int:
    """The exit status of a command that writes one file: 0 after printing where ``write()``
    wrote it, 1 after printing the error, for the expected failures in ``errors``."""
    try:
        out = write()
    except errors as e:
        print(f"error: {error_line(e)}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


def error_line(e: BaseException) -> str:
    """An error's message as one line: its first (a source error's next line repeats the
    offending source, which its ``file:line:col`` already points at)."""
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def guarded(main: Callable[[list[str] | None], int]) -> Callable[..., int]:
    """A command's ``main`` that ends every failure the same way, whatever the input: one
    ``error: ...`` line on stderr and exit status 1 (130 for Ctrl-C), never a traceback. The
    commands name the expected problems themselves; this catches what hostile input reaches
    past them (a document nested too deeply to read, a field of the wrong type)."""

    @functools.wraps(main)
    def run(argv: list[str] | None = None) -> int:
        try:
            return main(argv)
        except KeyboardInterrupt:
            print("error: interrupted", file=sys.stderr)
            return 130
        except RecursionError:
            print("error: the input is nested too deeply to read", file=sys.stderr)
            return 1
        except MemoryError:
            print("error: the input is too large to read in memory", file=sys.stderr)
            return 1
        except Exception as e:  # noqa: BLE001 - the point: no input may end in a traceback
            text = " ".join(str(e).split()) or "no details"
            print(
                f"error: the input is not what this command reads ({type(e).__name__}: {text})",
                file=sys.stderr,
            )
            return 1

    return run
