"""torch_codegen runs the IR's meaning on the host: its outputs agree with numpy and with the
simulator for tensor-level, tile-level (loops, carried values) and cube kernels."""

from __future__ import annotations

import cube_kernels as ck
import numpy as np
import pytest
import tensor_kernels as tk
import torch

import pypto.language as pl
from pypto.debug import run_torch, torch_codegen
from pypto.errors import CodegenError
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


@pl.jit
def fused(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


@pl.jit
def row_sums(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.exp(pl.load(a, [0, 0], [16, 64]))
        for i in pl.range(1, 4):
            acc = pl.add(acc, pl.exp(pl.load(a, [i * 16, 0], [16, 64])))
        pl.store(acc, [0, 0], out)
    return out


def _same_as_simulator(kernel, *arrays: torch.Tensor) -> torch.Tensor:
    on_host = [a.clone() for a in arrays]
    run_torch(kernel.lower(*arrays), *on_host, check_shapes=True)
    kernel(*arrays, config=CFG)
    torch.testing.assert_close(on_host[-1], arrays[-1], rtol=1e-5, atol=1e-5)
    return on_host[-1]


def test_tensor_level_kernel():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
    got = _same_as_simulator(fused, a, b, torch.zeros(64, 128))
    torch.testing.assert_close(got, (a + b) * 2)
    src = torch_codegen(fused.lower(a, b, torch.zeros(64, 128)))
    assert "def fused(" in src and "set_flag" not in src  # syncs compute nothing


def test_tile_loop_with_a_carried_value():
    a = torch.randn(64, 64, generator=torch.Generator().manual_seed(1))
    got = _same_as_simulator(row_sums, a, torch.zeros(16, 64))
    torch.testing.assert_close(got, torch.exp(a).reshape(4, 16, 64).sum(0), rtol=1e-5, atol=1e-5)


def test_cube_kernel_against_numpy():
    g = np.random.default_rng(2)
    a = torch.from_numpy(g.standard_normal((ck.M, ck.K)).astype(np.float16))
    b = torch.from_numpy(g.standard_normal((ck.K, ck.N)).astype(np.float16))
    got = _same_as_simulator(ck.tile_matmul, a, b, torch.zeros(ck.M, ck.N))
    np.testing.assert_allclose(got.numpy(), a.float().numpy() @ b.float().numpy(), rtol=1e-3, atol=1e-3)


def test_tensor_level_matmul():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(64, 128, generator=g).half(), torch.randn(128, 64, generator=g).half()
    out = torch.zeros(64, 64)
    run_torch(tk.tensor_matmul.lower(a, b, out), a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_refusals_name_the_op():
    with pytest.raises(TypeError, match="takes an ir.Program or ir.Function"):
        torch_codegen("not a program")
    from pypto.ir.enums import FunctionType
    from pypto.ir.expr import Call, Var
    from pypto.ir.stmt import Eval, Function
    from pypto.ir.types import VoidType

    x, i = Var("x", VoidType()), Var("i", VoidType())
    f = Function("k", (), FunctionType.AIV, (Eval(Call("tile.sort32", (x, i), VoidType())),))
    with pytest.raises(CodegenError, match="op tile.sort32 has no torch translation"):
        torch_codegen(f)
