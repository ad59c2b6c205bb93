"""Every environment variable pypto reads, typed, in one place.

Each knob is read when asked for, never at import time, so a test can ``monkeypatch.setenv``
and the next call sees the new value. Code elsewhere in pypto reads the environment only
through this module: ``knobs.cache_dir()``, ``knobs.build_jobs()``, ...

``python -m pypto.knobs`` prints every knob with its current value.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from pypto.errors import PyptoError

T = TypeVar("T")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Knob(Generic[T]):
    """One environment variable: its name, how to parse it, and its default when unset."""

    env: str
    parse: Callable[[str], T]
    default: Callable[[], T]
    doc: str

    def get(self) -> T:
        """The current value; an empty variable counts as unset."""
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default()
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise PyptoError(f"invalid environment variable {self.env}={raw!r}: {exc}") from None

    def is_set(self) -> bool:
        return bool(os.environ.get(self.env, "").strip())


def _parse_bool(raw: str) -> bool:
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected one of {sorted(_TRUE | _FALSE)}")


def _parse_positive_int(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError("expected an integer >= 1")
    return value


def _parse_dir(raw: str) -> Path:
    return Path(raw).expanduser().absolute()


CACHE_DIR: Knob[Path] = Knob(
    "PYPTO_CACHE_DIR",
    _parse_dir,
    lambda: Path.home() / ".cache" / "pypto",
    "Root of the on-disk caches: built kernels in <dir>/kernels/, compiled programs in <dir>/programs/.",
)
CXX: Knob[str | None] = Knob(
    "PYPTO_CXX",
    str,
    lambda: None,
    "C++ compiler for kernel builds, instead of the one recorded when pypto was built.",
)
BUILD_JOBS: Knob[int] = Knob(
    "PYPTO_BUILD_JOBS",
    _parse_positive_int,
    lambda: os.cpu_count() or 1,
    "Parallel compiler jobs for kernel builds (ninja -j). Default: the CPU count.",
)
KEEP_BUILD: Knob[bool] = Knob(
    "PYPTO_KEEP_BUILD",
    _parse_bool,
    lambda: False,
    "Keep the temporary kernel build directory (build.ninja, sources, logs) for debugging.",
)

VERIFY_PASSES: Knob[bool] = Knob(
    "PYPTO_VERIFY_PASSES",
    _parse_bool,
    lambda: True,
    "Run the IR verifier after every compiler pass (cheap; turn off only to time passes).",
)

SIM_THREADS: Knob[int] = Knob(
    "PYPTO_SIM_THREADS",
    _parse_positive_int,
    lambda: 2,
    "Host threads of a simulation run (read by the native runtime at each run): 2 or more does "
    "the ops' data work on a second thread beside the timing model; 1 keeps it on one thread. "
    "Outputs and cycles are the same either way.",
)

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _parse_level(raw: str) -> str:
    value = raw.upper()
    if value not in _LEVELS:
        raise ValueError(f"expected one of {', '.join(_LEVELS)}")
    return value


LOG_LEVEL: Knob[str] = Knob(
    "PYPTO_LOG_LEVEL",
    _parse_level,
    lambda: "WARNING",
    "Level of pypto's log messages shown on stderr (INFO also shows the perf-hint summary of "
    "a recompile whose hints did not change).",
)

ALL: tuple[Knob, ...] = (CACHE_DIR, CXX, BUILD_JOBS, KEEP_BUILD, VERIFY_PASSES, SIM_THREADS, LOG_LEVEL)


def cache_dir() -> Path:
    """``$PYPTO_CACHE_DIR``, default ``~/.cache/pypto``, as an absolute path."""
    return CACHE_DIR.get()


def cxx() -> str | None:
    """``$PYPTO_CXX``: the compiler override, or None to use the recorded compiler."""
    return CXX.get()


def build_jobs() -> int:
    """``$PYPTO_BUILD_JOBS``: parallel compile jobs, default the CPU count."""
    return BUILD_JOBS.get()


def keep_build() -> bool:
    """``$PYPTO_KEEP_BUILD``: keep temporary build directories."""
    return KEEP_BUILD.get()


def verify_passes() -> bool:
    """``$PYPTO_VERIFY_PASSES``: verify the IR after each pass (default on)."""
    return VERIFY_PASSES.get()


def log_level() -> str:
    """``$PYPTO_LOG_LEVEL``: DEBUG, INFO, WARNING (default), ERROR or CRITICAL."""
    return LOG_LEVEL.get()


def describe() -> str:
    """One line per knob: name, current value, and what it does."""
    return "\n".join(f"{k.env}={k.get()!s}  # {k.doc}" for k in ALL)


if __name__ == "__main__":
    print(describe())
