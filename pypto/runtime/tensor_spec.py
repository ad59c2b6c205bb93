"""``TensorSpec``: one tensor of a run, described by name, shape, dtype and how it starts, as
upstream PyPTO's model scripts build their arguments (``spec.create_tensor()`` for each, the
outputs left out of a return-style call)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class TensorSpec:
    """A tensor ``name`` of ``shape`` and ``dtype`` (a torch dtype gives a torch tensor, a numpy
    one an array). ``init_value``: None (zeros), a number (every element), an array or tensor
    (converted), a no-argument callable returning one, or a factory called as
    ``factory(shape, dtype=dtype)`` (``torch.randn``, ``torch.rand``, ``torch.zeros``,
    ``torch.ones``). ``is_output``: the tensor a run writes and a test checks."""

    name: str
    shape: Sequence[int]
    dtype: Any
    init_value: int | float | Callable[..., Any] | Any = None
    is_output: bool = False

    def create_tensor(self) -> Any:
        """The tensor, made as ``init_value`` says."""
        shape = tuple(int(d) for d in self.shape)
        if _is_torch(self.dtype):
            import torch

            if self.init_value is None:
                return torch.zeros(shape, dtype=self.dtype)
            if isinstance(self.init_value, (int, float)):
                return torch.full(shape, self.init_value, dtype=self.dtype)
            if self.init_value in (torch.randn, torch.rand, torch.zeros, torch.ones):
                return self.init_value(shape, dtype=self.dtype)
            value = self.init_value() if callable(self.init_value) else self.init_value
            return torch.as_tensor(value).to(dtype=self.dtype)
        dtype = np.dtype(self.dtype)
        if self.init_value is None:
            return np.zeros(shape, dtype)
        if isinstance(self.init_value, (int, float)):
            return np.full(shape, self.init_value, dtype)
        value = self.init_value() if callable(self.init_value) else self.init_value
        return np.asarray(value).astype(dtype)


def _is_torch(dtype: Any) -> bool:
    return type(dtype).__module__.startswith("torch")
