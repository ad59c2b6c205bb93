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

The encoder is written here (the protobuf subset above): the tracks, sequences and interned
strings in Python, the two packets per instruction in C++, written to the file a chunk at a
time (``_native.perfetto_write_lane_slices``, ``csrc/tools/perfetto_slices.hpp``: a lane of
a million slices is never one buffer); field numbers are those of Perfetto's
``protos/perfetto/trace`` files, which the format keeps stable.
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from pathlib import Path
from typing import BinaryIO

import numpy as np

from pypto.report.progress import progress
from pypto.report.run_report import PIPES, RECORD_COLUMNS, RunReport
from pypto.report.trace import flag_pairs

_COL = {name: i for i, name in enumerate(RECORD_COLUMNS)}
# A lane's slices: start, end, name id, source-line id, flow out, flow in.
_Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

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


def varint(value: int) -> bytes:
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


def _sub_lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per slice (sorted by start) its sub-lane: one freed by a slice that ended by then (the
    earliest-ending; that uses the fewest sub-lanes), else a new one."""
    if not len(start) or (start[1:] >= end[:-1]).all():
        return np.zeros(len(start), np.int64)
    busy: list[tuple[int, int]] = []  # (end of its last slice, sub-lane), a heap
    out = np.empty(len(start), np.int64)
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        if busy and busy[0][0] <= s:
            k = heapq.heapreplace(busy, (e, busy[0][1]))[1]
        else:
            k = len(busy)
            heapq.heappush(busy, (e, k))
        out[i] = k
    return out


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
    with path.open("wb") as f, progress("writing the run's trace", len(cores), "core") as done:
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

    def slices(self, seq: int, rows: np.ndarray | None, cols: _Columns, name_iid, loc_iid) -> None:
        from pypto import _native

        self.f.flush()  # what Python buffered goes first: the encoder writes to the descriptor
        start, end, name, loc, flow_out, flow_in = cols
        self.size += _native.perfetto_write_lane_slices(
            self.f.fileno(),
            str(self.path),
            seq,
            rows,
            start,
            end,
            name,
            loc,
            name_iid,
            loc_iid,
            flow_out,
            flow_in,
        )


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
    ev, strings = _core_columns(tasks)
    start, end, pipe = ev["start"], ev["end"], ev["pipe"]
    pairs = flag_pairs(ev)
    flow_out, flow_in = np.zeros(len(start), np.int64), np.zeros(len(start), np.int64)
    flow_out[pairs[:, 0]] = flow_in[pairs[:, 1]] = flows + 1 + np.arange(len(pairs))
    columns: _Columns = (start, end, ev["name"], ev["loc"], flow_out, flow_in)
    for p in np.flatnonzero(np.bincount(pipe)).tolist():  # the pipes used, in order
        on = np.flatnonzero(pipe == p)
        whole = len(on) == len(start)  # every row, in order: the columns as they are
        on_start, on_end = (start, end) if whole else (start[on], end[on])
        if not _ordered(on_start, on_end):  # a stable sort of ordered rows changes nothing
            order = np.lexsort((on_end, on_start))
            on, on_start, on_end = on[order], on_start[order], on_end[order]
        sub = _sub_lanes(on_start, on_end)
        for s in np.flatnonzero(np.bincount(sub)).tolist():
            lanes += 1
            pick = on[sub == s] if sub.any() else on
            label = PIPES[p] + (f"#{s}" if s else "")
            _lane(out, lanes, core, label, _rows(pick, len(start)), columns, strings)
    return lanes, flows + len(pairs)


def _ordered(start: np.ndarray, end: np.ndarray) -> bool:
    """Whether the slices are already by start, then end (as a core issues them, mostly)."""
    later = start[1:] > start[:-1]
    return bool((later | ((start[1:] == start[:-1]) & (end[1:] >= end[:-1]))).all())


def _rows(pick: np.ndarray, n: int) -> np.ndarray | None:
    """A lane's rows of its core's ``n``; None when that is all of them in order (a core with
    one pipe), which the encoder reads without an index."""
    return None if len(pick) == n and bool((pick[1:] > pick[:-1]).all()) else pick  # n of n, rising


def _by_core(report: RunReport) -> dict[int, list]:
    cores: dict[str, list] = {}
    for t in report.tasks:
        if t.trace is not None and len(t.trace):
            cores.setdefault(t.core_name, []).append(t)
    return dict(enumerate(cores.values()))


def _core_columns(tasks: list) -> tuple[dict[str, np.ndarray], list[str]]:
    """One core's records over its tasks, in run cycles, names and locations as ids of the
    returned strings; the flag columns as ``flag_pairs`` reads them."""
    strings: dict[str, int] = {}
    cols: dict[str, list[np.ndarray]] = defaultdict(list)
    for t in tasks:
        raw = t.trace.raw
        ids = np.array([strings.setdefault(s, len(strings)) for s in raw["strings"]], np.int64)
        table = t.trace.by_column  # contiguous columns: each read below is one pass over one
        kind = table[_COL["kind"]]
        columns = {
            "start": table[_COL["start"]] + t.start if t.start else table[_COL["start"]],
            "end": table[_COL["end"]] + t.start if t.start else table[_COL["end"]],
            "pipe": table[_COL["pipe"]],
            "kind": kind,
            "name": ids[raw["name_id"]],
            "loc": ids[raw["loc_id"]],
            "fsrc": table[_COL["flag_src"]],
            "fdst": table[_COL["flag_dst"]],
            "fid": np.where((kind == 1) | (kind == 2), table[_COL["flag_id"]], -1),
        }
        for key, col in columns.items():
            cols[key].append(col)
    ev = {k: v[0] if len(v) == 1 else np.concatenate(v) for k, v in cols.items()}  # one task: no copy
    ev["core"] = np.zeros(len(ev["start"]), np.int64)
    return ev, list(strings)


def _interned(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids of ``n`` strings that ``ids`` uses, in order, and per string id its interned id
    (1, 2, ... in that order; 0: unused), by marking rather than sorting (a million ids of a
    few distinct values)."""
    used = np.zeros(n, bool)
    used[ids] = True
    return np.flatnonzero(used), np.where(used, np.cumsum(used), 0)


def _descriptor(uuid: int, body: bytes) -> bytes:
    return _msg(_PACKET, _msg(_DESCRIPTOR, _int(_UUID, uuid) + body))


def _lane(
    out: _Out, seq: int, core: int, label: str, rows: np.ndarray | None, cols: _Columns, strings: list[str]
) -> None:
    """Writes one lane — the ``rows`` of its core's columns (None: all) — as its thread track,
    its sequence's first packet (defaults, interned names and source lines), then its slices."""
    name, loc = cols[2], cols[3]
    uuid = _LANE_UUID + seq
    thread = _int(_PID, core + 1) + _int(_TID, seq) + _str(_THREAD_NAME, label)
    head = _descriptor(uuid, _int(_TD_PARENT, core + 1) + _msg(_TD_THREAD, thread))
    names, name_iid = _interned(name if rows is None else name[rows], len(strings))
    locs, loc_iid = _interned(loc if rows is None else loc[rows], len(strings))
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
    out.slices(seq, rows, cols, name_iid, loc_iid)
