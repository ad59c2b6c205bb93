"""What a new process loads: ``import pypto.language`` and defining kernels load neither
``dataclasses`` (with ``inspect``, ``ast`` and ``re``) nor the IR types, a call served by the
program cache loads neither the IR types nor the kernel builder, and a compile loads neither
``subprocess`` nor ``shutil``; the value classes that stand in for dataclasses on that path
(:class:`pypto._light.Record`) behave like frozen dataclasses."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from pypto.errors import SourceSpan
from pypto.ir.dims import DynDim
from pypto.ir.dtypes import FP32, DataType
from pypto.language.annotations import DirectionSpec, TensorSpec, TileSpec

HEAVY = ("dataclasses", "inspect", "ast", "re", "typing", "pypto.ir.types")

DEFINE = """
import sys
import pypto.language as pl

M = pl.dynamic("M")

@pl.jit
def scale(a: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.muls(x, 2.0), [0, 0], out)
    return out

@pl.jit.incore
def tile_kernel(t: pl.Tile[[8, 64], pl.FP32, pl.Mem.Vec], n: pl.Scalar[pl.INDEX]):
    pass

print(" ".join(m for m in {heavy!r} if m in sys.modules))
"""

CALL = """
import sys
import numpy as np
import pypto.language as pl
from pypto.runtime import RunConfig

@pl.jit
def add_one(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.adds(x, 1.0), [0, 0], out)
    return out

a = np.ones((8, 64), np.float32)
out = np.zeros_like(a)
add_one(a, out, config=RunConfig(platform="a2a3sim"))
assert (out == 2).all()
heavy = ("pypto.ir.types", "shutil", "subprocess", "pypto.kernel_build.ninja")
print(" ".join(m for m in heavy if m in sys.modules))
"""


def run(code: str, folder: Path) -> str:
    """Runs ``code`` from a file (kernels need their source) with a cache in ``folder``."""
    script = folder / "script.py"
    script.write_text(code)
    env = {**os.environ, "PYPTO_CACHE_DIR": str(folder / "cache")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
    return proc.stdout.strip()


def test_importing_the_language_and_defining_kernels_stays_light(tmp_path: Path) -> None:
    assert run(DEFINE.format(heavy=HEAVY), tmp_path) == ""


def test_a_call_from_the_program_cache_loads_no_ir_types_nor_the_builder(tmp_path: Path) -> None:
    # compiled: the IR and the kernel builder were needed, but not subprocess (the compiler is
    # spawned with os.posix_spawnp) nor shutil with its compression modules
    assert run(CALL, tmp_path) == "pypto.ir.types pypto.kernel_build.ninja"
    assert run(CALL, tmp_path) == ""  # restored: none of them was


@pytest.mark.parametrize(
    "value",
    [FP32, SourceSpan("k.py", 3, 4), DynDim("M"), TensorSpec((8, 64), FP32), TileSpec(), DirectionSpec(None)],
)
def test_records_behave_like_frozen_dataclasses(value) -> None:
    twin = pickle.loads(pickle.dumps(value))
    assert twin == value and hash(twin) == hash(value) and copy.deepcopy(value) == value
    assert not hasattr(value, "__dict__")  # slots only
    with pytest.raises(AttributeError):
        setattr(value, value.__slots__[0], 1)


def test_records_compare_by_fields_and_print_like_dataclasses() -> None:
    assert DataType("FP32", 32, "float") == FP32 and DataType("FP32", 16, "float") != FP32
    assert TensorSpec((8, 64), FP32) != TensorSpec((8, 65), FP32)
    assert TensorSpec() != TileSpec()  # another class, even with equal fields
    assert repr(SourceSpan("k.py", 3, 4)) == "SourceSpan(file='k.py', line=3, col=4)"
