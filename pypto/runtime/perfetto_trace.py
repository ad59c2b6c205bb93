"""The whole run as one Perfetto trace: every launch on one time axis, a few dozen bytes per
instruction (``<output_dir>/trace/run.pftrace``).

Perfetto's native format is a protobuf ``Trace`` (a repeated ``TracePacket``); an
instruction is a ``TrackEvent`` slice, a begin and an end packet. Time is exact: one
simulated cycle is one nanosecond, an integer (no decimal microseconds to round). Each core
is a process, each pipe of it a thread; each lane writes its own packet sequence, which
names its track once (``TracePacketDefaults``) and interns its instruction names and source
lines (``InternedData``: ``event_names``, ``source_locations``), so a slice carries only its
time and two small ids. Slices that overlap on one pipe go to a sub-lane (``MTE2#1``), as
viewers need properly nested slices per thread.

The encoder is written here (the protobuf subset above, packed with numpy: a million
instructions are a handful of array operations); field numbers are those of Perfetto's
``protos/perfetto/trace`` files, which the format keeps stable.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from pypto.runtime.progress import progress
from pypto.runtime.report import PIPES, RunReport

log = logging.getLogger(__name__)

# Field numbers (TracePacket, TrackEvent, descriptors, interned data).
_PACKET = 1  # Trace.packet
_TIMESTAMP, _SEQ_ID, _TRACK_EVENT, _INTERNED, _SEQ_FLAGS = 8, 10, 11, 12, 13
_DEFAULTS, _DESCRIPTOR, _FIRST_ON_SEQ = 59, 60, 87
_TE_TYPE, _TE_NAME_IID, _TE_TRACK, _TE_LOCATION_IID = 9, 10, 11, 34
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
    """Each value's varint as a row of a byte matrix (width 10) and its length."""
    v = values.astype(np.uint64)
    groups = np.stack([(v >> np.uint64(7 * k)) & np.uint64(0x7F) for k in range(10)], axis=1).astype(np.uint8)
    bits = np.zeros(len(v), np.int64)
    for k in range(1, 10):
        bits[(v >> np.uint64(7 * k)) > 0] = k
    length = bits + 1
    more = np.arange(10)[None, :] < (length - 1)[:, None]
    return groups | (more.astype(np.uint8) << 7), length


def _join(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows made of segments (a byte matrix and each row's used width): (matrix, mask)."""
    matrix = np.concatenate([m for m, _ in parts], axis=1)
    mask = np.concatenate([np.arange(m.shape[1])[None, :] < n[:, None] for m, n in parts], axis=1)
    return matrix, mask


def _fixed(data: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.tile(np.frombuffer(data, np.uint8), (n, 1)), np.full(n, len(data))


def _packets(fields: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Whole packets (``Trace.packet`` key and length first) from rows of fields."""
    body_len = np.sum([n for _, n in fields], axis=0)
    length, width = _varints(body_len)
    return _join([_fixed(_key(_PACKET, 2), len(body_len)), (length, width), *fields])


def _slices(seq: int, start: np.ndarray, end: np.ndarray, name: np.ndarray, loc: np.ndarray) -> bytes:
    """The begin and end packets of one sequence's slices (ids already interned)."""
    n = len(start)
    seq_field = _fixed(_int(_SEQ_ID, seq), n)
    name_v, name_n = _varints(name)
    loc_v, loc_n = _varints(loc)
    te = [
        _fixed(_int(_TE_TYPE, _BEGIN) + _key(_TE_NAME_IID, 0), n),
        (name_v, name_n),
        _fixed(_key(_TE_LOCATION_IID, 0), n),
        (loc_v, loc_n),
    ]
    te_len = np.sum([w for _, w in te], axis=0)
    te_len_v, te_len_n = _varints(te_len)
    ts_v, ts_n = _varints(start)
    begin = _packets(
        [_fixed(_key(_TIMESTAMP, 0), n), (ts_v, ts_n), seq_field, _fixed(_int(_SEQ_FLAGS, _NEEDS_STATE), n),
         _fixed(_key(_TRACK_EVENT, 2), n), (te_len_v, te_len_n), *te]
    )  # fmt: skip
    end_v, end_n = _varints(end)
    finish = _packets(
        [
            _fixed(_key(_TIMESTAMP, 0), n),
            (end_v, end_n),
            seq_field,
            _fixed(_msg(_TRACK_EVENT, _int(_TE_TYPE, _END)), n),
        ]
    )
    width = max(begin[0].shape[1], finish[0].shape[1])
    rows = np.zeros((2 * n, width), np.uint8)
    mask = np.zeros((2 * n, width), bool)
    for k, (m, ok) in enumerate((begin, finish)):
        rows[k::2, : m.shape[1]] = m
        mask[k::2, : ok.shape[1]] = ok
    return rows[mask].tobytes()


def _sub_lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per slice (sorted by start) the sub-lane it goes to: the first whose last slice ended."""
    if not len(start) or (start[1:] >= end[:-1]).all():
        return np.zeros(len(start), np.int64)
    free: list[int] = []  # per sub-lane, the end of its last slice
    out = np.empty(len(start), np.int64)
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        k = next((j for j, t in enumerate(free) if t <= s), len(free))
        if k == len(free):
            free.append(e)
        free[k] = e
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
    lanes = 0
    cores = _by_core(report)
    with progress("writing the run's trace", len(cores), "core") as done:
        for core, tasks in cores.items():
            data, lanes = _core(core, tasks, lanes)
            out += data
            done.update()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    log.info("wrote the run's trace (%d lanes, %d bytes) to %s", lanes, len(out), path)
    return path


def _core(core: int, tasks: list, lanes: int) -> tuple[bytes, int]:
    """A core's process track and its lanes (numbered on from ``lanes``); the new count."""
    name = tasks[0].core_name
    out = _descriptor(
        core + 1, _str(_TD_NAME, name) + _msg(_TD_PROCESS, _int(_PID, core + 1) + _str(_PROCESS_NAME, name))
    )
    start, end, pipe, names, loc, strings = _core_columns(tasks)
    for p in np.unique(pipe).tolist():
        on = np.nonzero(pipe == p)[0]
        on = on[np.lexsort((end[on], start[on]))]
        sub = _sub_lanes(start[on], end[on])
        for s in np.unique(sub).tolist():
            lanes += 1
            pick = on[sub == s]
            label = PIPES[p] + (f"#{s}" if s else "")
            out += _lane(lanes, core, label, start[pick], end[pick], names[pick], loc[pick], strings)
    return out, lanes


def _by_core(report: RunReport) -> dict[int, list]:
    cores: dict[str, list] = {}
    for t in report.tasks:
        if t.trace is not None and len(t.trace):
            cores.setdefault(t.core_name, []).append(t)
    return dict(enumerate(cores.values()))


def _core_columns(
    tasks: list,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """One core's records over its tasks, in run cycles, names and locations as global ids."""
    strings: dict[str, int] = {}
    cols: list[list[np.ndarray]] = [[], [], [], [], []]
    for t in tasks:
        raw = t.trace.raw
        ids = np.array([strings.setdefault(s, len(strings)) for s in raw["strings"]], np.int64)
        table = raw["table"]
        for k, col in enumerate(
            (
                table[:, 4] + t.start,
                table[:, 5] + t.start,
                table[:, 2],
                ids[raw["name_id"]],
                ids[raw["loc_id"]],
            )
        ):
            cols[k].append(col)
    start, end, pipe, name, loc = (np.concatenate(c) for c in cols)
    return start, end, pipe, name, loc, list(strings)


def _descriptor(uuid: int, body: bytes) -> bytes:
    return _msg(_PACKET, _msg(_DESCRIPTOR, _int(_UUID, uuid) + body))


def _lane(seq: int, core: int, label: str, start, end, name, loc, strings: list[str]) -> bytes:
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
    return head + _msg(_PACKET, first) + _slices(seq, start, end, name_iid + 1, loc_iid + 1)
