"""Hardware tables of the simulated platforms, read-only.

The numbers are defined once in C++ (``csrc/simulator/platform/``), each with its source, so
the compiler's capacities and the simulator's costs cannot disagree. ``with_overrides``
derives a what-if platform (a bigger UB, a faster MTE2) that the simulator then runs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

from pypto import _native


@dataclass(frozen=True)
class Platform:
    """One platform's table. Fields read as attributes: ``get("a2a3sim").ub_bytes``."""

    name: str
    device: str
    fields: Mapping[str, float | int] = field(repr=False)
    overrides: Mapping[str, float | int] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        fields = object.__getattribute__(self, "fields")
        if key in fields:
            return fields[key]
        raise AttributeError(f"platform {self.name!r} has no field {key!r}")

    def with_overrides(self, **overrides: float | int) -> Platform:
        """A copy with some numbers replaced; unknown fields and non-positive values are refused."""
        merged = dict(self.fields)
        for key, value in overrides.items():
            if key not in merged:
                raise ValueError(f"unknown platform field {key!r}; fields: {', '.join(sorted(merged))}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"platform field {key!r} must be a positive number, got {value!r}")
            merged[key] = type(merged[key])(value)
        return Platform(
            self.name,
            self.device,
            MappingProxyType(merged),
            MappingProxyType({**self.overrides, **overrides}),
        )

    def to_native(self) -> _native.Platform:
        """The native table the runtime takes (built once per Platform object)."""
        cached = self.__dict__.get("_native")
        if cached is None:
            cached = _native.make_platform({"name": self.name, **self.fields})
            object.__setattr__(self, "_native", cached)  # a cache, not state: still frozen to users
        return cached

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, **self.fields}


def names() -> list[str]:
    """Valid platform names (simulators first, then the device names they stand for)."""
    return list(_native.platform_names())


@cache
def get(name: str) -> Platform:
    """The table of ``name``; ``ValueError`` listing the valid names for anything else."""
    if name not in names():
        raise ValueError(f"unknown platform {name!r}; valid platforms: {', '.join(names())}")
    table = dict(_native.platform_table(name))
    device = table.pop("device")
    table.pop("name")
    return Platform(name, device, MappingProxyType(table))
