"""Package attributes loaded on first use, so that importing a package stays cheap.

A package lists the modules that define what it exports, and the names each one gives:
``__all__, __getattr__, __dir__ = lazy_exports(__name__, {module: (name, ...), ...})``; a
name's module is imported when the name is first read.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def lazy_exports(
    package: str, modules: dict[str, tuple[str, ...]], submodules: bool = False
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__all__``, ``__getattr__`` and ``__dir__`` of ``package``, which exports the names
    of ``modules`` (dotted module path -> names). With ``submodules``, any other name is tried
    as a submodule (``package.name``) before it is refused."""
    home = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name in home:
            return getattr(importlib.import_module(home[name]), name)
        if submodules:
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return sorted(home), __getattr__, __dir__
