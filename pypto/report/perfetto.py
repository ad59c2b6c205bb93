"""The whole run as one Perfetto trace: every launch on one time axis, a few dozen bytes per
instruction (``<output_dir>/trace/run.pftrace``).

Perfetto's native format is a protobuf ``Trace`` (a repeated ``TracePacket``); an
instruction is a ``TrackEvent`` slice, a begin and an end packet. Time is exact: one
simulated cycle is one nanosecond, an integer (no decimal microseconds to round). Each core
is a process, each pipe of it a thread; each lane writes its own packet sequence, which
names its track once (``TracePacketDefaults``) and interns its instruction names and source
lines (``InternedData``: ``event_names``, ``source_locations``), so a slice carries only its
time and two small ids. Each ``set_flag`` starts a flow arrow that the ``wait_flag`` it
released ends. Slices that overlap on one pipe go to a sub-lane (``MTE2#1``), as viewers
need properly nested slices per thread.

The encoder is written here (the protobuf subset above): the tracks and interned strings in
Python; each core's lanes (pipes, sub-lanes, flag arrows, the strings each lane uses) laid
out in one native pass over its records, and the two packets per instruction encoded in C++
and written to the file a chunk at a time (``_native.PerfettoCoreLanes``,
``csrc/tools/perfetto_lanes.hpp``: a lane of a million slices is never one buffer); field
numbers are those of Perfetto's ``protos/perfetto/trace`` files, which the format keeps
stable.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from pypto.report.file_blocks import reserve, rewritten
from pypto.report.progress import progress
from pypto.report.run_report import PIPES, RECORD_COLUMNS, RunReport, StringIds

# The record columns the native lane builder reads, in the order it takes them.
_LANE_COLUMNS = [
    RECORD_COLUMNS.index(c) for c in ("kind", "pipe", "start", "end", "flag_src", "flag_dst", "flag_id")
]

log = logging.getLogger(__name__)

# Field numbers (TracePacket, TrackEvent, descriptors, interned data).
_PACKET = 1  # Trace.packet
# (The slices' own fields are encoded in csrc/tools/perfetto_slices.cpp.)
_SEQ_ID, _TRACK_EVENT, _INTERNED, _SEQ_FLAGS = 10, 11, 12, 13
_DEFAULTS, _DESCRIPTOR, _FIRST_ON_SEQ = 59, 60, 87
_TE_TRACK = 11
_CLEARED, _NEEDS_STATE = 1, 2  # sequence flags
_UUID, _TD_NAME, _TD_PROCESS, _TD_THREAD, _TD_PARENT = 1, 2, 3, 4, 5
_PID, _PROCESS_NAME, _TID, _THREAD_NAME = 1, 6, 2, 5
_EVENT_NAMES, _SOURCE_LOCATIONS = 2, 4
_IID, _NAME, _FILE_NAME, _FUNCTION_NAME, _LINE = 1, 2, 2, 3, 4
_LANE_UUID = 1 << 20  # lane track uuids start here; a core's process track is its number + 1
# Blocks reserved per instruction: a slice takes about 30 bytes, a flag slice ten more.
_RESERVE_BYTES_PER_RECORD = 40


_ONE_BYTE = tuple(bytes((v,)) for v in range(0x80))  # the varints of 0..127


def varint(value: int) -> bytes:
    # Most values here (ids, keys, lengths, lines) take one or two bytes: those without a loop.
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if 0 <= value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    if value < 0:  # the fields written here are unsigned: a negative one is a bug upstream
        raise ValueError(f"a varint of a negative value ({value})")
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + varint(value)


def _msg(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _msg(field, text.encode())


def _location(text: str) -> tuple[str, int]:
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return parts[0], int(parts[1])
    return text, 0


def write_run_trace(report: RunReport, path: str | Path) -> Path:
    """Writes the run's instructions (tasks with records) to ``path`` as a Perfetto trace."""
    path = Path(path)
    lanes = flows = 0
    cores = _by_core(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    with rewritten(path) as f, progress("writing the run's trace", len(cores), "core") as done:
        records = sum(len(t.trace) for tasks in cores.values() for t in tasks)
        reserve(f, _RESERVE_BYTES_PER_RECORD * records + (1 << 20))
        out = _Out(f, path)
        for core, tasks in cores.items():
            lanes, flows = _core(out, core, tasks, lanes, flows)
            done.update()
    log.info("wrote the run's trace (%d lanes, %d bytes) to %s", lanes, out.size, path)
    return path


class _Out:
    """The trace file: packets built here, and lanes' slices that the encoder writes itself."""

    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path, self.size = f, path, 0

    def put(self, data: bytes) -> None:
        self.size += self.f.write(data)

    def slices(self, core: Any, lane: int, seq: int) -> None:
        self.f.flush()  # what Python buffered goes first: the encoder writes to the descriptor
        self.size += core.write_lane(lane, seq, self.f.fileno(), str(self.path))


def _core(out: _Out, core: int, tasks: list, lanes: int, flows: int) -> tuple[int, int]:
    """Writes a core's process track and its lanes (numbered on from ``lanes``), its flag
    arrows numbered on from ``flows``; the new counts."""
    name = tasks[0].core_name
    out.put(
        _descriptor(
            core + 1,
            _str(_TD_NAME, name) + _msg(_TD_PROCESS, _int(_PID, core + 1) + _str(_PROCESS_NAME, name)),
        )
    )
    plan, strings = _core_lanes(tasks, flows)
    for i, (pipe, sub, names, locs) in enumerate(plan.lanes):
        lanes += 1
        _lane(out, lanes, core, PIPES[pipe] + (f"#{sub}" if sub else ""), names, locs, strings)
        out.slices(plan, i, lanes)
    return lanes, flows + plan.flows


def _core_lanes(tasks: list, flows: int) -> tuple[Any, list[str]]:
    """One core's lanes laid out natively from its tasks' records tables (in run cycles),
    names and source lines as ids of the returned strings (each task's in first appearance)."""
    from pypto import _native

    core = StringIds()
    parts: list[Any] = []
    for t in tasks:
        raw = t.trace.raw
        parts.append((raw["table"], raw["name_id"], raw["loc_id"], core.of(raw["strings"]), t.start))
    return _native.PerfettoCoreLanes(parts, _LANE_COLUMNS, len(core.strings), flows), list(core.strings)


def _by_core(report: RunReport) -> dict[int, list]:
    cores: dict[str, list] = {}
    for t in report.tasks:
        if t.trace is not None and len(t.trace):
            cores.setdefault(t.core_name, []).append(t)
    return dict(enumerate(cores.values()))


def _descriptor(uuid: int, body: bytes) -> bytes:
    return _msg(_PACKET, _msg(_DESCRIPTOR, _int(_UUID, uuid) + body))


def _lane(
    out: _Out, seq: int, core: int, label: str, names: np.ndarray, locs: np.ndarray, strings: list[str]
) -> None:
    """Writes one lane's thread track and its sequence's first packet (defaults, and the
    interned ``names`` and source lines ``locs``: ids of ``strings``, interned as 1, 2, ...)."""
    uuid = _LANE_UUID + seq
    thread = _int(_PID, core + 1) + _int(_TID, seq) + _str(_THREAD_NAME, label)
    head = _descriptor(uuid, _int(_TD_PARENT, core + 1) + _msg(_TD_THREAD, thread))
    interned = b"".join(
        _msg(_EVENT_NAMES, _int(_IID, i + 1) + _str(_NAME, strings[s])) for i, s in enumerate(names.tolist())
    )
    for i, s in enumerate(locs.tolist()):
        file, line = _location(strings[s])
        interned += _msg(
            _SOURCE_LOCATIONS,
            _int(_IID, i + 1) + _str(_FILE_NAME, file) + _str(_FUNCTION_NAME, strings[s]) + _int(_LINE, line),
        )
    first = (
        _int(_SEQ_ID, seq) + _int(_SEQ_FLAGS, _CLEARED | _NEEDS_STATE) + _int(_FIRST_ON_SEQ, 1)
        + _msg(_DEFAULTS, _msg(_TRACK_EVENT, _int(_TE_TRACK, uuid))) + _msg(_INTERNED, interned)
    )  # fmt: skip
    out.put(head + _msg(_PACKET, first))
