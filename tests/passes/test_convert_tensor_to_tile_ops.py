"""ConvertTensorToTileOps alone: tensor-level ops in an InCore kernel become tile ops (elementwise
ops load their tensor operands to Vec, a window of a tensor is a view, matmul is chunked
along K to fit L0A/L0B), and tensor ops it does not lower are reported at their line."""

from __future__ import annotations

import pytest
from pass_util import CTX, apply, kernel, ops

from pypto import ir
from pypto.errors import CompileError
from pypto.passes.convert_tensor_to_tile_ops import convert_tensor_to_tile_ops

VEC = (
    "a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32], "
    "out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]"
)


def lower(params: str, body: str, kind: str = "AIV") -> ir.Function:
    return apply(convert_tensor_to_tile_ops, kernel(params, body, kind)).functions[0]


def test_elementwise_tensor_ops_load_operands_to_vec_and_become_tile_ops():
    fn = lower(
        VEC,
        """
        c = pl.add(a, b)
        d = pl.exp(c)
        out = pl.assemble(out, d, [0, 0])
        """,
    )
    assert ops(fn) == ["tile.load", "tile.load", "tile.add", "tile.exp", "tile.store"]
    loads = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.load"]
    assert [c.arg("tensor").name for c in loads] == ["a", "b"]
    assert all(c.type.memory is ir.MemorySpace.Vec for c in loads)


def test_a_window_of_a_tensor_is_a_view_whose_offsets_reach_the_load():
    fn = lower(
        VEC,
        """
        w = a[0:32, 64:128]
        e = pl.exp(w)
        out = pl.assemble(out, e, [32, 0])
        """,
    )
    assert ops(fn) == ["tile.load", "tile.exp", "tile.store"]
    load = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.load")
    assert [i.value for i in load.arg("offsets").items] == [0, 64]
    assert load.type.shape == (32, 64)
    store = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.store")
    assert [i.value for i in store.arg("offsets").items] == [32, 0]


def test_matmul_is_chunked_along_k_to_fit_l0a_and_l0b():
    params = (
        "a: pl.Tensor[[128, 1024], pl.FP16], b: pl.Tensor[[1024, 128], pl.FP16], "
        "out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]"
    )
    fn = lower(params, "c = pl.matmul(a, b)\nout = pl.assemble(out, c, [0, 0])", "AIC")
    p = CTX.platform
    # the largest multiple of 16 dividing K whose [128, kt] fp16 operand fits L0A (and L0B)
    kt = max(k for k in range(16, 1025, 16) if 1024 % k == 0 and 128 * k * 2 <= min(p.l0a_bytes, p.l0b_bytes))
    chunks = 1024 // kt
    names = ops(fn)
    assert names.count("tile.matmul") == 1 and names.count("tile.matmul_acc") == chunks - 1
    assert names.count("tile.load") == 2 * chunks and names[-1] == "tile.store"
    moves = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.move"]
    assert {c.type.memory for c in moves} == {ir.MemorySpace.Left, ir.MemorySpace.Right}
    assert all(c.type.shape in ((128, kt), (kt, 128)) for c in moves)


BIG = (
    "a: pl.Tensor[[512, 64], pl.FP16], b: pl.Tensor[[64, 512], pl.FP16], "
    "out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]"
)


def test_a_matmul_output_larger_than_l0c_is_made_and_stored_block_by_block():
    """[512, 512] fp32 is 1 MiB of Acc against L0C's 128 KiB: of the largest blocks of whole
    fractals that fit ([64, 512], [128, 256], ...), the one of whole rows, so each store is one
    contiguous window; each block is made and stored before the next."""
    fn = lower(BIG, "c = pl.matmul(a, b)\nout = pl.assemble(out, c, [0, 0])", "AIC")
    calls = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op in ("tile.matmul", "tile.store")]
    assert [c.op for c in calls] == ["tile.matmul", "tile.store"] * 8  # one block in Acc at a time
    p = CTX.platform
    blocks = {c.type.shape for c in calls if c.op == "tile.matmul"}
    ((mt, nt),) = blocks
    assert mt * nt * 4 <= p.l0c_bytes and (mt, nt) == (64, 512)
    stores = [[i.value for i in c.arg("offsets").items] for c in calls if c.op == "tile.store"]
    assert stores == [[r, 0] for r in range(0, 512, 64)]
    loads = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.load"]
    assert [[i.value for i in c.arg("offsets").items] for c in loads if c.arg("tensor").name == "a"] == [
        [r, 0] for r in range(0, 512, 64)
    ]


def test_an_oversized_product_used_on_chip_is_refused_with_the_numbers():
    body = "c = pl.matmul(a, b)\nd = pl.add(c, c)\nout = pl.assemble(out, d, [0, 0])"
    with pytest.raises(CompileError, match=r"matmul output \[512, 512\] too large for L0C \(131072 B\)"):
        lower(BIG, body, "AIC")


def test_an_oversized_product_is_refused_when_its_operand_is_written_before_it_is_stored():
    params = BIG.replace("a: pl.Tensor", "a: pl.InOut[pl.Tensor").replace("pl.FP16], b:", "pl.FP16]], b:", 1)
    body = """
        c = pl.matmul(a, b)
        a = pl.assemble(a, b[0:64, 0:64], [0, 0])
        out = pl.assemble(out, c, [0, 0])
        """
    with pytest.raises(CompileError, match="an operand of its matmul was written in between"):
        lower(params, body, "AIC")


CHAIN = (
    "a: pl.Tensor[[256, 64], pl.FP16], b: pl.Tensor[[64, 256], pl.FP16], e: pl.Tensor[[256, 64], pl.FP16], "
    "out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]"
)


def test_a_product_cast_with_rint_for_another_matmul_is_narrowed_by_fixpipe_into_l1():
    """(a @ b) cast to fp16 with ties to even, then multiplied: FIXPIPE narrows each [128, 256]
    block into one L1 tile (no vector cast), which the second matmul reads in K chunks."""
    body = """
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.FP16, mode="rint")
        d = pl.matmul(cb, e, out_dtype=pl.FP32)
        out = pl.assemble(out, d, [0, 0])
        """
    fn = lower(CHAIN, body, "AIC")
    names = ops(fn)
    assert "tile.cast" not in names and names.count("tile.create") == 1
    inserts = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.assemble"]
    assert [[i.value for i in c.arg("offset").items] for c in inserts] == [[0, 0], [128, 0]]
    assert {c.type for c in inserts} == {ir.TileType((256, 256), ir.FP16, ir.MemorySpace.Mat)}
    # the default rounding (ties away from zero) is not what FIXPIPE does: a vector cast
    with pytest.raises(CompileError, match="too large for L0C"):
        lower(CHAIN, body.replace('mode="rint"', 'mode="round"'), "AIC")


def test_a_matmul_of_m_short_of_a_fractal_multiplies_whole_fractals_and_stores_its_rows():
    """M = 8 (a decode batch): the window is loaded as 16 rows with 8 valid, the product is
    [16, N] in Acc and what is stored is its [8, N] part."""
    params = (
        "a: pl.Tensor[[8, 64], pl.FP16], b: pl.Tensor[[64, 32], pl.FP16], "
        "out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]"
    )
    fn = lower(params, "c = pl.matmul(a, b)\nout = pl.assemble(out, c, [0, 0])", "AIC")
    loads_and_moves = ["tile.load", "tile.move"] * 2
    assert ops(fn) == [*loads_and_moves, "tile.matmul", "tile.slice", "tile.store"]
    calls = {c.op: c for c in ir.nodes_of(fn.body, ir.Call)}
    left = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.load")
    assert left.type.shape == (16, 64) and [i.value for i in left.arg("valid_shape").items] == [8, 64]
    assert calls["tile.matmul"].type.shape == (16, 32)
    assert calls["tile.slice"].type.shape == (8, 32) and calls["tile.store"].arg("tile").type.shape == (8, 32)


def test_a_short_n_is_padded_on_the_right_operand_transposed_or_not():
    params = (
        "a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[40, 64], pl.FP16], "
        "out: pl.Out[pl.Tensor[[16, 40], pl.FP32]]"
    )
    fn = lower(params, "c = pl.matmul(a, b, b_trans=True)\nout = pl.assemble(out, c, [0, 0])", "AIC")
    loads = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.load"]
    assert [c.type.shape for c in loads] == [(16, 64), (48, 64)]  # B^T rows are N: 40 -> 48
    assert _no_valid(loads[0])  # M = 16: whole already
    assert [i.value for i in loads[1].arg("valid_shape").items] == [40, 64]
    (part,) = [c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.slice"]
    assert part.type.shape == (16, 40)


def _no_valid(load: ir.Call) -> bool:
    valid = load.arg("valid_shape")
    return not isinstance(valid, ir.ListExpr) or not valid.items


def test_an_accumulator_of_m_short_of_a_fractal_is_carried_padded():
    """The K walk of a decode projection: the kernel-local accumulator, the loop carrying it and
    both branches' products are [16, N]; only the store after the loop takes the [8, N] part."""
    params = (
        "a: pl.Tensor[[8, 256], pl.FP16], b: pl.Tensor[[256, 64], pl.FP16], "
        "c: pl.Out[pl.Tensor[[8, 64], pl.FP32]]"
    )
    body = GEMM_IF_ELSE.replace("[64, 64], dtype", "[8, 64], dtype").replace(
        "slice(a, [64, 64]", "slice(a, [8, 64]"
    )
    fn = lower(params, body, "AIC")
    padded = ir.TileType((16, 64), ir.FP32, ir.MemorySpace.Acc)
    create = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.create")
    assert (create.type.shape, create.type.memory) == (padded.shape, padded.memory)
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    assert loop.iter_args[0].var.type.shape == (16, 64) and loop.results[0].type.shape == (16, 64)
    assert ops(fn)[-2:] == ["tile.slice", "tile.store"] and ops(fn).count("tile.slice") == 1


def test_a_k_short_of_a_fractal_is_refused_at_the_matmul():
    params = (
        "a: pl.Tensor[[16, 100], pl.FP16], b: pl.Tensor[[100, 32], pl.FP16], "
        "out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]"
    )
    with pytest.raises(CompileError, match=r"K \(100\) must be a multiple of 16"):
        lower(params, "c = pl.matmul(a, b)\nout = pl.assemble(out, c, [0, 0])", "AIC")


RED = "x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]"


def carried(init: str) -> str:
    """A kernel body adding x into `acc` four times around a loop, `acc` starting as `init`."""
    return f"""
    acc = {init}
    for i, (acc_1,) in pl.range(4, init_values=(acc,)):
        acc_2 = pl.add(acc_1, x)
        acc_3 = pl.yield_(acc_2)
    y = pl.assemble(y, acc_3, [0, 0])
    """


def test_a_tensor_level_reduction_gets_its_scratch_from_the_compiler():
    fn = lower(
        RED,
        """
        m = pl.row_max(x)
        d = pl.row_expand_sub(x, m)
        y = pl.assemble(y, d, [0, 0])
        """,
    )
    # x is loaded once for both uses; the row reduction's tmp is a Vec tile of x's shape
    assert ops(fn) == ["tile.load", "tile.create", "tile.row_max", "tile.row_expand_sub", "tile.store"]
    create = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.create")
    assert create.type == ir.TileType((32, 64), ir.FP32, ir.MemorySpace.Vec)


def test_a_value_carried_around_a_loop_becomes_a_carried_tile():
    fn = lower(
        RED,
        carried("pl.full([32, 64], dtype=pl.FP32, value=0.0)"),
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    vec = ir.TileType((32, 64), ir.FP32, ir.MemorySpace.Vec)
    assert loop.iter_args[0].var.type == vec and loop.results[0].type == vec
    assert ops(fn) == ["tile.full", "tile.load", "tile.add", "tile.store"]
    store = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.store")
    assert store.arg("tile").name == loop.results[0].name


MM = (
    "a: pl.Tensor[[64, 256], pl.FP16], b: pl.Tensor[[256, 64], pl.FP16], "
    "c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]"
)
# The GEMM-with-epilogue accumulator: a kernel-local tensor assigned by matmul on the first K
# step and matmul_acc after it (ELSE_VALUE: what the else branch assigns).
GEMM = """
acc = pl.create_tensor([64, 64], dtype=pl.FP32)
for kb, (acc_1,) in pl.range(4, init_values=(acc,)):
    ta = pl.tensor.slice(a, [64, 64], [0, kb * 64])
    tb = pl.tensor.slice(b, [64, 64], [kb * 64, 0])
    if kb == 0:
        acc_2 = pl.matmul(ta, tb, out_dtype=pl.FP32)
        acc_4 = pl.yield_(acc_2)
    else:
        acc_3 = ELSE_VALUE
        acc_4 = pl.yield_(acc_3)
    acc_5 = pl.yield_(acc_4)
c = pl.assemble(c, acc_5, [0, 0])
"""
GEMM_IF_ELSE = GEMM.replace("ELSE_VALUE", "pl.matmul_acc(acc_1, ta, tb)")


def test_a_kernel_local_accumulator_assigned_in_both_branches_lives_in_acc():
    fn = lower(
        MM,
        GEMM_IF_ELSE,
        "AIC",
    )
    create = next(c for c in ir.nodes_of(fn.body, ir.Call) if c.op == "tile.create")
    assert create.type.memory is ir.MemorySpace.Acc
    names = ops(fn)
    assert names.count("tile.matmul") == 1 and names.count("tile.matmul_acc") == 1
    assert names[-1] == "tile.store"


def test_windows_both_branches_multiply_are_loaded_once_before_the_if():
    fn = lower(
        MM,
        GEMM_IF_ELSE,
        "AIC",
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    before = [s.value.op for s in loop.body if isinstance(s, ir.Assign)]
    assert before == ["tile.load", "tile.move", "tile.load", "tile.move"]  # ta and tb, once
    branch = next(s for s in loop.body if isinstance(s, ir.If))
    assert [c.op for c in ir.nodes_of(branch.then_body, ir.Call)] == ["tile.matmul"]
    mm_acc = next(c for c in ir.nodes_of(branch.else_body, ir.Call))
    assert mm_acc.op == "tile.matmul_acc"
    moved = [s.var for s in loop.body if isinstance(s, ir.Assign) and s.value.op == "tile.move"]
    assert [mm_acc.arg("lhs"), mm_acc.arg("rhs")] == moved  # the else branch reads the hoisted tiles


def test_branches_reading_different_windows_keep_their_loads():
    fn = lower(
        MM,
        """
        for kb, (c_1,) in pl.range(2, init_values=(c,)):
            if kb == 0:
                p = pl.matmul(pl.tensor.slice(a, [64, 64], [0, 0]), pl.tensor.slice(b, [64, 64], [0, 0]))
                c_2 = pl.assemble(c_1, p, [0, 0])
                c_4 = pl.yield_(c_2)
            else:
                q = pl.matmul(pl.tensor.slice(a, [64, 64], [0, 64]), pl.tensor.slice(b, [64, 64], [0, 0]))
                c_3 = pl.assemble(c_1, q, [0, 0])
                c_4 = pl.yield_(c_3)
            c_5 = pl.yield_(c_4)
        """,
        "AIC",
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    branch = next(s for s in loop.body if isinstance(s, ir.If))
    assert not [s for s in loop.body if isinstance(s, ir.Assign)]  # the a windows differ: nothing hoisted
    assert [c.op for c in ir.nodes_of(branch.else_body, ir.Call)][:2] == ["tile.load", "tile.move"]


def test_paths_that_leave_a_kernel_local_tensor_in_two_memories_are_refused():
    with pytest.raises(CompileError, match=r"merged .* from a value in pl.Mem.Acc .* one in pl.Mem.Vec"):
        lower(MM, GEMM.replace("ELSE_VALUE", "pl.full([64, 64], dtype=pl.FP32, value=0.0)"), "AIC")


def test_a_kernel_local_tensor_read_before_it_is_assigned_is_refused_at_the_read():
    with pytest.raises(CompileError, match=r"`acc` is read before it is assigned") as err:
        lower(
            RED,
            """
            acc = pl.create_tensor([32, 64], dtype=pl.FP32)
            s = pl.add(acc, x)
            y = pl.assemble(y, s, [0, 0])
            """,
        )
    assert "s = pl.add(acc, x)" in str(err.value)  # the reading line, quoted with its position


def test_a_loop_reading_an_unassigned_accumulator_on_its_first_trip_is_refused():
    with pytest.raises(CompileError, match=r"`acc_1` is read before it is assigned"):
        lower(
            RED,
            carried("pl.create_tensor([32, 64], dtype=pl.FP32)"),
        )


def test_init_value_gives_a_kernel_local_tensor_its_values():
    fn = lower(
        RED,
        carried("pl.create_tensor([32, 64], dtype=pl.FP32, init_value=1.0)"),
    )
    assert ops(fn)[0] == "tile.full"
