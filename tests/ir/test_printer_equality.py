"""Printer format (docs/memory_map.md), structural equality, and the traversal helpers."""

from __future__ import annotations

import dataclasses

import pytest

from pypto import ir
from pypto.errors import SourceSpan

T = ir.TensorType((512, 128), ir.FP32)


def small_program(load_name: str = "t", span: SourceSpan | None = None) -> ir.Program:
    b = ir.Builder()
    with b.function("k", ir.FunctionType.AIV):
        a = b.param("a", T)
        out = b.param("out", T, ir.Direction.Out)
        with b.loop("i", 8) as loop:
            t = b.op("tile.load", a, [loop.var * 64, 0], [64, 128], name=load_name)
            b.eval("tile.store", b.op("tile.exp", t), [loop.var * 64, 0], out)
    p = b.program("small")
    if span is not None:
        p = dataclasses.replace(p, span=span)
    return p


EXPECTED = """\
# pypto.program: small
from __future__ import annotations

import pypto.language as pl


@pl.program
class small:
    @pl.function(type=pl.FunctionType.AIV)
    def k(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
        for i in pl.range(8):
            t: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 128])
            exp: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)
            pl.tile.store(exp, [i * 64, 0], out)
"""


def test_printer_output_format():
    assert ir.print_program(small_program()) == EXPECTED


def test_allocated_memref_prints_like_spec():
    ref = ir.MemRef("mem_vec_0").with_address(0, 32768)
    t = ir.TileType((64, 128), ir.FP32, ir.MemorySpace.Vec, ref)
    assert ir.print_type(t) == "pl.Tile[[64, 128], pl.FP32, pl.MemRef(mem_vec_0, 0, 32768), pl.Mem.Vec]"
    slotted = ir.MemRef("my buf", 2, ir.Var("i", ir.INDEX_TYPE) % 2, 64, 1024)
    assert ir.printer.print_memref(slotted) == 'pl.MemRef("my buf", 64, 1024, slots=2)[i % 2]'


def test_literals_print_as_dsl():
    assert ir.print_expr(ir.Const(float("inf"), ir.FP32)) == 'float("inf")'
    assert ir.print_expr(ir.Literal(ir.PadValue.max)) == "pl.PadValue.max"
    assert ir.print_expr(ir.Literal('a "b"')) == '"a \\"b\\""'
    assert ir.print_type(ir.ScalarType(ir.INDEX)) == "pl.Scalar[pl.INDEX]"


def test_structural_equality_ignores_spans_and_optionally_names():
    a = small_program()
    b = small_program(span=SourceSpan("x.py", 3))
    assert a == b and ir.structural_equal(a, b, names=True)
    renamed = small_program(load_name="tile")
    assert a != renamed
    assert ir.structural_equal(a, renamed) and not ir.structural_equal(a, renamed, names=True)
    assert "'t' != 'tile'" in ir.structural_diff(a, renamed, names=True)
    with pytest.raises(AssertionError, match="--- lhs"):
        ir.assert_structural_equal(a, renamed, names=True)


def _with_records(p: ir.Program, staged: tuple[str, ...], group_names: tuple[str, ...]) -> ir.Program:
    """``p`` with a plan on its loop and a clone group naming ``group_names``."""
    fn = p.functions[0]
    loop = dataclasses.replace(fn.body[0], kind=ir.ForKind.pipeline, stage=1, staged=staged)
    clone = ir.PipelineClone(group_names, group_names, ())
    fn = dataclasses.replace(fn, body=(loop,), pipeline_groups=(ir.PipelineGroup("i", 1, ((clone,),)),))
    return dataclasses.replace(p, functions=(fn,))


def test_pipelining_records_follow_the_renaming_of_the_values_they_name():
    a = _with_records(small_program(), ("t",), ("t",))
    renamed = _with_records(small_program(load_name="tile"), ("tile",), ("tile",))
    assert ir.structural_equal(a, renamed) and not ir.structural_equal(a, renamed, names=True)
    # a record naming another value than the renamed one is a different program
    assert not ir.structural_equal(a, _with_records(small_program(load_name="tile"), ("t",), ("tile",)))
    assert "staged[0]" in ir.structural_diff(
        a, _with_records(small_program(load_name="tile"), ("i",), ("tile",))
    )
    groups = ir.structural_diff(a, _with_records(small_program(load_name="tile"), ("tile",), ("i",)))
    assert "pipeline_groups[0].blocks[0][0].staged[0]" in groups
    assert ir.structural_diff(a, _with_records(small_program(), ("t",), ())) is not None


def test_alpha_equivalence_is_a_bijection():
    i, j = ir.Var("i", ir.INDEX_TYPE), ir.Var("j", ir.INDEX_TYPE)
    assert ir.structural_equal(ir.ListExpr((i, i)), ir.ListExpr((j, j)))
    assert not ir.structural_equal(ir.ListExpr((i, i)), ir.ListExpr((i, j)))
    assert not ir.structural_equal(ir.Const(1), ir.Const(True, ir.INDEX))


def test_walk_rewrite_retype():
    p = small_program()
    calls = [n.op for n in ir.walk(p) if isinstance(n, ir.Call)]
    assert calls == ["tile.load", "tile.exp", "tile.store"]
    assert len(ir.nodes_of(p, ir.For)) == 1
    renamed = ir.rewrite(
        p,
        lambda n: (
            dataclasses.replace(n, op="tile.log") if isinstance(n, ir.Call) and n.op == "tile.exp" else None
        ),
    )
    assert [n.op for n in ir.nodes_of(renamed, ir.Call)][1] == "tile.log"
    ir.verify(renamed)
    planned = ir.TileType((64, 128), ir.FP32, ir.MemorySpace.Vec, ir.MemRef("m").with_address(0, 32768))
    retyped = ir.retype(p, {"t": planned})
    ir.verify(retyped)
    assert all(v.type == planned for v in ir.nodes_of(retyped, ir.Var) if v.name == "t")


def test_pass_dump_level_is_spelled_from_ir():
    from pypto.ir import PassDumpLevel

    assert {"NONE", "CONCISE", "EXPLICIT"} <= {m.name for m in PassDumpLevel}
