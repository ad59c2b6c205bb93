"""InferMemorySpaces alone: open tiles land in Vec everywhere they appear; spaces already
chosen (a Mat load, a move into Left) are kept."""

from __future__ import annotations

import dataclasses

from pass_util import kernel

from pypto import ir
from pypto.passes.infer_memory_spaces import infer_memory_spaces

PARAMS = "a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP16]]"


def spaces(p: ir.Program) -> dict[str, str | None]:
    return {
        v.name: (v.type.memory.name if v.type.memory else None)
        for v in ir.nodes_of(p, ir.Var)
        if isinstance(v.type, ir.TileType)
    }


def test_open_tiles_go_to_vec_in_defs_and_uses_and_chosen_spaces_stay():
    planned = kernel(
        PARAMS,
        """
        x = pl.load(a, [0, 0], [64, 64])
        y = pl.exp(x)
        pl.store(y, [0, 0], out)
        m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        left = pl.move(m, target_memory=pl.Mem.Left)
        """,
    )
    opened = {
        n: dataclasses.replace(v.type, memory=None)
        for n, v in ((v.name, v) for v in ir.nodes_of(planned, ir.Var))
        if n in ("x", "y")
    }
    before = ir.retype(planned, opened)
    assert spaces(before)["x"] is None and spaces(before)["y"] is None
    after = infer_memory_spaces(before)
    ir.verify(after)
    ir.assert_structural_equal(after, planned, names=True)
    assert spaces(after) == {"x": "Vec", "y": "Vec", "m": "Mat", "left": "Left"}


def test_a_program_without_open_tiles_is_returned_as_is():
    p = kernel(PARAMS, "pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)")
    assert infer_memory_spaces(p) == p
