"""records.npz's zip (pypto.report.records_file): its members' CRC-32 (_native.crc32, folded by
carry-less multiplication) equals zlib's on every length and alignment, and the file is byte for
byte what zipfile writes for np.savez, including the zip64 fields a large file needs."""

from __future__ import annotations

import io
import zipfile
import zlib

import numpy as np
import pytest

from pypto import _native, _native_testing
from pypto.report import records_file


def test_crc32_equals_zlib_on_every_length_and_alignment():
    data = np.random.default_rng(7).integers(0, 256, 4096 + 64, np.uint8).tobytes()
    # Lengths around each path's steps: the table below 64 bytes, 16- and 64-byte folds, the
    # 256-byte folds with AVX-512, and odd tails after each.
    lengths = [*range(0, 600), 1023, 1024, 1025, 2047, 4095, 4096]
    for offset in range(0, 9):
        for n in lengths:
            piece = data[offset : offset + n]
            assert _native.crc32(piece) == zlib.crc32(piece), (offset, n)
            assert _native.crc32(piece, 0x12345678) == zlib.crc32(piece, 0x12345678), (offset, n)


@pytest.mark.parametrize("n", [1000, 100_000])  # the AVX-512 folds' lengths
def test_crc32_leaves_the_vector_registers_upper_halves_clear(n: int):
    # With them marked live, every later legacy-SSE instruction on the thread pays a merge:
    # a records.npz written on a run's thread made its next simulations 9x slower.
    if _native_testing.vector_upper_state_dirty() is None:
        pytest.skip("this CPU cannot report its vector state (XGETBV with ECX = 1)")
    data = np.random.default_rng(3).integers(0, 256, n, np.uint8)
    assert _native.crc32(data) == zlib.crc32(data.tobytes())
    assert _native_testing.vector_upper_state_dirty() is False


def test_crc32_continues_across_pieces_and_reads_any_contiguous_buffer():
    data = np.arange(100_000, dtype=np.int32)
    whole = zlib.crc32(data.tobytes())
    assert _native.crc32(data) == whole
    assert _native.crc32(data[60_000:], _native.crc32(data[:60_000])) == whole
    assert _native.crc32(memoryview(data.tobytes())) == whole
    assert _native.crc32(b"") == 0 and _native.crc32(b"", 77) == 77
    with pytest.raises(ValueError, match="contiguous"):
        _native.crc32(data[::2])  # not contiguous


def _zipfile_savez(arrays: dict[str, np.ndarray]) -> bytes:
    """What np.savez writes (each array a stored .npy member, forced to zip64), by zipfile."""
    f = io.BytesIO()
    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, value in arrays.items():
            with zf.open(f"{key}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(member, np.lib.format.header_data_from_array_1_0(value))
                member.write(np.ascontiguousarray(value).data)
    return f.getvalue()


def _savez(arrays: dict[str, np.ndarray]) -> bytes:
    f = io.BytesIO()
    records_file._savez(f, arrays)
    return f.getvalue()


ARRAYS = {
    "col_a": np.arange(-5, 3000, dtype=np.int16),
    "empty": np.zeros(0, np.int8),
    "strings": np.frombuffer(b'["x", "y"]', np.uint8),
    "wide": np.arange(77, dtype=np.int64) << 40,
}


def test_the_zip_is_what_zipfile_writes():
    ours = _savez(ARRAYS)
    assert ours == _zipfile_savez(ARRAYS)
    with zipfile.ZipFile(io.BytesIO(ours)) as zf:
        assert zf.testzip() is None
    with np.load(io.BytesIO(ours)) as data:
        for key, value in ARRAYS.items():
            np.testing.assert_array_equal(data[key], value)


def test_the_zip64_fields_are_what_zipfile_writes_past_its_limits(monkeypatch: pytest.MonkeyPatch):
    # A file past 2 GiB or 65,535 members, by lowering both writers' limits: a member's sizes
    # and offsets past them move into the central directory's zip64 field, and the zip64 end
    # records follow.
    many = {f"m{i}": np.arange(i % 7, dtype=np.int8) for i in range(40)}
    for limit, count in ((100, 1 << 16), (5000, 1 << 16), (1 << 31, 20)):
        monkeypatch.setattr(zipfile, "ZIP64_LIMIT", limit)
        monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", count)
        monkeypatch.setattr(records_file, "_ZIP64_LIMIT", limit)
        monkeypatch.setattr(records_file, "_FILECOUNT_LIMIT", count)
        for arrays in (ARRAYS, many):
            assert _savez(arrays) == _zipfile_savez(arrays), (limit, count)
