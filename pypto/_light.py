"""Cheap stand-ins for two standard modules, for paths that must start fast.

A new process whose first call is served from the program cache must not pay for modules
only a compile needs: ``logging`` (a few milliseconds to import) and ``hashlib`` (which loads
OpenSSL's libcrypto). The SHA-256 here is CPython's built-in one (same digests as OpenSSL's).
"""

from __future__ import annotations

import sys
from typing import Any

try:
    from _sha256 import sha256  # type: ignore[import-not-found]  # CPython <= 3.11
except ImportError:  # pragma: no cover - newer CPython names it _sha2; else OpenSSL's
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256

__all__ = ["Logger", "sha256"]

_QUIET = frozenset({"debug", "info", "isEnabledFor"})


class Logger:
    """``logging.getLogger(name)``, imported on first use.

    While ``logging`` was never imported nobody configured it, so its root level is WARNING
    and ``debug``/``info`` records would be dropped: they are dropped here without the import.
    Everything else (``warning``, ``error``, levels) goes to the real logger.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr in _QUIET and "logging" not in sys.modules:
            return _drop if attr != "isEnabledFor" else _never
        import logging

        return getattr(logging.getLogger(self._name), attr)


def _drop(*_args: Any, **_kwargs: Any) -> None:
    return None


def _never(_level: int) -> bool:
    return False
