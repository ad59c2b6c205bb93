"""InferMemorySpaces: every tile gets the on-chip space it lives in.

Most tiles already carry one from their op's typing rule (``pl.load(..., target_memory=)``,
``pl.move``, matmul → Acc); anything still open defaults to Vec, where vector ops run.
Test: tests/passes/test_infer_memory_spaces.py
"""

from __future__ import annotations

import dataclasses

from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Var
from pypto.ir.stmt import Program
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of, retype
from pypto.passes._scan import with_functions


def infer_memory_spaces(program: Program) -> Program:
    """Tiles without a memory space are placed in Vec."""
    fns = []
    for fn in program.functions:
        open_tiles = {
            v.name: dataclasses.replace(v.type, memory=MemorySpace.Vec)
            for v in nodes_of(fn, Var)
            if isinstance(v.type, TileType) and v.type.memory is None
        }
        fns.append(retype(fn, open_tiles) if open_tiles else fn)
    return with_functions(program, tuple(fns))
