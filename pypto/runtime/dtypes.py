"""dtype codes shared with the native ABI (``pypto_dtype`` in ``include/pypto/abi.h``)."""

from __future__ import annotations

import numpy as np

from pypto.hardware import DTYPE_CODES

# numpy dtype name -> ABI code; bfloat16 comes from ml_dtypes (or torch, viewed as int16).
CODES: dict[str, int] = DTYPE_CODES
NAMES: dict[int, str] = {code: name for name, code in CODES.items()}


_BY_DTYPE: dict[np.dtype, int] = {}  # filled on first sight: a dict hit is the warm path


def code_of(dtype: np.dtype) -> int:
    """The ABI code of a numpy dtype; ``TypeError`` naming the supported ones otherwise."""
    code = _BY_DTYPE.get(dtype)
    if code is not None:
        return code
    name = np.dtype(dtype).name
    if name not in CODES:
        raise TypeError(f"unsupported dtype {name}; supported: {', '.join(CODES)}")
    _BY_DTYPE[np.dtype(dtype)] = CODES[name]
    return CODES[name]


# pypto_tensor_flags (abi.h), carried to the native side in the bits above the dtype code.
INPUT = 1  # PYPTO_TENSOR_INPUT: a TSTORE into the tensor is refused


def flagged(code: int, flags: int) -> int:
    """A dtype code with pypto_tensor_flags attached (the native side splits them apart)."""
    return code | (flags << 8)
