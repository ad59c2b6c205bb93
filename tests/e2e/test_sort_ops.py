"""The gather / sort family (pypto/ops/sort.py, csrc/chip/isa/gather_sort.cpp) and the
UINT32 index dtype: each op run in a kernel on the simulator against numpy, at tile and at
tensor level, with its cost pinned from the platform table and its bad uses refused with the
user's line."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto.language as pl
from pypto import platforms
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

U32 = np.uint32


@pl.jit
def uint32_round_trip(x: pl.Tensor, out: pl.Out[pl.Tensor], as_f32: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 64])
        pl.store(t, [0, 0], out)
        pl.store(pl.cast(t, pl.FP32), [0, 0], as_f32)
    return out, as_f32


def test_uint32_tiles_load_store_and_cast_as_unsigned():
    x = np.random.default_rng(0).integers(0, 2**32, (8, 64), dtype=np.uint64).astype(U32)
    x[0, :3] = [0, 2**31, 2**32 - 1]  # the values an int32 would read as negative
    out, as_f32 = np.zeros_like(x), np.zeros(x.shape, np.float32)
    uint32_round_trip(x, out, as_f32)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(as_f32, x.astype(np.float32))
    assert pl.UINT32.itemsize == 4 and not pl.UINT32.is_float


def durations(rep, name: str) -> set[int]:
    return {r["end"] - r["start"] for t in rep.tasks for r in t.trace.rows() if r["name"] == name}


def vector_cycles(p, row: str, nbytes: int) -> int:
    """A vector instruction starting a run: base + per_repeat x repeats (cost_model.cpp)."""
    base, per_repeat = getattr(p, f"vec_{row}_base"), getattr(p, f"vec_{row}_per_repeat")
    return math.ceil(base + per_repeat * math.ceil(nbytes / p.vector_repeat_bytes))


def arange_kernel(n: int, dtype, descending: bool = False):
    @pl.jit
    def k(out: pl.Out[pl.Tensor]):
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                seq = pl.arange(i * 100 - 3, [1, n], dtype=dtype, descending=descending)
                pl.store(seq, [i, 0], out)
        return out

    return k


@pytest.mark.parametrize(
    ("dtype", "np_dtype"), [(pl.INT32, np.int32), (pl.UINT32, U32), (pl.INT16, np.int16)]
)
def test_arange_counts_from_a_scalar_start(dtype, np_dtype):
    out = np.zeros((2, 64), np_dtype)
    arange_kernel(64, dtype)(out, config=RunConfig(trace=True))
    want = np.stack([np.arange(s, s + 64) for s in (-3, 97)]).astype(np_dtype)  # -3 wraps in uint32
    np.testing.assert_array_equal(out, want)
    down = np.zeros((2, 64), np_dtype)
    arange_kernel(64, dtype, descending=True)(down)
    np.testing.assert_array_equal(
        down, np.stack([np.arange(s, s - 64, -1) for s in (-3, 97)]).astype(np_dtype)
    )


def test_arange_costs_a_fill_pass_from_the_table():
    p = platforms.get("a2a3sim")
    k = arange_kernel(1000, pl.INT32)
    k(np.zeros((2, 1000), np.int32), config=RunConfig(trace=True))
    # 4000 B: ceil(4000 / 256) = 16 repeats at the copy row: 23 + 1.0 x 16 = 39 cycles
    assert durations(k.last_report, "TCI") == {vector_cycles(p, "copy", 4000)} == {39}


def test_arange_refuses_two_rows_and_a_float_dtype_at_the_line():
    @pl.jit
    def two_rows(out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.arange(0, [2, 64], dtype=pl.INT32), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match=r"one row \[1, N\].*\[2, 64\]") as e:
        two_rows(np.zeros((2, 64), np.int32))
    assert "test_sort_ops.py:" in str(e.value)

    @pl.jit
    def floats(out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.arange(0, [1, 64], dtype=pl.FP32), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="pl.INT16, pl.INT32, pl.UINT32"):
        floats(np.zeros((1, 64), np.float32))


def sorted_runs(x: np.ndarray, run: int, base: int = 0) -> np.ndarray:
    """One row of (value, index-bits) pairs, each run of ``run`` values sorted descending
    (indices counted from ``base``)."""
    pairs = np.zeros(2 * x.size, np.float32)
    for b in range(0, x.size, run):
        o = np.argsort(-x[b : b + run], kind="stable") + b
        pairs[2 * b : 2 * (b + run) : 2] = x[o]
        pairs[2 * b + 1 : 2 * (b + run) : 2] = (o + base).astype(U32).view(np.float32)
    return pairs[None, :]


@pl.jit
def merge_runs(src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [1, 512])
        pl.store(pl.tile.mrgsort(s, block_len=64), [0, 0], out)
    return out


@pl.jit
def merge_lists(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta, tb, tc = pl.load(a, [0, 0], [1, 64]), pl.load(b, [0, 0], [1, 128]), pl.load(c, [0, 0], [1, 64])
        tmp = pl.create_tile([1, 256], dtype=pl.FP32)
        pl.store(pl.tile.mrgsort(ta, tb, tc, tmp=tmp), [0, 0], out)
    return out


def test_mrgsort_merges_four_runs_of_a_row_and_two_to_four_lists():
    x = np.random.default_rng(3).standard_normal(256).astype(np.float32).round(1)  # with ties
    out = np.zeros((1, 512), np.float32)
    merge_runs(sorted_runs(x, 32), out, config=RunConfig(trace=True))
    np.testing.assert_array_equal(out, sorted_runs(x, 128))  # stable: ties keep index order
    p = platforms.get("a2a3sim")
    # one merge pass over the 2 KiB row at the sort row: 31 + 4.0 x 8 repeats = 63 cycles
    assert durations(merge_runs.last_report, "TMRGSORT") == {vector_cycles(p, "sort", 2048)} == {63}
    a, b, c = (sorted_runs(x[lo:hi], hi - lo, lo) for lo, hi in ((0, 32), (32, 96), (96, 128)))
    out = np.zeros((1, 256), np.float32)
    merge_lists(a, b, c, out)
    vals, ids = out[0, 0::2], out[0, 1::2].view(U32)
    np.testing.assert_array_equal(vals, np.sort(x[:128])[::-1])
    np.testing.assert_array_equal(x[ids], vals)


def test_mrgsort_refuses_runs_that_do_not_tile_the_row():
    @pl.jit
    def k(src: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.tile.mrgsort(pl.load(src, [0, 0], [1, 512]), block_len=256), [0, 0], out)
        return out

    with pytest.raises(
        TypeCheckError, match=r"block_len=256 merges groups of 4 runs \(1024 elements\); the row has 512"
    ):
        k(np.zeros((1, 512), np.float32), np.zeros((1, 512), np.float32))


def mask_kernel(pattern: int, out_dtype):
    @pl.jit
    def k(src: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.load(src, [0, 0], [4, 64])
            pl.store(pl.tile.gather_mask(s, pattern, output_dtype=out_dtype), [0, 0], out)
        return out

    return k


def test_gather_mask_packs_the_columns_a_pattern_keeps():
    x = np.random.default_rng(4).standard_normal((4, 64)).astype(np.float32)
    M = pl.tile.MaskPattern
    for pattern, stride, first in ((M.P0101, 2, 0), (M.P1010, 2, 1), (M.P0100, 4, 2), (M.P1111, 1, 0)):
        out = np.zeros((4, 64 // stride), np.float32)
        k = mask_kernel(pattern, pl.FP32)
        k(x, out, config=RunConfig(trace=True))
        np.testing.assert_array_equal(out, x[:, first::stride])
    p = platforms.get("a2a3sim")
    # streams the 1 KiB source once at the copy row: 23 + 1.0 x 4 repeats = 27 cycles
    assert durations(k.last_report, "TGATHER") == {vector_cycles(p, "copy", 1024)} == {27}
    bits = np.zeros((4, 32), np.int32)
    mask_kernel(M.P1010, pl.INT32)(x, bits)  # the index half of pairs: bits kept, not converted
    np.testing.assert_array_equal(bits, x[:, 1::2].view(np.int32))
    with pytest.raises(TypeCheckError, match="must have the width of FP32"):
        mask_kernel(M.P0101, pl.INT16)(x, np.zeros((4, 32), np.int16))
    with pytest.raises(TypeCheckError, match="mask_pattern must be a pl.tile.MaskPattern"):
        mask_kernel(9, pl.FP32)(x, np.zeros((4, 32), np.float32))


@pl.jit
def gather_along(x: pl.Tensor[[8, 64], pl.FP32], idx: pl.Tensor[[8, 16], pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:, :] = pl.gather(x, dim=-1, index=idx)  # tensor level: placed by the compiler
    return out


@pl.jit
def gather_down(x: pl.Tensor[[8, 64], pl.FP32], idx: pl.Tensor[[4, 64], pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 64])
        i = pl.load(idx, [0, 0], [4, 64])
        pl.store(pl.gather(t, dim=0, index=i), [0, 0], out)
    return out


def test_gather_along_a_dim_matches_torch_gather_and_costs_a_gather_pass():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    idx = rng.integers(0, 64, (8, 16)).astype(np.int32)
    out = np.zeros((8, 16), np.float32)
    gather_along(x, idx, out, config=RunConfig(trace=True))
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, axis=-1))
    # 8 x 16 fp32 = 512 B: ceil(512 / 256) = 2 repeats at the gather row (cost_model.cpp)
    p = platforms.get("a2a3sim")
    assert durations(gather_along.last_report, "TGATHER") == {vector_cycles(p, "gather", 512)}
    rows = rng.integers(0, 8, (4, 64)).astype(np.int32)
    down = np.zeros((4, 64), np.float32)
    gather_down(x, rows, down, config=RunConfig())
    np.testing.assert_array_equal(down, np.take_along_axis(x, rows, axis=0))


def test_gather_along_a_dim_refuses_a_bad_dim_at_the_line():
    @pl.jit
    def bad(x: pl.Tensor[[8, 64], pl.FP32], idx: pl.Tensor[[8, 16], pl.INT32], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:, :] = pl.gather(x, dim=2, index=idx)
        return out

    with pytest.raises(TypeCheckError, match=r"dim must be 0, 1, -1 or -2.*test_sort_ops.py:\d+"):
        bad(np.zeros((8, 64), np.float32), np.zeros((8, 16), np.int32), np.zeros((8, 16), np.float32))


def test_an_index_outside_the_gathered_dim_is_an_error_at_run_time():
    from pypto.errors import OutOfBoundsError

    idx = np.zeros((8, 16), np.int32)
    idx[3, 5] = 64
    with pytest.raises(OutOfBoundsError, match=r"index 64 at \[3, 5\] is outside input's \[8, 64\]"):
        gather_along(np.zeros((8, 64), np.float32), idx, np.zeros((8, 16), np.float32))


@pl.jit
def row_extrema_at(x: pl.Tensor, best: pl.Out[pl.Tensor], worst: pl.Out[pl.Tensor], most: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        best[:, :] = pl.row_argmax(x)  # tensor level: the compiler allocates the scratch
        worst[:, :] = pl.row_argmin(x)
        t = pl.load(x, [0, 0], [16, 256])
        tmp = pl.create_tile([16, 256], pl.FP32)
        pl.store(pl.row_max(t, tmp), [0, 0], most)  # the same row reduction, for its price
    return best, worst, most


def test_row_argmax_and_argmin_give_each_rows_first_extremum_priced_as_a_row_reduction():
    x = np.random.default_rng(8).standard_normal((16, 256)).astype(np.float32)
    x[3, [7, 200]] = 9.0  # a tie: the first column wins, as numpy's argmax
    best, worst = np.zeros((16, 1), np.int32), np.zeros((16, 1), np.int32)
    most = np.zeros((16, 1), np.float32)
    row_extrema_at(x, best, worst, most, config=RunConfig(trace=True))
    np.testing.assert_array_equal(best[:, 0], x.argmax(axis=1))
    np.testing.assert_array_equal(worst[:, 0], x.argmin(axis=1))
    rep = row_extrema_at.last_report
    assert durations(rep, "TROWARGMAX") == durations(rep, "TROWARGMIN") == durations(rep, "TROWMAX")


@pl.jit
def int_argmax_tile(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 64])
        pl.store(pl.tile.row_argmax(t, pl.create_tile([8, 64], pl.INT32)), [0, 0], out)
    return out


def test_row_argmax_of_an_int32_tile_with_its_scratch_given():
    x = np.random.default_rng(9).integers(-1000, 1000, (8, 64), dtype=np.int32)
    out = np.zeros((8, 1), np.int32)
    int_argmax_tile(x, out)
    np.testing.assert_array_equal(out[:, 0], x.argmax(axis=1))


def test_row_argmax_refuses_a_bf16_tile_at_the_line():
    import ml_dtypes

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:, :] = pl.row_argmax(x)
        return out

    x = np.zeros((8, 64), ml_dtypes.bfloat16)
    with pytest.raises(TypeCheckError, match=r"`x` must be FP32, FP16 or INT32.*test_sort_ops.py:\d+"):
        k.lower(x, np.zeros((8, 1), np.int32))


@pl.jit
def interleave_at(even: pl.Tensor, odd: pl.Tensor, base: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        # tensor level as the DeepSeek V4 inverse RoPE writes it: halves back into even/odd columns
        mixed = pl.full([4, 64], dtype=pl.FP32, value=0.0)
        mixed = pl.tensor.scatter(even, mask_pattern=pl.tile.MaskPattern.P0101, dst=mixed)
        mixed = pl.tensor.scatter(odd, mask_pattern=pl.tile.MaskPattern.P1010, dst=mixed)
        out[0:4, :] = mixed
        # tile level: upstream's pl.tile.scatter_mask(dst, src, pattern) keeps dst's other columns
        b = pl.load(base, [0, 0], [4, 64])
        quarter = pl.load(even, [0, 0], [4, 16])
        out[4:8, :] = pl.tile.scatter_mask(b, quarter, pl.tile.MaskPattern.P0100)
    return out


def test_scatter_mask_writes_the_columns_a_pattern_keeps_at_tensor_and_tile_level():
    rng = np.random.default_rng(11)
    even, odd = (rng.standard_normal((4, 32)).astype(np.float32) for _ in range(2))
    base = rng.standard_normal((4, 64)).astype(np.float32)
    out = np.zeros((8, 64), np.float32)
    interleave_at(even, odd, base, out, config=RunConfig(trace=True))
    want = np.zeros((8, 64), np.float32)
    want[0:4, 0::2], want[0:4, 1::2] = even, odd
    want[4:8] = base
    want[4:8, 2::4] = even[:, :16]
    np.testing.assert_array_equal(out, want)
    # each writes its whole 4 x 64 fp32 output (1 KiB) once: a copy pass, 23 + 1.0 x 4 repeats
    p = platforms.get("a2a3sim")
    assert durations(interleave_at.last_report, "TSCATTER") == {vector_cycles(p, "copy", 1024)} == {27}


def scatter_kernel(cols: int, form: str):
    @pl.jit
    def k(src: pl.Tensor[[4, 32], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            d = pl.full([4, cols], dtype=pl.FP32, value=0.0)
            if form == "mask":
                out[:, 0:cols] = pl.tensor.scatter(src, mask_pattern=pl.tile.MaskPattern.P0101, dst=d)
            else:
                out[:, 0:cols] = pl.tensor.scatter(d, -1, src, src)
        return out

    return k


@pytest.mark.parametrize(
    ("cols", "form", "message"),
    [
        (32, "mask", r"`src` \[4, 32\] must be dst's rows by 1/2 of its 32 columns \(\[4, 16\]\)"),
        (64, "index", r"the index form \(dim=, index=, src=\) is not supported yet"),
    ],
)
def test_tensor_scatter_refuses_a_misfit_at_the_line(cols, form, message):
    x, out = np.zeros((4, 32), np.float32), np.zeros((4, 64), np.float32)
    with pytest.raises(TypeCheckError, match=message + r".*test_sort_ops.py:\d+"):
        scatter_kernel(cols, form).lower(x, out)
