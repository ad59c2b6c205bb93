"""Memory planning shared by the planner passes (``allocate_memory_addr``, ``bind_regions``).

Public within :mod:`pypto.passes`, private outside it: tile storage and liveness
(``tile_storage``), buffers and their capacity checks (``storage_groups``), and the
pipeline-depth gate that trades slots for storage (``pipeline_gate``).
"""

from __future__ import annotations

from collections.abc import Callable

from pypto.ir.stmt import Function, Program
from pypto.passes._scan import with_functions


def map_generated_kernels(program: Program, plan: Callable[[Function], Function]) -> Program:
    """``plan`` applied to every generated InCore function (not to ``external_source`` ones,
    whose storage their C++ decides); other functions stay as they are."""
    fns = tuple(plan(f) if f.kind.is_incore and f.external_source is None else f for f in program.functions)
    return with_functions(program, fns)
