"""Kernels written at the tensor level — slices of the kernel's tensors and the unified ``pl.*``
ops inside ``pl.at`` (or a ``@pl.jit.incore`` function), placed by ConvertTensorToTileOps —
run and match numpy: the quickstart forms, the programming-model page's two levels of one
kernel, and the model kernels (RMSNorm, LayerNorm, softmax, RoPE, a GEMM whose accumulator
is a kernel-local tensor with a fused epilogue)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import BoundsCheckError, TypeCheckError, WrongLevelError
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
RNG = np.random.default_rng(7)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pl.jit
def add(
    a: pl.Tensor[[128, 128], pl.FP32],
    b: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_quickstart_add_compiles_from_its_annotations_and_runs():
    compiled = add.compile()  # every parameter's annotation gives its shape and dtype
    assert compiled.output_dir.is_dir()
    a, b = randn(128, 128), randn(128, 128)
    out = np.zeros_like(a)
    add(a, b, out, config=CFG)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_compile_without_arguments_names_a_parameter_without_a_shape():
    @pl.jit
    def bare(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return out

    with pytest.raises(TypeError, match=r"parameter `a` is not a full pl.Tensor"):
        bare.compile()


@pl.jit
def accumulate(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        for _ in pl.range(3):
            t = pl.add(t, a)  # carried around the loop, on chip
        out[:] = pl.mul(t, t)
    return out


def test_a_value_carried_around_a_loop_stays_on_chip():
    a = randn(64, 128)
    out = np.zeros_like(a)
    accumulate(a, out, config=CFG)
    np.testing.assert_allclose(out, (5 * a) ** 2, rtol=1e-5)
    lowered = accumulate.lower(a, out, config=CFG).as_python()
    assert lowered.count("pl.tile.load(") == 1  # `a` is loaded once per use site, not per trip


@pl.jit.incore
def square_tensor(x: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    out[:] = pl.mul(x, x)
    return out


@pl.jit.incore
def square_tile(x: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [128, 128])
    y = pl.mul(t, t)
    pl.store(y, [0, 0], out)
    return out


@pl.jit
def levels(
    x: pl.Tensor[[128, 128], pl.FP32],
    out_t: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
    out_k: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    out_t = square_tensor(x, out_t)
    out_k = square_tile(x, out_k)
    return out_t, out_k


def test_the_two_levels_of_one_kernel_give_equal_outputs_and_cycles():
    x = randn(128, 128)
    out_t, out_k = np.zeros_like(x), np.zeros_like(x)
    levels(x, out_t, out_k, config=CFG)
    np.testing.assert_array_equal(out_t, x * x)
    np.testing.assert_array_equal(out_k, out_t)
    assert len(levels.last_report.tasks) == 2


@pl.jit
def only_tensor(x: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    return square_tensor(x, out)


@pl.jit
def only_tile(x: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    return square_tile(x, out)


def test_the_tensor_level_compiles_to_the_tile_level_kernel_cycle_for_cycle():
    # run alone: in `levels` both tasks read x at once and share the L2, which moves MTE2 a little
    x = randn(128, 128)
    out = np.zeros_like(x)
    only_tensor(x, out, config=CFG)
    only_tile(x, out, config=CFG)
    a, b = only_tensor.last_report, only_tile.last_report
    assert (a.cycles, a.pipe_busy) == (b.cycles, b.pipe_busy)


ROWS, HIDDEN, RT, HT = 128, 256, 32, 64


@pl.jit
def rms_norm(
    x: pl.Tensor[[ROWS, HIDDEN], pl.FP32],
    gamma: pl.Tensor[[1, HIDDEN], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, HIDDEN], pl.FP32]],
):
    for r in pl.parallel(0, ROWS, RT):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms_rows"):
            sq_sum = pl.full([1, RT], dtype=pl.FP32, value=0.0)
            for hb in pl.range(HIDDEN // HT):
                xt = x[r : r + RT, hb * HT : hb * HT + HT]
                row = pl.reshape(pl.row_sum(pl.mul(xt, xt)), [1, RT])
                sq_sum = pl.add(sq_sum, row)
            inv = pl.reshape(pl.rsqrt(pl.adds(pl.muls(sq_sum, 1.0 / HIDDEN), 1e-6)), [RT, 1])
            for hb in pl.range(HIDDEN // HT):
                xt = x[r : r + RT, hb * HT : hb * HT + HT]
                normed = pl.col_expand_mul(pl.row_expand_mul(xt, inv), gamma[:, hb * HT : hb * HT + HT])
                y[r : r + RT, hb * HT : hb * HT + HT] = normed
    return y


def test_rms_norm_with_row_tiles_and_column_chunks():
    x, g = randn(ROWS, HIDDEN), randn(1, HIDDEN)
    y = np.zeros_like(x)
    rms_norm(x, g, y, config=CFG)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pl.jit
def layer_norm(
    x: pl.Tensor[[ROWS, HIDDEN], pl.FP32],
    gamma: pl.Tensor[[1, HIDDEN], pl.FP32],
    beta: pl.Tensor[[1, HIDDEN], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, HIDDEN], pl.FP32]],
):
    for r in pl.parallel(0, ROWS, RT):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ln_rows"):
            xt = x[r : r + RT, :]
            mean = pl.muls(pl.row_sum(xt), 1.0 / HIDDEN)
            centred = pl.row_expand_sub(xt, mean)
            var = pl.muls(pl.row_sum(pl.mul(centred, centred)), 1.0 / HIDDEN)
            normed = pl.row_expand_mul(centred, pl.rsqrt(pl.adds(var, 1e-5)))
            y[r : r + RT, :] = pl.col_expand_add(pl.col_expand_mul(normed, gamma), beta)
    return y


def test_layer_norm():
    x, g, b = randn(ROWS, HIDDEN), randn(1, HIDDEN), randn(1, HIDDEN)
    y = np.zeros_like(x)
    layer_norm(x, g, b, y, config=CFG)
    m = x.mean(-1, keepdims=True)
    want = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@pl.jit
def softmax(x: pl.Tensor[[ROWS, HIDDEN], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, HIDDEN], pl.FP32]]):
    for r in pl.parallel(0, ROWS, RT):
        with pl.at(level=pl.Level.CORE_GROUP):
            xt = x[r : r + RT, :]
            e = pl.exp(pl.row_expand_sub(xt, pl.row_max(xt)))
            y[r : r + RT, :] = pl.row_expand_div(e, pl.row_sum(e))
    return y


def test_row_softmax():
    x = randn(ROWS, HIDDEN)
    y = np.zeros_like(x)
    softmax(x, y, config=CFG)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


TOKENS, HEAD = 32, 128
HALF = HEAD // 2


@pl.jit
def rope(
    x: pl.Tensor[[TOKENS, HEAD], pl.FP32],
    cos: pl.Tensor[[1, HEAD], pl.FP32],
    sin: pl.Tensor[[1, HEAD], pl.FP32],
    y: pl.Out[pl.Tensor[[TOKENS, HEAD], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        lo, hi = x[:, 0:HALF], x[:, HALF:HEAD]
        y[:, 0:HALF] = pl.sub(pl.col_expand_mul(lo, cos[:, 0:HALF]), pl.col_expand_mul(hi, sin[:, 0:HALF]))
        y[:, HALF:HEAD] = pl.add(
            pl.col_expand_mul(hi, cos[:, HALF:HEAD]), pl.col_expand_mul(lo, sin[:, HALF:HEAD])
        )
    return y


def test_rope_on_half_rotated_slices():
    x = randn(TOKENS, HEAD)
    ang = np.linspace(0, 3, HEAD, dtype=np.float32).reshape(1, HEAD)
    cos, sin = np.cos(ang), np.sin(ang)
    y = np.zeros_like(x)
    rope(x, cos, sin, y, config=CFG)
    rot = np.concatenate([-x[:, HALF:], x[:, :HALF]], axis=1)
    np.testing.assert_allclose(y, x * cos + rot * sin, rtol=1e-5, atol=1e-6)


M, N, K, MT, NT, KT = 64, 128, 256, 64, 64, 64


@pl.jit
def gemm_bias_relu(
    a: pl.Tensor[[M, K], pl.FP16],
    b: pl.Tensor[[K, N], pl.FP16],
    bias: pl.Tensor[[1, N], pl.FP32],
    c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
):
    for mb in pl.parallel(0, M, MT):
        for nb in pl.parallel(0, N, NT):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="gemm_tile"):
                acc = pl.create_tensor([MT, NT], dtype=pl.FP32)
                for kb in pl.range(K // KT):
                    ta = a[mb : mb + MT, kb * KT : kb * KT + KT]
                    tb = b[kb * KT : kb * KT + KT, nb : nb + NT]
                    if kb == 0:  # noqa: SIM108 - a kernel branch, not a value
                        acc = pl.matmul(ta, tb, out_dtype=pl.FP32)
                    else:
                        acc = pl.matmul_acc(acc, ta, tb)
                c[mb : mb + MT, nb : nb + NT] = pl.relu(pl.col_expand_add(acc, bias[:, nb : nb + NT]))
    return c


def test_gemm_accumulating_in_a_kernel_local_tensor_with_a_fused_epilogue():
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    bias = randn(1, N)
    c = np.zeros((M, N), np.float32)
    gemm_bias_relu(a, b, bias, c, config=CFG)
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)


def test_scratch_given_to_a_tensor_level_reduction_is_a_level_error():
    @pl.jit
    def bad(x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 1], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:, :] = pl.row_sum(x, x)
        return y

    x = randn(32, 64)
    y = np.zeros((32, 1), np.float32)
    with pytest.raises(WrongLevelError, match=r"`tmp` is a tile-level argument.*pl\.tile\.row_sum") as err:
        bad(x, y, config=CFG)
    assert "test_tensor_level.py" in str(err.value)
    assert isinstance(err.value, TypeError)
    assert not y.any()


def test_misuse_is_reported_at_the_users_line_before_anything_runs():
    @pl.jit
    def unset(x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.create_tensor([32, 64], dtype=pl.FP32)
            y[:, :] = pl.add(acc, x)
        return y

    @pl.jit
    def too_big(a: pl.Tensor[[1024, 1024], pl.FP32], out: pl.Out[pl.Tensor[[1024, 1024], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return out

    @pl.jit
    def outside(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        out[:] = pl.exp(a)
        return out

    from pypto.errors import CompileError, MemoryCapacityError, MisplacedOpError

    x, y = randn(32, 64), np.zeros((32, 64), np.float32)
    with pytest.raises(CompileError, match=r"`acc` is read before it is assigned.*test_tensor_level.py:\d+"):
        unset(x, y, config=CFG)
    big = np.zeros((1024, 1024), np.float32)
    with pytest.raises(
        MemoryCapacityError, match=r"(?s)needs 4194304 B of Vec but \d+ B are available.*out\[:\] ="
    ):
        too_big(big, big.copy(), config=CFG)
    with pytest.raises(MisplacedOpError, match=r"should be inside InCore block.*test_tensor_level.py:\d+"):
        outside(randn(64, 64), np.zeros((64, 64), np.float32), config=CFG)
    assert not y.any()


@pl.jit.incore
def scale_rows(
    x: pl.Tensor[[16, 64], pl.FP32],
    acc: pl.InOut[pl.Tensor[[16, 64], pl.FP32]],
    out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    s: pl.Scalar[pl.FP32],
):
    acc[:] = pl.add(acc, x)
    out[:] = pl.muls(x, s)
    return acc, out


@pl.jit
def accumulate_rows(
    x: pl.Tensor[[16, 64], pl.FP32],
    acc: pl.InOut[pl.Tensor[[16, 64], pl.FP32]],
    out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
):
    for _ in pl.range(3):
        acc, out = scale_rows(x, acc, out, 2.0)
    return acc, out


def test_a_kernel_returning_two_tensors_binds_both_at_the_call():
    x = randn(16, 64)
    acc, out = np.zeros_like(x), np.zeros_like(x)
    accumulate_rows(x, acc, out, config=CFG)
    np.testing.assert_allclose(acc, 3 * x, rtol=1e-6)
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)
    # each call reads the acc the call before wrote: the three tasks are chained
    assert [t.deps for t in accumulate_rows.last_report.tasks] == [(), (0,), (0, 1)]


@pl.jit
def two_outputs(
    x: pl.Tensor[[64, 64], pl.FP32],
    lo: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    hi: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    for r in pl.parallel(0, 64, 16):
        with pl.at(level=pl.Level.CORE_GROUP):
            xt = x[r : r + 16, :]
            lo[r : r + 16, :] = pl.minimum(xt, 0.0)
            hi[r : r + 16, :] = pl.maximum(xt, 0.0)
    return lo, hi


def test_a_scope_writing_two_outputs_returns_both():
    x = randn(64, 64)
    lo, hi = np.zeros_like(x), np.zeros_like(x)
    two_outputs(x, lo, hi, config=CFG)
    np.testing.assert_array_equal(lo, np.minimum(x, 0))
    np.testing.assert_array_equal(hi, np.maximum(x, 0))
    assert len(two_outputs.last_report.tasks) == 4


@pl.jit
def inv_norm(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.rsqrt(x, high_precision=True)  # a device-only choice: the same values here
    return y


def test_rsqrt_accepts_upstreams_high_precision_flag_and_shows_it_in_the_dump():
    x = np.abs(randn(16, 64)) + 0.5
    y = np.zeros_like(x)
    inv_norm(x, y, config=CFG)
    np.testing.assert_allclose(y, 1 / np.sqrt(x), rtol=1e-6)
    assert "high_precision=True" in inv_norm.lower(x, y, config=CFG).as_python()


@pl.jit.inline
def min_and_max(t):
    return pl.minimum(t, 0.0), pl.maximum(t, 0.0)


@pl.jit
def split_signs(
    x: pl.Tensor[[16, 64], pl.FP32],
    lo: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    hi: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        a, b = min_and_max(x)
        lo[:, :] = a
        hi[:, :] = b
    return lo, hi


def test_a_helper_returning_two_values_binds_both():
    x = randn(16, 64)
    lo, hi = np.zeros_like(x), np.zeros_like(x)
    split_signs(x, lo, hi, config=CFG)
    np.testing.assert_array_equal(lo, np.minimum(x, 0))
    np.testing.assert_array_equal(hi, np.maximum(x, 0))


@pl.jit
def tail_rows(
    lens: pl.Tensor[[1, 8], pl.INT32],
    x: pl.Tensor[[32, 64], pl.FP32],
    y: pl.InOut[pl.Tensor[[32, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.cast(pl.read(lens, [0, 0]), pl.INDEX)
        xt = pl.slice(x, [16, 64], [8, 0], valid_shape=[n, 64])  # only n rows are read
        y[8:24, 0:1] = pl.row_sum(xt)
    return y


def test_a_slice_with_a_valid_shape_reads_and_writes_only_its_valid_rows():
    x = randn(32, 64)
    for n in (5, 16):
        y = np.zeros_like(x)
        tail_rows(np.full((1, 8), n, np.int32), x, y, config=CFG)
        np.testing.assert_allclose(y[8 : 8 + n, 0], x[8 : 8 + n].sum(-1), rtol=1e-5, atol=1e-5)
        assert not y[8 + n :].any() and not y[:8].any() and not y[:, 1:].any()


@pl.jit.inline
def double_into(x, y):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.muls(x, 2.0)
    return y


@pl.jit
def helper_as_statement(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    double_into(x, y)  # its value is not used: the call is for the tensor it writes
    return y


def test_a_helper_called_for_its_effect_drops_its_value():
    x = randn(16, 64)
    y = np.zeros_like(x)
    helper_as_statement(x, y, config=CFG)
    np.testing.assert_array_equal(y, 2 * x)


@pl.jit
def scatter_row_blocks(
    x: pl.Tensor[[8, 64], pl.FP32],
    strides: pl.Tensor[[1, 8], pl.INT32],
    out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        stride = pl.cast(pl.read(strides, [0, 0]), target_type=pl.INDEX)  # known only at run time
        for i in pl.range(4):
            row = i * stride  # a product of two run-time values: the slice below is still 1 row
            col0 = i * 16 + 8
            col1 = col0 + 32  # bounds named by variables whose difference folds to 32
            out[row : row + 1, col0:col1] = pl.mul(x[i : i + 1, 0:32], 2.0)
    return out


def test_slice_lengths_fold_through_products_and_named_bounds():
    x = randn(8, 64)
    out = np.zeros((16, 128), np.float32)
    scatter_row_blocks(x, np.full((1, 8), 3, np.int32), out, config=CFG)
    want = np.zeros_like(out)
    for i in range(4):
        want[i * 3, i * 16 + 8 : i * 16 + 40] = 2 * x[i, :32]
    np.testing.assert_array_equal(out, want)


def test_a_slice_whose_bounds_differ_by_a_variable_is_refused_at_its_line():
    @pl.jit
    def ragged(
        x: pl.Tensor[[8, 64], pl.FP32],
        widths: pl.Tensor[[1, 8], pl.INT32],
        out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            n = pl.cast(pl.read(widths, [0, 0]), target_type=pl.INDEX)
            c0 = n * 2
            c1 = c0 + n  # n wide: not a compile-time length
            out[0:1, c0:c1] = x[0:1, c0:c1]
        return out

    with pytest.raises(TypeCheckError, match=r"slice `c0:c1` must have a compile-time length") as err:
        ragged.lower(randn(8, 64), np.ones((1, 8), np.int32), np.zeros((8, 64), np.float32), config=CFG)
    assert "test_tensor_level.py" in str(err.value)


@pl.jit
def gather_rows_or_default(
    x: pl.Tensor[[16, 64], pl.FP32],
    ids: pl.Tensor[[1, 8], pl.INT32],
    out: pl.Out[pl.Tensor[[4, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            v = pl.full([1, 64], dtype=pl.FP32, value=-1.0)
            r = pl.read(ids, [0, i])
            if r >= 0:
                row = pl.cast(r, pl.INDEX)  # defined only in this branch
                v = x[row : row + 1, :]  # a window merged with the filled tile: loaded here
            out[i : i + 1, :] = pl.add(v, 1.0)
    return out


def test_a_window_assigned_in_a_branch_is_loaded_in_that_branch():
    x = randn(16, 64)
    ids = np.array([[3, -1, 15, 0, 0, 0, 0, 0]], np.int32)
    out = np.zeros((4, 64), np.float32)
    gather_rows_or_default(x, ids, out, config=CFG)
    want = np.stack([x[r] + 1 if r >= 0 else np.zeros(64, np.float32) for r in ids[0, :4]])
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pl.jit
def pad_and_fill_rows(x: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        buf = pl.full([16, 64], dtype=pl.FP32, value=0.0)
        buf[0:4, 0:64] = x[0:4, 0:64]  # into a value computed here: an on-chip insert
        for i in pl.range(4):
            buf[8 + i : 9 + i, :] = pl.mul(x[i : i + 1, :], 3.0)  # carried around the loop
        out[:] = pl.add(buf, 1.0)
    return out


def test_assigning_into_a_slice_of_a_kernel_local_value_inserts_on_chip():
    x = randn(4, 64)
    out = np.zeros((16, 64), np.float32)
    pad_and_fill_rows(x, out, config=CFG)
    want = np.ones((16, 64), np.float32)
    want[0:4] += x
    want[8:12] += 3 * x
    np.testing.assert_allclose(out, want, rtol=1e-6)
    kernel = pad_and_fill_rows.lower(x, out, config=CFG).as_python()
    assert kernel.count("pl.tile.assemble(") == 2 and kernel.count("pl.tile.store(") == 1


@pl.jit
def row_amax_column(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 8], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        amax = pl.row_max(pl.abs(x))  # [16, 1], computed on chip
        for r in pl.range(16):
            pl.write(out, [r, 3], pl.read(amax, [r, 0]))  # one element at a time
    return out


def test_reading_an_element_of_a_value_computed_in_the_kernel():
    x = randn(16, 64)
    out = np.zeros((16, 8), np.float32)
    row_amax_column(x, out, config=CFG)
    want = np.zeros_like(out)
    want[:, 3] = np.abs(x).max(axis=1)
    np.testing.assert_array_equal(out, want)
    assert "pl.tile.read(" in row_amax_column.lower(x, out, config=CFG).as_python()


@pl.jit
def stage_window(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        local = pl.create_tensor([16, 64], dtype=pl.FP32)
        local[:, :] = x[8:24, :]  # writing into it is how a kernel-local tensor gets values
        out[:] = pl.exp(local)
    return out


def test_a_kernel_local_tensor_gets_its_values_by_slice_assignment():
    x = randn(32, 64)
    out = np.zeros((16, 64), np.float32)
    stage_window(x, out, config=CFG)
    np.testing.assert_allclose(out, np.exp(x[8:24]), rtol=1e-5)


@pl.jit
def build_index_tile(ids: pl.Tensor[[8, 8], pl.INT32], out: pl.Out[pl.Tensor[[8, 8], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        idx = pl.create_tensor([8, 8], dtype=pl.INT32)
        for r in pl.range(8):
            for k in pl.range(3):
                pl.write(idx, [r, k], pl.read(ids, [r, k]))  # element by element, on chip
            for k in pl.range(3, 8):
                pl.write(idx, [r, k], pl.cast(0, pl.INT32))
        out[:] = pl.add(idx, idx)
    return out


def test_a_kernel_local_tensor_filled_element_by_element():
    ids = np.arange(64, dtype=np.int32).reshape(8, 8)
    out = np.zeros((8, 8), np.int32)
    build_index_tile(ids, out, config=CFG)
    want = np.zeros_like(ids)
    want[:, :3] = 2 * ids[:, :3]
    np.testing.assert_array_equal(out, want)
    assert "pl.tile.write(" in build_index_tile.lower(ids, out, config=CFG).as_python()


def test_a_padded_load_stores_only_its_valid_columns_into_a_narrower_tensor():
    @pl.jit
    def narrow(x: pl.Tensor[[16, 8], pl.FP32], out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 8], valid_shape=[16, 4], target_memory=pl.MemorySpace.Vec)
            pl.store(t, [0, 0], out)  # 4 valid columns: fits the [16, 4] output
        return out

    @pl.jit
    def too_wide(x: pl.Tensor[[16, 8], pl.FP32], out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 8], valid_shape=[16, 6], target_memory=pl.MemorySpace.Vec)
            pl.store(t, [0, 0], out)
        return out

    x = randn(16, 8)
    out = np.zeros((16, 4), np.float32)
    narrow(x, out, config=CFG)
    np.testing.assert_array_equal(out, x[:, :4])
    with pytest.raises(BoundsCheckError, match=r"on dim 1 .* the window is 6 long, reaching 6 > size 4"):
        too_wide.lower(x, out, config=CFG)


@pl.jit.inline
def add_and_square(x, y, z):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.add(x, x)
        z[:, :] = pl.mul(x, x)
    return y, z


@pl.jit
def doubled_and_squared(
    x: pl.Tensor[[16, 64], pl.FP32],
    y: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    z: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
):
    return add_and_square(x, y, z)


def test_an_entry_returns_everything_its_helper_returns():
    x = randn(16, 64)
    y, z = np.zeros_like(x), np.zeros_like(x)
    doubled_and_squared(x, y, z, config=CFG)
    np.testing.assert_array_equal(y, 2 * x)
    np.testing.assert_array_equal(z, x * x)


@pl.jit
def grouped_projection(
    x: pl.Tensor[[64, 128], pl.FP16],
    w: pl.Tensor[[2, 64, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    for g in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            # a matrix times one group of a rank-3 weight: a [1, 64, 64] batch of one
            acc = pl.matmul(x, w[g : g + 1, :, :], b_trans=True, out_dtype=pl.FP32)
            out = pl.assemble(out, acc, [0, g * 64])
    return out


def test_a_batch_of_one_matmul_result_is_assembled_into_a_matrix():
    x = RNG.uniform(-1, 1, (64, 128)).astype(np.float16)
    w = RNG.uniform(-1, 1, (2, 64, 128)).astype(np.float16)
    out = np.zeros((64, 128), np.float32)
    grouped_projection(x, w, out, config=CFG)
    want = np.concatenate([x.astype(np.float32) @ w[g].astype(np.float32).T for g in range(2)], axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_assembling_a_batch_of_several_into_a_matrix_is_refused():
    @pl.jit
    def two_groups(
        x: pl.Tensor[[64, 128], pl.FP16],
        w: pl.Tensor[[2, 64, 128], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(x, w, b_trans=True, out_dtype=pl.FP32)
            out = pl.assemble(out, acc, [0, 0])
        return out

    x, w = np.zeros((64, 128), np.float16), np.zeros((2, 64, 128), np.float16)
    with pytest.raises(
        TypeCheckError,
        match=r"src \[2, 64, 64\] must match the rank of \[64, 128\].*test_tensor_level.py:\d+",
    ):
        two_groups.lower(x, w, np.zeros((64, 128), np.float32), config=CFG)


@pl.jit
def pick_in_branch(
    x: pl.Tensor[[4, 64], pl.FP32], flag: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        w = pl.slice(x, [1, 64], [2, 0])
        if flag == 1:
            out[:, :] = pl.fillpad(pl.set_validshape(w, 1, 32), pad_value=pl.PadValue.zero)
        else:
            s = pl.read(w, [0, 5])  # one element of the window: of x at [2, 5]
            out[:, :] = pl.adds(w, s)
    return out


def test_an_element_read_through_a_window_in_a_branch_reads_its_base():
    x = randn(4, 64)
    for flag, want in ((0, x[2:3] + x[2, 5]), (1, np.concatenate([x[2:3, :32], np.zeros((1, 32))], axis=1))):
        out = np.zeros((1, 64), np.float32)
        pick_in_branch(x, flag, out, config=CFG)
        np.testing.assert_array_equal(out, want.astype(np.float32))


def _wide_product(a_trans: bool, b_trans: bool):
    """[256, 64] x [64, 384] of windows (transposed as asked), stored into a window of `out`:
    384 KiB of fp32 output against L0C's 128 KiB, so it is made in blocks."""

    ar, ac = ((0, 64), (16, 272)) if a_trans else ((16, 272), (0, 64))  # the window of a
    br, bc = ((8, 392), (0, 64)) if b_trans else ((0, 64), (8, 392))

    @pl.jit
    def wide(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            lhs = a[ar[0] : ar[1], ac[0] : ac[1]]
            rhs = b[br[0] : br[1], bc[0] : bc[1]]
            c = pl.matmul(lhs, rhs, a_trans=a_trans, b_trans=b_trans, out_dtype=pl.FP32)
            out = pl.assemble(out, c, [0, 16])
        return out

    return wide


@pytest.mark.parametrize(("a_trans", "b_trans"), [(False, False), (True, False), (False, True), (True, True)])
def test_a_matmul_output_larger_than_l0c_is_stored_block_by_block(a_trans, b_trans):
    a = RNG.uniform(-1, 1, (64, 288) if a_trans else (288, 64)).astype(np.float16)
    b = RNG.uniform(-1, 1, (400, 64) if b_trans else (64, 400)).astype(np.float16)
    out = np.full((256, 416), -7.0, np.float32)
    kernel = _wide_product(a_trans, b_trans)
    kernel(a, b, out, config=CFG)
    lhs = (a[:, 16:272].T if a_trans else a[16:272, :]).astype(np.float32)
    rhs = (b[8:392, :].T if b_trans else b[:, 8:392]).astype(np.float32)
    np.testing.assert_allclose(out[:, 16:400], lhs @ rhs, rtol=1e-5, atol=1e-5)
    assert (out[:, :16] == -7).all() and (out[:, 400:] == -7).all()  # nothing outside the window
    assert kernel.last_report.hazards == []


@pytest.mark.parametrize("m", [128, 256], ids=["fits-l0c", "blocks"])
def test_a_product_narrowed_for_the_next_matmul_stays_on_the_cube(m):
    """(a @ b) cast to fp16 with mode="rint" and multiplied again: FIXPIPE narrows the product
    (ties to even, as numpy's astype does) into L1 on its way out of L0C, so the whole chain is
    one AIC task; at m = 256 the [256, 256] product is made in blocks."""

    @pl.jit
    def chain(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            cb = pl.cast(c, pl.FP16, mode="rint")
            d = pl.matmul(cb, e, out_dtype=pl.FP32)
            out = pl.assemble(out, d, [0, 0])
        return out

    a = RNG.uniform(-1, 1, (m, 64)).astype(np.float16)
    b = RNG.uniform(-1, 1, (64, 256)).astype(np.float16)
    e = RNG.uniform(-1, 1, (256, 64)).astype(np.float16)
    out = np.zeros((m, 64), np.float32)
    chain(a, b, e, out, config=CFG)
    narrowed = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    want = narrowed.astype(np.float32) @ e.astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=2e-3, atol=2e-2)
    assert [t.core_name[:3] for t in chain.last_report.tasks] == ["AIC"]
    assert chain.last_report.hazards == []
