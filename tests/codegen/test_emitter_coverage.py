"""Every op the frontend accepts reaches the native ISA: tile and system ops have an emitter,
tensor-level ops are lowered by ConvertTensorToTileOps to tile ops that have one, orchestration ops
are run by the launch plan. An op added to the table without its emitter fails here, not in
a user's codegen."""

from __future__ import annotations

from pypto.codegen.emitters import EMITTERS
from pypto.ir.op_levels import tile_form
from pypto.ir.ops import DSL_OPS, OPS

# ConvertTensorToTileOps' own lowerings (everything else maps tensor.<op> to tile.<op>)
LOWERED = {
    "tensor.slice",
    "tensor.full",
    "tensor.matmul",
    "tensor.matmul_acc",
    "tensor.assemble",
    "tensor.create",
    "tensor.create_l1",
}
# Folded by the frontend: a transposed view becomes its matmul's a_trans / b_trans.
FOLDED = {"tile.transpose_view"}


def reaches_the_isa(name: str) -> bool:
    op = OPS[name]
    if op.level == "orchestration" or name in FOLDED:
        return True
    if op.level == "any" and name in EMITTERS:  # scalar work: emitted as it is in kernels
        return True
    if op.level in ("tensor", "any"):  # "any": tensor.create, a GM tensor or a kernel-local tile
        # a family's hand-written tensor op names its tile op (pl.tensor.scatter: tile.scatter_mask)
        tile_op = tile_form(name) or f"tile.{name.removeprefix('tensor.')}"
        return name in LOWERED or tile_op in EMITTERS
    return name in EMITTERS


def test_every_op_in_the_table_has_an_emitter_or_a_lowering():
    missing = [name for name in OPS if not reaches_the_isa(name)]
    assert missing == []


def test_every_dsl_spelling_resolves_to_ops_that_reach_the_isa():
    for spelling, candidates in DSL_OPS.items():
        assert candidates, spelling
        assert all(c in OPS and reaches_the_isa(c) for c in candidates), spelling


def test_emitters_name_only_known_ops():
    assert set(EMITTERS) <= set(OPS)
