"""What an op family declares, in one record: its ops, their ``pl.*`` spellings, their C++
emitters and the C entry points of the native ISA that run them.

A family module (``pypto/ops/sort.py``) builds one :class:`Family`; the op table
(:mod:`pypto.ir.ops`), the emitter table (:mod:`pypto.codegen.emitters`) and the kernel headers
(:mod:`pypto.ops.header`) read every family listed in :data:`pypto.ops.FAMILY_MODULES`. So an op
of a family is added in its family module, its C++ file in ``csrc/chip/isa/`` and its test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Protocol

from pypto._dataclass import dataclass
from pypto.ir.expr import Call, Expr
from pypto.ir.op_def import OpDef


class Cpp(Protocol):
    """How an emitter spells operands in C++; codegen supplies it, so a family module does not
    import codegen (which imports the op table that collects the family)."""

    def dst(self, dst: str | None) -> str:
        """The destination tile's name (an error when the result is not assigned)."""
        ...

    def arg(self, call: Call, name: str) -> str:
        """Argument ``name`` of ``call``: a tile or tensor by name, a scalar as a C++ expression,
        a bool as ``true``/``false``, a dtype as its ``DType::`` enumerator, None as ``nullptr``."""
        ...

    def expr(self, e: Expr) -> str:
        """A scalar expression (an item of an offsets list) as C++."""
        ...

    def error(self, message: str) -> Exception:
        """The error to raise for an op codegen cannot lower (the driver adds the line)."""
        ...


# An emitter: a statement template over the op's parameter names and ``dst``
# (``"TSORT32({dst}, {src}, {idx});"``), or a function for what a template cannot say.
EmitFn = Callable[[Call, "str | None", Cpp], list[str]]


@dataclass(frozen=True)
class CEntry:
    """One C function of the kernel ABI and the ``kernel.hpp`` spellings that call it.

    ``params`` are C declarations (``"const pypto_tile* dst"``). Each spelling is an inline
    wrapper, ``(name, fixed)``: its parameters are the function's minus those ``fixed`` gives
    a value (``("TSORT32", {"block": "32"})``; a name may come several times, as overloads).
    A ``const pypto_tile*`` parameter is taken as a ``const Tile&`` and passed by address, the
    others as they are.
    """

    name: str
    params: tuple[str, ...]
    doc: str
    spellings: tuple[tuple[str, Mapping[str, str]], ...]
    returns: str = "void"

    def declaration(self) -> str:
        return f"{self.returns} {self.name}({', '.join(self.params)});"


@dataclass(frozen=True)
class Family:
    """One op family: the ops of its table rows, its DSL spellings (``pl.<name>`` → candidate
    ops, tried in order), an emitter per tile op, and its C entry points."""

    name: str
    ops: tuple[OpDef, ...]
    dsl: Mapping[str, tuple[str, ...]]
    emitters: Mapping[str, str | EmitFn]
    abi: tuple[CEntry, ...]
    # The C++ file of the ISA implementing ``abi`` (csrc/chip/isa/<file>), for readers.
    isa_file: str = ""
    # Tensor ops written by hand in ``ops`` (upstream's spelling differs from the tile op's):
    # tensor op -> (the tile op ConvertTensorToTileOps lowers it to, {tile param: tensor param}).
    tensor_forms: Mapping[str, tuple[str, Mapping[str, str]]] = field(default_factory=dict)
