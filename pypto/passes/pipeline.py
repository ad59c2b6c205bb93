"""The pass order — one list, one line per pass, with why it sits where it does.

``run_passes`` runs them in order, verifies the IR after each (knob ``PYPTO_VERIFY_PASSES``,
on by default; not again when a pass that changed nothing hands back the program it was given,
which is immutable) and hands each result to an optional dump callback
(``passes_dump/NN_after_<Pass>.py``). The memory planner selects passes; it never reorders.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pypto import knobs
from pypto._dataclass import dataclass
from pypto._light import Logger
from pypto.diagnostics.checks import check_perf_hints
from pypto.ir.stmt import Program
from pypto.ir.verify import verify
from pypto.passes.allocate_memory_addr import allocate_memory_addr
from pypto.passes.auto_tile_matmul_l0 import auto_tile_matmul_l0
from pypto.passes.bind_regions import bind_regions
from pypto.passes.check_syncall_launches import check_syncall_launches
from pypto.passes.context import PassContext
from pypto.passes.convert_tensor_to_tile_ops import convert_tensor_to_tile_ops
from pypto.passes.expand_pipeline_loops import expand_pipeline_loops
from pypto.passes.fold_tile_slices import fold_tile_slices
from pypto.passes.fuse_create_assemble import fuse_create_assemble
from pypto.passes.infer_memory_spaces import infer_memory_spaces
from pypto.passes.insert_sync import insert_sync
from pypto.passes.options import MemoryPlanner
from pypto.passes.outline_incore_scopes import outline_incore_scopes
from pypto.passes.plan_pipeline_loops import plan_pipeline_loops
from pypto.passes.split_cluster_kernels import split_cluster_kernels

log = Logger(__name__)  # logging itself loads only if someone configured it


@dataclass(frozen=True)
class PassEntry:
    name: str
    run: Callable[[Program, PassContext], Program]
    planners: frozenset[MemoryPlanner] = frozenset(MemoryPlanner)


PASSES: list[PassEntry] = [
    # Scopes first: everything after works per InCore function.
    PassEntry("OutlineIncoreScopes", lambda p, ctx: outline_incore_scopes(p)),
    # Orchestration's assembles of kernel outputs become views once the kernel calls exist,
    # before the launch plan (made from the finished program) reads the buffers.
    PassEntry("FuseCreateAssemble", lambda p, ctx: fuse_create_assemble(p)),
    # A cluster kernel becomes its AIC and AIV kernels (pipes inserted where tiles cross
    # cores) before any per-kernel pass: each side is then an ordinary InCore function.
    PassEntry("SplitClusterKernels", split_cluster_kernels),
    # Launch-wide barriers are checked against their launches once every kernel (and each
    # cluster's AIC and AIV kernels) exists, before anything runs. Analysis only.
    PassEntry("CheckSyncallLaunches", check_syncall_launches),
    # Tensor-level ops become tile ops per kernel, before spaces and addresses exist.
    PassEntry("ConvertTensorToTileOps", convert_tensor_to_tile_ops),
    # Tile-level matmuls too big for L0 split along K once every matmul is a tile op, before
    # the Mat → L0 windows are folded into extracts.
    PassEntry("AutoTileMatmulL0", auto_tile_matmul_l0),
    # A Mat/Acc slice and the move consuming it are one windowed move (the L1 → L0 extract),
    # folded before pipelining clones bodies and before planning sees a tile to allocate.
    PassEntry("FoldTileSlices", lambda p, ctx: fold_tile_slices(p)),
    # Pipeline loops are validated and planned per kernel, once tile ops exist.
    PassEntry("PlanPipelineLoops", plan_pipeline_loops),
    # Replicate pipeline bodies before spaces and lifetimes: each clone's tiles are new values.
    PassEntry("ExpandPipelineLoops", expand_pipeline_loops),
    # Spaces before planning: capacities and alignments are per space.
    PassEntry("InferMemorySpaces", lambda p, ctx: infer_memory_spaces(p)),
    # Lifetimes, reuse and addresses (PYPTO) or storage regions placed when the kernel starts
    # (PTOAS): one of the two planners, after spaces (capacities are per space).
    PassEntry("AllocateMemoryAddr", allocate_memory_addr, frozenset({MemoryPlanner.PYPTO})),
    PassEntry("BindRegions", bind_regions, frozenset({MemoryPlanner.PTOAS})),
    # Last: hazards are decided on final addresses, so reuse can never introduce a race.
    PassEntry("InsertSync", insert_sync),
    # Analysis only, after every rewrite: hints see the final transfers (clones included).
    PassEntry("CheckPerfHints", check_perf_hints),
]

Dump = Callable[[int, str, Program], None]


def run_passes(program: Program, ctx: PassContext, *, dump: Dump | None = None) -> Program:
    """Runs every pass selected by ``ctx.planner`` in order."""
    check = knobs.verify_passes()
    if dump:
        dump(0, "frontend", program)
    index = 0
    verified = None  # a pass that changed nothing returns the program it got: verified already
    for entry in PASSES:
        if ctx.planner not in entry.planners:
            continue
        t0 = time.perf_counter()
        program = entry.run(program, ctx)
        if check and program is not verified:
            verify(program)
            verified = program
        index += 1
        log.debug("pass %s took %.2f ms", entry.name, (time.perf_counter() - t0) * 1e3)
        if dump:
            dump(index, entry.name, program)
    return program
