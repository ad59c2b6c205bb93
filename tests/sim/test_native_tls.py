"""The native libraries' thread-locals fit glibc's static TLS for dlopen'ed libraries.

glibc keeps 512 bytes of static TLS (`glibc.rtld.optional_static_tls`) for the libraries a
process loads with dlopen, as Python loads extension modules. A library whose thread-locals do
not fit in what is left gets dynamic TLS: every read of a thread-local (the current core's
pointer, read by every simulated op) then goes through the loader's slow path, which cost the
run's thread ~5% more host instructions on FlashAttention when the TLS grew from 504 to 520
bytes. Large per-thread state is kept on the heap behind a thread-local pointer instead."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

import pypto._native  # noqa: F401 - loads the libraries whose TLS is measured
import pypto._native_testing  # noqa: F401

PT_TLS = 7
OPTIONAL_STATIC_TLS = 512
# Room left for other libraries and for thread-locals added later, before the budget is gone.
HEADROOM = 64


def tls_bytes(path: Path) -> int:
    """The size of an ELF64 little-endian shared object's TLS segment (0 without one)."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        (kind,) = struct.unpack_from("<I", data, at)
        if kind == PT_TLS:
            (memsz,) = struct.unpack_from("<Q", data, at + 0x28)
            return int(memsz)
    return 0


def loaded_native_libraries() -> list[Path]:
    names = ("libpypto_sim.so", "pypto/_native.", "pypto/_native_testing.")
    found = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split(maxsplit=5)[-1] if len(line.split()) >= 6 else ""
        if any(n in path for n in names):
            found.add(Path(path))
    return sorted(found)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's static TLS")
def test_native_thread_locals_fit_the_static_tls_of_dlopen():
    libraries = loaded_native_libraries()
    assert any(p.name == "libpypto_sim.so" for p in libraries)
    sizes = {p.name: tls_bytes(p) for p in libraries}
    assert sum(sizes.values()) <= OPTIONAL_STATIC_TLS - HEADROOM, sizes
