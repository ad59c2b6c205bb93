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
        raw = _read(self.env)
        if not raw:
            return self.default()
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise PyptoError(f"invalid environment variable {self.env}={raw!r}: {exc}") from None

    def is_set(self) -> bool:
        return bool(_read(self.env))


_KEYS: dict[str, object] = {}  # a variable's name as os.environ's dict keys it


def _read(name: str) -> str:
    """``os.environ.get(name, "").strip()``. Some knobs are read on every warm kernel call, and
    ``os.environ.get`` of an unset variable raises and catches a KeyError (about a
    microsecond); the environment's own dict (kept in step by ``os.environ[...] = ...``,
    ``putenv`` aside, as ``os.environ`` itself is) answers a miss without one."""
    data = getattr(os.environ, "_data", None)
    if data is None:  # not CPython's os.environ on POSIX: the ordinary lookup
        return os.environ.get(name, "").strip()
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = os.environ.encodekey(name)
    raw = data.get(key)
    return "" if raw is None else os.environ.decodevalue(raw).strip()


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


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _parse_size(raw: str) -> int:
    """``500M``, ``2G``, ``1048576``: bytes (binary units; a trailing ``B``/``iB`` is allowed)."""
    text = raw.upper().removesuffix("IB").removesuffix("B").strip()
    unit = text[-1:] if text[-1:] in _SIZE_UNITS else ""
    number = float(text[: len(text) - len(unit)])
    if not number >= 0 or number == float("inf"):
        raise ValueError("expected a size such as 2G, 500M or a number of bytes")
    return int(number * _SIZE_UNITS[unit])


def _default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg and Path(xdg).expanduser().is_absolute() else Path.home() / ".cache"
    return (base / "pypto").absolute()


CACHE_DIR: Knob[Path] = Knob(
    "PYPTO_CACHE_DIR",
    _parse_dir,
    _default_cache_dir,
    "Root of the on-disk caches (built kernels, compiled programs, run folders; see "
    "`python -m pypto.cache info`). Default: $XDG_CACHE_HOME/pypto, else ~/.cache/pypto.",
)
CACHE_MAX_BYTES: Knob[int] = Knob(
    "PYPTO_CACHE_MAX_BYTES",
    _parse_size,
    lambda: 2 << 30,
    "Size cap of the cache folder (2G, 500M, bytes; 0: no cap). Past it, the least recently used "
    "entries are removed after a build. Default 2G.",
)
ALWAYS_COMPILE: Knob[bool] = Knob(
    "PYPTO_ALWAYS_COMPILE",
    _parse_bool,
    lambda: False,
    "Never reuse a compile from the disk caches: each program is compiled and its kernels built "
    "again once per process (also pypto.knobs.always_compile = True).",
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
    "Parallel compiler commands of a kernel build. Default: the CPU count.",
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

ALL: tuple[Knob, ...] = (
    CACHE_DIR,
    CACHE_MAX_BYTES,
    ALWAYS_COMPILE,
    CXX,
    BUILD_JOBS,
    KEEP_BUILD,
    VERIFY_PASSES,
    SIM_THREADS,
    LOG_LEVEL,
)

# Set to True (or False) in a program to override $PYPTO_ALWAYS_COMPILE; None defers to it.
always_compile: bool | None = None


def cache_dir() -> Path:
    """``$PYPTO_CACHE_DIR``, default ``$XDG_CACHE_HOME/pypto`` or ``~/.cache/pypto``, absolute."""
    return CACHE_DIR.get()


def cache_max_bytes() -> int:
    """``$PYPTO_CACHE_MAX_BYTES``: the cache folder's size cap in bytes (0: none), default 2 GiB."""
    return CACHE_MAX_BYTES.get()


def recompile() -> bool:
    """Whether compiles skip the disk caches: ``pypto.knobs.always_compile`` when set, else
    ``$PYPTO_ALWAYS_COMPILE``."""
    return always_compile if always_compile is not None else ALWAYS_COMPILE.get()


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
