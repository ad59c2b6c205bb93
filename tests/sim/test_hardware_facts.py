"""Hardware facts are defined once in C++ and read by Python; overrides that the flag encoding
or the models cannot hold are refused before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from pypto import _native, hardware, platforms
from pypto.ir.enums import Pipe
from pypto.runtime import dtypes, report, trace


def test_python_reads_the_native_tables():
    facts = _native.hardware_facts()
    assert report.PIPES == hardware.PIPES == tuple(facts["pipes"])
    assert tuple(facts["flag_pipes"]) == trace.FLAG_PIPE_NAMES
    assert [p.name for p in Pipe] == list(hardware.PIPES)  # the DSL's pipes are the hardware's, in order
    assert {numpy: code for code, _, numpy, _ in facts["dtypes"]} == dtypes.CODES
    for name, code in dtypes.CODES.items():
        if name != "bfloat16":
            assert np.dtype(name).itemsize == hardware.DTYPE_SIZES[code]
    assert hardware.MEM_SPACES[0] == "GM" and len(hardware.MEM_SPACES) == 7


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("event_ids", 65, "event_ids must be in \\[1, 64\\]"),
        ("cross_flag_ids", 100, "cross_flag_ids must be in \\[1, 64\\]"),
        ("l2_line_bytes", 500, "l2_line_bytes must be a power of two"),
        ("l2_ways", 256, "l2_ways must be in \\[1, 255\\]"),  # the per-set fill count is 8 bits
    ],
)
def test_overrides_beyond_the_encodings_are_refused(field, value, rule):
    with pytest.raises(ValueError, match=rule):
        platforms.get("a2a3sim").with_overrides(**{field: value}).to_native()
