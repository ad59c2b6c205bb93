"""pl.spmd with a block count of pl.dynamic dims: one compile and one kernel build serve every
count; each call is planned with its own sizes (one task per block, pl.get_block_num() the
count) and a count out of [1, 65535] is refused with the source line."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import ArgumentError, CompileError
from pypto.ir.printer import print_program
from pypto.runtime import RunConfig

M = pl.dynamic("M")
R, C = 16, 64


@pl.jit
def reverse_blocks(x: pl.Tensor[[M, C], pl.FP32], y: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
    """Block b of M // 16 writes x's row block b, plus one, into row block n-1-b of tmp; a
    task after every block negates tmp into y."""
    tmp = pl.create_tensor([1024, C], pl.FP32)
    for b in pl.spmd(M // R, name_hint="fill"):
        n = pl.get_block_num()
        pl.store(pl.adds(pl.load(x, [b * R, 0], [R, C]), 1.0), [(n - 1 - b) * R, 0], tmp)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="after"):
        for i in pl.range(M // R):
            pl.store(pl.neg(pl.load(tmp, [i * R, 0], [R, C])), [i * R, 0], y)
    return y


def test_one_compile_serves_three_block_counts():
    programs = set()
    for blocks in (3, 5, 2):
        x = np.arange(blocks * R * C, dtype=np.float32).reshape(blocks * R, C)
        y = np.zeros_like(x)
        reverse_blocks(x, y)
        ref = -(x.reshape(blocks, R, C)[::-1] + 1).reshape(blocks * R, C)
        np.testing.assert_array_equal(y, ref)
        report = reverse_blocks.last_report
        fills = [t for t in report.tasks if t.name == "fill"]
        assert sorted(t.block for t in fills) == list(range(blocks))
        assert len(report.tasks) == blocks + 1  # the blocks, then the task after them
        programs.add(id(reverse_blocks.compile(x, y)))
    assert len(programs) == 1  # one program (IR, kernels) for every M


def test_printed_ir_keeps_the_count_symbolic():
    x = np.zeros((2 * R, C), np.float32)
    text = print_program(reverse_blocks.compile(x, x).program)
    assert "self.fill(x, tmp, blocks=M // 16)" in text


def test_a_count_of_zero_blocks_is_refused_with_the_line():
    x = np.zeros((R // 2, C), np.float32)
    with pytest.raises(ArgumentError, match=r"pl.spmd\(M // 16\) gives 0 blocks for M = 8") as e:
        reverse_blocks(x, np.zeros_like(x))
    assert "test_spmd_dynamic.py:" in str(e.value) and 'for b in pl.spmd(M // R, name_hint="fill")' in str(
        e.value
    )


def test_a_count_of_something_else_is_still_refused():
    with pytest.raises(
        CompileError, match=r"operator `/` divides float scalars; use // for integer division"
    ):

        @pl.jit
        def bad(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
            for b in pl.spmd(M / R):
                pl.store(pl.load(x, [b * R, 0], [R, C]), [b * R, 0], out)
            return out

        bad(np.zeros((R, C), np.float32), np.zeros((R, C), np.float32))


def test_program_read_back_from_its_folder_plans_each_call(tmp_path):
    from pypto.runtime.jit import CompiledProgram

    x = np.ones((2 * R, C), np.float32)
    reverse_blocks.compile(x, x, config=RunConfig(output_dir=tmp_path))
    again = CompiledProgram.from_dir(tmp_path)
    for blocks in (4, 2):
        x = np.arange(blocks * R * C, dtype=np.float32).reshape(blocks * R, C)
        y = np.zeros_like(x)
        again(x, y)
        np.testing.assert_array_equal(y, -(x.reshape(blocks, R, C)[::-1] + 1).reshape(blocks * R, C))
        assert len(again.last_report.tasks) == blocks + 1


@pl.jit
def exp_n_blocks(x: pl.Tensor, n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
    for b in pl.spmd(n):
        pl.store(pl.exp(pl.load(x, [b * R, 0], [R, C])), [b * R, 0], out)
    return out


def test_a_scalar_block_count_shares_one_kernel_build():
    """A scalar argument is a compile-time constant: each count plans its own program, but the
    kernel does not depend on the count (it reads pl.get_block_num()), so one build serves all."""
    x = np.random.default_rng(6).standard_normal((4 * R, C)).astype(np.float32)
    programs = []
    for n in (2, 3, 4):
        out = np.zeros_like(x)
        exp_n_blocks(x, n, out)
        np.testing.assert_allclose(out[: n * R], np.exp(x[: n * R]), rtol=1e-6)
        assert not out[n * R :].any() and len(exp_n_blocks.last_report.tasks) == n
        programs.append(exp_n_blocks.compile(x, n, out))
    assert len({id(p) for p in programs}) == 3
    assert all(p.kernels == programs[0].kernels for p in programs)  # the same binaries


@pl.jit.incore
def exp_block(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[1024, C], pl.FP32]]):
    b = pl.get_block_idx()
    pl.store(pl.exp(pl.load(x, [b * R, 0], [R, C])), [b * R, 0], out)
    return out


@pl.jit
def two_dispatches(x: pl.Tensor[[M, C], pl.FP32], y: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
    tmp = pl.create_tensor([1024, C], pl.FP32)
    with pl.spmd(M // R) as first:  # the direct form: one kernel call, M // 16 blocks
        exp_block(x, tmp)
    with pl.spmd(M // R, deps=[first], name_hint="negate"):
        b = pl.get_block_idx()
        pl.store(pl.neg(pl.load(tmp, [b * R, 0], [R, C])), [b * R, 0], y)
    return y


def test_dynamic_counts_in_the_direct_form_and_with_deps():
    for blocks in (2, 5):
        x = np.random.default_rng(blocks).standard_normal((blocks * R, C)).astype(np.float32)
        y = np.zeros_like(x)
        two_dispatches(x, y)
        np.testing.assert_allclose(y, -np.exp(x), rtol=1e-6)
        tasks = two_dispatches.last_report.tasks
        assert [t.name for t in tasks] == ["exp_block"] * blocks + ["negate"] * blocks
        assert all(set(range(blocks)) <= set(t.deps) for t in tasks[blocks:])  # after every block
