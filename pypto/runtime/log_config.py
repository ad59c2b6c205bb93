"""``configure_log``: upstream PyPTO's one knob for the run-time log level.

pypto has one logger (``pypto``, see :mod:`pypto.logs`), so this sets its threshold. Levels are
upstream's: a ``logging`` int, or ``"debug"``, ``"v0"``..``"v9"`` (verbose: debug here),
``"info"``, ``"timing"`` (between info and warning), ``"warn"``/``"warning"``, ``"error"`` and
``"null"`` (nothing). ``sync_pypto`` is accepted: upstream keeps a second, C++ logger in step with
it; here there is only the one.
"""

from __future__ import annotations

import logging
import sys

from pypto.logs import LOGGER

TIMING = (logging.INFO + logging.WARNING) // 2
NULL = logging.CRITICAL + 10
_NAMED = {"debug": logging.DEBUG, "info": logging.INFO, "timing": TIMING, "warn": logging.WARNING,
          "warning": logging.WARNING, "error": logging.ERROR, "null": NULL}  # fmt: skip
_NAMED.update({f"v{k}": logging.DEBUG for k in range(10)})
_HANDLER = "pypto-configure-log"


def parse_level(level: int | str) -> int:
    """The ``logging`` threshold of an upstream level name or int (``ValueError`` naming them)."""
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise TypeError(f"log level must be an int or a level name, got {level!r}")
    if isinstance(level, int):
        if level < 0:
            raise ValueError(f"log level must be >= 0, got {level}")
        return level
    found = _NAMED.get(level.strip().lower())
    if found is None:
        raise ValueError(f"unknown log level {level!r}; one of: {', '.join(_NAMED)} (or a logging int)")
    return found


def configure_log(level: int | str, *, sync_pypto: bool = False) -> None:
    """Sets the ``pypto`` logger's threshold; below WARNING, with no logging configured by the
    application, its messages go to stderr."""
    threshold = parse_level(level)
    LOGGER.setLevel(threshold)
    ours = [h for h in LOGGER.handlers if h.get_name() == _HANDLER]
    if threshold < logging.WARNING and not logging.getLogger().handlers and not ours:
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER)
        handler.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(handler)
    elif threshold >= logging.WARNING:
        for h in ours:
            LOGGER.removeHandler(h)


def current_level() -> int:
    """The ``pypto`` logger's effective threshold."""
    return LOGGER.getEffectiveLevel()


log_level = current_level  # upstream's name in pypto.runtime
