"""Reading a Chromium screenshot's pixels without an imaging library (8-bit RGB/RGBA PNGs)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np


def read_png(path: Path) -> np.ndarray:
    """(height, width, 3) uint8 RGB of a non-interlaced 8-bit RGB or RGBA PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * bpp)
    out = np.zeros((height, width * bpp), np.int32)
    for y in range(height):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        prev = out[y - 1] if y else np.zeros_like(line)
        if f == 0:
            out[y] = line
        elif f == 1:
            row = line.copy()
            for x in range(bpp, len(row)):
                row[x] = (row[x] + row[x - bpp]) & 255
            out[y] = row
        elif f == 2:
            out[y] = (line + prev) & 255
        else:
            row = line.copy()
            for x in range(len(row)):
                a = row[x - bpp] if x >= bpp else 0
                c = prev[x - bpp] if x >= bpp else 0
                if f == 3:
                    row[x] = (row[x] + ((a + prev[x]) >> 1)) & 255
                else:
                    p = a + prev[x] - c
                    pa, pb, pc = abs(p - a), abs(p - prev[x]), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else prev[x] if pb <= pc else c
                    row[x] = (row[x] + pred) & 255
            out[y] = row
    return out.reshape(height, width, bpp)[:, :, :3].astype(np.uint8)


def count_color(pixels: np.ndarray, rgb: tuple[int, int, int]) -> int:
    return int((pixels == np.array(rgb, np.uint8)).all(axis=2).sum())
