"""SplitClusterKernels alone: a cluster scope becomes an AIC kernel and an AIV kernel called
by a Group function; crossing moves become pushes, pops and frees; split modes halve the AIV
side; the result prints to DSL text that parses back to the same program."""

from __future__ import annotations

import pytest
from pass_util import CTX, apply, program

from pypto import ir
from pypto.errors import CompileError
from pypto.frontend import parse_text
from pypto.ir.printer import print_program
from pypto.passes.outline_incore_scopes import outline_incore_scopes
from pypto.passes.split_cluster_kernels import split_cluster_kernels

SRC = """
@pl.program
class p:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16],
             c: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP{opts}):
            for i in pl.range(4):
                la = pl.load(a, [i * 64, 0], [64, 64], target_memory=pl.Mem.Mat)
                lb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
                left = pl.move(la, target_memory=pl.Mem.Left)
                acc = pl.matmul(left, pl.move(lb, target_memory=pl.Mem.Right))
                x = pl.move(acc, target_memory=pl.Mem.Vec)
                y = pl.{op}(x)
                pl.store(y, [i * 64, 0], c)
        return c
"""


def split(opts: str = "", op: str = "relu") -> ir.Program:
    return apply(split_cluster_kernels, outline_incore_scopes(program(SRC.format(opts=opts, op=op))))


def ops(fn: ir.Function) -> list[str]:
    return [c.op for c in ir.nodes_of(fn.body, ir.Call)]


def test_a_mixed_scope_becomes_a_group_of_an_aic_and_an_aiv_kernel():
    out = split()
    kinds = [(f.name, f.kind.name) for f in out.functions]
    assert kinds == [("main", "Orchestration"), ("main_incore_0", "Group"),
                     ("main_incore_0_aic", "AIC"), ("main_incore_0_aiv", "AIV")]  # fmt: skip
    aic, aiv = out.functions[2], out.functions[3]
    assert ops(aic) == [
        "tile.load",
        "tile.load",
        "tile.move",
        "tile.move",
        "tile.matmul",
        "tile.tpush_to_aiv",
    ]
    # the popped tile's slot is returned right after its last use (the relu), in the same trip
    assert ops(aiv) == ["tile.tpop_from_aic", "tile.relu", "tile.tfree_to_aic", "tile.store"]
    assert all(isinstance(s, ir.For) for s in (aic.body[0], aiv.body[0]))  # both walk the loop


def test_the_split_program_prints_and_parses_back():
    out = split("")
    assert parse_text(print_program(out)) == out


def test_up_down_halves_the_aiv_tiles_and_moves_its_windows():
    out = split(", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]")
    aiv = out.functions[3]
    text = print_program(ir.Program("q", (aiv,)))
    assert "pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[32, 64]" in text
    assert "pl.tile.store(y, [i * 64 + subblock_idx * 32, 0], c)" in text
    assert "pl.tile.tpush_to_aiv(acc, split=1)" in print_program(ir.Program("q", (out.functions[2],)))


def test_left_right_refuses_a_row_reduction_on_half_the_columns():
    src = SRC.replace("y = pl.{op}(x)", "y = pl.row_sum(x, pl.create_tile([64, 64], pl.FP32))")
    with pytest.raises(CompileError, match=r"pl.row_sum cannot run on half a tile \(split LEFT_RIGHT\)"):
        apply(split_cluster_kernels, outline_incore_scopes(program(src.format(
            opts=", optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]", op=""))), CTX)  # fmt: skip


def test_a_popped_tile_read_last_by_a_store_is_freed_after_it():
    src = SRC.replace(
        "y = pl.{op}(x)\n                pl.store(y, [i * 64, 0], c)", "pl.store(x, [i * 64, 0], c)"
    )
    out = apply(split_cluster_kernels, outline_incore_scopes(program(src.format(opts="", op=""))))
    assert ops(out.functions[3]) == ["tile.tpop_from_aic", "tile.store", "tile.tfree_to_aic"]
