"""Control-plane scalars in orchestration, as upstream's model code uses them: a pl.dynamic
dim read with pl.tensor.dim sets a loop's trip count, pl.cast converts scalars (numpy's
astype rules), and pl.read of an input steers the task list (planned again for each call);
inside a kernel a read value picks a window (an embedding lookup)."""

from __future__ import annotations

import numpy as np
import pytest
from read_kernels import first_n

import pypto.language as pl
from pypto.errors import CompileError, TypeCheckError
from pypto.ir.dtypes import BY_NAME, cast_scalar
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
RNG = np.random.default_rng(5)
B = pl.dynamic("B")


@pl.jit
def per_row(x: pl.Tensor[[B, 64], pl.FP32], y: pl.Out[pl.Tensor[[B, 64], pl.FP32]]):
    for b in pl.parallel(pl.tensor.dim(x, 0)):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[b : b + 1, :] = pl.muls(x[b : b + 1, :], 3.0)
    return y


def test_a_dynamic_dim_read_in_orchestration_sets_the_task_count_per_call():
    for n in (3, 5):
        x = np.arange(n * 64, dtype=np.float32).reshape(n, 64)
        y = np.zeros_like(x)
        per_row(x, y, config=CFG)
        np.testing.assert_array_equal(y, 3 * x)
        assert len(per_row.last_report.tasks) == n


@pl.jit
def embed(
    ids: pl.Tensor[[4, 8], pl.INT32],
    table: pl.Tensor[[16, 64], pl.FP32],
    y: pl.Out[pl.Tensor[[4, 64], pl.FP32]],
):
    for b in pl.parallel(pl.cast(4.9, pl.INT32)):  # 4: a float truncates toward zero
        with pl.at(level=pl.Level.CORE_GROUP):
            row = pl.cast(pl.read(ids, [b, 0]), target_type=pl.INDEX)
            y[b : b + 1, :] = table[row : row + 1, :]
    return y


def test_a_scalar_read_in_a_kernel_picks_the_window_it_loads():
    ids = np.repeat(np.array([[3], [0], [15], [7]], np.int32), 8, axis=1)
    table = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    y = np.zeros((4, 64), np.float32)
    embed(ids, table, y, config=CFG)
    np.testing.assert_array_equal(y, table[ids[:, 0]])


@pl.jit
def casts(x: pl.Tensor[[1, 8], pl.INT32], y: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(x, [0, 0])
        pl.write(y, [0, 0], pl.cast(pl.cast(v, pl.INT8), pl.INT32))
        pl.write(y, [0, 1], pl.cast(pl.cast(v, pl.UINT8), pl.INT32))
        pl.write(y, [0, 2], pl.cast(pl.cast(pl.cast(v, pl.FP32) * 0.37, pl.INT16), pl.INT32))
        pl.write(y, [0, 3], pl.cast(pl.cast(v, pl.BOOL), pl.INT32))
    return y


@pytest.mark.parametrize("value", [300, -129, 1000, 0, -7])
def test_scalar_casts_wrap_and_truncate_as_numpy_astype(value):
    x = np.full((1, 8), value, np.int32)
    y = np.zeros((1, 8), np.int32)
    casts(x, y, config=CFG)
    f = np.float32(np.float32(value) * np.float32(0.37))
    want = [np.int32(value).astype(np.int8), np.int32(value).astype(np.uint8), np.int16(int(f)), value != 0]
    assert y[0, :4].tolist() == [int(w) for w in want]
    assert [cast_scalar(value, BY_NAME[n]) for n in ("INT8", "UINT8")] == [int(w) for w in want[:2]]


def test_a_value_read_in_orchestration_steers_the_task_list_of_each_call():
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    for n in (3, 6, 0):
        y = np.zeros_like(x)
        first_n(np.full((1, 8), n, np.int32), x, y, config=CFG)
        np.testing.assert_array_equal(y[:n], 2 * x[:n])
        assert not y[n:].any() and len(first_n.last_report.tasks) == n


def test_orchestration_cannot_read_what_a_kernel_writes():
    @pl.jit
    def bad(x: pl.Tensor[[1, 8], pl.FP32], y: pl.Out[pl.Tensor[[1, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:, :] = pl.adds(x, 1.0)
        v = pl.read(y, [0, 0])
        for _ in pl.range(pl.cast(v, pl.INDEX)):
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:, :] = pl.adds(x, 2.0)
        return y

    with pytest.raises(
        CompileError, match=r"orchestration reads `y.*`, which a kernel of this program writes"
    ):
        bad(np.zeros((1, 8), np.float32), np.zeros((1, 8), np.float32), config=CFG)


def test_a_16_bit_float_scalar_cast_is_refused_with_the_alternative():
    @pl.jit
    def half(x: pl.Tensor[[1, 8], pl.FP32], y: pl.Out[pl.Tensor[[1, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.write(y, [0, 0], pl.cast(pl.cast(pl.read(x, [0, 0]), pl.FP16), pl.FP32))
        return y

    with pytest.raises(CompileError, match=r"a scalar casts to INDEX, .*not FP16; cast a tile"):
        half(np.zeros((1, 8), np.float32), np.zeros((1, 8), np.float32), config=CFG)


@pl.jit
def through_views(
    w: pl.Tensor[[256], pl.FP32], x: pl.Tensor[[8, 256], pl.FP32], y: pl.Out[pl.Tensor[[8, 4, 64], pl.FP32]]
):
    w2 = pl.reshape(w, [1, 256])  # views made in orchestration, passed to kernels
    y2 = pl.reshape(y, [8, 256])
    for r in pl.parallel(0, 8, 4):
        xs = pl.slice(x, [4, 256], [r, 0])
        with pl.at(level=pl.Level.CORE_GROUP):
            y2[r : r + 4, :] = pl.col_expand_mul(xs, w2)
    return y


def test_reshapes_and_slices_in_orchestration_are_views_kernels_read_and_write():
    w = np.arange(256, dtype=np.float32)
    x = RNG.standard_normal((8, 256)).astype(np.float32)
    y = np.zeros((8, 4, 64), np.float32)
    through_views(w, x, y, config=CFG)
    np.testing.assert_array_equal(y.reshape(8, 256), x * w[None])
    assert [t.deps for t in through_views.last_report.tasks] == [(), ()]  # disjoint rows, parallel


@pl.jit
def view_then_whole(x: pl.Tensor[[8, 64], pl.FP32], y: pl.InOut[pl.Tensor[[8, 64], pl.FP32]]):
    top = pl.slice(y, [4, 64], [0, 0])
    with pl.at(level=pl.Level.CORE_GROUP):
        top[:, :] = pl.adds(x[0:4, :], 1.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.muls(y, 2.0)  # reads what the first task wrote through the view
    return y


def test_a_task_using_a_tensor_follows_a_task_that_wrote_a_view_of_it():
    x = np.ones((8, 64), np.float32)
    y = np.full((8, 64), 5.0, np.float32)
    view_then_whole(x, y, config=CFG)
    np.testing.assert_array_equal(y[:4], 4.0)
    np.testing.assert_array_equal(y[4:], 10.0)
    assert [t.deps for t in view_then_whole.last_report.tasks] == [(), (0,)]


@pl.jit
def window_writers(x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    top = pl.slice(y, [32, 64], [0, 0])
    bottom = pl.slice(y, [32, 64], [32, 0])
    middle = pl.slice(y, [32, 64], [16, 0])
    tail = pl.slice(bottom, [16, 64], [16, 0])  # rows 48-63 of y
    with pl.at(level=pl.Level.CORE_GROUP):
        top[:, :] = pl.adds(x[0:32, :], 1.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        bottom[:, :] = pl.adds(x[32:64, :], 2.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        middle[:, :] = pl.muls(middle, 2.0)  # rows 16-47: what both wrote
    with pl.at(level=pl.Level.CORE_GROUP):
        tail[:, :] = pl.muls(tail, 3.0)  # rows 48-63: what the second wrote, not the third
    return y


def test_tasks_follow_the_tasks_whose_windows_of_a_buffer_overlap_theirs():
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    y = np.zeros_like(x)
    window_writers(x, y, config=CFG)
    want = np.concatenate([x[:16] + 1, 2 * (x[16:32] + 1), 2 * (x[32:48] + 2), 3 * (x[48:] + 2)])
    np.testing.assert_allclose(y, want, rtol=1e-6)
    assert [t.deps for t in window_writers.last_report.tasks] == [(), (), (0, 1), (1,)]


T = pl.dynamic("T")


@pl.jit
def dynamic_views(x: pl.Tensor[[T, 4, 64], pl.FP32], y: pl.Out[pl.Tensor[[T, 4, 64], pl.FP32]]):
    t = pl.tensor.dim(x, 0)
    xf = pl.reshape(x, [t * 4, 64])  # sizes known per call: views with run-time dims
    mid = pl.create_tensor([t * 4, 64], pl.FP32)
    for r in pl.parallel(t * 4):
        with pl.at(level=pl.Level.CORE_GROUP):
            mid[r : r + 1, :] = pl.muls(xf[r : r + 1, :], 2.0)
    yf = pl.reshape(y, [t * 4, 64])
    for r in pl.parallel(t * 4):
        with pl.at(level=pl.Level.CORE_GROUP):
            yf[r : r + 1, :] = pl.adds(mid[r : r + 1, :], 1.0)
    return y


def test_views_and_buffers_sized_at_run_time_are_planned_per_call():
    for n in (2, 3):
        x = RNG.standard_normal((n, 4, 64)).astype(np.float32)
        y = np.zeros_like(x)
        dynamic_views(x, y, config=CFG)
        np.testing.assert_allclose(y, 2 * x + 1, rtol=1e-6)
        assert len(dynamic_views.last_report.tasks) == 2 * n * 4
    text = dynamic_views.lower(x, y, config=CFG).as_python()
    assert 'D_t_x_4 = pl.dynamic("D_t_x_4")' in text  # the run-time size, named after its expression
    from pypto.frontend import parse_text

    assert parse_text(text).as_python() == text


@pl.jit
def spmd_of_read(
    lens: pl.Tensor[[1, 8], pl.INT32],
    x: pl.Tensor[[8, 64], pl.FP32],
    y: pl.InOut[pl.Tensor[[8, 64], pl.FP32]],
):
    active = pl.max(pl.cast(pl.read(lens, [0, 0]), pl.INDEX), 1)
    with pl.spmd(active):
        b = pl.get_block_idx()
        y[b : b + 1, :] = pl.adds(x[b : b + 1, :], 1.0)
    return y


def test_a_spmd_count_read_from_an_input_gives_that_many_blocks():
    x = np.zeros((8, 64), np.float32)
    for n in (3, 7):
        y = np.zeros_like(x)
        spmd_of_read(np.full((1, 8), n, np.int32), x, y, config=CFG)
        assert len(spmd_of_read.last_report.tasks) == n
        assert (y[:n] == 1).all() and not y[n:].any()


@pl.jit
def mixed_ints(
    pos: pl.Tensor[[1, 8], pl.INT32], x: pl.Tensor[[8, 64], pl.FP32], y: pl.InOut[pl.Tensor[[8, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        p = pl.read(pos, [0, 0])
        for i in pl.range(2):
            r = p + i  # an INT32 read and an INDEX loop variable meet in INDEX
            y[r : r + 1, :] = pl.adds(x[r : r + 1, :], 1.0)
    return y


def test_integer_scalars_of_two_dtypes_meet_in_index():
    x = np.zeros((8, 64), np.float32)
    y = np.zeros_like(x)
    mixed_ints(np.full((1, 8), 3, np.int32), x, y, config=CFG)
    assert y[:, 0].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    assert "pl.Scalar[pl.INDEX] = p + i" in mixed_ints.lower(np.zeros((1, 8), np.int32), x, y).as_python()


def test_bad_control_plane_reads_and_casts_are_typed_errors():
    from pypto.errors import ArgumentError, TypeCheckError

    @pl.jit
    def rounding(x: pl.Tensor[[1, 8], pl.FP32], y: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.write(y, [0, 0], pl.cast(pl.read(x, [0, 0]), pl.INT32, mode="round"))
        return y

    with pytest.raises(TypeCheckError, match=r"truncates toward zero \(mode='trunc'\), not mode='round'"):
        rounding(np.zeros((1, 8), np.float32), np.zeros((1, 8), np.int32), config=CFG)
    x = np.ones((8, 64), np.float32)
    y = np.zeros_like(x)
    with pytest.raises(ArgumentError, match=r"pl.read of `lens` at \[0, 8\] is outside its shape \[1, 8\]"):
        reads_past(np.zeros((1, 8), np.int32), x, y, config=CFG)
    assert not y.any()


@pl.jit
def reads_past(
    lens: pl.Tensor[[1, 8], pl.INT32], x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]
):
    for b in pl.range(pl.cast(pl.read(lens, [0, 8]), pl.INDEX)):  # one past the end
        with pl.at(level=pl.Level.CORE_GROUP):
            y[b : b + 1, :] = x[b : b + 1, :]
    return y


@pl.jit
def gated_rows(
    m: pl.Tensor[[1, 8], pl.INT32],
    x: pl.Tensor[[8, 64], pl.FP32],
    bias: pl.Tensor[[2, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
):
    buf = pl.create_tensor([8, 64], dtype=pl.FP32)
    with pl.spmd(8, name_hint="stage"):
        i = pl.tile.get_block_idx()
        flag = pl.read(m, [0, i])
        if flag >= 0:
            if flag % 2 == 0:  # a window picked per branch, read only in its branch
                b = bias[0:1, :]
                buf[i : i + 1, :] = pl.add(x[i : i + 1, :], b)
            else:
                b = bias[1:2, :]
                buf[i : i + 1, :] = pl.sub(x[i : i + 1, :], b)
        else:
            buf[i : i + 1, :] = pl.full([1, 64], dtype=pl.FP32, value=0.0)
    for blk in pl.spmd(2, name_hint="finish"):
        for j in pl.range(4):
            r = blk * 4 + j
            flag = pl.read(m, [0, r])  # rebound on every trip before it is read: nothing is carried
            if flag >= 0:
                out[r : r + 1, :] = pl.muls(buf[r : r + 1, :], 2.0)
    return out


def test_names_rebound_in_later_scopes_are_not_carried_out_of_earlier_ones():
    m = np.array([[0, -1, 2, 3, -1, 5, 6, 7]], np.int32)
    x, bias = RNG.standard_normal((8, 64)).astype(np.float32), RNG.standard_normal((2, 64)).astype(np.float32)
    out = np.zeros_like(x)
    gated_rows(m, x, bias, out, config=CFG)
    staged = np.where(m.T % 2 == 0, x + bias[0], x - bias[1])
    np.testing.assert_allclose(out, np.where(m.T >= 0, 2 * staged, 0), rtol=1e-6)
    text = gated_rows.lower(m, x, bias, out, config=CFG).as_python()
    assert "init_values=(out,)" in text  # `flag` is not carried around the loop


@pl.jit
def scaled_by_reciprocal(
    s: pl.Tensor[[1, 8], pl.FP32], x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        amax = pl.read(s, [0, 3])
        out[:, :] = pl.muls(x, 127.0 / amax)  # a float scalar divided on the scalar unit
    return out


def test_float_scalars_divide_with_slash_and_integers_are_told_to_use_floor_division():
    s = np.full((1, 8), 4.0, np.float32)
    s[0, 3] = 3.0
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    out = np.zeros_like(x)
    scaled_by_reciprocal(s, x, out, config=CFG)
    np.testing.assert_allclose(out, x * np.float32(127.0 / 3.0), rtol=1e-6)

    @pl.jit
    def int_div(n: pl.Tensor[[1, 8], pl.INT32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            half = pl.read(n, [0, 0]) / 2
            out[:, :] = pl.full([16, 64], dtype=pl.FP32, value=0.0)
            out[0:1, 0:1] = pl.full([1, 1], dtype=pl.FP32, value=half)
        return out

    with pytest.raises(
        TypeCheckError, match=r"`/` divides float scalars; use // .*test_control_plane.py:\d+"
    ):
        int_div.lower(np.zeros((1, 8), np.int32), out)


@pl.jit
def rows_by_flat_index(
    ids: pl.Tensor[[8], pl.INT32],
    grid: pl.Tensor[[4, 8], pl.INT32],
    x: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[2, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = pl.cast(pl.read(ids, 3), pl.INDEX)  # one index into a rank-1 tensor
        j = pl.cast(pl.read(grid, 13), pl.INDEX)  # a flat (row-major) index: grid[1, 5]
        out[0:1, :] = x[i : i + 1, :]
        out[1:2, :] = x[j : j + 1, :]
    return out


def test_pl_read_with_one_index_reads_the_flat_row_major_element():
    ids = np.arange(8, dtype=np.int32) * 5
    grid = np.arange(32, dtype=np.int32).reshape(4, 8) * 2
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    out = np.zeros((2, 64), np.float32)
    rows_by_flat_index(ids, grid, x, out, config=CFG)
    np.testing.assert_array_equal(out, x[[ids[3], grid.flat[13]]])


@pl.program
class WidenedScalars:
    """Upstream's paged-attention shape: block counts from an INT32 length and an INT64
    config (they meet in INDEX) carried in an INT64, and an INDEX loop variable passed to an
    INT64 kernel parameter; a kernel's store result named inside its loop and returned after."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill_rows(
        self,
        out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
        row: pl.Scalar[pl.INT64],
        value: pl.Scalar[pl.FP32],
    ) -> pl.Tensor[[64, 128], pl.FP32]:
        for r in pl.range(2):
            tile = pl.tile.full([8, 128], dtype=pl.FP32, value=value)
            out_new = pl.store(tile, [row * 16 + r * 8, 0], out)
        return out_new

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        lens: pl.Tensor[[4], pl.INT32],
        config: pl.Tensor[[1], pl.INT64],
        out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
    ) -> pl.Tensor[[64, 128], pl.FP32]:
        block = pl.tensor.read(config, [0])
        most: pl.Scalar[pl.INT64] = (pl.tensor.read(lens, [0]) + block - 1) // block  # annotated
        for b in pl.range(1, 4):
            blocks = (pl.tensor.read(lens, [b]) + block - 1) // block  # INT32 and INT64: INDEX
            most = pl.max(most, blocks)  # carried as the INT64 it started as
        for i in pl.range(4):
            if i < most:
                out = self.fill_rows(out, i, 1.0)  # the INDEX loop variable as an INT64
        return out


def test_integer_scalars_widen_at_carries_and_kernel_arguments_and_stores_name_their_tensor():
    lens, config = np.array([5, 40, 17, 30], np.int32), np.array([16], np.int64)
    out = np.zeros((64, 128), np.float32)
    from pypto.runtime import run

    run(WidenedScalars, lens, config, out, config=CFG)
    most = max(-(-n // 16) for n in lens)  # 3 blocks: rows of the first 3 quarters set
    want = np.zeros((64, 128), np.float32)
    want[: 16 * most] = 1.0
    np.testing.assert_array_equal(out, want)
    text = WidenedScalars.as_python()
    assert text.count("pl.scalar.cast(") == 3  # the annotated INDEX, the carry, the argument
    assert "        return out\n" in text  # the store's result after its loop: the tensor itself


@pl.jit
def narrowed_carry(a: pl.Tensor[[4], pl.INT64], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    n: pl.Scalar[pl.INT32] = 0
    for b in pl.range(4):
        n = pl.max(n, pl.tensor.read(a, [b]))  # an INT64 does not fit an INT32
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.full([16, 128], dtype=pl.FP32, value=1.0), [0, 0], out)
    return out


def test_a_carry_that_would_narrow_is_still_refused():
    with pytest.raises(TypeCheckError, match="`n` is carried around the loop/branch but its type changes"):
        narrowed_carry.compile(np.zeros(4, np.int64), np.zeros((16, 128), np.float32))


@pl.function(type=pl.FunctionType.InCore)
def accumulate_rows(
    x: pl.Tensor[[16, 64], pl.FP32],
    acc: pl.InOut[pl.Tensor[[16, 64], pl.FP32]],
    dst: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    first: pl.Scalar[pl.BOOL],
) -> tuple[pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
    t = pl.load(x, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    if first:
        acc_out = pl.store(t, [0, 0], acc)
        dst_out = pl.store(t, [0, 0], dst)
    else:
        total = pl.add(pl.load(acc, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec), t)
        acc_out = pl.store(total, [0, 0], acc)
        dst_out = pl.store(total, [0, 0], dst)
    return acc_out, dst_out


@pl.program
class RunTimeWindows:
    """Upstream's paged-attention shape: sizes read from a config tensor size the buffers and
    the windows passed to module-level kernels of fixed sizes; a flag yielded as an integer is
    the kernel's BOOL; the kernel returns the stores of both branches of an if."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[64, 64], pl.FP32],
        config: pl.Tensor[[2], pl.INT64],
        out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ) -> pl.Tensor[[16, 64], pl.FP32]:
        rows = pl.tensor.read(config, [0])
        steps = pl.tensor.read(config, [1])
        acc = pl.create_tensor([rows, 64], dtype=pl.FP32)
        for i in pl.range(steps):
            xi = pl.slice(x, [rows, 64], [i * rows, 0])
            if i == 0:  # noqa: SIM108 (upstream's form: a flag yielded from both branches)
                first = pl.yield_(1)
            else:
                first = pl.yield_(0)
            acc, out = accumulate_rows(xi, acc, out, first)
        return out


def test_windows_sized_at_run_time_reach_kernels_of_fixed_sizes():
    from pypto.errors import ArgumentError
    from pypto.runtime import run

    x = RNG.standard_normal((64, 64)).astype(np.float32)
    for steps in (1, 3):
        out = np.zeros((16, 64), np.float32)
        run(RunTimeWindows, x, np.array([16, steps], np.int64), out, config=CFG)
        np.testing.assert_allclose(out, x[: 16 * steps].reshape(steps, 16, 64).sum(0), rtol=1e-6)
    assert [f.name for f in RunTimeWindows.functions] == ["main", "accumulate_rows"]
    out = np.full((16, 64), 7.0, np.float32)
    with pytest.raises(
        ArgumentError, match=r"`x` of `accumulate_rows` is \[16, 64\], but at this call `xi` is \[8, 64\]"
    ):
        run(RunTimeWindows, x, np.array([8, 2], np.int64), out, config=CFG)
    assert (out == 7.0).all()  # refused before any kernel ran


@pl.jit
def sliced_in_kernel(
    x: pl.Tensor[[64, 64], pl.FP32], n: pl.Tensor[[1], pl.INT64], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.tensor.read(n, [0])
        y[:, :] = pl.slice(x, [rows, 64], [0, 0])
    return y


def test_a_window_sized_at_run_time_inside_a_kernel_is_refused_at_its_line():
    with pytest.raises(
        TypeCheckError, match=r"pl.slice inside a kernel needs sizes known at compile time"
    ) as e:
        sliced_in_kernel.compile(
            np.zeros((64, 64), np.float32), np.zeros(1, np.int64), np.zeros((16, 64), np.float32)
        )
    assert "test_control_plane.py:" in str(e.value)


@pl.function(type=pl.FunctionType.InCore)
def square_matmul(
    a: pl.Tensor[[64, 64], pl.FP16], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
) -> pl.Tensor[[64, 64], pl.FP32]:
    m = pl.load(a, [0, 0], [64, 64], target_memory=pl.MemorySpace.Mat)
    acc = pl.matmul(
        pl.move(m, target_memory=pl.MemorySpace.Left), pl.move(m, target_memory=pl.MemorySpace.Right)
    )
    return pl.store(acc, [0, 0], c)


@pl.program
class CubeByItsWork:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, a: pl.Tensor[[64, 64], pl.FP16], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        c = square_matmul(a, c)
        return c


def test_a_cube_kernel_written_as_incore_runs_on_an_aic():
    from pypto.runtime import run

    a = RNG.uniform(-1, 1, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    run(CubeByItsWork, a, c, config=CFG)
    np.testing.assert_allclose(c, a.astype(np.float32) @ a.astype(np.float32), rtol=1e-4, atol=1e-4)


COLS = pl.dynamic("COLS")


def scaled_copy_program(rows: int):
    """A builder, as upstream's multi-config paged attention: its kernel's annotations name the
    builder's ``rows`` and a module-level pl.dynamic dim."""

    @pl.function(type=pl.FunctionType.InCore)
    def scaled_copy(
        x: pl.Tensor[[rows, COLS], pl.FP32], y: pl.Out[pl.Tensor[[rows, COLS], pl.FP32]]
    ) -> pl.Tensor[[rows, COLS], pl.FP32]:
        t = pl.load(x, [0, 0], [rows, 64], target_memory=pl.MemorySpace.Vec)
        return pl.store(pl.muls(t, 2.0), [0, 0], y)

    @pl.program
    class ScaledCopy:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[rows, 64], pl.FP32],
            n: pl.Tensor[[1], pl.INT64],
            y: pl.Out[pl.Tensor[[rows, 64], pl.FP32]],
        ) -> pl.Tensor[[rows, 64], pl.FP32]:
            cols = pl.tensor.read(n, [0])
            src = pl.slice(x, [rows, cols], [0, 0])
            y = scaled_copy(src, y)
            return y

    return ScaledCopy


def test_kernels_built_in_a_function_take_its_sizes_and_their_dynamic_dims_agree_per_call():
    from pypto.errors import ArgumentError
    from pypto.runtime import run

    program = scaled_copy_program(16)
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    y = np.zeros_like(x)
    run(program, x, np.array([64], np.int64), y, config=CFG)
    np.testing.assert_array_equal(y, 2 * x)
    y[:] = 5.0
    with pytest.raises(ArgumentError, match=r"`scaled_copy`'s dim COLS is 32 in `x` but 64 in `y`"):
        run(program, x, np.array([32], np.int64), y, config=CFG)
    assert (y == 5.0).all()


@pl.program
class PhasedStripes:
    """Upstream's phase-fence shape: a loop carrying task ids explicitly (init_values) whose
    body rebinds `out` to what a kernel wrote into it, which names the same tensor."""

    @pl.function(type=pl.FunctionType.InCore)
    def stripe(
        self,
        data: pl.Tensor[[64, 32], pl.FP32],
        row: pl.Scalar[pl.INDEX],
        out: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
    ) -> pl.Tensor[[64, 32], pl.FP32]:
        t = pl.load(data, [row, 0], [16, 32])
        return pl.store(pl.adds(t, 1.0), [row, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, data: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
    ) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.manual_scope():
            tids = pl.array.create(2, pl.TASK_ID)
            for phase, (before,) in pl.range(2, init_values=(tids,)):
                now = pl.array.create(2, pl.TASK_ID)
                for branch in pl.parallel(2):
                    out, tid = pl.submit(self.stripe, data, (phase * 2 + branch) * 16, out, deps=[before])
                    now[branch] = tid
                tids = pl.yield_(now)
        return out


def test_a_tensor_rebound_to_a_kernels_write_into_it_needs_no_carry():
    from pypto.runtime import run

    data = RNG.standard_normal((64, 32)).astype(np.float32)
    out = np.zeros_like(data)
    run(PhasedStripes, data, out, config=CFG)
    np.testing.assert_array_equal(out, data + 1)


@pl.jit
def rebinds_to_another(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    n = 0
    for i, (m,) in pl.range(2, init_values=(n,)):
        out = pl.create_tensor([16, 32], pl.FP32)  # another buffer: dropping it after the loop would be wrong
        m = pl.yield_(m + i)
    return out


def test_a_tensor_rebound_to_another_buffer_in_such_a_loop_is_still_refused():
    from pypto.errors import UnsupportedSyntaxError
    from pypto.frontend import OutParamWriteDropped

    with (
        pytest.warns(OutParamWriteDropped),  # the rebinding writes nothing, and is warned of as well
        pytest.raises(UnsupportedSyntaxError, match="the loop rebinds `out`, defined before it"),
    ):
        rebinds_to_another.compile(np.zeros((16, 32), np.float32), np.zeros((16, 32), np.float32))


@pl.jit
def rows_from(
    at: pl.Tensor[[1, 8], pl.INT32],
    x: pl.Tensor[[8, 64], pl.FP32],
    y: pl.Out[pl.Tensor[[2, 64], pl.FP32]],
):
    r = pl.cast(pl.read(at, [0, 0]), pl.INDEX)
    rows = pl.slice(x, [2, 64], [r, 0])  # a window placed by an input's value
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.muls(rows, 3.0)
    return y


def test_a_slice_placed_by_an_input_is_checked_against_its_tensor_at_each_call():
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    y = np.zeros((2, 64), np.float32)
    for r in (0, 6, 3):  # the same slice, planned again with each call's value
        rows_from(np.full((1, 8), r, np.int32), x, y, config=CFG)
        np.testing.assert_array_equal(y, 3 * x[r : r + 2])
    y[:] = -1.0
    with pytest.raises(
        CompileError, match=r"pl.slice of `x` \[8, 64\]: on dim 0 the window \[7, 9\) is outside \[0, 8\)"
    ):
        rows_from(np.full((1, 8), 7, np.int32), x, y, config=CFG)
    assert (y == -1.0).all()  # refused before anything ran
