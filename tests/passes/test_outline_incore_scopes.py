"""OutlineIncoreScopes alone: scopes become kernels with the right parameters, directions,
core type and names; the orchestration calls them."""

from __future__ import annotations

import pytest
from pass_util import program

from pypto import ir
from pypto.errors import CompileError
from pypto.passes.outline_incore_scopes import outline_incore_scopes

TA = "pl.Tensor[[64, 128], pl.FP32]"


def outline(text: str) -> ir.Program:
    out = outline_incore_scopes(program(text))
    ir.verify(out)
    return out


def directions(fn: ir.Function) -> dict[str, str]:
    return {p.var.name: p.direction.name for p in fn.params}


def test_before_and_expected_program():
    before = f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: {TA}, out: pl.Out[{TA}]) -> {TA}:
                with pl.at(level=pl.Level.CORE_GROUP):
                    x = pl.load(a, [0, 0], [64, 128])
                    pl.store(pl.exp(x), [0, 0], out)
                return out
        """
    expected = f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: {TA}, out: pl.Out[{TA}]) -> {TA}:
                self.main_incore_0(a, out)
                return out

            @pl.function(type=pl.FunctionType.AIV)
            def main_incore_0(self, a: {TA}, out: pl.Out[{TA}]):
                x = pl.load(a, [0, 0], [64, 128])
                pl.store(pl.exp(x), [0, 0], out)
        """
    ir.assert_structural_equal(outline(before), program(expected), names=True)


def test_a_tensor_read_and_written_is_inout():
    p = outline(
        f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.InOut[{TA}]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    x = pl.load(a, [0, 0], [64, 128])
                    pl.store(pl.exp(x), [0, 0], a)
        """
    )
    assert directions(p.get("main_incore_0")) == {"a": "InOut"}


def test_a_loop_carried_output_tensor_stays_out():
    # `out = pl.store(..., out)` in a loop: the store writes the iter arg, an alias of `out`.
    p = outline(
        f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: {TA}, out: pl.Out[{TA}]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    for i, (o,) in pl.range(4, init_values=(out,)):
                        x = pl.load(a, [i * 16, 0], [16, 128])
                        o_1 = pl.store(x, [i * 16, 0], o)
                        o_2 = pl.yield_(o_1)
        """
    )
    assert directions(p.get("main_incore_0")) == {"a": "In", "out": "Out"}


def test_a_scope_writing_two_tensors_names_the_one_used_later_by_what_it_wrote():
    # `b_1 = call(...)` would leave the launch plan to guess which written tensor b_1 is
    p = outline(
        f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: {TA}, a: pl.Out[{TA}], b: pl.Out[{TA}]) -> {TA}:
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(x, [0, 0], [16, 128])
                    pl.store(t, [0, 0], a)
                    b_1 = pl.store(t, [0, 0], b)
                return b_1
        """
    )
    call, rename, _ = p.get("main").body
    assert isinstance(call, ir.Eval) and call.value.callee == "main_incore_0"
    assert isinstance(rename, ir.Assign) and (rename.var.name, rename.value.name) == ("b_1", "b")


def test_reading_back_through_an_alias_makes_it_inout():
    p = outline(
        f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: {TA}, out: pl.Out[{TA}]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    x = pl.load(a, [0, 0], [16, 128])
                    o = pl.store(x, [0, 0], out)
                    y = pl.load(o, [0, 0], [16, 128])
                    pl.store(y, [16, 0], o)
        """
    )
    assert directions(p.get("main_incore_0")) == {"a": "In", "out": "InOut"}


def test_cube_work_makes_an_aic_kernel_and_scalars_become_in_parameters():
    p = outline(
        """
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP16], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
                for blk in pl.range(2):
                    with pl.at(level=pl.Level.CORE_GROUP):
                        m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
                        left = pl.move(m, target_memory=pl.Mem.Left)
                        acc = pl.matmul(left, pl.move(m, target_memory=pl.Mem.Right))
                        pl.store(acc, [blk * 0, 0], c)
        """
    )
    k = p.get("main_incore_0")
    assert k.kind is ir.FunctionType.AIC
    assert directions(k) == {"a": "In", "blk": "In", "c": "Out"}
    assert isinstance(k.param("blk").var.type, ir.ScalarType)
    call = next(c for c in ir.nodes_of(p.get("main").body, ir.FuncCall))
    assert [a.name for a in call.args] == ["a", "blk", "c"]


def test_two_scopes_give_two_kernels_and_name_hints_name_them():
    p = outline(
        f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: {TA}, out: pl.Out[{TA}]):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
                    pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
                    pl.store(pl.load(a, [16, 0], [16, 128]), [16, 0], out)
                with pl.at(level=pl.Level.CORE_GROUP):
                    pl.store(pl.load(a, [32, 0], [16, 128]), [32, 0], out)
        """
    )
    assert [f.name for f in p.functions] == ["main", "first", "first_1", "main_incore_2"]
    assert all(f.kind is ir.FunctionType.AIV for f in p.functions[1:])


def test_a_tile_cannot_flow_out_of_a_scope():
    with pytest.raises(CompileError, match="x computed inside a pl.at scope are used after it"):
        outline(
            f"""
            @pl.program
            class p:
                @pl.function(type=pl.FunctionType.Orchestration)
                def main(self, a: {TA}, out: pl.Out[{TA}]):
                    with pl.at(level=pl.Level.CORE_GROUP):
                        x = pl.load(a, [0, 0], [16, 128])
                    with pl.at(level=pl.Level.CORE_GROUP):
                        pl.store(x, [0, 0], out)
            """
        )


def test_incore_functions_are_left_alone():
    text = f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.AIV)
            def k(self, a: {TA}, out: pl.Out[{TA}]):
                pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
        """
    assert outline(text) == program(text)


def test_a_kernel_written_as_incore_runs_on_the_core_kind_of_its_work():
    p = outline(
        f"""
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.InCore)
            def cube(self, a: pl.Tensor[[64, 64], pl.FP16], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
                m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(m, target_memory=pl.Mem.Left), pl.move(m, target_memory=pl.Mem.Right))
                pl.store(acc, [0, 0], c)

            @pl.function(type=pl.FunctionType.InCore)
            def vector(self, a: {TA}, out: pl.Out[{TA}]):
                pl.store(pl.exp(pl.load(a, [0, 0], [64, 128])), [0, 0], out)
        """
    )
    assert (p.get("cube").kind, p.get("vector").kind) == (ir.FunctionType.AIC, ir.FunctionType.AIV)


def test_a_kernel_written_as_incore_doing_both_kinds_of_work_is_refused_at_its_vector_op():
    text = """
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.InCore)
            def both(self, a: pl.Tensor[[64, 64], pl.FP16], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
                m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(m, target_memory=pl.Mem.Left), pl.move(m, target_memory=pl.Mem.Right))
                v = pl.move(acc, target_memory=pl.Mem.Vec)
                pl.store(pl.exp(v), [0, 0], c)
        """
    with pytest.raises(CompileError, match=r"kernel `both` does cube work and vector work") as e:
        outline(text)
    assert str(e.value).endswith("pl.store(pl.exp(v), [0, 0], c)")  # the line of the exp
