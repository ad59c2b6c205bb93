"""Kernel names a user may write: a Python name in another script, a 250-character name_hint
(file names are at most 255 bytes) — both run, and their files get plain, unique names; a
name_hint that is a path is a TypeCheckError at its line."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.kernel_build.source import file_stem
from pypto.runtime import RunConfig

A = np.arange(256, dtype=np.float32).reshape(16, 16)


@pl.jit
def kernél(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(a, [0, 0], [16, 16]), 1.0), [0, 0], out)
    return out


@pl.jit
def long_hint(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k" * 250):
        pl.store(pl.adds(pl.load(a, [0, 0], [16, 16]), 2.0), [0, 0], out)
    return out


@pl.jit
def spaced_hint(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="soft/max"):
        pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], out)
    return out


@pytest.mark.parametrize(
    ("kernel", "add", "task"), [(kernél, 1.0, "kernél_incore_0"), (long_hint, 2.0, "k" * 250)]
)
def test_unusual_names_run_and_their_files_have_plain_names(tmp_path, kernel, add, task):
    out = np.zeros_like(A)
    kernel(A, out, config=RunConfig(output_dir=tmp_path))
    np.testing.assert_array_equal(out, A + np.float32(add))
    assert [t.name for t in kernel.last_report.tasks] == [task]  # reports keep the user's name
    (source,) = (tmp_path / "kernels").glob("*.cpp")
    assert source.name == f"{file_stem(task)}.cpp" and len(source.name) < 110 and source.name.isascii()


def test_file_stems_stay_unique():
    assert file_stem("plain_name") == "plain_name"
    assert file_stem("k" * 250) != file_stem("k" * 249)
    assert file_stem("kernél") != file_stem("kernèl")


def test_a_name_hint_that_is_a_path_is_refused_at_its_line():
    out = np.zeros_like(A)
    with pytest.raises(TypeCheckError, match="name_hint names the kernel: a non-empty string without /") as e:
        spaced_hint(A, out)
    assert "test_kernel_names.py:34:" in str(e.value)
    assert (out == 0).all()
