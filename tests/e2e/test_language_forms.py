"""pl.const, pl.static_assert, pl.tensor.dim and unnamed pl.MemRef buffers, run in kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import (
    MisplacedOpError,
    OutsideKernelError,
    StaticAssertError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir.printer import print_program

R, C = 16, 64


def rand(seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, (R, C)).astype(np.float32)


@pl.jit
def scaled(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.static_assert(pl.tensor.dim(x, 1) % 16 == 0, "columns must be a multiple of 16")
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.tensor.dim(x, 0)
        k = pl.const(3, pl.INT32)
        t = pl.load(x, [k - 3, 0], [rows, pl.dim(x, -1)])  # pl.dim is pl.tensor.dim
        pl.store(pl.muls(t, pl.const(0.25, pl.FP32)), [0, 0], out)
        pl.write(out, [0, 0], pl.const(7.0, pl.FP32))
    return out


def test_const_dim_and_static_assert_in_a_kernel():
    x, out = rand(), np.zeros((R, C), np.float32)
    scaled(x, out)
    ref = x * np.float32(0.25)
    ref[0, 0] = 7.0
    np.testing.assert_array_equal(out, ref)


def test_a_false_static_assert_names_the_condition_the_message_and_the_line():
    x = np.zeros((R, 24), np.float32)
    with pytest.raises(StaticAssertError, match="columns must be a multiple of 16") as e:
        scaled(x, np.zeros_like(x))
    assert "pl.tensor.dim(x, 1) % 16 == 0" in str(e.value)
    assert "test_language_forms.py:" in str(e.value)


def test_a_static_assert_on_a_run_time_value_is_refused():
    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            v = pl.read(x, [0, 0])
            pl.static_assert(v > 0)
            pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="needs a compile-time condition"):
        bad(rand(), np.zeros((R, C), np.float32))


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("pl.const(2.5, pl.INT32)", "is not an integer"),
        ("pl.const(300, pl.INT8)", "does not fit INT8"),
        ("pl.const(70000.0, pl.FP16)", "70000.0 overflows FP16 .* the largest is 65504"),
        ("pl.const(-1e39, pl.FP32)", "overflows FP32"),
    ],
)
def test_const_values_that_do_not_fit_their_dtype(tmp_path, expr, message):
    src = tmp_path / "k.py"
    src.write_text(
        "import pypto.language as pl\n\n"
        "@pl.jit\n"
        "def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        c = {expr}\n"
        "        pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), c), [0, 0], out)\n"
        "    return out\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("k_const", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(TypeCheckError, match=message) as e:
        mod.k(rand(), np.zeros((R, C), np.float32))
    assert "k.py:6" in str(e.value)


BUF = pl.MemRef(slots=2)


@pl.jit
def double_buffered(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t: pl.Tile[[4, C], pl.FP32, BUF[i % 2], pl.Mem.Vec] = pl.load(x, [i * 4, 0], [4, C])
            u: pl.Tile[[4, C], pl.FP32, pl.MemRef(slots=2)[i % 2], pl.Mem.Vec] = pl.exp(t)
            pl.store(u, [i * 4, 0], out)
    return out


def test_unnamed_memrefs_are_distinct_buffers_named_after_their_line():
    line = Path(__file__).read_text().splitlines().index("BUF = pl.MemRef(slots=2)") + 1
    assert BUF.name == f"memref_test_language_forms_l{line}" and BUF.slots == 2
    assert pl.MemRef().name != BUF.name
    x, out = rand(), np.zeros((R, C), np.float32)
    double_buffered(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    text = print_program(double_buffered.lower(x, out))
    assert BUF.name in text and "memref_l" in text  # the in-kernel spelling: named by line and column


@pl.jit
def halve_until_small(x: pl.Tensor, limit: pl.Tensor, out: pl.Out[pl.Tensor], trips: pl.Out[pl.Tensor]):
    """Halves a tile until its first element drops below a run-time limit."""
    with pl.at(level=pl.Level.CORE_GROUP):
        bound = pl.read(limit, [0])
        t0 = pl.load(x, [0, 0], [R, C])
        for t, n, go in pl.while_(init_values=(t0, 0, pl.read(t0, [0, 0]) >= bound)):
            pl.cond(go)
            t_next = pl.muls(t, 0.5)
            t_out, n_out, go_out = pl.yield_(t_next, n + 1, pl.read(t_next, [0, 0]) >= bound)
        pl.store(t_out, [0, 0], out)
        pl.write(trips, [0], n_out)
    return out


@pytest.mark.parametrize(("first", "limit", "want"), [(100.0, 1.0, 7), (0.5, 1.0, 0), (1.0, 1.0, 1)])
def test_while_runs_until_its_run_time_condition_fails(first, limit, want):
    x = np.full((R, C), 3.0, np.float32)
    x[0, 0] = first
    out, trips = np.zeros_like(x), np.zeros(1, np.int64)
    halve_until_small(x, np.array([limit], np.float32), out, trips)
    assert trips[0] == want
    np.testing.assert_array_equal(out, x * np.float32(0.5**want))
    text = print_program(halve_until_small.lower(x, np.array([limit], np.float32), out, trips))
    assert "in pl.while_(init_values=" in text and "pl.cond(go)" in text


def test_while_needs_cond_first_and_stays_in_incore_code():
    @pl.jit
    def no_cond(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for (n,) in pl.while_(init_values=(0,)):
                m = n + 1
                n_out = pl.yield_(m)  # noqa: F841 - the kernel result name
            pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(UnsupportedSyntaxError, match=r"starts with `pl.cond\(condition\)`") as e:
        no_cond(rand(), np.zeros((R, C), np.float32))
    assert "test_language_forms.py:" in str(e.value)

    @pl.jit
    def outside(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        for (n,) in pl.while_(init_values=(0,)):
            pl.cond(n < 3)
            n_out = pl.yield_(n + 1)  # noqa: F841 - the kernel result name
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(MisplacedOpError, match="belongs in InCore code"):
        outside(rand(), np.zeros((R, C), np.float32))


@pl.jit.host
def block_rows(total: int, cap: int) -> int:
    """Largest divisor of total that is <= cap: computed on the host while compiling."""
    return max(d for d in range(1, cap + 1) if total % d == 0)


@pl.jit.inline
def softmax_rows(t, tmp):
    e = pl.exp(pl.row_expand_sub(t, pl.row_max(t, tmp)))
    return pl.row_expand_div(e, pl.row_sum(e, tmp))


@pl.jit.inline
def store_scaled(t, scale, out, row):
    pl.store(pl.muls(t, scale), [row, 0], out)


@pl.jit
def inline_softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = block_rows(pl.tensor.dim(x, 0), 6)
        for i in pl.range(R // rows):
            t = pl.load(x, [i * rows, 0], [rows, C])
            tmp = pl.create_tile([rows, C], pl.FP32)
            e = softmax_rows(t, tmp)  # the helper's `e` does not clash with this one
            store_scaled(e, 2.0, out, i * rows)
    return out


def test_inline_helpers_expand_in_the_kernel_and_host_functions_fold():
    assert block_rows(16, 6) == 4  # plain Python outside kernels
    x, out = rand(3), np.zeros((R, C), np.float32)
    inline_softmax(x, out)
    ref = np.exp(x - x.max(1, keepdims=True))
    ref = 2 * ref / ref.sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    text = print_program(inline_softmax.lower(x, out))
    assert "pl.range(4)" in text and "softmax_rows" not in text  # 16 rows in blocks of 4, inlined


@pl.jit.inline
def put_doubled(v, dst, row):
    dst[row : row + 1, :] = pl.muls(v, 2.0)


@pl.jit
def helper_writes_one_of_two(
    x: pl.Tensor[[4, C], pl.FP32],
    big: pl.InOut[pl.Tensor[[32, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[8, C], pl.FP32]],
):
    small = pl.create_tensor([8, C], dtype=pl.FP32)
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            put_doubled(x[i : i + 1, :], small, i)  # the helper's write does not rebind `small`
            big[i + 20 : i + 21, :] = x[i : i + 1, :]
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:, :] = pl.adds(small, 1.0)
    return out


def test_a_scope_writing_through_a_helper_and_directly_keeps_each_buffer():
    x = np.arange(4 * C, dtype=np.float32).reshape(4, C)
    big, out = np.zeros((32, C), np.float32), np.zeros((8, C), np.float32)
    helper_writes_one_of_two(x, big, out)  # every task after the first wrote `big` into `small`
    np.testing.assert_array_equal(big[20:24], x)
    np.testing.assert_array_equal(out[:4], 2 * x + 1)


def test_inline_helper_errors_point_at_the_helper_line():
    @pl.jit.inline
    def bad_helper(t):
        return pl.row_max(t, t, t)

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(bad_helper(pl.load(x, [0, 0], [R, C])), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="takes at most 2 positional arguments") as e:
        k(rand(), np.zeros((R, 1), np.float32))
    line = Path(__file__).read_text().splitlines().index("        return pl.row_max(t, t, t)") + 1
    assert f"test_language_forms.py:{line}" in str(e.value)
    with pytest.raises(OutsideKernelError):
        softmax_rows(1, 2)


def test_a_scope_writing_one_element_makes_its_tensor_in_out():
    from pypto.ir.enums import Direction

    @pl.jit
    def mark(x: pl.Tensor, flags: pl.InOut[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.write(flags, [0, 1], pl.read(x, [0, 0]))
        return flags

    x, flags = rand(), np.zeros((1, 4), np.float32)
    mark(x, flags)
    assert flags[0, 1] == x[0, 0] and flags[0, 0] == 0
    (kernel,) = [f for f in mark.lower(x, flags).functions if f.kind.is_incore]
    assert [p.direction for p in kernel.params] == [Direction.In, Direction.InOut]
