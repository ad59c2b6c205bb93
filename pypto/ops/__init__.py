"""Op families, one module each: an op's table row, typing rule, ``pl.*`` spelling, emitter and
C entry point live together in its family's module (see :mod:`pypto.ops.family`), mirrored by
one C++ file of the ISA in ``csrc/chip/isa/``.

The op table, the emitter table and the generated kernel headers (``pypto/families.h`` and
``pypto/families.hpp``, included by ``abi.h`` and ``kernel.hpp``) collect every family in
:data:`FAMILIES`; nothing else lists a family's ops.
"""

from __future__ import annotations

from pypto.ops import expdif, l1, prefetch, sort, syncall, tasks
from pypto.ops.family import Family

# One entry per family module.
FAMILIES: tuple[Family, ...] = (
    sort.FAMILY,
    expdif.FAMILY,
    tasks.FAMILY,
    prefetch.FAMILY,
    l1.FAMILY,
    syncall.FAMILY,
)
