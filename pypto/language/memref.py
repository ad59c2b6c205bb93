"""What ``pl.MemRef(...)`` returns, apart from :mod:`pypto.language.annotations` because it
is a subclass of the IR's MemRef: ``import pypto.language`` loads no IR types until a kernel
spells a memref."""

from __future__ import annotations

from pypto.ir.types import MemRef as _IRMemRef

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class MemRefDecl(_IRMemRef):
    """What ``pl.MemRef(...)`` returns: the buffer, subscripted to pick a slot (``m[i % 2]``)
    into the IR's :class:`pypto.ir.types.MemRef`."""

    def __getitem__(self, index: Any) -> _IRMemRef:
        from pypto.ir.expr import as_expr  # lazy: the IR's expressions load with the compiler

        return ir_memref(self).at(as_expr(index))


def ir_memref(ref: _IRMemRef) -> _IRMemRef:
    """The IR value of a memref spelled in the DSL (a ``MemRefDecl`` becomes a plain MemRef)."""
    if type(ref) is _IRMemRef:
        return ref
    return _IRMemRef(ref.name, ref.slots, ref.index, ref.offset, ref.size)
