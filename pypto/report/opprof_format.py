"""The op-simulator container ``visualize_data.bin`` (docs/trace.md), read and written.

A file is a flat sequence of blocks. Each block is a 12-byte little-endian header
``<QBBBB`` — payload size (including the trailing padding), block type, padding length,
version, magic ``0x5A`` — followed by the payload, zero-padded to a multiple of 4 bytes.
Payloads are JSON, except that a SOURCE block starts with a fixed 4096-byte, NUL-padded
file path. Unknown block types are skipped by readers (the vendor's file has more kinds).

Stdlib only, so the tools run wherever the file was copied to.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

HEADER = struct.Struct("<QBBBB")
MAGIC = 0x5A
SOURCE, TRACE, API_INSTR = 1, 2, 4
SOURCE_PATH_BYTES = 4096
ALIGN = 4


class ContainerError(ValueError):
    """The bytes are not a well-formed block container (bad magic, truncated block)."""


@dataclass(frozen=True)
class Block:
    """One decoded block: its type, version byte, payload (padding stripped) and offset."""

    type: int
    version: int
    payload: bytes | memoryview  # a view when the blocks were read from a view (a mapped file)
    offset: int
    path: str = ""  # SOURCE blocks only: the file the text came from


def pack_block(block_type: int, payload: bytes, *, version: int = 0, path: str = "") -> bytes:
    """One block as bytes; ``path`` is required for (and only used by) SOURCE blocks."""
    if block_type == SOURCE:
        raw_path = path.encode()[: SOURCE_PATH_BYTES - 1]
        payload = raw_path.ljust(SOURCE_PATH_BYTES, b"\0") + payload
    padding = -len(payload) % ALIGN
    header = HEADER.pack(len(payload) + padding, block_type, padding, version, MAGIC)
    return header + payload + b"\0" * padding


def iter_blocks(data: bytes | memoryview) -> Iterator[Block]:
    """Every block of ``data`` in order; ``ContainerError`` names the offset of a bad one. The
    payloads are slices of ``data``: copies of bytes, views of a view."""
    offset = 0
    while offset < len(data):
        if len(data) - offset < HEADER.size:
            raise ContainerError(
                f"corrupt block at offset {offset}: {len(data) - offset} trailing bytes, "
                f"shorter than a {HEADER.size}-byte header"
            )
        size, block_type, padding, version, magic = HEADER.unpack_from(data, offset)
        body = offset + HEADER.size
        if magic != MAGIC:
            raise ContainerError(
                f"corrupt block at offset {offset}: magic {magic:#04x}, expected {MAGIC:#04x}"
            )
        if size > len(data) - body:
            raise ContainerError(
                f"corrupt block at offset {offset}: payload of {size} bytes overruns the file "
                f"({len(data) - body} bytes left)"
            )
        if padding > size:
            raise ContainerError(
                f"corrupt block at offset {offset}: {padding} bytes of padding in a payload of {size} bytes"
            )
        payload = data[body : body + size - padding]
        path = ""
        if block_type == SOURCE:
            path = bytes(payload[:SOURCE_PATH_BYTES]).split(b"\0", 1)[0].decode(errors="replace")
            payload = payload[SOURCE_PATH_BYTES:]
        yield Block(block_type, version, payload, offset, path)
        offset = body + size


def source_lines(api: Any) -> dict[str, str]:
    """pc_addr -> source line from an API_INSTR document (its JSON, parsed): each
    instruction's ``Address`` and ``AscendC Inner Code`` (pypto's: the Python
    ``file:line:col``) where both are non-empty strings. The TRACE events carry only the
    address (as the vendor's do); a reader takes the line from here. Anything that is not an
    instruction table gives none."""
    entries = api.get("Instructions") if isinstance(api, dict) else None
    if not isinstance(entries, list):
        return {}
    pairs = ((e.get("Address"), e.get("AscendC Inner Code")) for e in entries if isinstance(e, dict))
    return {pc: line for pc, line in pairs if isinstance(pc, str) and isinstance(line, str) and pc and line}
