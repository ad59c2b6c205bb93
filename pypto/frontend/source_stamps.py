"""The state of each kernel's file when the kernel was defined, so a parse can refuse source
that changed on disk since. Apart from :mod:`pypto.frontend.source`: the decorators record a
stamp at every kernel definition, which must not load the parser's imports (``ast``,
``inspect``, ``dataclasses``)."""

from __future__ import annotations

import os

from pypto.errors import CompileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STAMPS: dict[Any, tuple[int, int]] = {}


def _stamp(file: str) -> tuple[int, int] | None:
    try:
        st = os.stat(file)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def remember_source(fn: Any) -> None:
    """Record the state of ``fn``'s file when it is defined (called by the decorators)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        stamp = _stamp(code.co_filename)
        if stamp is not None:
            _STAMPS[code] = stamp


def check_unchanged(fn: Any, file: str) -> None:
    """Refuse to parse a kernel whose file changed on disk since the kernel was defined."""
    code = getattr(fn, "__code__", None)
    then = _STAMPS.get(code)
    if code is None or then is None or _stamp(code.co_filename) in (then, None):
        return
    raise CompileError(
        f"the source of kernel {fn.__name__!r} changed on disk after it was imported ({file}); "
        "the running Python still has the old definition — reload the module "
        "(importlib.reload) or restart to compile the new source"
    )
