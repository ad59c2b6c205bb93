"""Bad calls of a @pl.jit kernel: typed errors naming the kernel's source line, raised before
anything runs, with the caller's output arrays untouched."""

from __future__ import annotations

import numpy as np
import pytest
import seed_kernels as sk

from pypto.errors import ArgumentMismatchError, PyptoError, TypeCheckError
from pypto.runtime import RunConfig
from pypto.runtime.marshal import ArgumentError

CFG = RunConfig(platform="a2a3sim")
A = np.ones((sk.ROWS, sk.TC), np.float32)


def sentinel(shape=(sk.ROWS, sk.TC), dtype=np.float32):
    return np.full(shape, 7, dtype)


def test_wrong_argument_count():
    with pytest.raises(ArgumentMismatchError, match=r"takes 2 arguments \(a, out\) but 1 were given"):
        sk.single_buffer(A, config=CFG)


def test_keyword_arguments_bind_by_name_in_calls_and_runs():
    out = sentinel()
    assert sk.single_buffer(a=A, out=out, config=CFG) is out
    np.testing.assert_allclose(out, np.exp(A), rtol=1e-6)
    again = sentinel()
    sk.single_buffer.compile(A, again, config=CFG).run(A, out=again)
    np.testing.assert_allclose(again, np.exp(A), rtol=1e-6)
    with pytest.raises(ArgumentMismatchError, match="unknown keyword `outs`"):
        sk.single_buffer(A, outs=out, config=CFG)


def test_wrong_argument_type_names_the_parameter_line():
    with pytest.raises(ArgumentMismatchError) as err:
        sk.single_buffer(A, "out", config=CFG)
    assert "argument `out` of single_buffer() must be a tensor" in str(err.value)
    assert "seed_kernels.py:10:" in str(err.value)


def test_non_contiguous_output_is_refused_before_running():
    base = sentinel((sk.ROWS, 2 * sk.TC))
    with pytest.raises(ArgumentError, match="output argument 'out' is not contiguous") as err:
        sk.single_buffer(A, base[:, ::2], config=CFG)
    assert "seed_kernels.py:10:" in str(err.value)
    assert (base == 7).all()


def test_non_contiguous_input_is_copied():
    wide = np.ones((sk.ROWS, 2 * sk.TC), np.float32)
    out = np.zeros((sk.ROWS, sk.TC), np.float32)
    sk.single_buffer(wide[:, ::2], out, config=CFG)
    np.testing.assert_allclose(out, np.exp(1.0), rtol=1e-6)


def test_dtype_mismatch_between_tile_and_output_is_a_type_error():
    out = sentinel(dtype=np.int32)
    with pytest.raises(TypeCheckError, match="dtype mismatch") as err:
        sk.single_buffer(A, out, config=CFG)
    assert "seed_kernels.py:14:" in str(err.value) and "pl.store(pl.exp(tile)" in str(err.value)
    assert (out == 7).all()


def test_unknown_platform_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid platforms: a2a3sim, a5sim, a2a3, a5"):
        RunConfig(platform="a9")


def test_errors_share_one_base_class():
    for cls in (ArgumentMismatchError, TypeCheckError, ArgumentError):
        assert issubclass(cls, PyptoError)
