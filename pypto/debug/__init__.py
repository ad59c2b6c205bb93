"""Debugging aids, as upstream PyPTO's ``pypto.debug``: ``torch_codegen`` turns a program's IR
into torch code (``run_torch`` runs it), to check the IR's meaning on the host apart from the
simulator."""

from __future__ import annotations

from pypto._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__, {"pypto.debug.torch_emit": ("run_torch", "torch_codegen")}
)
