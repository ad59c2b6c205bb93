r"""Cheap stand-ins for three standard modules, for paths that must start fast.

A new process whose first call is served from the program cache must not pay for modules
only a compile needs: ``logging`` (a few milliseconds to import) and ``hashlib`` (which loads
OpenSSL's libcrypto). The SHA-256 here is CPython's built-in one (same digests as OpenSSL's).
``import pypto.language`` must not pay for ``dataclasses`` (which imports ``inspect``, ``ast``
and ``re``: half that import's time), so its few value classes are :class:`Record`\ s.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # annotations only: importing typing would cost pypto.language ~3 ms
if TYPE_CHECKING:
    from typing import Any

try:
    from _sha256 import sha256  # type: ignore[import-not-found]  # CPython <= 3.11
except ImportError:  # pragma: no cover - newer CPython names it _sha2; else OpenSSL's
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256

__all__ = ["Logger", "Record", "sha256"]

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


class Record:
    """Base of a small frozen value class, standing in for ``@dataclass(frozen=True)``.

    A subclass names its fields in ``__slots__`` (in order) and sets them in its ``__init__``
    with ``object.__setattr__``; equality, hash, repr, pickling and immutability are by those
    fields, as a frozen dataclass's are. Not for IR nodes: the IR's walkers and structural
    equality go through ``dataclasses.fields``.
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._values()
