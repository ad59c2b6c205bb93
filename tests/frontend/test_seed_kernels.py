"""The tutorial kernels (docs/double_buffering.md) parse to IR with the right types."""

from __future__ import annotations

import numpy as np
import pytest
import seed_kernels
from seed_kernels import NT, ROWS, TC, TR, explicit_slots, pipelined, single_buffer  # shared fixtures

import pypto.language as pl
from pypto import ir
from pypto.frontend import parse_text

A = (np.arange(ROWS * TC) % 3 - 1).astype(np.float32).reshape(ROWS, TC)
UB2 = pl.MemRef("ub", slots=2)


@pl.jit
def slots_from_variable(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile: pl.Tile[[TR, TC], pl.FP32, UB2[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def tile_add(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [128, 128])
        ty = pl.load(y, [0, 0], [128, 128])
        pl.store(pl.add(tx, ty), [0, 0], out)
    return out


T512 = ir.TensorType((ROWS, TC), ir.FP32)
VEC_TILE = ir.TileType((TR, TC), ir.FP32, ir.MemorySpace.Vec)


def _scope_loop(p: ir.Program) -> ir.For:
    fn = p.entry
    scope = fn.body[0]
    assert isinstance(scope, ir.Scope) and scope.level is ir.Level.CORE_GROUP
    loop = scope.body[0]
    assert isinstance(loop, ir.For)
    return loop


def _ops(body) -> list[str]:
    return [s.value.op for s in body if isinstance(s, (ir.Assign, ir.Eval)) and isinstance(s.value, ir.Call)]


def test_single_buffer_types():
    p = single_buffer.parse(A, np.zeros_like(A))
    fn = p.entry
    assert fn.kind is ir.FunctionType.Orchestration and fn.name == "single_buffer"
    assert [(q.var.name, q.var.type, q.direction) for q in fn.params] == [
        ("a", T512, ir.Direction.In),
        ("out", T512, ir.Direction.Out),
    ]
    assert fn.return_types == (T512,)
    loop = _scope_loop(p)
    assert loop.kind is ir.ForKind.range and loop.stop == ir.Const(NT) and loop.stage is None
    assert _ops(loop.body) == ["tile.load", "tile.exp", "tile.store"]
    load = loop.body[0]
    assert load.var.name == "tile" and load.var.type == VEC_TILE
    assert load.value.arg("offsets") == ir.ListExpr((loop.var * TR, ir.Const(0)))
    assert loop.body[1].var.type == VEC_TILE  # exp keeps the operand's type


def test_pipelined_records_stage():
    loop = _scope_loop(pipelined.parse(A, np.zeros_like(A)))
    assert loop.kind is ir.ForKind.pipeline and loop.stage == 2
    assert _ops(loop.body) == ["tile.load", "tile.exp", "tile.store"]


@pytest.mark.parametrize("kernel", [explicit_slots, slots_from_variable])
def test_explicit_slots_memref(kernel):
    loop = _scope_loop(kernel.parse(A, np.zeros_like(A)))
    t = loop.body[0].var.type
    assert t.memory is ir.MemorySpace.Vec and t.shape == (TR, TC)
    assert t.memref == ir.MemRef("ub", 2, ir.BinOp("%", loop.var, ir.Const(2)))
    assert not t.memref.allocated


def test_tile_add_two_128x128_inputs():
    x = np.ones((128, 128), np.float32)
    p = tile_add.parse(x, x, np.zeros_like(x))
    scope = p.entry.body[0]
    assert _ops(scope.body) == ["tile.load", "tile.load", "tile.add", "tile.store"]
    assert scope.body[2].var.type == ir.TileType((128, 128), ir.FP32, ir.MemorySpace.Vec)


class FakeTorchTensor:
    """Stands in for a torch tensor: only ``.shape`` and a ``torch.*`` dtype."""

    def __init__(self, shape, dtype="torch.float32"):
        self.shape, self.dtype = shape, dtype


def test_specialises_on_torch_like_arguments():
    p = single_buffer.parse(FakeTorchTensor((ROWS, TC)), FakeTorchTensor((ROWS, TC)))
    assert p.entry.params[0].var.type == T512


def test_specialisation_key():
    k1 = single_buffer.specialization_key(A, A)
    assert k1 == single_buffer.specialization_key(A.copy(), A)
    assert k1 != single_buffer.specialization_key(A[:64], A)


def test_closure_values_fold():
    rows, cols = 32, 64

    @pl.jit
    def local(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [rows, cols])
            pl.store(t, [0, 0], out)
        return out

    x = np.zeros((rows, cols), np.float32)
    scope = local.parse(x, x).entry.body[0]
    assert scope.body[0].var.type == ir.TileType((rows, cols), ir.FP32, ir.MemorySpace.Vec)


@pytest.mark.parametrize("kernel", [single_buffer, pipelined, explicit_slots, slots_from_variable, tile_add])
def test_seed_kernels_round_trip(kernel):
    args = (A, np.zeros_like(A)) if kernel is not tile_add else (A[:128], A[:128], A[:128].copy())
    p = kernel.parse(*args)
    text = ir.print_program(p)
    assert text.startswith(f"# pypto.program: {kernel.__name__}\n")
    again = parse_text(text)
    ir.assert_structural_equal(p, again, names=True)
    assert ir.print_program(again) == text


def test_spans_point_into_the_kernel_source_file():
    loop = _scope_loop(single_buffer.parse(A, np.zeros_like(A)))
    span = loop.body[0].span
    assert span.file == seed_kernels.__file__
    assert span.source_line().strip() == "tile = pl.load(a, [i * TR, 0], [TR, TC])"
    assert span.col == 12
