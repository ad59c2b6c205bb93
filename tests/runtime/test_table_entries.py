"""The launch table's entries after the parameters: a scratch tensor is made fresh, filled with
its init value bit for bit (a negative zero stays negative; bfloat16 as its int16 bits), and a
slice is a view of its base, whatever its rank."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.runtime.dtypes import CODES
from pypto.runtime.marshal import bf16_bits, table_entry


@pytest.mark.parametrize(
    "dtype,init,storage",
    [
        ("float32", 0, np.float32),
        ("float32", 0.0, np.float32),
        ("float32", -0.0, np.float32),
        ("float32", 1.5, np.float32),
        ("float32", float("nan"), np.float32),
        ("float16", -0.0, np.float16),
        ("int32", 0, np.int32),
        ("int32", -7, np.int32),
        ("bool", False, np.bool_),
        ("bool", True, np.bool_),
        ("bfloat16", 0.0, np.int16),
        ("bfloat16", -0.0, np.int16),
        ("bfloat16", 1.5, np.int16),
    ],
)
def test_a_scratch_tensor_holds_its_init_value_bit_for_bit(dtype, init, storage):
    array, code = table_entry(("new", (16, 8), dtype, init), [])
    assert array.shape == (16, 8) and array.dtype == storage and code == CODES[dtype]
    if dtype == "bfloat16":
        expected = np.full((16, 8), bf16_bits(init), np.int16)
    else:
        expected = np.full((16, 8), init, storage)
    assert array.tobytes() == expected.tobytes()  # bits: -0.0 and NaN too
    again, _ = table_entry(("new", (16, 8), dtype, init), [])
    assert not np.shares_memory(array, again)  # fresh at each run


@pytest.mark.parametrize(
    "offsets,shape",
    [((2, 3), (4, 5)), ((0, 0), (16, 8)), ((1, 2, 3), (2, 2, 2)), ((5,), (3,))],
)
def test_a_slice_entry_is_a_view_of_its_base(offsets, shape):
    base = np.arange(512, dtype=np.float32).reshape({1: (512,), 2: (16, 32), 3: (8, 8, 8)}[len(shape)])
    view, code = table_entry(("view", 0, shape, offsets), [(base, 7)])
    expected = base[tuple(slice(o, o + n) for o, n in zip(offsets, shape))]
    assert code == 7 and view.shape == shape and np.shares_memory(view, base)
    np.testing.assert_array_equal(view, expected)
