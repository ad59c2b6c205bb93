"""Loops, loop-carried values, branches, scopes and kernel calls as the frontend lowers them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto.frontend import OutParamWriteDropped, parse_text

M, N, K, KS = 64, 64, 256, 64
SPLIT = K // KS
A = np.zeros((512, 128), np.float32)


@pl.jit
def accumulate(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tile([64, 128], pl.FP32)
        for i in pl.range(8):
            acc = pl.add(acc, pl.load(a, [i * 64, 0], [64, 128]))
        pl.store(acc, [0, 0], out)
    return out


@pl.program
class AccumulateExpected:
    @pl.function(type=pl.FunctionType.Orchestration)
    def accumulate(
        self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]
    ) -> pl.Tensor[[512, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            acc0: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.create([64, 128], pl.FP32)
            for k, (carry,) in pl.range(0, 8, 1, init_values=(acc0,)):
                t: pl.Tile[[64, 128], pl.FP32] = pl.tile.load(a, [k * 64, 0], [64, 128])
                nxt: pl.Tile[[64, 128], pl.FP32] = pl.tile.add(carry, t)
                final = pl.yield_(nxt)
            pl.tile.store(final, [0, 0], out)
        return out


def test_implicit_carry_equals_explicit_form():
    p = accumulate.parse(A, A)
    loop = p.entry.body[0].body[1]
    assert [a.var.name for a in loop.iter_args] == ["acc_1"] and loop.results[0].name == "acc_3"
    assert isinstance(loop.body[-1], ir.Yield)
    ir.assert_structural_equal(p.functions, AccumulateExpected.functions)  # equal up to names
    assert not ir.structural_equal(p.functions, AccumulateExpected.functions, names=True)


@pl.jit
def rebound(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    for _ in pl.parallel(0, 1):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l1 = pl.load(a, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
            b_l1 = pl.load(b, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
            a_l0 = pl.move(a_l1[:, 0:64], target_memory=pl.Mem.Left)
            b_l0 = pl.move(b_l1[0:64, :], target_memory=pl.Mem.Right)
            acc = pl.matmul(a_l0, b_l0)
            for k in pl.range(1, 4):
                a_l0 = pl.move(a_l1[:, k * 64 : k * 64 + 64], target_memory=pl.Mem.Left)
                b_l0 = pl.move(b_l1[k * 64 : k * 64 + 64, :], target_memory=pl.Mem.Right)
                acc = pl.matmul_acc(acc, a_l0, b_l0)
            pl.store(acc, [0, 0], c)
    return c


def test_a_name_rebound_afresh_in_every_trip_and_not_read_after_is_not_carried():
    # a_l0 / b_l0 are rebound before any read in each trip and never read after the loop
    # (the loop around it binds them again before reading them): only acc is carried, and
    # no L0 tile needs the on-chip copy L0 does not have
    a = np.random.default_rng(0).uniform(-1, 1, (64, 256)).astype(np.float16)
    b = np.random.default_rng(1).uniform(-1, 1, (256, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    loop = next(n for n in ir.walk(rebound.parse(a, b, c).functions) if isinstance(n, ir.For) and n.iter_args)
    assert [it.init.name for it in loop.iter_args] == ["acc"]
    rebound(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-4)


@pl.jit
def kept(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        u = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(4):
            t = pl.load(a, [i * 64, 0], [64, 128])
            u = pl.add(u, t)
        pl.store(t, [0, 0], out)
        pl.store(u, [64, 0], out)
    return out


def test_a_name_read_after_the_loop_or_by_the_next_trip_stays_carried():
    # t is rebound afresh in every trip but read after the loop; u is read before it is
    # rebound: both are carried
    loop = next(n for n in ir.walk(kept.parse(A, A).functions) if isinstance(n, ir.For))
    assert sorted(it.init.name for it in loop.iter_args) == ["t", "u"]


@pl.jit
def sugar(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [64, 128])
        acc += pl.exp(acc)
        half = acc[0:32, :]
        scaled = 2.0 * half
        pl.store(scaled, [0, 0], out)
    return out


def test_operator_sugar_keeps_user_names():
    body = sugar.parse(A, A).entry.body[0].body
    assert [(s.var.name, s.value.op) for s in body if isinstance(s, ir.Assign)] == [
        ("acc", "tile.load"),
        ("exp", "tile.exp"),
        ("acc_1", "tile.add"),
        ("half", "tile.slice"),
        ("scaled", "tile.muls"),
    ]


@pl.jit
def branches(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(4):
            if i % 2 == 0:  # noqa: SIM108 - a kernel if, not a Python one
                t = pl.exp(t)
            else:
                t = pl.muls(t, 0.5)
            if M > 32:  # noqa: SIM108 - compile-time: only this branch is parsed
                t = pl.relu(t)
            else:
                t = pl.no_such_op(t)
        pl.store(t, [0, 0], out)
    return out


def test_if_merges_rebound_names_and_folds_constant_conditions():
    p = branches.parse(A, A)
    loop = p.entry.body[0].body[1]
    branch = loop.body[0]
    assert isinstance(branch, ir.If) and len(branch.results) == 1
    assert isinstance(branch.then_body[-1], ir.Yield) and isinstance(branch.else_body[-1], ir.Yield)
    relu = loop.body[1]
    assert relu.value.op == "tile.relu" and relu.value.args[0] == branch.results[0]
    ir.assert_structural_equal(p, parse_text(ir.print_program(p)), names=True)


@pl.jit
def matmul_split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_init") as init:
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(0, SPLIT):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="split_k", deps=[init]):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0 : k0 + KS], b[k0 : k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


def test_split_k_from_spec():
    a, b, c = np.zeros((M, K), np.float32), np.zeros((K, N), np.float32), np.zeros((M, N), np.float32)
    p = matmul_split_k.parse(a, b, c)
    zero, loop = p.entry.body[0], p.entry.body[1]
    assert zero.name_hint == "zero_init" and zero.handle == "init"
    assert loop.kind is ir.ForKind.parallel and len(loop.iter_args) == 1
    scope = loop.body[0]
    assert scope.deps == ("init",)
    ops = [s.value.op for s in scope.body if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call)]
    assert ops == ["tensor.slice", "tensor.slice", "tensor.matmul", "tensor.assemble"]
    a_slice = scope.body[1]
    assert a_slice.var.type == ir.TensorType((M, KS), ir.FP32)
    assert a_slice.value.arg("offset").items[1].name == "k0"
    assert scope.body[-1].value.arg("atomic") == ir.Literal(ir.AtomicType.Add)
    assert p.entry.return_types == (ir.TensorType((M, N), ir.FP32),)


def test_split_k_deps_reach_the_plan_and_keep_the_write_gates():
    """deps=[init] names a task the atomic adds already depend on through c: it stays a write
    gate (the splits start at launch), and the dump shows handle/deps and reparses."""
    a, b = np.ones((M, K), np.float32), np.ones((K, N), np.float32)
    c = np.zeros((M, N), np.float32)
    compiled = matmul_split_k.compile(a, b, c)
    assert [t.deps for t in compiled.tasks] == [()] + [(0,)] * SPLIT
    assert [t.start_deps for t in compiled.tasks] == [()] * (SPLIT + 1)
    text = ir.print_program(compiled.program)
    assert 'handle="init"' in text and "deps=[init]" in text
    ir.assert_structural_equal(compiled.program, parse_text(text), names=True)
    matmul_split_k(a, b, c)
    np.testing.assert_allclose(c, a @ b)


@pl.jit.incore
def add_rows(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.INDEX):
    for r in pl.range(n):
        pl.store(pl.load(x, [r * 32, 0], [32, 128]) + pl.load(y, [r * 32, 0], [32, 128]), [r * 32, 0], out)
    return out


@pl.jit
def calls_kernels(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = add_rows(x, y, out, 4)
    out = add_rows(x, y, out, 4)
    out = add_rows(x, y, out, 2)
    return out


def test_incore_calls_specialise_and_cache():
    x = np.zeros((128, 128), np.float32)
    p = calls_kernels.parse(x, x, x)
    assert [f.name for f in p.functions] == ["calls_kernels", "add_rows", "add_rows_1"]
    callee = p.get("add_rows")
    assert callee.kind is ir.FunctionType.InCore and callee.body[0].stop == ir.Const(4)
    assert p.get("add_rows_1").body[0].stop == ir.Const(2)
    calls = [s.value.callee for s in p.entry.body if isinstance(s, ir.Assign)]
    assert calls == ["add_rows", "add_rows", "add_rows_1"]
    ir.assert_structural_equal(p, parse_text(ir.print_program(p)), names=True)


@pl.jit
def scalar_param(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.INDEX, scale: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.unroll(n):
            t = pl.load(a, [i * 64, 0], [64, 128])
            pl.store(t * scale, [i * 64, 0], out)
    return out


def test_scalar_parameters_fold_by_value():
    p = scalar_param.parse(A, A, 3, 2)
    loop = p.entry.body[0].body[0]
    assert loop.kind is ir.ForKind.unroll and loop.stop == ir.Const(3)
    muls = loop.body[1].value
    assert muls.op == "tile.muls" and muls.args[1] == ir.Const(2.0, ir.FP32)
    assert p.entry.params[3].var.type == ir.ScalarType(ir.FP32)
    assert scalar_param.specialization_key(A, A, 3, 2.0) != scalar_param.specialization_key(A, A, 4, 2.0)


@pl.jit
def window_sugar(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        out[64:128, :] = pl.exp(t)
    return out


def test_subscript_assignment_assembles():
    p = window_sugar.parse(A, A)
    last = p.entry.body[0].body[-1]
    assert last.value.op == "tensor.assemble" and last.var.name == "out_1"
    assert last.value.arg("offset") == ir.ListExpr((ir.Const(64), ir.Const(0)))
    assert p.entry.body[-1] == ir.Return((last.var,))


@pl.jit
def drops_output(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.add(a, b)
    return out


def test_rebinding_an_out_parameter_warns():
    with pytest.warns(OutParamWriteDropped, match="`out` is an output parameter"):
        drops_output.parse(A, A, A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matmul_split_k.parse(
            np.zeros((M, K), np.float32), np.zeros((K, N), np.float32), np.zeros((M, N), np.float32)
        )


@pl.jit
def cube(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(left, right)
        for _ in pl.range(3):
            acc = pl.matmul_acc(acc, left, right)
        pl.store(acc, [0, 0], c)
    return c


def test_cube_path_types():
    h = np.zeros((64, 64), np.float16)
    p = cube.parse(h, h, np.zeros((64, 64), np.float32))
    body = p.entry.body[0].body
    types = {s.var.name: s.var.type for s in body if isinstance(s, ir.Assign)}
    assert types["left"].memory is ir.MemorySpace.Left and types["right"].memory is ir.MemorySpace.Right
    assert types["acc"] == ir.TileType((64, 64), ir.FP32, ir.MemorySpace.Acc)
    ir.assert_structural_equal(p, parse_text(ir.print_program(p)), names=True)
