"""AllocateMemoryAddr alone: addresses, reuse decisions (dead buffers, in place, around
loops and branches), declared slots, loop-carried storage, copies, capacity errors."""

from __future__ import annotations

import pytest
from pass_util import CTX, apply, kernel, memrefs, ops, program

from pypto import ir
from pypto.errors import CompileError, MemoryCapacityError
from pypto.passes.allocate_memory_addr import allocate_memory_addr

A = "a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32]"
OUT = "out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]"
T = "pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec]"  # 4096 B


def alloc(body: str, params: str = f"{A}, {OUT}", kind: str = "AIV") -> ir.Function:
    return apply(allocate_memory_addr, kernel(params, body, kind)).get("k")


def offsets(fn: ir.Function) -> dict[str, int]:
    return {n: m.offset for n, m in memrefs(fn).items()}


def test_before_and_expected_program():
    before = kernel(
        f"{A}, {OUT}",
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(b, [0, 0], [16, 64])
        z = pl.add(x, y)
        pl.store(z, [0, 0], out)
        """,
    )
    expected = kernel(
        f"{A}, {OUT}",
        """
        x: pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_0, 0, 4096), pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 64])
        y: pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_1, 4096, 4096), pl.Mem.Vec] = pl.tile.load(b, [0, 0], [16, 64])
        z: pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_0, 0, 4096), pl.Mem.Vec] = pl.tile.add(x, y)
        pl.tile.store(z, [0, 0], out)
        """,  # noqa: E501
    )
    ir.assert_structural_equal(apply(allocate_memory_addr, before), expected, names=True)


def test_a_dead_buffer_is_reused_by_a_later_tile():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        pl.store(x, [0, 0], out)
        y = pl.load(b, [0, 0], [16, 64])
        pl.store(y, [16, 0], out)
        """
    )
    assert offsets(fn) == {"x": 0, "y": 0}


def test_in_place_when_the_input_dies_at_the_op():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.exp(x)
        pl.store(y, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["y"] == refs["x"]


@pytest.mark.parametrize(("op", "v"), [("row_expand_expdif", "[16, 1]"), ("col_expand_expdif", "[1, 64]")])
def test_an_exp_difference_is_written_over_its_dying_input(op: str, v: str):
    fn = alloc(
        f"""
        x = pl.load(a, [0, 0], [16, 64])
        v = pl.load(b, [0, 0], {v})
        y = pl.tile.{op}(x, v)
        pl.store(y, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["y"] == refs["x"] != refs["v"]


@pytest.mark.parametrize(
    ("src", "dst", "shared"),
    [("pl.INT32", "pl.FP32", True), ("pl.FP32", "pl.INT32", True), ("pl.FP16", "pl.FP32", False)],
)
def test_a_cast_between_dtypes_of_one_width_is_written_over_its_dying_input(src, dst, shared):
    """TCVT converts element i from the bytes it then writes: equal widths may share, a
    widening cast would write ahead of what it still has to read."""
    fn = alloc(
        f"""
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.cast(x, {dst})
        pl.store(y, [0, 0], out)
        """,
        f"a: pl.Tensor[[512, 128], {src}], out: pl.Out[pl.Tensor[[512, 128], {dst}]]",
    )
    refs = memrefs(fn)
    assert (refs["y"] == refs["x"]) is shared


def test_no_in_place_when_the_input_is_used_later():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.exp(x)
        pl.store(y, [0, 0], out)
        pl.store(x, [16, 0], out)
        """
    )
    assert offsets(fn) == {"x": 0, "y": 4096}


def test_no_in_place_for_a_reduction():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        tmp = pl.create_tile([16, 64], pl.FP32)
        s = pl.row_sum(x, tmp)
        pl.store(s, [0, 0], out)
        """
    )
    off = offsets(fn)
    assert len({off["x"], off["tmp"], off["s"]}) == 3  # row_sum reads x and tmp while writing s


def test_offsets_are_aligned():
    fn = alloc(
        """
        v = pl.load(a, [0, 0], [4, 5])
        w = pl.load(b, [0, 0], [4, 5])
        pl.store(pl.add(v, w), [0, 0], out)
        """
    )
    off = offsets(fn)
    assert off["v"] == 0 and off["w"] == 96  # 80 B rounded up to the platform's 32-B alignment


def test_a_value_defined_before_a_loop_stays_live_through_it():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(4):
            y = pl.load(b, [i * 16, 0], [16, 64])
            z = pl.add(y, x)
            pl.store(z, [i * 16, 0], out)
        """
    )
    off = offsets(fn)
    assert off["x"] == 0 and off["y"] == off["z"] == 4096  # z over y in place, never over x


def test_without_the_loop_the_same_buffer_is_reused():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(b, [0, 0], [16, 64])
        z = pl.add(y, x)
        pl.store(z, [0, 0], out)
        w = pl.load(b, [16, 0], [16, 64])
        pl.store(w, [16, 0], out)
        """
    )
    assert offsets(fn)["w"] == 0  # x is dead here: its buffer is free again


def test_declared_memref_gets_one_pinned_buffer_of_n_slots():
    fn = alloc(
        """
        for i in pl.range(8):
            tile: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 64, 0], [64, 128])
            e = pl.exp(tile)
            pl.store(e, [i * 64, 0], out)
        """  # noqa: E501
    )
    refs = memrefs(fn)
    ub = refs["tile"]
    assert (ub.name, ub.offset, ub.size, ub.slots) == ("ub", 0, 32768, 2)
    assert ir.print_expr(ub.index) == "i % 2"
    assert refs["e"].offset == 65536  # after both slots: the declaration is live all kernel
    assert refs["e"].name.startswith("mem_vec_")


def test_two_tiles_bound_to_one_declaration_share_it_with_the_largest_slot():
    fn = alloc(
        """
        x: pl.Tile[[16, 64], pl.FP32, pl.MemRef("buf"), pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])
        pl.store(x, [0, 0], out)
        y: pl.Tile[[32, 64], pl.FP32, pl.MemRef("buf"), pl.Mem.Vec] = pl.load(a, [0, 0], [32, 64])
        pl.store(y, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["x"] == refs["y"] and (refs["x"].offset, refs["x"].size) == (0, 8192)


def test_loop_carried_init_iter_yield_and_result_share_one_buffer():
    fn = alloc(
        """
        acc = pl.load(a, [0, 0], [16, 64])
        for i, (acc_1,) in pl.range(4, init_values=(acc,)):
            x = pl.load(b, [i * 16, 0], [16, 64])
            acc_2 = pl.add(acc_1, x)
            acc_3 = pl.yield_(acc_2)
        pl.store(acc_3, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["acc"] == refs["acc_1"] == refs["acc_2"] == refs["acc_3"]
    assert refs["x"] != refs["acc"]
    assert "tile.move" not in ops(fn)  # every copy the planner considered was coalesced away


def test_an_init_used_inside_the_loop_is_copied_first():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i, (acc,) in pl.range(3, init_values=(x,)):
            acc_1 = pl.add(acc, x)
            acc_2 = pl.yield_(acc_1)
        pl.store(acc_2, [0, 0], out)
        """
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    copy = fn.body[fn.body.index(loop) - 1]
    assert isinstance(copy, ir.Assign) and copy.value.op == "tile.move"
    assert loop.iter_args[0].init.name == copy.var.name
    refs = memrefs(fn)
    assert refs[copy.var.name] == refs["acc"] == refs["acc_2"] != refs["x"]


def test_swapped_carried_tiles_go_through_a_temporary():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(b, [0, 0], [16, 64])
        for i, (p, q) in pl.range(3, init_values=(x, y)):
            p_1, q_1 = pl.yield_(q, p)
        pl.store(pl.sub(p_1, q_1), [0, 0], out)
        """
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    moves = [s for s in loop.body if isinstance(s, ir.Assign)]
    assert [m.value.op for m in moves] == ["tile.move"] * len(moves) and len(moves) >= 3
    refs = memrefs(fn)
    assert refs["p"] != refs["q"]
    saved = moves[0]  # one carried tile is saved before either is overwritten
    assert refs[saved.var.name] not in (refs["p"], refs["q"])


AHEAD = """
        first = pl.load(a, [0, 0], [16, 64])
        for i, (cur,) in pl.range(4, init_values=(first,)):
            nxt = pl.load(a, [i * 16 + 16, 0], [16, 64])  # the next trip's tile, while cur is read
            e = pl.exp(cur)
            pl.store(e, [i * 16, 0], out)
            last = pl.yield_(nxt)
"""


def test_a_tile_computed_a_trip_ahead_rotates_through_two_slots_without_a_copy():
    fn = alloc(AHEAD)
    assert "tile.move" not in ops(fn)  # no copy of nxt into cur's buffer at the yield
    refs = memrefs(fn)
    ring = refs["nxt"]
    assert ring.slots == 2 and ring.size == 4096
    # trip i: the carried tile (and what is made over it) in slot i % 2, the next one in the other
    assert ir.print_expr(ring.index) == "(i + 1) % 2"
    assert ir.print_expr(refs["e"].index) == "i % 2" and refs["e"].offset == ring.offset
    # the carried value and its initial tile are "either slot" (codegen carries the address)
    assert refs["cur"].index is None and refs["first"].index is None and refs["cur"].offset == ring.offset


def test_the_second_slot_of_a_small_rotating_tile_starts_aligned():
    ring = memrefs(alloc(AHEAD.replace("[16, 64]", "[1, 4]")))["nxt"]  # 16 B a slot
    assert ring.slots == 2 and ring.size == int(CTX.platform.alignment_bytes)


def test_a_carried_tile_read_after_the_loop_keeps_its_buffer_and_the_copy():
    fn = alloc(AHEAD + "        pl.store(last, [0, 0], out)\n")
    assert "tile.move" in ops(fn)  # after an odd trip count the value would sit in the other slot
    assert all(m.slots == 1 for m in memrefs(fn).values())


def test_if_result_and_both_branch_values_share_one_buffer():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(2):
            if i == 0:
                y = pl.exp(x)
                r = pl.yield_(y)
            else:
                z = pl.muls(x, 2.0)
                r = pl.yield_(z)
            pl.store(r, [i * 16, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["y"] == refs["z"] == refs["r"] != refs["x"]
    assert "tile.move" not in ops(fn)


def test_branches_do_not_interfere_with_each_other():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(2):
            if i == 0:
                y = pl.exp(x)
                pl.store(y, [0, 0], out)
            else:
                w = pl.load(b, [0, 0], [16, 64])
                pl.store(w, [0, 0], out)
        """
    )
    off = offsets(fn)
    assert off["y"] == off["w"]  # never live at once: only one branch runs


def test_an_outer_value_yielded_by_a_branch_is_copied_when_still_needed():
    fn = alloc(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(2):
            if i == 0:
                y = pl.exp(x)
                r = pl.yield_(y)
            else:
                r = pl.yield_(x)
            pl.store(r, [i * 16, 0], out)
        pl.store(x, [32, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["r"] != refs["x"] and "tile.move" in ops(fn)


BIG = "a: pl.Tensor[[256, 128], pl.FP32], b: pl.Tensor[[256, 128], pl.FP32], c: pl.Out[pl.Tensor[[256, 128], pl.FP32]]"  # noqa: E501


def test_capacity_overflow_names_function_space_bytes_limit_and_tiles():
    p = kernel(
        BIG,
        """
        x = pl.load(a, [0, 0], [256, 128])
        y = pl.load(b, [0, 0], [256, 128])
        pl.store(pl.add(x, y), [0, 0], c)
        """,
    )
    with pytest.raises(MemoryCapacityError) as err:
        allocate_memory_addr(p, CTX)
    msg = str(err.value)
    assert "function 'k' needs 262144 B of Vec but 188416 B are available (73728 B over)" in msg
    assert "tiles live at once: x/add (131072 B at 0), y (131072 B, does not fit)" in msg
    assert err.value.span is not None and err.value.span.line == 8  # the tile that does not fit


def test_capacity_follows_platform_overrides():
    p = kernel(
        BIG,
        """
        x = pl.load(a, [0, 0], [256, 128])
        y = pl.load(b, [0, 0], [256, 128])
        pl.store(pl.add(x, y), [0, 0], c)
        """,
    )
    ctx = type(CTX)(CTX.platform.with_overrides(ub_bytes=256 * 1024))
    fn = apply(allocate_memory_addr, p, ctx).get("k")
    assert max(m.offset + m.size for m in memrefs(fn).values()) == 262144


CUBE = "a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[128, 64], pl.FP16], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]"  # noqa: E501


def test_matmul_acc_accumulates_in_the_accumulators_buffer_around_a_loop():
    fn = alloc(
        """
        l0 = pl.move(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        r0 = pl.move(pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(l0, r0)
        for k, (acc_1,) in pl.range(1, 4, init_values=(acc,)):
            lk = pl.move(pl.load(a, [0, k * 32], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            rk = pl.move(pl.load(b, [k * 32, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc_2 = pl.matmul_acc(acc_1, lk, rk)
            acc_3 = pl.yield_(acc_2)
        pl.store(acc_3, [0, 0], c)
        """,  # noqa: E501
        CUBE,
        "AIC",
    )
    refs = memrefs(fn)
    assert refs["acc"] == refs["acc_1"] == refs["acc_2"] == refs["acc_3"]
    assert all(
        s.value.arg("tile").type.memory.name != "Acc"
        for s in ir.nodes_of(fn.body, ir.Assign)
        if isinstance(s.value, ir.Call) and s.value.op == "tile.move"
    )


def test_matmul_acc_accumulator_used_afterwards_is_rejected():
    p = kernel(
        CUBE,
        """
        l0 = pl.move(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        r0 = pl.move(pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(l0, r0)
        acc_2 = pl.matmul_acc(acc, l0, r0)
        pl.store(acc_2, [0, 0], c)
        pl.store(acc, [0, 0], c)
        """,
        "AIC",
    )
    with pytest.raises(CompileError, match="updates its accumulator 'acc' in place"):
        allocate_memory_addr(p, CTX)


def test_orchestration_and_external_functions_are_left_alone():
    p = program(
        """
        @pl.program
        class p:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
                self.ext(a, out)

            @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
            def ext(self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
                ...
        """
    )
    assert allocate_memory_addr(p, CTX) == p


def test_a_value_inheriting_a_slotted_memref_type_is_not_pinned():
    # Found by the fuzz test: `t1 = t2` gives the if-result t2's slotted type; only t2 itself
    # is bound to the declaration, the merged value gets a plain buffer (and a copy).
    fn = alloc(
        """
        for i in pl.range(3):
            if i % 2 == 0:
                t2: pl.Tile[[16, 64], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])
                t1 = t2
                r = pl.yield_(t1)
            else:
                t3 = pl.load(b, [0, 0], [16, 64])
                r = pl.yield_(t3)
            pl.store(r, [0, 0], out)
        """  # noqa: E501
    )
    refs = memrefs(fn)
    assert refs["t2"].name == "ub" and refs["t2"].slots == 2
    assert refs["r"].name.startswith("mem_vec_") and refs["r"].slots == 1
    assert refs["r"] == refs["t3"]


def test_plain_tiles_may_share_a_single_slot_declaration():
    fn = alloc(
        """
        acc: pl.Tile[[16, 64], pl.FP32, pl.MemRef("buf"), pl.Mem.Vec] = pl.load(a, [0, 0], [16, 64])
        for i, (acc_1,) in pl.range(4, init_values=(acc,)):
            x = pl.load(b, [i * 16, 0], [16, 64])
            acc_2 = pl.add(acc_1, x)
            acc_3 = pl.yield_(acc_2)
        pl.store(acc_3, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert refs["acc"].name == refs["acc_1"].name == refs["acc_3"].name == "buf"
    assert "tile.move" not in ops(fn)
