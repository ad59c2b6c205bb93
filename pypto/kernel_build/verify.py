"""Is a file a complete shared object? The structural half of verifying a build before it is
published (the other halves: the compiler's exit status, and loading the file).

A linker killed mid-write (a full disk, a file-size limit, a signal) leaves a prefix of the
file. GNU ld writes the section header table last, at the end of the file, so a prefix is
caught by checking that every table and loadable segment the ELF header announces lies inside
the file; that reads the 64-byte header and the program headers, not the whole file.
"""

from __future__ import annotations

import struct
from pathlib import Path

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr, little-endian
_PHDR = struct.Struct("<IIQQQQQQ")  # Elf64_Phdr
_ET_DYN = 3
_PT_LOAD = 1
_MAX_PHNUM = 1024  # far above any real shared object; a bigger count is a corrupt header


def elf_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete 64-bit little-endian shared object, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(_EHDR.size)
            size = f.seek(0, 2)
            return _header_problem(head, size) or _segments_problem(f, head, size)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"


def _header_problem(head: bytes, size: int) -> str | None:
    if size == 0:
        return "is empty"
    if len(head) < _EHDR.size or head[:4] != b"\x7fELF":
        return f"is not an ELF file ({size} bytes)"
    if head[4] != 2 or head[5] != 1:
        return "is not a 64-bit little-endian ELF file"
    fields = _EHDR.unpack(head)
    e_type, e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize, e_shnum = (
        fields[1], fields[5], fields[6], fields[9], fields[10], fields[11], fields[12]
    )  # fmt: skip
    if e_type != _ET_DYN:
        return f"is not a shared object (ELF type {e_type})"
    if e_phnum > _MAX_PHNUM or e_phentsize != _PHDR.size:
        return "has a corrupt ELF header"
    ends = {
        "section table ends": e_shoff + e_shnum * e_shentsize,
        "program headers end": e_phoff + e_phnum * e_phentsize,
    }
    for what, end in ends.items():
        if end > size:
            return f"is truncated: its {what} at byte {end}, the file has {size}"
    return None


def _segments_problem(f, head: bytes, size: int) -> str | None:
    fields = _EHDR.unpack(head)
    e_phoff, e_phnum = fields[5], fields[10]
    f.seek(e_phoff)
    table = f.read(e_phnum * _PHDR.size)
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz, _, _ = _PHDR.unpack_from(table, i * _PHDR.size)
        if p_type == _PT_LOAD and p_offset + p_filesz > size:
            return f"is truncated: a loadable segment ends at byte {p_offset + p_filesz}, the file has {size}"
    return None
