"""Helpers for per-pass tests: programs from DSL text, one pass applied alone (verified
after), and short views of the result (flags in order, memrefs by tile name)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from pypto import ir, platforms
from pypto.frontend import parse_text
from pypto.passes.context import PassContext

CTX = PassContext(platforms.get("a2a3sim"))


def program(text: str) -> ir.Program:
    """A program from the DSL text the printer writes (the import line is added)."""
    return parse_text("import pypto.language as pl\n\n" + textwrap.dedent(text))


def kernel(params: str, body: str, kind: str = "AIV") -> ir.Program:
    """One InCore function ``k(self, <params>)`` with ``body`` (written at 8 spaces)."""
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    return program(
        f"@pl.program\nclass p:\n    @pl.function(type=pl.FunctionType.{kind})\n"
        f"    def k(self, {params}):\n{body}\n"
    )


def apply(run: Callable[[ir.Program, PassContext], ir.Program], p: ir.Program, ctx: PassContext = CTX):
    """The pass alone, then the verifier (as the pipeline does between passes)."""
    out = run(p, ctx)
    ir.verify(out)
    return out


def flags(fn: ir.Function) -> list[tuple[str, str, str, int]]:
    """``(set|wait, src, dst, event)`` of every flag, in program order."""
    out = []
    for c in ir.nodes_of(fn.body, ir.Call):
        if c.op in ("system.set_flag", "system.wait_flag"):
            src, dst, eid = (a.value for a in c.args)
            out.append((c.op.split(".")[1][:-5], src.name, dst.name, eid))
    return out


def memrefs(fn: ir.Function) -> dict[str, ir.MemRef]:
    """The memref of every tile, by name (definitions and loop/if values)."""
    return {v.name: v.type.memref for v in ir.nodes_of(fn, ir.Var) if isinstance(v.type, ir.TileType)}


def ops(fn: ir.Function) -> list[str]:
    return [c.op for c in ir.nodes_of(fn.body, ir.Call)]
