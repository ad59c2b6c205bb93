"""Names model kernels use at tile and tensor level: the fused exp-difference broadcasts
(pypto/ops/expdif.py), ``pl.tile.store(..., shapes=)`` and the level spellings of pl.* ops
(``pl.tile.arange``, ``pl.tile.create_tile``), each run on the simulator against numpy, with
its cost pinned from the platform table and its bad uses refused with the user's line."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto.language as pl
from pypto import platforms
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

R, C = 16, 64
TRACE = RunConfig(trace=True)


def durations(rep, name: str) -> set[int]:
    return {r["end"] - r["start"] for t in rep.tasks for r in t.trace.rows() if r["name"] == name}


def rand(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pl.jit
def col_softmax_numerator(x: pl.Tensor, cv: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [R, C])
        pl.store(pl.col_expand_expdif(t, pl.load(cv, [0, 0], [1, C])), [0, 0], out)
    return out


def test_an_exp_difference_over_its_dying_input_is_computed_in_place():
    x, cv, out = rand(4, (R, C)), rand(5, (1, C)), np.zeros((R, C), np.float32)
    col_softmax_numerator(x, cv, out)
    np.testing.assert_allclose(out, np.exp(x - cv), rtol=1e-6)
    text = col_softmax_numerator.lower(x, cv, out).as_python()
    (line,) = [ln for ln in text.splitlines() if "col_expand_expdif(" in ln]
    assert "pl.MemRef(mem_vec_0, 0," in line  # the result took t's buffer


@pl.jit
def expdif_tile(
    x: pl.Tensor, rv: pl.Tensor, cv: pl.Tensor, by_row: pl.Out[pl.Tensor], by_col: pl.Out[pl.Tensor]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [R, C])
        pl.store(pl.row_expand_expdif(t, pl.load(rv, [0, 0], [R, 1])), [0, 0], by_row)
        pl.store(pl.tile.col_expand_expdif(t, pl.load(cv, [0, 0], [1, C])), [0, 0], by_col)
    return by_row, by_col


def test_expand_expdif_at_tile_level_is_exp_of_the_broadcast_difference():
    x, rv, cv = rand(1, (R, C)), rand(2, (R, 1)), rand(3, (1, C))
    by_row, by_col = np.zeros_like(x), np.zeros_like(x)
    expdif_tile(x, rv, cv, by_row, by_col, config=TRACE)
    np.testing.assert_allclose(by_row, np.exp(x - rv), rtol=1e-6)
    np.testing.assert_allclose(by_col, np.exp(x - cv), rtol=1e-6)
    # One fused instruction each, priced as one exp pass over the output.
    p = platforms.get("a2a3sim")
    want = math.ceil(p.vec_exp_base + p.vec_exp_per_repeat * math.ceil(R * C * 4 / p.vector_repeat_bytes))
    rep = expdif_tile.last_report
    assert durations(rep, "TROWEXPANDEXPDIF") == durations(rep, "TCOLEXPANDEXPDIF") == {want}


@pl.jit
def col_softmax(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    """The column softmax of model code, at tensor level: pl.col_expand_expdif on a window."""
    with pl.at(level=pl.Level.CORE_GROUP):
        xt = x[:, :]
        e = pl.col_expand_expdif(xt, pl.col_max(xt))
        y[:, :] = pl.col_expand_div(e, pl.col_sum(e))
    return y


def test_col_expand_expdif_at_tensor_level():
    x = rand(4, (R, C))
    y = np.zeros_like(x)
    col_softmax(x, y)
    e = np.exp(x - x.max(0, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(0, keepdims=True), rtol=1e-5, atol=1e-7)


def test_expdif_refuses_integers_and_a_wrong_vector_with_the_line():
    @pl.jit
    def ints(x: pl.Tensor[[R, C], pl.INT32], y: pl.Out[pl.Tensor[[R, C], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:, :] = pl.col_expand_expdif(x[:, :], x[0:1, :])
        return y

    with pytest.raises(TypeCheckError, match="needs float values") as e:
        ints.compile()
    assert "test_model_names.py" in str(e.value)

    @pl.jit
    def wrong(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:, :] = pl.row_expand_expdif(x[:, :], x[0:1, :])
        return y

    with pytest.raises(TypeCheckError, match=r"`v` must be \[16, 1\]"):
        wrong.compile()


@pl.jit
def store_windows(x: pl.Tensor, full: pl.Out[pl.Tensor], head: pl.Out[pl.Tensor]):
    """shapes= is the window the store writes (upstream's partition shape)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.load(x, [0, 0], [1, C])
        pl.tile.store(t, [1, 0], full, shapes=[1, C])
        pl.tile.store(pl.mul(t, 2.0), [0, 0], head, [1, 1])  # positional, as upstream's 4th
    return full, head


def test_store_with_shapes_writes_that_window_only():
    x = rand(5, (1, C))
    full, head = np.full((2, C), -1, np.float32), np.full((1, C), -1, np.float32)
    store_windows(x, full, head)
    np.testing.assert_array_equal(full[1], x[0])
    assert (full[0] == -1).all()  # untouched
    assert head[0, 0] == 2 * x[0, 0] and (head[0, 1:] == -1).all()


def test_store_shapes_larger_than_the_tile_is_refused():
    @pl.jit
    def bad(x: pl.Tensor[[1, C], pl.FP32], out: pl.Out[pl.Tensor[[2, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.tile.store(pl.tile.load(x, [0, 0], [1, C]), [0, 0], out, shapes=[2, C])
        return out

    with pytest.raises(TypeCheckError, match=r"valid_rows` = 2 is outside 0..1") as e:
        bad.compile()
    assert "test_model_names.py" in str(e.value)


@pl.jit
def level_spellings(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        seq = pl.tile.arange(5, [1, 32], dtype=pl.INT32)
        buf = pl.tile.create_tile([1, 32], dtype=pl.INT32)
        pl.store(pl.add(seq, pl.tile.muls(pl.tile.expands(buf, 0), 0)), [0, 0], out)
    return out


def test_pl_tile_spells_the_tile_level_ops_of_pl():
    """pl.tile.arange is pl.arange (tile.ci); pl.tile.create_tile is pl.create_tile."""
    out = np.zeros((1, 32), np.int32)
    level_spellings(out)
    np.testing.assert_array_equal(out[0], np.arange(5, 37))
    assert "arange" in dir(pl.tile) and "create_tile" in dir(pl.tile)


def test_an_opaque_function_is_an_orchestration_function():
    """Upstream's default function type: its pl.at scopes become kernels, as model code relies on."""
    from pypto.runtime import run

    @pl.program
    class Scale:
        @pl.function(type=pl.FunctionType.Opaque)
        def scale(
            self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]
        ) -> pl.Tensor[[R, C], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:, :] = pl.muls(a[:, :], 3.0)
            return out

    a, out = rand(6, (R, C)), np.zeros((R, C), np.float32)
    run(Scale, a, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, a * 3)
    assert pl.FunctionType.Opaque is pl.FunctionType.Orchestration


@pl.jit
def store_valid_part(x: pl.Tensor, out: pl.Out[pl.Tensor[[4, 1], pl.FP32]]):
    """Model code's pattern: a [1, 8] tile whose valid part is [1, 1], stored to a [T, 1] column."""
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.tile.load(x, [i, 0], [1, 8])
            pl.tile.store(t, [i, 0], out, shapes=[1, 1])
    return out


def test_store_shapes_is_the_window_checked_against_the_tensor():
    x = rand(7, (4, 8))
    out = np.zeros((4, 1), np.float32)
    store_valid_part(x, out)
    np.testing.assert_array_equal(out[:, 0], x[:, 0])


@pl.jit
def store_set_valid(x: pl.Tensor, post: pl.Out[pl.Tensor[[16, 4], pl.FP32]]):
    """Model code's pattern: a padded [16, 8] result cut to [16, 4] by pl.set_validshape, then stored
    into a 4-column tensor (the static window check uses the valid shape)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.mul(pl.load(x, [0, 0], [16, 8]), 2.0)
        v = pl.set_validshape(t, 16, 4)
        pl.store(v, [0, 0], post)
    return post


def test_a_set_validshape_tile_stores_its_valid_part():
    x = rand(8, (16, 8))
    post = np.zeros((16, 4), np.float32)
    store_set_valid(x, post)
    np.testing.assert_array_equal(post, 2 * x[:, :4])
