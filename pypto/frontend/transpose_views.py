"""``pl.tile.transpose_view(m)``: a Mat tile seen transposed, with no bytes of its own.

Upstream reads such a view as the same L1 bytes in the other fractal layout, so one load
feeds a matmul that wants ``m`` and one that wants ``m``'s transpose. Here the cube reads a
transposed operand through the matmul's ``a_trans`` / ``b_trans`` (the L0 fill transposes it),
so the frontend folds each view into the matmul that reads it (``ExprLowerer.untransposed``)
and this step drops the view once nothing reads it. A view read by anything else is refused
at that read: no other op has a transposed way to read a tile.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from pypto.errors import TypeCheckError
from pypto.ir.expr import Call, Var
from pypto.ir.stmt import Assign, Function
from pypto.ir.visit import nodes_of, rewrite, walk

_BLOCKS = ("body", "then_body", "else_body")


def drop_transpose_views(fn: Function) -> Function:
    """``fn`` without its transposed views, each folded into the matmuls that read it, nor the
    moves of them to Left / Right that the matmuls' own moves replaced (read by nothing now)."""
    views = {
        s.var.name
        for s in walk(fn.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.transpose_view"
    }
    if not views:
        return fn
    reads = Counter(v.name for v in nodes_of(fn.body, Var))  # definitions included
    views |= {
        s.var.name
        for s in walk(fn.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.move"
        and any(a.name in views for a in nodes_of(s.value.args, Var)) and reads[s.var.name] == 1
    }  # fmt: skip
    dropped = {id(s.value) for s in walk(fn.body) if isinstance(s, Assign) and s.var.name in views}
    for node in walk(fn.body):
        if isinstance(node, Call) and id(node) not in dropped:
            read = next((a for a in nodes_of(node.args, Var) if a.name in views), None)
            if read is not None:
                raise TypeCheckError(
                    f"`{read.name}` is a pl.tile.transpose_view, read only as a matmul operand (it "
                    f"becomes the matmul's a_trans / b_trans); pl.{node.op} reads it here",
                    node.span,
                )

    def drop(node: Any) -> Any:
        fields = {f: getattr(node, f) for f in _BLOCKS if isinstance(getattr(node, f, None), tuple)}
        if not fields:
            return None
        kept = {
            f: tuple(s for s in b if not (isinstance(s, Assign) and s.var.name in views))
            for f, b in fields.items()
        }
        return None if kept == fields else dataclasses.replace(node, **kept)

    return rewrite(fn, drop)
