"""Loop-carried and branch-merged names no one reads, dropped from orchestration code.

A name bound before a loop and rebound inside it is carried around the loop, as Python's
scoping asks: the body may read the value of the trip before, and code after the loop the
value of the last trip. When the body assigns the name before any read and nothing after the
loop reads it (``flag = pl.read(m, [0, r])`` in each trip of a loop that follows a scope which
also had a ``flag``), the carry is dead: dropping it changes no value, and it would otherwise
make the earlier binding look used after its own scope. Likewise a name both branches of an
``if`` bind (a window of a tensor picked per branch) that nothing after the ``if`` reads.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from pypto._dataclass import dataclass
from pypto.ir.expr import Var
from pypto.ir.stmt import For, Function, If, Stmt, Yield
from pypto.ir.visit import nodes_of, rewrite


def drop_dead_carries(fn: Function) -> Function:
    """``fn`` without the loop-carried values whose iteration name the body never reads and
    whose result nothing reads, and the values an ``if`` merges that nothing reads (repeated:
    dropping one can leave another unread)."""
    while True:
        pruned = _Pruner(Counter(v.name for v in nodes_of(fn.body, Var)))
        fn = rewrite(fn, pruned.node)
        if not pruned.dropped:
            return fn


@dataclass
class _Pruner:
    count: Counter  # occurrences of each name; a name defined and never read occurs once
    dropped: bool = False

    def node(self, node: Any) -> Any:
        if isinstance(node, If):
            keep = [i for i, r in enumerate(node.results) if self.count[r.name] > 1]
            if len(keep) == len(node.results):
                return None
            self.dropped = True
            return dataclasses.replace(
                node,
                then_body=_yielding(node.then_body, keep),
                else_body=_yielding(node.else_body, keep),
                results=tuple(node.results[i] for i in keep),
            )
        if isinstance(node, For):
            read = [
                self.count[it.var.name] > 1 or self.count[r.name] > 1
                for it, r in zip(node.iter_args, node.results)
            ]
            keep = [i for i, r in enumerate(read) if r]
            if len(keep) == len(node.iter_args):
                return None
            self.dropped = True
            return dataclasses.replace(
                node,
                body=_yielding(node.body, keep),
                iter_args=tuple(node.iter_args[i] for i in keep),
                results=tuple(node.results[i] for i in keep),
            )
        return None


def _yielding(body: tuple[Stmt, ...], keep: list[int]) -> tuple[Stmt, ...]:
    """``body`` (ending with the yield of its carried or merged values) yielding only ``keep``."""
    last = body[-1] if body else None
    if not isinstance(last, Yield):
        return body
    kept = dataclasses.replace(last, values=tuple(last.values[i] for i in keep))
    return body[:-1] + ((kept,) if keep else ())
