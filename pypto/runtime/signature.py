"""``kernel.compile()`` with no arguments: the sample tensors come from the signature.

Upstream PyPTO compiles a ``@pl.jit`` kernel whose tensor parameters are all written
``pl.Tensor[[d0, d1], dtype]`` (or ``pl.Out``/``pl.InOut`` of one) without sample arrays. The
specialiser reads only shapes and dtypes, so each sample is a read-only zero-stride view of one
zero: it costs no memory whatever its shape. Scalars come as keywords. A bare ``pl.Tensor`` or a
``pl.dynamic`` dim has nothing to read: a ``TypeError`` names the parameter and asks for a sample.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from pypto.ir.dims import DynDim
from pypto.ir.dtypes import numpy_dtype
from pypto.language.annotations import DirectionSpec, TensorSpec


def _sample(name: str, kernel: str, annotation: Any) -> np.ndarray:
    spec = annotation.inner if isinstance(annotation, DirectionSpec) else annotation
    if not isinstance(spec, TensorSpec) or spec.shape is None or spec.dtype is None:
        raise TypeError(
            f"{kernel}.compile() without arguments reads each tensor's shape and dtype from the "
            f"signature, but parameter `{name}` is not a full pl.Tensor[[...], dtype]; annotate it "
            "or pass sample tensors"
        )
    if any(isinstance(d, DynDim) for d in spec.shape):
        raise TypeError(f"{kernel}.compile(): parameter `{name}` has a pl.dynamic dim; pass sample tensors")
    return np.broadcast_to(np.zeros((), numpy_dtype(spec.dtype)), spec.shape)


def samples_from_signature(
    fn: Any, name: str, kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional arguments for every parameter not given as a keyword (tensors from their
    annotations); the keywords that are left."""
    params = inspect.signature(fn).parameters
    hints = inspect.get_annotations(fn, eval_str=True)
    args, rest = [], dict(kwargs)
    for pname in params:
        if pname in rest:
            args.append(rest.pop(pname))
        else:
            args.append(_sample(pname, name, hints.get(pname)))
    return tuple(args), rest
