"""``@pl.jit.extern``: upstream PyPTO's spelling of a hand-written C++ kernel.

It declares the same thing as ``@pl.function(type=..., external_source=...)`` and goes through
the same build: the signature says what the orchestration passes (parameter order and
directions); the ``.cpp`` exports ``kernel_entry`` against ``<pypto/kernel.hpp>``. Paths are
absolute or relative to the file defining the declaration and are checked at once (a missing
file or folder is a ``ValueError`` naming it, as upstream).

``core_type="mixed"`` (a hand-written AIC + AIV pair dispatched as one cluster task) is refused:
pypto builds cluster kernels from the DSL only. ``dual_aiv_dispatch`` belongs to that form.
"""

from __future__ import annotations

import os

from pypto.ir.enums import FunctionType

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

_KINDS = {"aiv": FunctionType.AIV, "aic": FunctionType.AIC}


def _base(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    name = getattr(code, "co_filename", "")
    return os.path.dirname(os.path.abspath(name)) if name and not name.startswith("<") else os.getcwd()


def _file(path: Any, fn: Any) -> str:
    full = os.path.abspath(os.path.join(_base(fn), os.fspath(path)))
    if not os.path.isfile(full):
        raise ValueError(
            f"@pl.jit.extern source file not found: {full} (give an absolute path or one relative "
            "to the file defining the kernel)"
        )
    return full


def _dirs(include_dirs: Sequence[Any] | None, fn: Any) -> tuple[str, ...]:
    if include_dirs is None:
        return ()
    if isinstance(include_dirs, (str, bytes, os.PathLike)):
        raise TypeError(f"@pl.jit.extern include_dirs must be a list of paths, got {include_dirs!r}")
    found = []
    for d in include_dirs:
        full = os.path.abspath(os.path.join(_base(fn), os.fspath(d)))
        if not os.path.isdir(full):
            raise ValueError(f"@pl.jit.extern include directory not found: {full}")
        found.append(full)
    return tuple(found)


def extern(
    fn: Callable[..., Any] | None = None,
    *,
    core_type: str = "aiv",
    source: Any = None,
    aic_source: Any = None,
    aiv_source: Any = None,
    dual_aiv_dispatch: bool = False,
    include_dirs: Sequence[Any] | None = None,
) -> Any:
    """The declaration of a hand-written kernel (see the module docstring)."""
    from pypto.language.decorators import KernelFunction

    if core_type not in ("aic", "aiv", "mixed"):
        raise ValueError(f"@pl.jit.extern core_type must be 'aic', 'aiv' or 'mixed', got {core_type!r}")
    if dual_aiv_dispatch and core_type != "mixed":
        raise ValueError("@pl.jit.extern dual_aiv_dispatch=True requires core_type='mixed'")
    if core_type == "mixed":
        raise ValueError(
            "@pl.jit.extern(core_type='mixed'): a hand-written AIC + AIV pair is not supported; "
            "declare a single-core kernel (core_type='aic' or 'aiv'), or write the pair in the DSL"
        )

    def make(f: Callable[..., Any]) -> Any:
        single = source if source is not None else (aic_source if core_type == "aic" else aiv_source)
        if single is None:
            raise ValueError(f"@pl.jit.extern(core_type={core_type!r}) requires source=")
        return KernelFunction(f, _KINDS[core_type], _file(single, f), _dirs(include_dirs, f))

    return make if fn is None else make(fn)
