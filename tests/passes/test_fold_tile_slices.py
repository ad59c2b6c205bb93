"""FoldTileSlices alone: a move of a Mat slice becomes one ``tile.extract`` of the window (the
slice disappears), a Vec slice stays a copy, and any other use of a cube-side slice is
refused at its line."""

from __future__ import annotations

import pytest
from pass_util import kernel, ops

from pypto import ir
from pypto.errors import TypeCheckError
from pypto.frontend import parse_text
from pypto.passes.fold_tile_slices import fold_tile_slices

PARAMS = "a: pl.Tensor[[128, 256], pl.FP16], out: pl.Out[pl.Tensor[[128, 64], pl.FP16]]"


def fold(body: str) -> ir.Function:
    out = fold_tile_slices(kernel(PARAMS, body, "AIC"))
    ir.verify(out)
    return out.functions[0]


def test_a_move_of_a_mat_slice_becomes_one_extract_of_the_window():
    fn = fold(
        """
        a_l1 = pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        s = pl.slice(a_l1, [128, 64], [0, 64])
        left = pl.move(s, target_memory=pl.Mem.Left)
        """
    )
    expected = kernel(
        PARAMS,
        """
        a_l1 = pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        left = pl.tile.extract(a_l1, 0, 64, [128, 64], target_memory=pl.Mem.Left)
        """,
        "AIC",
    ).functions[0]
    ir.assert_structural_equal(fn, expected)
    assert ops(fn) == ["tile.load", "tile.extract"]
    text = ir.print_program(ir.Program("p", (fn,)))
    ir.assert_structural_equal(parse_text(text).functions[0], fn)  # the dump re-parses


def test_one_slice_feeding_two_moves_gives_two_extracts_and_vec_slices_stay():
    fn = fold(
        """
        a_l1 = pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        s = a_l1[0:64, 0:64]
        left = pl.move(s, target_memory=pl.Mem.Left)
        right = pl.move(s, target_memory=pl.Mem.Right)
        v = pl.load(a, [0, 0], [128, 256])
        w = pl.slice(v, [128, 64], [0, 32])
        pl.store(w, [0, 0], out)
        """
    )
    assert ops(fn) == ["tile.load", "tile.extract", "tile.extract", "tile.load", "tile.slice", "tile.store"]


def test_a_slice_used_otherwise_stays_as_a_view_when_it_is_one():
    fn = fold(
        """
        a_l1 = pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        left = pl.move(a_l1[:, 0:64], target_memory=pl.Mem.Left)
        band = left[0:64, :]
        right = pl.move(a_l1[0:64, 0:64], target_memory=pl.Mem.Right)
        acc = pl.matmul(band, right)
        """
    )
    assert ops(fn) == ["tile.load", "tile.extract", "tile.slice", "tile.extract", "tile.matmul"]


def test_a_slice_used_otherwise_that_is_no_view_is_refused_at_its_line():
    with pytest.raises(TypeCheckError, match="window of the pl.Mem.Left tile `left`.*whole-width") as e:
        fold(
            """
            a_l1 = pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
            left = pl.move(a_l1[:, 0:64], target_memory=pl.Mem.Left)
            right = pl.move(a_l1[0:32, 0:64], target_memory=pl.Mem.Right)
            acc = pl.matmul(left[:, 0:32], right)
            """
        )
    assert e.value.span is not None
