"""A bfloat16 pl.create_tensor buffer is made as int16 holding its bits (as torch's bfloat16
tensors are passed), filled with its init value rounded as ml_dtypes rounds it; a run that
only makes such buffers does not import ml_dtypes, whose import alone takes most of a second."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

from pypto.runtime.marshal import bf16_bits

EDGES = [0.0, -0.0, 1.5, -1.5, 1 / 3, 65504.0, 3.39e38, 3.4e38, 1e39, -1e39, 2.0**128]
EDGES += [1e-40, -1e-45, 2.0**-133, 2.0**-134, 3 * 2.0**-135, 2.0**-140, 187903.9950239316]
EDGES += [float("inf"), -float("inf"), float("nan"), -float("nan"), 7, -(10**6)]


def _ml_dtypes_bits(value: float) -> int:
    with np.errstate(all="ignore"):
        return int(np.array(value, dtype=ml_dtypes.bfloat16).view(np.int16))


@pytest.mark.parametrize("value", EDGES)
def test_an_init_value_rounds_to_bfloat16_as_ml_dtypes_rounds_it(value):
    assert bf16_bits(value) == _ml_dtypes_bits(value)


def test_random_doubles_and_float32_ties_round_as_ml_dtypes_rounds_them():
    rng = random.Random(5)
    values = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(3000)]
    values += [rng.uniform(-1e6, 1e6) for _ in range(3000)]
    for _ in range(3000):  # halfway between two bfloat16s, and a hair above halfway
        tie = struct.unpack("f", struct.pack("I", (rng.getrandbits(16) & 0x7F7F) << 16 | 0x8000))[0]
        values += [tie, tie * (1 + 2.0**-40)]
    assert [bf16_bits(v) for v in values] == [_ml_dtypes_bits(v) for v in values]


def test_a_bfloat16_scratch_tensor_holds_its_init_value_without_ml_dtypes(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        import pypto.language as pl

        @pl.jit
        def widen(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            t = pl.create_tensor([16, 64], dtype=pl.BF16, init_value=1.5)
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:, :] = pl.add(x, pl.cast(t, target_type=pl.FP32))
            return y

        x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 8
        y = np.zeros_like(x)
        widen(x, y)
        np.testing.assert_array_equal(y, x + 1.5)
        print("ml_dtypes" in sys.modules)
        """
    )
    (tmp_path / "widen.py").write_text(script)  # a kernel's source is read from its file
    env = {**os.environ, "PYPTO_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, str(tmp_path / "widen.py")], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "False"
