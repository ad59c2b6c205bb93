"""Inputs are read-only to kernels: a DSL write into an input is a compile error at its line;
in the simulator a TSTORE or atomic add into an input (by signature or by ``outputs=``) is a
ReadOnlyInputError naming the kernel, the tensor and the line; a read-only array or memory map
is never written and never faults."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import ArgumentError, InputWriteError, ReadOnlyInputError
from pypto.runtime import RunConfig, run_kernel_file

HERE = Path(__file__).read_text().splitlines()
X16 = np.random.default_rng(0).uniform(-4, 4, (128, 128)).astype(np.float16)


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(HERE, 1) if text in line and "line_of" not in line)


# --- compile time -----------------------------------------------------------------------------
@pl.jit
def stores_into_input(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        pl.store(pl.exp(t), [0, 0], a)  # the bad store
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def stores_through_alias(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        b = pl.store(t, [0, 0], out)
        c = a
        c[0:64, :] = pl.exp(t)  # window assignment into the input
        pl.store(t, [0, 0], b)
    return out


@pl.jit.incore
def writer(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [64, 128])
    pl.store(t, [0, 0], y)
    return y


@pl.jit
def passes_input_to_output(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    writer(out, a)  # a kernel's Out parameter bound to the caller's input
    return out


def test_pl_store_into_an_input_is_a_compile_error_at_the_line():
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    with pytest.raises(InputWriteError) as err:
        stores_into_input(a, out)
    e = err.value
    assert "`a` is an input of `stores_into_input` and pl.store writes into it" in e.message
    assert "pl.Out[...]" in e.message and "pl.InOut[...]" in e.message
    assert e.span.line == line_of("# the bad store") and e.span.file == __file__
    assert (a == 1).all() and (out == 0).all()  # nothing ran


def test_window_assignment_through_an_alias_is_caught():
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    with pytest.raises(InputWriteError, match="`a` is an input .* a window assignment writes into it") as err:
        stores_through_alias(a, out)
    assert err.value.span.line == line_of("# window assignment into the input")


def test_binding_an_input_to_a_kernel_output_is_caught():
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    with pytest.raises(InputWriteError, match=r"`writer` writes it \(its parameter `y` is Out\)") as err:
        passes_input_to_output(a, out)
    assert err.value.span.line == line_of("writer(out, a)")
    assert (a == 1).all()


# --- run time: hand-written kernels -------------------------------------------------------------
@pl.function(type=pl.FunctionType.AIV, external_source="kernels/my_kernel.cpp")
def lying_kernel(x: pl.Tensor[[128, 128], pl.FP16], out: pl.Tensor[[128, 128], pl.FP16]): ...


@pl.function(type=pl.FunctionType.AIV, external_source="kernels/my_kernel.cpp")
def honest_kernel(x: pl.Tensor[[128, 128], pl.FP16], out: pl.Out[pl.Tensor[[128, 128], pl.FP16]]): ...


@pl.jit
def calls_lying_kernel(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    lying_kernel(x, out)  # the .cpp writes `out`, declared here as an input
    return out


@pl.jit
def writes_intermediate_declared_input(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    tmp = pl.create_tensor([128, 128], pl.FP16)
    honest_kernel(x, tmp)
    lying_kernel(x, tmp)  # tmp is written elsewhere, but an input of this kernel
    honest_kernel(x, out)
    return out


@pytest.mark.parametrize("isolate", [False, True])
def test_external_kernel_writing_a_declared_input(isolate):
    out = np.zeros_like(X16)
    with pytest.raises(ReadOnlyInputError) as err:
        calls_lying_kernel(X16, out, config=RunConfig(isolate=isolate))
    msg = str(err.value)
    assert "kernel 'lying_kernel'" in msg and "TSTORE: writes into argument 'out'" in msg
    assert "an input of the kernel" in msg and "my_kernel.cpp:14" in msg
    assert (out == 0).all()


def test_an_intermediate_is_read_only_to_the_kernel_that_reads_it():
    out = np.zeros_like(X16)
    with pytest.raises(ReadOnlyInputError, match="kernel 'lying_kernel'.*writes into pl.create_tensor #0"):
        writes_intermediate_declared_input(X16, out, config=RunConfig(isolate=False))


def exp_args():
    return np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)


@pytest.mark.parametrize("isolate", [False, True])
def test_run_kernel_file_inputs_are_everything_not_in_outputs(fixture_kernel, isolate):
    so = fixture_kernel("exp_single_buffer")
    a, out = exp_args()
    with pytest.raises(ReadOnlyInputError) as err:
        run_kernel_file(so, [a, out], isolate=isolate)  # outputs= forgotten
    msg = str(err.value)
    assert "kernel 'exp_single_buffer'" in msg and "writes into argument #1" in msg
    assert "exp_single_buffer.cpp:13" in msg and "outputs=" in msg
    assert (out == 0).all() and (a == 1).all()
    run_kernel_file(so, [a, out], outputs={1}, isolate=isolate)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_atomic_add_into_an_input_is_refused(fixture_kernel):
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    with pytest.raises(ReadOnlyInputError, match=r"TSTORE.atomic_add: writes into argument #2"):
        run_kernel_file(fixture_kernel("isa_probe"), [a, a, out, 8, 0, 0.0, 0], outputs=set(), isolate=False)
    assert (out == 0).all()


def test_fixpipe_store_into_an_input_is_refused(fixture_kernel):
    a = np.ones((16, 16), np.float16)
    c = np.zeros((16, 16), np.float32)
    with pytest.raises(ReadOnlyInputError, match="TSTORE: writes into argument #2"):
        run_kernel_file(fixture_kernel("matmul_probe"), [a, a, c, 0, 0, 0], core="aic", isolate=False)
    assert (c == 0).all()


@pytest.mark.parametrize("isolate", [False, True])
def test_read_only_memmap_input_is_never_written(fixture_kernel, tmp_path, isolate):
    path = tmp_path / "out.bin"
    np.zeros((64, 128), np.float32).tofile(path)
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=(64, 128))
    a = np.ones((64, 128), np.float32)
    with pytest.raises(ReadOnlyInputError):  # no segfault: the store is refused before it runs
        run_kernel_file(fixture_kernel("exp_single_buffer"), [a, ro], isolate=isolate)
    assert (np.fromfile(path, np.float32) == 0).all()
    with pytest.raises(ArgumentError, match="output argument '#1' is read-only"):
        run_kernel_file(fixture_kernel("exp_single_buffer"), [a, ro], outputs={1}, isolate=isolate)


def test_read_only_flag_alone_protects_memory(fixture_kernel):
    """The simulator's own check of the array's writeable flag (PYPTO_TENSOR_READONLY), below
    the input direction: a read-only array handed to the native runtime as if it were an
    output is still refused."""
    from pypto import _native
    from pypto.platforms import get

    a = np.ones((64, 128), np.float32)
    ro = np.zeros((64, 128), np.float32)
    ro.flags.writeable = False
    so = str(fixture_kernel("exp_single_buffer"))
    with pytest.raises(ReadOnlyInputError, match="whose memory is read-only"):
        _native.run_kernel(so, [(a, 0), (ro, 0)], [], get("a2a3sim").to_native(), "exp")
    assert (ro == 0).all()
