"""The C ABI under extreme operands: every ISA call checks its operands without wrapping, so
INT64_MAX offsets, 2^31 x 2^31 tiles, negative sizes and malformed descriptors give a typed
error — never a native crash. The kernel runs isolated, so a crash would fail the test as a
KernelCrashError instead of killing the test process."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.errors import KernelCrashError, MemorySpaceError, OutOfBoundsError, PyptoError, ShapeMismatchError
from pypto.runtime import run_kernel_file

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
EXTREME64 = [0, 1, -1, 16, 64, 4096, 2**31, 2**32, 2**62, I64_MAX, I64_MIN, I64_MAX - 15]
EXTREME32 = [0, 1, -1, 2, 7, 16, 64, 65536, I32_MAX, I32_MIN]


def i64():
    return st.sampled_from(EXTREME64) | st.integers(I64_MIN, I64_MAX)


def i32():
    return st.sampled_from(EXTREME32) | st.integers(I32_MIN, I32_MAX) | st.integers(-4, 140)


def run(so, g, *scalars):
    return run_kernel_file(so, [g, *scalars], outputs={0}, hazards="report")


def call(
    so, op=0, mem=1, dtype=0, addr=0, rows=8, cols=64, vr=8, vc=64, row0=0, col0=0, k=(0, 0, 0), desc=None
):
    g = np.zeros((64, 64), np.float32)
    desc = desc or (2, 64, 64, 64)
    return run(so, g, op, mem, dtype, addr, rows, cols, vr, vc, row0, col0, *k, *desc)


@pytest.fixture(scope="module")
def so():
    from pathlib import Path

    from pypto.kernel_build import KernelSource, build_kernel

    path = Path(__file__).parent.parent / "fixtures" / "kernels" / "abi_fuzz.cpp"
    return build_kernel(KernelSource(name="abi_fuzz", path=path), platform="a2a3sim")


def test_the_probe_runs_a_valid_call(so):
    call(so, op=0)  # TLOAD of an in-bounds window: no error


@pytest.mark.parametrize(
    "kw, error, text",
    [
        (dict(row0=I64_MAX), OutOfBoundsError, f"rows [{I64_MAX}, {I64_MAX})"),
        (dict(col0=I64_MAX - 3), OutOfBoundsError, "is outside the tensor of shape [64, 64]"),
        (dict(rows=I32_MAX, cols=I32_MAX, vr=1, vc=1), MemorySpaceError, "lies outside Vec"),
        (dict(addr=I64_MAX - 15), MemorySpaceError, f"[{I64_MAX - 15}, {I64_MAX})"),
        (dict(addr=-32), MemorySpaceError, "lies outside Vec"),
        (dict(rows=-8), ShapeMismatchError, "has shape [-8, 64]"),
        (dict(desc=(2, -1, 64, 64)), ShapeMismatchError, "negative sizes and strides are invalid"),
        (dict(desc=(2, 2**62, 64, 64)), ShapeMismatchError, "spans more bytes than an address holds"),
        (dict(desc=(2, 64, 64, I64_MAX)), ShapeMismatchError, "spans more bytes than an address holds"),
        (dict(op=8, k=(I64_MAX, 0, 0)), MemorySpaceError, "regions need 9223372036854775807 B"),
        (dict(op=8, rows=I32_MAX, k=(2**40, 0, 0)), MemorySpaceError, "regions need"),
        (
            dict(op=9, rows=2, k=(0, 2, 64)),
            MemorySpaceError,
            'slot index 2 is outside pl.MemRef("fuzz", slots=2)',
        ),
        (dict(op=9, rows=4, k=(0, 3, I64_MAX)), MemorySpaceError, "is not an address"),
        (dict(op=9, rows=4, k=(I64_MAX, 1, 64)), MemorySpaceError, "is not an address"),
    ],
)
def test_extreme_operands_give_typed_errors(so, kw, error, text):
    with pytest.raises(error) as err:
        call(so, **kw)
    assert text in str(err.value) and "abi_fuzz.cpp:24" in str(err.value)


# Every operand of the probe: op, the tile (mem, dtype, addr, rows, cols, valid rows/cols), the
# window (row0, col0), k1..k3 and the descriptor tweaks (ndim, shape0, shape1, stride0).
VALID = [0, 1, 0, 0, 8, 64, 8, 64, 0, 0, 0, 0, 0, 2, 64, 64, 64]
DESC = 13  # the descriptor fields come last: real, negative, or spanning more than 2^63 bytes
DESC_BAD = [st.sampled_from([1, 0, 3, 5, -1]), st.sampled_from([-1, 2**62, I64_MAX, I64_MIN])]
DESC_BAD += [st.sampled_from([-5, 2**62, I64_MAX]), st.sampled_from([-64, 2**62, I64_MAX])]


@st.composite
def operands(draw: st.DrawFn) -> list[int]:
    """A valid call with one to three fields made extreme: an unchecked overflow needs one
    extreme field among otherwise valid operands to turn into a wild address."""
    values = list(VALID)
    values[0] = draw(st.sampled_from([0, 1, 16]) | st.integers(0, 17))  # transfers: half the time
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from([3, 8, 9, 13, 14, 15, 16]) | st.integers(1, len(VALID) - 1))  # offsets
        if i >= DESC:
            values[i] = draw(DESC_BAD[i - DESC])
        elif i in (1, 2):  # mem, dtype: small codes, valid or not
            values[i] = draw(st.integers(-2, 10))
        elif 4 <= i <= 7:  # int32 tile fields
            values[i] = draw(i32())
        else:
            values[i] = draw(i64() | st.integers(-2, 64))
    return values


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operands())
def test_fuzz_the_c_abi_never_crashes(so, ops):
    op, tile, window, k, desc = ops[0], ops[1:8], ops[8:10], tuple(ops[10:13]), tuple(ops[13:])
    try:
        call(so, op, *tile, *window, k=k, desc=desc)
    except KernelCrashError:
        raise
    except PyptoError:
        pass  # a typed refusal is the expected outcome for most operands
