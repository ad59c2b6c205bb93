"""A traced run's instruction records as one numpy file beside its ``run.json``.

``<output_dir>/report/records.npz`` holds every task's records (``RECORD_COLUMNS``), the tasks
one after another, each column in the narrowest signed integer type that holds its values,
the name and source-line ids indexing one string table for the whole run. It is what the
report kept in memory, so the timeline of an output folder is built from it as from the
report, without parsing the launches' Chrome-trace JSON; reading it runs at disk speed.

An uncompressed ``.npz`` (a zip of ``.npy`` arrays, no pickled objects): the columns map
straight into arrays, and compressing them would cost more time than the disk saves.

The narrowed columns are laid out in one block of memory that is kept, once written, for
the next run's (``_Spare``): a fresh block's pages cost the kernel a zeroing each (at a
million records about as much as the narrowing itself), a kept one's are in already. The
file's blocks are reserved before the writes (``fallocate``) and the unused tail cut off.
"""

from __future__ import annotations

import io
import json
import logging
import struct
import sys
import threading
import zipfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

from pypto.report.file_blocks import reserve, rewritten
from pypto.report.run_report import RECORD_COLUMNS, InstrTrace, RunReport, StringIds

log = logging.getLogger(__name__)

NAME = "records.npz"  # beside run.json
FORMAT = 1  # bumped when the layout changes; an older file is not read
_NARROW = (np.int8, np.int16, np.int32, np.int64)
_ZIP_MEMBER_BYTES = 4096  # more than a member's zip and .npy headers take


class _Spare:
    """The narrowed columns' block of the last records file written, for the next one (the
    largest one seen, up to ``limit`` bytes; a writer takes it, so two never share it)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.lock = limit, threading.Lock()
        self.block: np.ndarray | None = None

    def take(self) -> np.ndarray | None:
        with self.lock:
            block, self.block = self.block, None
        return block

    def give(self, block: np.ndarray) -> None:
        if block.nbytes > self.limit:
            return
        with self.lock:
            if self.block is None or self.block.nbytes < block.nbytes:
                self.block = block


_SPARE = _Spare(256 << 20)  # the columns of about ten million records


def _narrow(column: np.ndarray) -> np.ndarray:
    """``column`` in the first signed type that holds its smallest and largest value."""
    if not len(column):
        return column.astype(np.int8)
    lo, hi = int(column.min()), int(column.max())
    kind = next(t for t in _NARROW if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)
    return column.astype(kind)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts one after another (one part as it is: ``_narrow`` copies it anyway)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def save_records(report: RunReport, path: str | Path) -> Path | None:
    """Writes the records of ``report``'s tasks to ``path``; None (nothing written) when no
    task kept records. Per task ``counts`` gives its number of records (-1: none kept) and
    ``starts`` its start, so a reader can tell the file belongs to the report it holds."""
    from pypto import _native

    traced = [t.trace for t in report.tasks if t.trace is not None]
    if not traced:
        return None
    run = StringIds()  # first appearance, task by task (as the timeline interns)
    as_they_are: dict[int, bool] = {}  # by id of a table's ids: they are its own positions
    names, locs = [], []
    for trace in traced:
        raw = trace.raw
        if not len(trace):  # the timeline skips a task without records: its strings too
            names.append(raw["name_id"])
            locs.append(raw["loc_id"])
            continue
        ids = run.of(raw["strings"])
        same = as_they_are.get(id(ids))
        if same is None:
            same = as_they_are[id(ids)] = len(ids) == 0 or bool((ids == np.arange(len(ids))).all())
        names.append(raw["name_id"] if same else ids[raw["name_id"]])
        locs.append(raw["loc_id"] if same else ids[raw["loc_id"]])
    strings = run.strings
    # The columns narrowed straight from the row-major tables (no transposed copy of them),
    # into the kept block when it is large enough.
    columns = _native.narrow_record_tables([t.raw["table"] for t in traced], _SPARE.take())
    arrays = {f"col_{name}": column for name, column in zip(RECORD_COLUMNS, columns)}
    arrays["name_id"] = _narrow(_joined(names))
    arrays["loc_id"] = _narrow(_joined(locs))
    arrays["strings"] = np.frombuffer(json.dumps(list(strings)).encode(), np.uint8)
    arrays["counts"] = np.array([len(t.trace) if t.trace is not None else -1 for t in report.tasks], np.int64)
    arrays["starts"] = np.array([t.start for t in report.tasks], np.int64)
    arrays["format"] = np.array([FORMAT], np.int64)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with rewritten(path) as f:  # cut at the end: the reserved blocks past it too
        reserve(f, sum(a.nbytes for a in arrays.values()) + _ZIP_MEMBER_BYTES * (len(arrays) + 1))
        _savez(f, arrays)
    _SPARE.give(columns[0].base)
    return path


# The zip records zipfile writes for a stored member opened with ``force_zip64`` (its local
# header with a zip64 extra field of the sizes, versions 4.5, the date 1980-01-01 00:00, mode
# rw-------), its central directory and end records; the zip64 fields of the central
# directory and the zip64 end records only where a size, an offset or the count outgrows them.
_LOCAL = struct.Struct("<4s2B4HL2L2H")
_LOCAL_ZIP64 = struct.Struct("<HHQQ")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_END64 = struct.Struct("<4sQ2H2L4Q")
_END64_LOCATOR = struct.Struct("<4sLQL")
_END = struct.Struct("<4s4H2LH")
_ZIP64_LIMIT = (1 << 31) - 1  # zipfile.ZIP64_LIMIT
_FILECOUNT_LIMIT = (1 << 16) - 1  # zipfile.ZIP_FILECOUNT_LIMIT
_VERSION = 45  # zip64
_DOS_DATE, _DOS_TIME = (0 << 9) | (1 << 5) | 1, 0  # 1980-01-01 00:00:00
_SYSTEM = 0 if sys.platform == "win32" else 3
_MODE = 0o600 << 16


def _savez(f: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """The bytes ``np.savez`` writes to ``f`` (each array a stored ``.npy`` member, forced to
    zip64): each member's header written whole (its CRC-32 computed first, natively) and its
    data handed to the file as it is."""
    from pypto import _native

    at, central = f.tell(), []
    for key, value in arrays.items():
        name = f"{key}.npy".encode("ascii")
        npy = io.BytesIO()
        np.lib.format.write_array_header_1_0(npy, np.lib.format.header_data_from_array_1_0(value))
        header, data = npy.getvalue(), np.ascontiguousarray(value).data
        size = len(header) + data.nbytes
        crc = _native.crc32(data, _native.crc32(header))
        local = _LOCAL.pack(b"PK\x03\x04", _VERSION, 0, 0, zipfile.ZIP_STORED, _DOS_TIME, _DOS_DATE, crc,
                            0xFFFFFFFF, 0xFFFFFFFF, len(name), _LOCAL_ZIP64.size)  # fmt: skip
        head = local + name + _LOCAL_ZIP64.pack(1, _LOCAL_ZIP64.size - 4, size, size) + header
        f.write(head)
        f.write(data)
        wide = ([size, size] if size > _ZIP64_LIMIT else []) + ([at] if at > _ZIP64_LIMIT else [])
        extra = struct.pack(f"<HH{len(wide)}Q", 1, 8 * len(wide), *wide) if wide else b""
        stored = 0xFFFFFFFF if size > _ZIP64_LIMIT else size
        entry = _CENTRAL.pack(b"PK\x01\x02", _VERSION, _SYSTEM, _VERSION, 0, 0, zipfile.ZIP_STORED, _DOS_TIME,
                              _DOS_DATE, crc, stored, stored, len(name), len(extra), 0, 0, 0, _MODE,
                              0xFFFFFFFF if at > _ZIP64_LIMIT else at)  # fmt: skip
        central.append(entry + name + extra)
        at += len(head) + data.nbytes
    directory = b"".join(central)
    count, size, records = len(central), len(directory), [directory]
    if count > _FILECOUNT_LIMIT or at > _ZIP64_LIMIT or size > _ZIP64_LIMIT:
        records += [_END64.pack(b"PK\x06\x06", 44, _VERSION, _VERSION, 0, 0, count, count, size, at),
                    _END64_LOCATOR.pack(b"PK\x06\x07", 0, at + size, 1)]  # fmt: skip
        count, size, at = min(count, 0xFFFF), min(size, 0xFFFFFFFF), min(at, 0xFFFFFFFF)
    records.append(_END.pack(b"PK\x05\x06", 0, 0, count, count, size, at, 0))
    f.write(b"".join(records))


def attach_records(report: RunReport, path: str | Path) -> bool:
    """Gives each task of ``report`` (read back from ``run.json``) its records from ``path``;
    False, with the report untouched, when the file is missing, unreadable or from another run
    (a warning names the last two)."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"][0]) != FORMAT:
                raise ValueError(f"format {int(data['format'][0])}, this pypto reads {FORMAT}")
            counts, starts = data["counts"], data["starts"]
            if counts.tolist() == [] or len(counts) != len(report.tasks):
                raise ValueError(f"{len(counts)} tasks, run.json has {len(report.tasks)}")
            if starts.tolist() != [t.start for t in report.tasks]:
                raise ValueError("the tasks start at other cycles than in run.json")
            table = np.stack([data[f"col_{name}"].astype(np.int64) for name in RECORD_COLUMNS], axis=1)
            name_id, loc_id = data["name_id"].astype(np.int32), data["loc_id"].astype(np.int32)
            strings = json.loads(data["strings"].tobytes())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        log.warning("%s: not read (%s); the timeline falls back to the kernels' traces", path, e)
        return False
    if int(np.clip(counts, 0, None).sum()) != len(table):
        log.warning("%s: its task counts do not add up to its records; not read", path)
        return False
    at = 0
    for task, n in zip(report.tasks, counts.tolist()):
        if n < 0:
            continue
        span = slice(at, at + n)
        task.trace = InstrTrace({"table": table[span], "name_id": name_id[span], "loc_id": loc_id[span],
                                 "strings": strings})  # fmt: skip
        at += n
    return True
