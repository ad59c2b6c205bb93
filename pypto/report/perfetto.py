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

The encoder is written here (the protobuf subset above, packed with numpy: a million
instructions are a handful of array operations); field numbers are those of Perfetto's
``protos/perfetto/trace`` files, which the format keeps stable.
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from pathlib import Path

import numpy as np

from pypto.report.progress import progress
from pypto.report.run_report import PIPES, RunReport
from pypto.report.trace import flag_pairs

log = logging.getLogger(__name__)

# Field numbers (TracePacket, TrackEvent, descriptors, interned data).
_PACKET = 1  # Trace.packet
_TIMESTAMP, _SEQ_ID, _TRACK_EVENT, _INTERNED, _SEQ_FLAGS = 8, 10, 11, 12, 13
_DEFAULTS, _DESCRIPTOR, _FIRST_ON_SEQ = 59, 60, 87
_TE_TYPE, _TE_NAME_IID, _TE_TRACK, _TE_LOCATION_IID = 9, 10, 11, 34
_TE_FLOW, _TE_FLOW_END = 47, 48  # fixed64 flow ids: an arrow starts at a set_flag, ends at its wait
_BEGIN, _END = 1, 2
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


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's varint as a row of a byte matrix (as wide as the largest needs) and its
    length."""
    v = values.astype(np.uint64)
    top = int(v.max()) if len(v) else 0
    width = max(1, (top.bit_length() + 6) // 7)
    rows = np.empty((len(v), width), np.uint8)
    length = np.ones(len(v), np.int64)
    for k in range(width):
        rest = v >> np.uint64(7 * k)
        rows[:, k] = rest & np.uint64(0x7F)
        if k:
            length += rest > 0
    rows |= (np.arange(width)[None, :] < (length - 1)[:, None]).astype(np.uint8) << 7
    return rows, length


def _fixed(data: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.broadcast_to(np.frombuffer(data, np.uint8), (n, len(data))), np.full(n, len(data))


def _packet(fields: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """A packet per row (``Trace.packet`` key and length first) from rows of fields."""
    body_len = np.sum([n for _, n in fields], axis=0)
    return [_fixed(_key(_PACKET, 2), len(body_len)), _varints(body_len), *fields]


def _flow(field: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A fixed64 flow id field per row where ``ids`` is non-zero (nothing where it is 0)."""
    key = np.frombuffer(_key(field, 1), np.uint8)
    rows = np.empty((len(ids), len(key) + 8), np.uint8)
    rows[:, : len(key)] = key
    rows[:, len(key) :] = ids.astype("<u8").view(np.uint8).reshape(-1, 8)
    return rows, np.where(ids > 0, len(key) + 8, 0)


def _slices(seq: int, start, end, name, loc, flow_out: np.ndarray, flow_in: np.ndarray) -> bytes:
    """The begin and end packets of one sequence's slices (ids already interned): one row of
    a byte matrix per slice, its used bytes marked by a mask, read out row by row."""
    n = len(start)
    te = [
        _fixed(_int(_TE_TYPE, _BEGIN) + _key(_TE_NAME_IID, 0), n),
        _varints(name),
        _fixed(_key(_TE_LOCATION_IID, 0), n),
        _varints(loc),
        _flow(_TE_FLOW, flow_out),
        _flow(_TE_FLOW_END, flow_in),
    ]
    te_len = np.sum([w for _, w in te], axis=0)
    seq_field = _fixed(_int(_SEQ_ID, seq), n)
    flags = _fixed(_int(_SEQ_FLAGS, _NEEDS_STATE), n)
    begin = _packet(
        [_fixed(_key(_TIMESTAMP, 0), n), _varints(start), seq_field, flags,
         _fixed(_key(_TRACK_EVENT, 2), n), _varints(te_len), *te]
    )  # fmt: skip
    finish = _packet(
        [
            _fixed(_key(_TIMESTAMP, 0), n),
            _varints(end),
            seq_field,
            _fixed(_msg(_TRACK_EVENT, _int(_TE_TYPE, _END)), n),
        ]
    )
    parts = begin + finish
    matrix = np.concatenate([m for m, _ in parts], axis=1)
    mask = np.concatenate([np.arange(m.shape[1])[None, :] < w[:, None] for m, w in parts], axis=1)
    return matrix[mask].tobytes()


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
    out = bytearray()
    lanes = flows = 0
    cores = _by_core(report)
    with progress("writing the run's trace", len(cores), "core") as done:
        for core, tasks in cores.items():
            data, lanes, flows = _core(core, tasks, lanes, flows)
            out += data
            done.update()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    log.info("wrote the run's trace (%d lanes, %d bytes) to %s", lanes, len(out), path)
    return path


def _core(core: int, tasks: list, lanes: int, flows: int) -> tuple[bytes, int, int]:
    """A core's process track and its lanes (numbered on from ``lanes``), its flag arrows
    numbered on from ``flows``; the new counts."""
    name = tasks[0].core_name
    out = _descriptor(
        core + 1, _str(_TD_NAME, name) + _msg(_TD_PROCESS, _int(_PID, core + 1) + _str(_PROCESS_NAME, name))
    )
    ev, strings = _core_columns(tasks)
    start, end, pipe = ev["start"], ev["end"], ev["pipe"]
    pairs = flag_pairs(ev)
    flow_out, flow_in = np.zeros(len(start), np.int64), np.zeros(len(start), np.int64)
    flow_out[pairs[:, 0]] = flow_in[pairs[:, 1]] = flows + 1 + np.arange(len(pairs))
    for p in np.unique(pipe).tolist():
        on = np.nonzero(pipe == p)[0]
        on = on[np.lexsort((end[on], start[on]))]
        sub = _sub_lanes(start[on], end[on])
        for s in np.unique(sub).tolist():
            lanes += 1
            pick = on[sub == s]
            label = PIPES[p] + (f"#{s}" if s else "")
            cols = (start[pick], end[pick], ev["name"][pick], ev["loc"][pick], flow_out[pick], flow_in[pick])
            out += _lane(lanes, core, label, *cols, strings)
    return out, lanes, flows + len(pairs)


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
        table = raw["table"]
        sync = np.isin(table[:, 1], (1, 2))
        columns = {
            "start": table[:, 4] + t.start,
            "end": table[:, 5] + t.start,
            "pipe": table[:, 2],
            "kind": table[:, 1],
            "name": ids[raw["name_id"]],
            "loc": ids[raw["loc_id"]],
            "fsrc": table[:, 8],
            "fdst": table[:, 9],
            "fid": np.where(sync, table[:, 10], -1),
        }
        for key, col in columns.items():
            cols[key].append(col)
    ev = {k: np.concatenate(v) for k, v in cols.items()}
    ev["core"] = np.zeros(len(ev["start"]), np.int64)
    return ev, list(strings)


def _descriptor(uuid: int, body: bytes) -> bytes:
    return _msg(_PACKET, _msg(_DESCRIPTOR, _int(_UUID, uuid) + body))


def _lane(
    seq: int, core: int, label: str, start, end, name, loc, flow_out, flow_in, strings: list[str]
) -> bytes:
    """One lane: its thread track, its sequence's first packet (defaults, interned names and
    source lines), then its slices."""
    uuid = _LANE_UUID + seq
    thread = _int(_PID, core + 1) + _int(_TID, seq) + _str(_THREAD_NAME, label)
    head = _descriptor(uuid, _int(_TD_PARENT, core + 1) + _msg(_TD_THREAD, thread))
    names, name_iid = np.unique(name, return_inverse=True)
    locs, loc_iid = np.unique(loc, return_inverse=True)
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
    return (
        head + _msg(_PACKET, first) + _slices(seq, start, end, name_iid + 1, loc_iid + 1, flow_out, flow_in)
    )
