"""The pass list: its order, which passes each planner runs, dump numbering, the verifier
between passes, and the dump files of a compile."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pass_util import CTX, program

import pypto.language as pl
from pypto import ir
from pypto.errors import VerifyError
from pypto.frontend import parse_text
from pypto.ir import PassDumpLevel
from pypto.passes import MemoryPlanner
from pypto.passes import pipeline as pp
from pypto.runtime import RunConfig

SOURCE = """
@pl.program
class p:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                x = pl.load(a, [i * 16, 0], [16, 128])
                pl.store(pl.exp(x), [i * 16, 0], out)
"""


def run(planner: MemoryPlanner = MemoryPlanner.PYPTO) -> list[tuple[int, str]]:
    seen: list[tuple[int, str]] = []
    ctx = dataclasses.replace(CTX, planner=planner)
    pp.run_passes(program(SOURCE), ctx, dump=lambda i, name, prog: seen.append((i, name)))
    return seen


def test_the_order_is_one_list():
    names = [e.name for e in pp.PASSES]
    assert names == [
        "OutlineIncoreScopes",
        "FuseCreateAssemble",
        "SplitClusterKernels",
        "CheckSyncallLaunches",
        "ConvertTensorToTileOps",
        "AutoTileMatmulL0",
        "FoldTileSlices",
        "PlanPipelineLoops",
        "ExpandPipelineLoops",
        "InferMemorySpaces",
        "AllocateMemoryAddr",
        "BindRegions",
        "InsertSync",
        "CheckPerfHints",
    ]
    # the contracts behind the order: kernels exist first, spaces before addresses,
    # addresses before sync (hazards are decided on final addresses)
    for planner in ("AllocateMemoryAddr", "BindRegions"):
        assert names.index("InferMemorySpaces") < names.index(planner) < names.index("InsertSync")
    assert all(names.index(n) < names.index("InsertSync") for n in names if n.startswith(("Lower", "Expand")))


def selected(planner: MemoryPlanner = MemoryPlanner.PYPTO) -> list[str]:
    return [e.name for e in pp.PASSES if planner in e.planners]


def test_dumps_are_numbered_in_execution_order():
    assert run() == [(0, "frontend")] + [(i + 1, name) for i, name in enumerate(selected())]


@pytest.mark.parametrize(
    ("planner", "runs", "skipped"),
    [
        (MemoryPlanner.PTOAS, "BindRegions", "AllocateMemoryAddr"),
        (MemoryPlanner.PYPTO, "AllocateMemoryAddr", "BindRegions"),
    ],
)
def test_the_planner_selects_its_pass_and_dumps_number_only_passes_that_ran(planner, runs, skipped):
    names = [n for _, n in run(planner)]
    assert runs in names and skipped not in names
    assert [i for i, _ in run(planner)] == list(range(len(pp.PASSES)))  # all but one ran
    assert names[1:] == selected(planner) == [e.name for e in pp.PASSES if e.name != skipped]


def _duplicates_a_function(prog: ir.Program, ctx) -> ir.Program:
    return dataclasses.replace(prog, functions=(*prog.functions, prog.functions[-1]))


def test_the_verifier_runs_after_every_pass(monkeypatch):
    broken = [*pp.PASSES[:1], pp.PassEntry("Broken", _duplicates_a_function), *pp.PASSES[1:]]
    monkeypatch.setattr(pp, "PASSES", broken)
    with pytest.raises(VerifyError, match="defined twice"):
        run()
    monkeypatch.setenv("PYPTO_VERIFY_PASSES", "0")  # the knob turns the checks off
    assert [n for _, n in run()][1:3] == ["OutlineIncoreScopes", "Broken"]


def test_a_pass_that_changes_nothing_hands_back_its_program_which_is_not_verified_again(monkeypatch):
    given: dict[str, ir.Program] = {}
    made: dict[str, ir.Program] = {}

    def watched(entry: pp.PassEntry) -> pp.PassEntry:
        def run(prog, ctx):
            given[entry.name], made[entry.name] = prog, entry.run(prog, ctx)
            return made[entry.name]

        return dataclasses.replace(entry, run=run)

    monkeypatch.setattr(pp, "PASSES", [watched(e) for e in pp.PASSES])
    verified: list[ir.Program] = []
    monkeypatch.setattr(pp, "verify", verified.append)
    run()
    same = {name for name in made if made[name] is given[name]}
    # a kernel with no cluster, matmul or pipeline loop: those passes change nothing
    assert {"SplitClusterKernels", "AutoTileMatmulL0", "PlanPipelineLoops", "ExpandPipelineLoops"} <= same
    assert {"OutlineIncoreScopes", "AllocateMemoryAddr", "InsertSync"}.isdisjoint(same)
    changed = [made[name] for name in made if name not in same]
    assert len(verified) == len(changed) and all(a is b for a, b in zip(verified, changed))


@pl.jit
def dumped(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            x = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(x), [i * 16, 0], out)
    return out


def test_compile_writes_one_reparseable_dump_per_pass(tmp_path):
    a = np.ones((32, 128), np.float32)
    cfg = RunConfig(platform="a2a3sim", dump_passes=PassDumpLevel.EXPLICIT, output_dir=str(tmp_path))
    dumped.compile(a, np.zeros_like(a), config=cfg)
    files = sorted(p.name for p in (tmp_path / "passes_dump").glob("*.py"))
    assert files == ["00_frontend.py"] + [f"{i + 1:02d}_after_{n}.py" for i, n in enumerate(selected())]
    for f in files:
        text = (tmp_path / "passes_dump" / f).read_text()
        assert text.startswith("# pypto.program: dumped")
        parse_text(text)
    planned = (tmp_path / "passes_dump" / "11_after_AllocateMemoryAddr.py").read_text()
    assert "pl.MemRef(mem_vec_0, 0, 8192)" in planned
