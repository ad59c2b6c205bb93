"""CheckSyncallLaunches: every ``pl.system.syncall`` can complete in the launch that runs it.

A syncall waits for every participant of its ``pl.spmd`` launch, so a launch that cannot have
them all running at once would wait forever. The hard form (upstream's FFTS barrier) waits for
every core of its ``core_type`` on the chip: its launch must fill them (one block per core, or
per cluster for a cluster kernel) and ask for ``sync_start=True``. The soft form counts
``used_cores`` arrivals, so that count may not exceed the launch's participants. Checked after
SplitClusterKernels (a cluster launch is then a Group calling its AIC and AIV kernels), before
anything runs; a violation is a TypeCheckError at the syncall's line. Analysis only.
Test: tests/e2e/test_syncall.py
"""

from __future__ import annotations

from pypto.errors import TypeCheckError
from pypto.ir.enums import FunctionType
from pypto.ir.expr import Call, FuncCall
from pypto.ir.stmt import Function, Program
from pypto.ir.visit import nodes_of
from pypto.passes.context import PassContext
from pypto.platforms import Platform


def check_syncall_launches(program: Program, ctx: PassContext) -> Program:
    """Raises TypeCheckError at a syncall its launch cannot complete; returns ``program``."""
    funcs = {f.name: f for f in program.functions}
    for fn in program.functions:
        if fn.kind != FunctionType.Orchestration:  # a Group's calls are its cluster's cores
            continue
        for launch in nodes_of(fn.body, FuncCall):
            callee = funcs.get(launch.callee)
            if callee is None or callee.kind == FunctionType.Orchestration:
                continue
            for sync in _syncalls(callee, funcs):
                _check(sync, launch, _per_block(callee, ctx.platform), ctx.platform)
    return program


def _syncalls(fn: Function, funcs: dict[str, Function]) -> list[Call]:
    """The syncalls of a kernel, or of the AIC and AIV kernels a Group calls."""
    found = [c for c in nodes_of(fn.body, Call) if c.op == "system.syncall"]
    if fn.kind == FunctionType.Group:
        for sub in nodes_of(fn.body, FuncCall):
            if sub.callee in funcs:
                found += _syncalls(funcs[sub.callee], funcs)
    return found


def _per_block(fn: Function, p: Platform) -> dict[str, int]:
    """Cores of each kind one block of a launch of ``fn`` occupies."""
    if fn.kind == FunctionType.Group:
        aiv, aic = p.aiv_cores // p.aic_cores, 1
    else:
        aiv, aic = (0, 1) if fn.kind == FunctionType.AIC else (1, 0)
    return {"aiv_only": aiv, "aic_only": aic, "mix": aiv + aic}


def _literal(call: Call, name: str) -> object:
    return getattr(call.arg(name), "value", None)


def _check(sync: Call, launch: FuncCall, per_block: dict[str, int], p: Platform) -> None:
    mode, core_type = _literal(sync, "mode"), str(_literal(sync, "core_type"))
    where = f"the pl.spmd launch of `{launch.callee}`"
    if per_block[core_type] == 0:
        raise TypeCheckError(
            f"syncall(core_type={core_type!r}) in {where}, which runs on no core of that kind", sync.span
        )
    if not isinstance(launch.blocks, int):
        if mode == "hard":
            raise TypeCheckError(
                f"syncall(mode='hard') needs a compile-time block count in {where}; "
                "use mode='soft' with a workspace for a count set per call",
                sync.span,
            )
        return
    participants = launch.blocks * per_block[core_type]
    if mode == "hard":
        _check_hard(sync, launch, participants, core_type, where, p)
        return
    used = _literal(sync, "used_cores")
    if isinstance(used, int) and used > participants:
        raise TypeCheckError(
            f"syncall used_cores={used} exceeds the {participants} {core_type} participant(s) of "
            f"{where} ({launch.blocks} block(s)): the barrier would never complete",
            sync.span,
        )


def _check_hard(
    sync: Call, launch: FuncCall, participants: int, core_type: str, where: str, p: Platform
) -> None:
    cores = {"aiv_only": p.aiv_cores, "aic_only": p.aic_cores, "mix": p.aiv_cores + p.aic_cores}[core_type]
    if participants != cores:
        raise TypeCheckError(
            f"syncall(mode='hard') waits for all {cores} {core_type} cores of {p.name}, but {where} "
            f"runs {participants} ({launch.blocks} block(s)); launch one block per core or use "
            "mode='soft' with a gm_workspace",
            sync.span,
        )
    if not launch.sync_start:
        raise TypeCheckError(
            f"syncall(mode='hard') needs every block running at once: give {where} sync_start=True",
            sync.span,
        )
