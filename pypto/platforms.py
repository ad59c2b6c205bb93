"""Hardware tables of the simulated platforms, read-only.

The numbers are defined once in C++ (``csrc/simulator/platform/``), each with its source, so
the compiler's capacities and the simulator's costs cannot disagree. ``with_overrides``
derives a what-if platform (a bigger UB, a faster MTE2) that the simulator then runs with.
A table is read under a cost profile: ``"device"`` (calibrated against device evidence,
docs/calibration.md) or ``"pto-isa"`` (pto-isa's cost-model constants); overrides apply on
top of either.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pypto import _native
from pypto.errors import ConfigError

if TYPE_CHECKING:
    # To mypy, a table's fields are the bound Platform's typed attributes (one per entry of the
    # C++ field list, in the generated stub); at run time they are read from ``fields``.
    _TypedFields = _native.Platform
else:
    _TypedFields = object


def override_rule(key: str) -> tuple[type, float, float]:
    """(type, lowest, highest) allowed for an override of platform field ``key``: the
    simulator's own rule (``platform_field_rule``, with the reason of each range), read, never
    restated here."""
    integer, lo, hi = _native.platform_field_rule(key)
    return (int if integer else float), lo, hi


def _checked_override(key: str, value: Any) -> float | int:
    kind, lo, hi = override_rule(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"platform field {key!r} must be a positive number, got {value!r}")
    value = int(value) if isinstance(value, numbers.Integral) else float(value)  # numpy scalars too
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"platform field {key!r} must be a finite number, got {value!r}")
    if value <= 0 and lo > 0:
        raise ConfigError(f"platform field {key!r} must be a positive number, got {value!r}")
    if kind is int and value != int(value):
        raise ConfigError(f"platform field {key!r} is an integer field, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"platform field {key!r} must be in [{lo:g}, {hi:g}], got {value!r}")
    if key == "alignment_bytes" and int(value) & (int(value) - 1):
        raise ConfigError(f"platform field 'alignment_bytes' must be a power of two, got {value!r}")
    return kind(value)


@dataclass(frozen=True)
class Platform(_TypedFields):
    """One platform's table. Fields read as attributes, typed as the C++ table declares them:
    ``get("a2a3sim").ub_bytes`` is an int."""

    name: str
    device: str
    fields: Mapping[str, float | int] = field(repr=False)
    overrides: Mapping[str, float | int] = field(default_factory=dict)
    cost_profile: str = "device"

    def __getattr__(self, key: str) -> Any:
        fields = object.__getattribute__(self, "fields")
        if key in fields:
            return fields[key]
        raise AttributeError(f"platform {self.name!r} has no field {key!r}")

    def with_overrides(self, **overrides: float | int) -> Platform:
        """A copy with some numbers replaced. Each value is checked against its field's rule
        (``override_rule``): unknown fields, non-numbers, NaN/inf, values <= 0 and values too
        large for the simulator are refused with ``ConfigError`` naming the field."""
        merged = dict(self.fields)
        for key, value in overrides.items():
            if key not in merged:
                raise ConfigError(f"unknown platform field {key!r}; fields: {', '.join(sorted(merged))}")
            merged[key] = _checked_override(key, value)
        return Platform(
            self.name,
            self.device,
            MappingProxyType(merged),
            MappingProxyType({**self.overrides, **{k: merged[k] for k in overrides}}),
            self.cost_profile,
        )

    def to_native(self) -> _native.Platform:
        """The native table the runtime takes (built once per Platform object)."""
        cached = self.__dict__.get("_native")
        if cached is None:
            cached = _native.make_platform(
                {"name": self.name, "cost_profile": self.cost_profile, **self.fields}
            )
            object.__setattr__(self, "_native", cached)  # a cache, not state: still frozen to users
        return cached

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, "cost_profile": self.cost_profile, **self.fields}


def names() -> list[str]:
    """Valid platform names (simulators first, then the device names they stand for)."""
    return list(_native.platform_names())


def cost_profiles() -> list[str]:
    """Valid cost profiles, ``"device"`` first."""
    return list(_native.cost_profile_names())


@cache
def get(name: str, cost_profile: str = "device") -> Platform:
    """The table of ``name`` under ``cost_profile``; ``ConfigError`` (a ``ValueError``) listing the
    valid names for anything else."""
    if not isinstance(name, str) or name not in names():
        raise ConfigError(f"unknown platform {name!r}; valid platforms: {', '.join(names())}")
    if not isinstance(cost_profile, str) or cost_profile not in cost_profiles():
        raise ConfigError(
            f"unknown cost_profile {cost_profile!r}; valid profiles: {', '.join(cost_profiles())}"
        )
    try:
        table = dict(_native.platform_table(name, cost_profile))
    except ValueError as e:  # a profile with no figures for this platform
        raise ConfigError(str(e)) from None
    device = table.pop("device")
    table.pop("name")
    table.pop("cost_profile")
    return Platform(name, device, MappingProxyType(table), cost_profile=cost_profile)
