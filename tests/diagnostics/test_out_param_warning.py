"""``out = pl.add(a, b)`` on an Out parameter writes nothing: the user is warned
(OutParamWriteDropped) at the line, on a normal call and through Python's default filters."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.frontend import OutParamWriteDropped

A = np.ones((64, 128), np.float32)


@pl.jit
def drops_output(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.add(a, b)
    return out


@pl.jit
def writes_output(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 128])
        y = pl.load(b, [0, 0], [64, 128])
        pl.store(pl.add(x, y), [0, 0], out)
    return out


def test_calling_the_kernel_warns_at_the_rebinding_line():
    out = np.zeros_like(A)
    with pytest.warns(OutParamWriteDropped) as caught:
        drops_output(A, A, out)  # the add runs on the core, its result goes nowhere
    (w,) = [w for w in caught if w.category is OutParamWriteDropped]
    assert w.filename == __file__
    assert Path(__file__).read_text().splitlines()[w.lineno - 1].strip() == "out = pl.add(a, b)"
    assert "`out` is an output parameter" in str(w.message) and "out[:] = ..." in str(w.message)
    assert "the result of pl.add writes nothing" in str(w.message)
    assert (out == 0).all()  # and indeed nothing reached the caller's buffer


def test_writing_through_the_parameter_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutParamWriteDropped)
        out = np.zeros_like(A)
        writes_output(A, A, out)
    np.testing.assert_array_equal(out, A + A)


def test_the_warning_reaches_stderr_with_default_filters(tmp_path: Path):
    script = tmp_path / "user_kernel.py"
    script.write_text(
        textwrap.dedent("""
        import numpy as np
        import pypto.language as pl

        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.exp(a)
            return out

        a = np.ones((64, 128), np.float32)
        try:
            k(a, np.zeros_like(a))
        except Exception as e:
            print(type(e).__name__)
    """)
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert f"{script}:8: OutParamWriteDropped: `out` is an output parameter" in done.stderr
    assert "out = pl.exp(a)" in done.stderr
