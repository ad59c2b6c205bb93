"""Fresh IR names: the one supply every stage draws from.

A name stays as written while it is free; a clash takes the first free ``<base>_<k>``
(k = 1, 2, ...). Names in ``reserved`` are never handed out (the frontend reserves every
identifier a kernel mentions, so a generated name cannot shadow a user's).
"""

from __future__ import annotations

from collections.abc import Iterable


class NameSupply:
    """Names taken in one scope (a function, or a program's function names)."""

    def __init__(self, taken: Iterable[str] = (), reserved: Iterable[str] = ()) -> None:
        self.taken = set(taken)
        self.reserved = set(reserved)

    def __contains__(self, name: str) -> bool:
        return name in self.taken or name in self.reserved

    def fresh(self, base: str) -> str:
        """``base`` if free, else the first free ``base_1``, ``base_2``, ...; now taken."""
        name, k = base, 0
        while name in self:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def claim(self, name: str) -> str:
        """A binding of the user's ``name``: the name itself the first time (even when
        reserved: the user wrote it), a fresh one after."""
        if name not in self.taken:
            self.taken.add(name)
            return name
        return self.fresh(name)
