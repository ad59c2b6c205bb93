"""Bad kernels and bad arguments get typed errors naming the instruction and the kernel
line — never a segfault or a hang — and the process carries on."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.errors import (
    DeadlockError,
    DTypeMismatchError,
    HazardError,
    KernelLoadError,
    MemorySpaceError,
    OutOfBoundsError,
    PyptoError,
    ShapeMismatchError,
)
from pypto.runtime import run_kernel_file
from pypto.runtime.marshal import ArgumentError

K_BINARY, K_UNARY = 0, 2


def exp_args(rows=64, out_rows=None, dtype=np.float32):
    a = np.ones((rows, 128), dtype)
    return [a, np.zeros((out_rows or rows, 128), dtype)]


def test_gm_window_outside_tensor_names_the_store_and_line(fixture_kernel):
    so = fixture_kernel("exp_single_buffer")
    with pytest.raises(OutOfBoundsError) as err:
        run_kernel_file(so, exp_args(rows=128, out_rows=64), outputs={1})
    msg = str(err.value)
    assert "TSTORE: GM window rows [64, 128) x cols [0, 128) is outside the tensor of shape [64, 128]" in msg
    assert "exp_single_buffer.cpp:13" in msg
    # the process survives and the next call works
    a, out = exp_args()
    run_kernel_file(so, [a, out], outputs={1})
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_tile_outside_its_memory_space(fixture_kernel):
    big = np.ones((256, 256), np.float32)  # 256 KiB > 184 KiB of Vec
    with pytest.raises(
        MemorySpaceError,
        match=r"TLOAD: operand 'dst' fp32\[256, 256\] at Vec \[0, 262144\) "
        r"lies outside Vec \(capacity 188416 B\)",
    ):
        run_kernel_file(fixture_kernel("isa_probe"), [big, big, big.copy(), 0, 0, 0.0, 0], outputs={2})


def test_dtype_mismatch_between_tensor_and_tile(fixture_kernel):
    with pytest.raises(DTypeMismatchError, match="tensor dtype fp16 differs from tile dtype fp32"):
        run_kernel_file(fixture_kernel("exp_single_buffer"), exp_args(dtype=np.float16), outputs={1})


def test_shape_mismatch_between_tiles(fixture_kernel):
    a, b = np.ones((8, 64), np.float32), np.ones((8, 32), np.float32)
    with pytest.raises(ShapeMismatchError, match=r"TADD: a and b: shapes differ \(\[8, 64\] vs \[8, 32\]\)"):
        run_kernel_file(
            fixture_kernel("isa_probe"), [a, b, np.zeros_like(a), K_BINARY, 0, 0.0, 0], outputs={2}
        )


def test_unsupported_dtype_for_op(fixture_kernel):
    a = np.ones((8, 64), np.int32)
    with pytest.raises(DTypeMismatchError, match="TEXP: dtype int32 is not supported"):
        run_kernel_file(
            fixture_kernel("isa_probe"), [a, a, np.zeros_like(a), K_UNARY, 0, 0.0, 0], outputs={2}
        )


def test_missing_wait_is_a_race_naming_both_instructions(fixture_kernel):
    so = fixture_kernel("exp_missing_wait")
    with pytest.raises(HazardError) as err:
        run_kernel_file(so, exp_args(), outputs={1})
    msg = str(err.value)
    assert "RAW race: TEXP" in msg and "exp_missing_wait.cpp:13" in msg
    assert "overlaps TLOAD #0 on MTE2" in msg and "exp_missing_wait.cpp:11" in msg
    rep = run_kernel_file(so, exp_args(), outputs={1}, hazards="report")
    # TEXP races the load; so does TSTORE (its V->MTE3 sync does not order it after MTE2)
    assert [h.split(" #")[0] for h in rep.hazards] == ["RAW race: TEXP", "RAW race: TSTORE"]


def test_wait_never_set_is_a_deadlock_not_a_hang(fixture_kernel):
    with pytest.raises(DeadlockError, match=r"WAIT_FLAG #1 at never_set.cpp:11 \(MTE2 -> VECTOR, event 3\)"):
        run_kernel_file(fixture_kernel("never_set"), [np.ones((8, 64), np.float32)])


def test_missing_kernel_entry_names_the_file(fixture_kernel):
    with pytest.raises(KernelLoadError, match="no_entry.cpp: .*does not export .*kernel_entry"):
        fixture_kernel("no_entry")  # refused when built: such a build is never cached


def test_errors_are_pypto_errors(fixture_kernel):
    assert issubclass(HazardError, PyptoError) and issubclass(ArgumentError, PyptoError)


def test_non_contiguous_output_is_refused_and_input_is_copied(fixture_kernel):
    so = fixture_kernel("exp_single_buffer")
    wide = np.ones((64, 256), np.float32)
    out = np.zeros((64, 128), np.float32)
    with pytest.raises(ArgumentError, match="not contiguous"):
        run_kernel_file(so, [wide[:, :128].copy(), wide[:, ::2]], outputs={1})
    run_kernel_file(so, [wide[:, ::2], out], outputs={1})
    np.testing.assert_allclose(out, np.exp(1.0), rtol=1e-6)


def test_wrong_argument_types():
    with pytest.raises(ArgumentError, match="expected a numpy array or torch tensor, got str"):
        run_kernel_file("/nonexistent.so", ["nope"])


def test_a_descriptor_changed_after_a_checked_use_is_checked_again(fixture_kernel):
    # Checks are cached per descriptor (its newest two bytes at one place): the cache must miss
    # when the descriptor's bytes change to a third value.
    so = fixture_kernel("tile_recheck")
    run_kernel_file(so, [2048], outputs=set(), isolate=False)  # moved, still inside Vec
    with pytest.raises(MemorySpaceError, match=r"TADDS: operand 'dst' .* lies outside Vec"):
        run_kernel_file(so, [1 << 30], outputs=set(), isolate=False)
    with pytest.raises(MemorySpaceError, match="is not 32-byte aligned"):
        run_kernel_file(so, [2048 + 4], outputs=set(), isolate=False)


def test_one_input_ops_repeating_and_changing_their_operands(fixture_kernel):
    # A core keeps a one-input op's checked operands for its next call: another op, a moved
    # descriptor or a narrowed valid region must not be answered from them.
    so = fixture_kernel("one_input_repeats")
    out = np.zeros((4, 8), np.float32)
    run_kernel_file(so, [out, 0], outputs={0}, isolate=False)
    expected = [[10] * 8, [-2] * 8, [20] * 8, [5] * 4 + [20] * 4]
    np.testing.assert_array_equal(out, np.array(expected, np.float32))
    with pytest.raises(ShapeMismatchError, match="TADDS") as err:
        run_kernel_file(so, [np.zeros((4, 8), np.float32), 1], outputs={0}, isolate=False)
    assert "one_input_repeats.cpp:43" in str(err.value)
