"""Backends, as upstream PyPTO names them: one per chip family.

A backend here is the family of platform tables a program is compiled and simulated for:
``BackendType.Ascend910B`` is the a2a3 family (``a2a3sim``, and ``a2a3`` which runs on it),
``BackendType.Ascend950`` the a5 family (``a5sim``, ``a5``). ``set_backend_type`` records the
process-wide choice as upstream does (once; the same type again is fine, another one is a
``ValueError``); ``pypto.ir.compile(..., backend_type=...)`` and ``RunConfig(backend_type=...)``
check that the platform belongs to the backend named.
"""

from __future__ import annotations

import enum


class BackendType(enum.Enum):
    """A chip family: the platforms whose tables a program may be compiled for."""

    Ascend910B = "a2a3"
    Ascend950 = "a5"

    @property
    def platforms(self) -> tuple[str, ...]:
        """The platform names of this family (the simulator's first)."""
        return (f"{self.value}sim", self.value)


_state: dict[str, BackendType | None] = {"type": None}


def _check_type(backend_type: object, where: str) -> BackendType:
    if not isinstance(backend_type, BackendType):
        raise TypeError(f"{where} takes a pypto.backend.BackendType, got {backend_type!r}")
    return backend_type


def set_backend_type(backend_type: BackendType) -> None:
    """Sets the process-wide backend; again with the same type is a no-op, another type is a
    ``ValueError`` (call ``reset_for_testing`` first, as upstream's tests do)."""
    backend_type = _check_type(backend_type, "set_backend_type")
    current = _state["type"]
    if current is not None and current is not backend_type:
        raise ValueError(
            f"the backend type is already {current.name}; it cannot change to {backend_type.name} "
            "in this process (reset_for_testing() clears it)"
        )
    _state["type"] = backend_type


def get_backend_type() -> BackendType:
    """The backend ``set_backend_type`` chose (``ValueError`` when none was)."""
    current = _state["type"]
    if current is None:
        raise ValueError("no backend type is configured; call pypto.backend.set_backend_type first")
    return current


def is_backend_configured() -> bool:
    return _state["type"] is not None


def reset_for_testing() -> None:
    """Forgets the process-wide backend (tests switch between families with it)."""
    _state["type"] = None


def backend_for_platform(platform: str) -> BackendType:
    """The family a platform name belongs to (``ValueError`` naming the known ones)."""
    for backend in BackendType:
        if platform in backend.platforms:
            return backend
    known = ", ".join(p for b in BackendType for p in b.platforms)
    raise ValueError(f"unknown platform {platform!r}; known platforms: {known}")


def check_platform(backend_type: object, platform: str, where: str) -> None:
    """A ``ValueError`` when ``platform`` is not of the family ``backend_type`` names."""
    backend = _check_type(backend_type, where)
    if platform not in backend.platforms:
        raise ValueError(
            f"{where}: backend_type {backend.name} compiles for {' / '.join(backend.platforms)}, "
            f"but the platform is {platform!r}"
        )


__all__ = [
    "BackendType",
    "backend_for_platform",
    "check_platform",
    "get_backend_type",
    "is_backend_configured",
    "reset_for_testing",
    "set_backend_type",
]
