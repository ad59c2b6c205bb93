"""Annotation AST → IR type (and parameter direction).

Most annotations fold to the DSL's annotation objects (``pl.Tensor[[512, 128], pl.FP32]``).
Two forms cannot be evaluated and are read structurally: a memref slot chosen by a kernel
variable (``pl.MemRef("ub", slots=2)[i % 2]``) and an allocated memref naming its buffer
with a bare identifier (``pl.MemRef(mem_vec_0, 0, 32768)``).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable

from pypto.errors import TypeCheckError
from pypto.frontend.consteval import NOT_CONST, Folder
from pypto.ir.dtypes import DataType
from pypto.ir.enums import Direction, MemorySpace
from pypto.ir.expr import Expr
from pypto.ir.types import MemRef, TileType, Type
from pypto.language import annotations as ann
from pypto.language.memref import ir_memref


class AnnotationReader:
    """Reads annotations of one kernel; ``lower_index`` turns a slot index into IR."""

    def __init__(self, folder: Folder, lower_index: Callable[[ast.expr], Expr]) -> None:
        self.folder = folder
        self.lower_index = lower_index

    def fail(self, node: ast.AST, message: str) -> TypeCheckError:
        return TypeCheckError(message, self.folder.src.span(node))

    def read(self, node: ast.expr) -> tuple[Type | None, Direction]:
        """The IR type (None for a bare ``pl.Tensor``) and direction of an annotation."""
        value = self.folder.fold(node)
        if value is not NOT_CONST:
            converted = ann.spec_to_type(value)
            if converted is None:
                raise self.fail(node, f"`{ast.unparse(node)}` is not a pypto type annotation")
            return converted
        if not isinstance(node, ast.Subscript):
            raise self.fail(node, f"cannot read the annotation `{ast.unparse(node)}`")
        head = self.folder.fold(node.value)
        if isinstance(head, ann.DirectionSpec):
            inner, _ = self.read(node.slice)
            return inner, head.direction
        if isinstance(head, ann.TileSpec):
            return self.tile(node), Direction.In
        raise self.fail(node, f"cannot read the annotation `{ast.unparse(node)}`")

    def tile(self, node: ast.Subscript) -> TileType:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) < 2:
            raise self.fail(node, "write pl.Tile[[rows, cols], dtype, ...]")
        shape, dtype = self.folder.fold(items[0]), self.folder.fold(items[1])
        if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d > 0 for d in shape):
            raise self.fail(
                items[0], f"pl.Tile shape must be a list of positive ints, got {ast.unparse(items[0])}"
            )
        if not isinstance(dtype, DataType):
            raise self.fail(items[1], f"pl.Tile dtype must be a pl dtype, got {ast.unparse(items[1])}")
        memory, memref = None, None
        for item in items[2:]:
            value = self.folder.fold(item)
            if isinstance(value, MemorySpace):
                memory = value
            elif isinstance(value, MemRef):
                memref = ir_memref(value)
            elif value is NOT_CONST:
                memref = self.memref(item)
            else:
                raise self.fail(item, f"pl.Tile takes a memory space or a pl.MemRef, got {ast.unparse(item)}")
        if memref is not None and memory is None:
            raise self.fail(node, "pl.Tile with a pl.MemRef needs a memory space, e.g. pl.Mem.Vec")
        return TileType(tuple(shape), dtype, memory, memref)

    def memref(self, node: ast.expr) -> MemRef:
        """``<memref>[index]`` with a runtime index, or a memref naming an allocated buffer."""
        if isinstance(node, ast.Subscript):
            base = self.memref(node.value)
            return dataclasses.replace(base, index=self.lower_index(node.slice))
        value = self.folder.fold(node)
        if isinstance(value, MemRef):
            return ir_memref(value)
        if isinstance(node, ast.Call) and self.folder.fold(node.func) is ann.MemRef and node.args:
            return self._memref_call(node)
        raise self.fail(node, f"expected a pl.MemRef, got `{ast.unparse(node)}`")

    def _memref_call(self, node: ast.Call) -> MemRef:
        first = node.args[0]
        name = self.folder.fold(first)
        if name is NOT_CONST and isinstance(first, ast.Name):
            name = first.id  # an allocated buffer, named by a bare identifier
        rest = [self.folder.fold(a) for a in node.args[1:]]
        if any(k.arg is None for k in node.keywords):
            raise self.fail(node, f"pl.MemRef takes its arguments by name, not `**`: `{ast.unparse(node)}`")
        kwargs = {k.arg: self.folder.fold(k.value) for k in node.keywords if k.arg is not None}
        if any(v is NOT_CONST for v in rest) or any(v is NOT_CONST for v in kwargs.values()):
            raise self.fail(node, f"pl.MemRef arguments must be compile-time values: `{ast.unparse(node)}`")
        try:
            return ir_memref(ann.MemRef(name, *rest, **kwargs))
        except (TypeError, ValueError) as err:
            raise self.fail(node, str(err)) from None
