"""The op table: its shape, call binding, and each typing rule."""

from __future__ import annotations

import pytest

from pypto import ir
from pypto.errors import TypeCheckError

V = ir.MemorySpace.Vec


def tile(shape, dtype=ir.FP32, memory=V, name="t") -> ir.Var:
    return ir.Var(name, ir.TileType(tuple(shape), dtype, memory))


def tensor(shape, dtype=ir.FP32, name="x") -> ir.Var:
    return ir.Var(name, ir.TensorType(tuple(shape), dtype))


def typed(op: str, *args, **kwargs) -> ir.Type:
    return ir.bind_call(op, args, kwargs)[1]


def test_table_shape():
    assert len(ir.OPS) >= 50
    for name, op in ir.OPS.items():
        assert op.name == name and op.level in ("tile", "tensor", "orchestration", "any")
        assert all(isinstance(p, ir.ParamSpec) for p in op.params)
        assert set(op.spaces) <= {p.name for p in op.params}
        required_after_default = [
            p for i, p in enumerate(op.params) if p.required and any(not q.required for q in op.params[:i])
        ]
        assert not required_after_default, name
    assert ir.get_op("tile.load").pipe({}) is ir.Pipe.MTE2
    assert ir.get_op("tile.exp").pipe({}) is ir.Pipe.VECTOR
    assert ir.get_op("tile.matmul").pipe({}) is ir.Pipe.CUBE
    assert (
        ir.get_op("tile.store").pipe({"tile": tile((16, 16), memory=ir.MemorySpace.Acc).type})
        is ir.Pipe.FIXPIPE
    )
    assert ir.get_op("tile.store").pipe({"tile": tile((16, 16)).type}) is ir.Pipe.MTE3
    assert (
        ir.get_op("tile.move").pipe({"tile": tile((16, 16), memory=ir.MemorySpace.Mat).type}) is ir.Pipe.MTE1
    )
    assert ir.get_op("tensor.create").allowed(incore=True) and ir.get_op("tensor.create").allowed(
        incore=False
    )
    assert not ir.get_op("tile.exp").allowed(incore=False)
    assert not ir.get_op("tensor.add").allowed(incore=False)


def test_binding_normalises_calls():
    x = tensor((512, 128))
    a, _ = ir.bind_call("tile.load", [x, [0, 0], [64, 128]])
    b, _ = ir.bind_call("tile.load", [x], {"offsets": [0, 0], "shapes": [64, 128], "target_memory": V})
    assert a == b and len(a.args) == 5 and a.arg("valid_shape") == ir.Literal(None)
    with pytest.raises(TypeCheckError, match="missing required argument `shapes`"):
        ir.bind_call("tile.load", [x, [0, 0]])
    with pytest.raises(TypeCheckError, match="has no parameter `bogus`"):
        ir.bind_call("tile.load", [x, [0, 0], [64, 128]], {"bogus": 1})
    with pytest.raises(TypeCheckError, match="got `offsets` twice"):
        ir.bind_call("tile.load", [x, [0, 0], [64, 128]], {"offsets": [0, 0]})
    with pytest.raises(TypeCheckError, match="`shapes` must be a list of compile-time integers"):
        ir.bind_call("tile.load", [x, [0, 0], [ir.Var("i", ir.INDEX_TYPE), 128]])
    with pytest.raises(TypeCheckError, match="takes at most 3 positional"):
        ir.bind_call("tile.store", [tile((64, 128)), [0, 0], x, ir.AtomicType.Add])


def test_dsl_overloads_pick_scalar_and_tensor_forms():
    t = tile((64, 128))
    assert ir.resolve_dsl("add", [t, t]) == "tile.add"
    assert ir.resolve_dsl("add", [t, ir.Const(2.0, ir.FP32)]) == "tile.adds"
    assert ir.resolve_dsl("add", [t, ir.Var("s", ir.ScalarType(ir.FP32))]) == "tile.adds"
    x = tensor((64, 128))
    assert ir.resolve_dsl("mul", [x, x]) == "tensor.mul" and ir.resolve_dsl("exp", [x]) == "tensor.exp"
    assert ir.resolve_dsl("matmul", [x, x]) == "tensor.matmul"


def test_scalar_literal_takes_the_tile_dtype():
    call, _ = ir.bind_call("tile.muls", [tile((8, 8), ir.FP16), 2])
    assert call.args[1] == ir.Const(2.0, ir.FP16)
    with pytest.raises(TypeCheckError, match="no implicit promotion"):
        ir.bind_call("tile.muls", [tile((8, 8), ir.FP16), ir.Var("s", ir.ScalarType(ir.FP32))])
    with pytest.raises(TypeCheckError, match="not an integer"):
        ir.bind_call("tile.adds", [tile((8, 8), ir.INT32), 2.5])


def test_movement_rules():
    x = tensor((512, 128), ir.FP16)
    assert typed("tile.load", x, [0, 0], [64, 128], target_memory=ir.MemorySpace.Mat) == ir.TileType(
        (64, 128), ir.FP16, ir.MemorySpace.Mat
    )
    with pytest.raises(TypeCheckError, match="target_memory must be pl.Mem.Vec or pl.Mem.Mat"):
        typed("tile.load", x, [0, 0], [64, 128], target_memory=ir.MemorySpace.Left)
    with pytest.raises(TypeCheckError, match="rank 2 but offsets has 1"):
        typed("tile.load", x, [0], [64, 128])
    assert typed("tile.store", tile((64, 128), ir.FP16), [0, 0], x) == x.type
    with pytest.raises(TypeCheckError, match="cannot move a tile to DDR"):
        typed("tile.move", tile((8, 8)), ir.MemorySpace.DDR)
    assert typed("tile.create", [16, 16], ir.INT8) == ir.TileType((16, 16), ir.INT8, V)
    assert typed("tensor.create", [16, 16], ir.INT8) == ir.TensorType((16, 16), ir.INT8)


def test_elementwise_rules():
    a = tile((64, 128))
    assert typed("tile.sub", a, a) == a.type
    with pytest.raises(TypeCheckError, match=r"shape mismatch: lhs is \[64, 128\] but rhs is \[64, 64\]"):
        typed("tile.sub", a, tile((64, 64)))
    with pytest.raises(TypeCheckError, match="operand `lhs` is in pl.Mem.Mat but the op needs pl.Mem.Vec"):
        typed("tile.add", tile((8, 8), memory=ir.MemorySpace.Mat), tile((8, 8), memory=ir.MemorySpace.Mat))
    with pytest.raises(TypeCheckError, match="the vector unit has no INT32 exp"):
        typed("tile.exp", tile((8, 8), ir.INT32))
    assert typed("tile.cast", a, ir.FP16, "floor") == ir.TileType((64, 128), ir.FP16, V)
    with pytest.raises(TypeCheckError, match="mode must be one of"):
        typed("tile.cast", a, ir.FP16, "sideways")


def test_row_and_column_rules():
    x = tile((64, 128))
    assert typed("tile.row_max", x, x) == ir.TileType((64, 1), ir.FP32, V)
    with pytest.raises(TypeCheckError, match="scratch tile `tmp` must have the shape"):
        typed("tile.row_sum", x, tile((64, 1)))
    assert typed("tile.row_expand_div", x, tile((64, 1))) == x.type
    with pytest.raises(TypeCheckError, match=r"`v` must be \[64, 1\]"):
        typed("tile.row_expand_mul", x, tile((1, 128)))
    assert typed("tile.col_expand_mul", x, tile((1, 128))) == x.type
    with pytest.raises(TypeCheckError, match=r"`v` must be \[1, 128\]"):
        typed("tile.col_expand", x, tile((64, 1)))


def test_shape_rules():
    x = tile((64, 128))
    assert typed("tile.reshape", x, [128, 64]).shape == (128, 64)
    with pytest.raises(TypeCheckError, match="cannot reshape"):
        typed("tile.reshape", x, [64, 64])
    assert typed("tile.concat", x, tile((64, 32))).shape == (64, 160)
    with pytest.raises(TypeCheckError, match="needs equal rows"):
        typed("tile.concat", x, tile((32, 128)))
    assert typed("tile.slice", x, [16, 128], [16, 0]).shape == (16, 128)
    with pytest.raises(TypeCheckError, match="exceeds the source size"):
        typed("tile.slice", x, [65, 128], [0, 0])
    assert typed("tile.assemble", x, tile((16, 128)), [0, 0]) == x.type
    assert typed("tile.fillpad", x, ir.PadValue.min) == x.type
    assert typed("tensor.full", [4, 4], ir.FP16, 0) == ir.TensorType((4, 4), ir.FP16)


def test_cube_rules():
    left = tile((64, 32), ir.FP16, ir.MemorySpace.Left)
    right = tile((32, 16), ir.FP16, ir.MemorySpace.Right)
    assert typed("tile.matmul", left, right) == ir.TileType((64, 16), ir.FP32, ir.MemorySpace.Acc)
    with pytest.raises(TypeCheckError, match="the cube sums FP16 inputs in FP32, not FP16"):
        typed("tile.matmul", left, right, ir.FP16)  # Acc holds fp32; FIXPIPE narrows on the store
    int8 = tile((16, 32), ir.INT8, ir.MemorySpace.Left), tile((32, 16), ir.INT8, ir.MemorySpace.Right)
    assert typed("tile.matmul", *int8).dtype == ir.INT32
    with pytest.raises(TypeCheckError, match=r"inner dimensions differ.*K 32 vs 64"):
        typed("tile.matmul", left, tile((64, 16), ir.FP16, ir.MemorySpace.Right))
    assert typed("tile.matmul", left, tile((16, 32), ir.FP16, ir.MemorySpace.Right), b_trans=True).shape == (
        64,
        16,
    )
    with pytest.raises(TypeCheckError, match="operand `lhs` is in pl.Mem.Vec"):
        typed("tile.matmul", tile((64, 32), ir.FP16), right)
    acc = tile((64, 16), ir.FP32, ir.MemorySpace.Acc)
    assert typed("tile.matmul_acc", acc, left, right) == acc.type
    with pytest.raises(TypeCheckError, match="accumulator is"):
        typed("tile.matmul_acc", tile((64, 64), ir.FP32, ir.MemorySpace.Acc), left, right)
    assert typed("tensor.matmul", tensor((64, 32)), tensor((32, 8))) == ir.TensorType((64, 8), ir.FP32)


def test_a_windowed_move_without_a_route_names_the_routes():
    left = tile((32, 32), ir.FP16, ir.MemorySpace.Left)
    with pytest.raises(
        TypeCheckError,
        match=r"Left to pl.Mem.Right; routes: pl.Mem.Mat → pl.Mem.Left, pl.Mem.Mat → pl.Mem.Right,",
    ):
        typed("tile.extract", left, 0, 0, [16, 16], target_memory=ir.MemorySpace.Right)
    acc = tile((32, 32), ir.FP16, ir.MemorySpace.Acc, name="a")
    with pytest.raises(
        TypeCheckError,
        match=r"assemble a pl.Mem.Acc tile into a pl.Mem.Left tile; routes: .*pl.Mem.Vec → pl.Mem.Mat",
    ):
        typed("tile.assemble", left, acc, [0, 0])
