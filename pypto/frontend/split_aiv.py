"""``for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):`` — a region of a mixed
``pl.at`` scope whose vector work the cluster's two AIVs share (a part of the function parser).

``aiv_id`` is the AIV's lane (``pl.get_subblock_idx()``). The region lowers onto what
``optimizations=[pl.split(mode)]`` does for a whole scope: its statements join the scope's
body where the loop stands, and the scope takes the region's mode, so every Vec tile of the
AIV kernel is halved along it and the AIC pushes and pops the two halves. One scope has one
mode (its AIVs run one kernel): regions of different modes, or a region whose mode differs
from the scope's ``pl.split``, are refused with the line, as is ``mode=NONE`` (both lanes
running the whole body, a task-parallel form this compiler does not model). A region outside
any scope, in a ``@pl.jit`` body, is wrapped in a ``pl.at(level=pl.Level.CORE_GROUP)`` of its
own.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from pypto.errors import MisplacedOpError, SourceSpan, TypeCheckError, UnsupportedSyntaxError
from pypto.ir.bind import bind_call
from pypto.ir.enums import FunctionType, Level, SplitMode
from pypto.ir.expr import Var
from pypto.ir.stmt import Assign, Scope, Stmt
from pypto.ir.types import INDEX_TYPE

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState

AIVS = 2  # AIVs per cluster on both platforms: the only lane count a region can name


class SplitAivRegions:
    """``for aiv_id in pl.split_aiv(2, mode=...):`` handling."""

    def __init__(self, p: ParserState) -> None:
        self.p = p

    def region(self, node: ast.For) -> None:
        mode = self._mode(node)
        if self.p.ctx.in_scope:
            if self.p.ctx.aiv_splits is None:  # pl.spmd blocks: one AIV kernel per block
                raise MisplacedOpError(
                    "a pl.split_aiv region belongs in a pl.at scope; a pl.spmd scope splits its "
                    "AIVs' work with optimizations=[pl.split(mode)]",
                    self.p.span(node),
                )
            self.p.ctx.aiv_splits.append((mode, self.p.span(node)))
            for s in self._body(node):
                self.p.emit(s)
            return
        if self.p.kind is not FunctionType.Orchestration:
            raise MisplacedOpError(
                "pl.split_aiv belongs in a @pl.jit body or a pl.at scope; an InCore kernel already "
                "runs on one core",
                self.p.span(node),
            )
        self.p.ctx.in_scope, self.p.ctx.aiv_splits = True, []
        try:
            body = self._body(node)
        finally:
            self.p.ctx.in_scope, self.p.ctx.aiv_splits = False, None
        self.p.emit(Scope(Level.CORE_GROUP, tuple(body), split=mode, span=self.p.span(node)))

    def _mode(self, node: ast.For) -> SplitMode:
        call = node.iter
        assert isinstance(call, ast.Call)  # the caller matched pl.split_aiv(...)
        if node.orelse:
            raise UnsupportedSyntaxError(
                "`for ... else` is not supported inside a pypto kernel", self.p.span(node)
            )
        if not isinstance(node.target, ast.Name):
            raise UnsupportedSyntaxError(
                "write `for aiv_id in pl.split_aiv(2, mode=...):`", self.p.span(node.target)
            )
        kw = {k.arg: k.value for k in call.keywords}
        if len(call.args) != 1 or set(kw) != {"mode"}:
            raise TypeCheckError("write pl.split_aiv(2, mode=pl.SplitMode.<MODE>)", self.p.span(call))
        count, mode = self.p.folder.fold(call.args[0]), self.p.folder.fold(kw["mode"])
        if count != AIVS or isinstance(count, bool):
            raise TypeCheckError(
                f"pl.split_aiv splits work over the cluster's {AIVS} AIVs, got {count!r} lanes",
                self.p.span(call),
            )
        if not isinstance(mode, SplitMode):
            raise TypeCheckError(
                "pl.split_aiv mode= takes a pl.SplitMode (UP_DOWN, LEFT_RIGHT)", self.p.span(call)
            )
        if mode is SplitMode.NONE:
            raise TypeCheckError(
                "pl.split_aiv(2, mode=pl.SplitMode.NONE) (both lanes running the whole body) is not "
                "modelled: use UP_DOWN or LEFT_RIGHT, or leave the work outside a region",
                self.p.span(call),
            )
        return mode

    def _body(self, node: ast.For) -> list[Stmt]:
        """``aiv_id = pl.get_subblock_idx()``, then the region's statements; ``aiv_id`` is
        bound inside the region only."""
        assert isinstance(node.target, ast.Name)  # checked by _mode
        name, span = node.target.id, self.p.span(node.target)
        lane = Var(self.p.names.claim(name), INDEX_TYPE, span=span)
        call, _ = bind_call("tile.get_subblock_idx", [], span=span)
        had, old = name in self.p.env, self.p.env.get(name)
        self.p.env[name] = lane
        try:
            return [Assign(lane, call, span=span), *self.p.block(node.body)]
        finally:
            if had:
                self.p.env[name] = old
            else:
                self.p.env.pop(name, None)


def merge_regions(split: SplitMode | None, regions: list, span: SourceSpan | None) -> SplitMode | None:
    """A scope's split mode with its regions': one mode for the scope's AIVs."""
    for mode, at in regions:
        if split is not None and mode is not split:
            raise TypeCheckError(
                f"this pl.split_aiv region splits {mode.name}, but its scope's AIVs already split "
                f"{split.name}: one scope has one mode (its AIVs run one kernel)",
                at,
            )
        split = mode
    return split
