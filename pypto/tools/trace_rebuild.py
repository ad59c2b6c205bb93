"""The rebuild rules of ``clean_sim_trace``: raw op-simulator trace events → a clean pipeline view.

1. Lanes: keep the pipeline pipes (MTE2, MTE1, CUBE, VECTOR, FIXPIPE, MTE3; SCALAR on
   request); drop everything else (CACHEMISS, FLOWCTRL, ALL, ...).
2. Events: keep the instruction slices (``ph: X``); drop SET_FLAG / WAIT_FLAG / BAR slices.
3. Order: one process per core (cube core before its vector cores), lanes in dataflow order,
   named and sorted through ``process_*`` / ``thread_*`` metadata.
4. Sub-lanes: slices that overlap on one pipe are packed greedily into ``PIPE#1``,
   ``PIPE#2``, ... so every lane is a sequence of disjoint slices, as the viewers require.
5. Sync: each SET_FLAG → WAIT_FLAG pair (FIFO per core, source pipe, target pipe and flag id,
   read from ``args.detail``) becomes a flow arrow from the last instruction on the producer
   pipe that started at or before the set to the first instruction on the consumer pipe
   that starts once the wait is over. Pairs without an instruction on both sides are skipped
   and counted.
6. Timestamps are copied verbatim; slices are recoloured per pipe (``cname``).

Reads our own traces and the vendor's alike: string or numeric pids/tids (numeric ones named
by metadata), flag slices as ``X`` or as ``B``/``E`` pairs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LANES: tuple[str, ...] = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")
LABELS = {
    "MTE2": "load (GM→on-chip)",
    "MTE1": "L1→L0",
    "CUBE": "matmul",
    "VECTOR": "compute",
    "FIXPIPE": "L0C out",
    "MTE3": "store (UB→GM)",
    "SCALAR": "scalar",
}
COLORS = {
    "MTE2": "thread_state_iowait",
    "MTE1": "olive",
    "CUBE": "rail_animation",
    "VECTOR": "good",
    "FIXPIPE": "yellow",
    "MTE3": "rail_load",
    "SCALAR": "grey",
}
_ALIASES = {"VEC": "VECTOR", "V": "VECTOR", "M": "CUBE", "MMAD": "CUBE", "FIX": "FIXPIPE", "S": "SCALAR"}
SYNC_NAMES = frozenset({"SET_FLAG", "WAIT_FLAG", "BAR", "BARRIER", "PIPE_BARRIER"})
EPS = 1e-6  # microseconds: far below one cycle, above float noise in ts + dur
_MISS: Any = object()  # sentinel: a detail string not parsed yet
_CORE = re.compile(r"core(\d+)\.(cube|vec)core(\d+)")
_DETAIL = re.compile(r"PIPE:([A-Za-z0-9_]+),TRIGGERPIPE:([A-Za-z0-9_]+),FLAGID:(\d+)")


def lane_of(name: Any) -> str | None:
    """The pipeline lane a raw tid names (``"VEC"`` and ``"VECTOR"`` alike), or None."""
    text = str(name).upper().removeprefix("PIPE_")
    text = _ALIASES.get(text, text)
    return text if text in LANES else None


FlagKey = tuple[Any, str, str, int]  # (pid, producer lane, consumer lane, flag id)
_FLAG_NAMES = ("SET_FLAG", "WAIT_FLAG")  # BAR-like slices pair among themselves only: dropped


@dataclass
class Collected:
    """Instruction slices per (pid, lane), and per flag key the times of its sets (their
    starts) and of its waits (their ends), from one pass over the raw events."""

    slices: dict[tuple[Any, str], list[dict[str, Any]]] = field(default_factory=dict)
    sets: dict[FlagKey, list[float]] = field(default_factory=lambda: defaultdict(list))
    waits: dict[FlagKey, list[float]] = field(default_factory=lambda: defaultdict(list))
    procs: dict[Any, str] = field(default_factory=dict)


@dataclass
class Clean:
    """The rebuilt trace and what it took to make it."""

    trace: dict[str, Any]
    slices: int
    lanes: int
    flows: int
    skipped_flags: int


def _names(meta: list[dict[str, Any]]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    procs: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for e in meta:
        name = (e.get("args") or {}).get("name")
        if e.get("name") == "process_name" and name is not None:
            procs[e.get("pid")] = str(name)
        elif e.get("name") == "thread_name" and name is not None:
            threads[(e.get("pid"), e.get("tid"))] = str(name)
    return procs, threads


def _split(events: list[dict[str, Any]]) -> tuple[dict[tuple[Any, Any], list], list, list]:
    """The one pass over every raw event (the hot loop of the tool: keep it lean): ``X``
    slices grouped by raw (pid, tid) in event order, sync slices and metadata set aside.
    Lanes are resolved afterwards, so metadata may come anywhere in the file."""
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    flags: list[dict[str, Any]] = []
    meta: list[dict[str, Any]] = []
    sync, flag_names = SYNC_NAMES, _FLAG_NAMES
    for e in events:
        name = e.get("name")
        if name in sync:
            if name in flag_names:
                flags.append(e)
            continue
        ph = e.get("ph")
        if ph == "X":
            key = (e.get("pid"), e.get("tid"))
            bucket = by_thread.get(key)
            if bucket is None:
                bucket = by_thread[key] = []
            bucket.append(e)
        elif ph == "M":
            meta.append(e)
    return by_thread, flags, meta


def collect(events: list[dict[str, Any]], keep: frozenset[str]) -> Collected:
    """Kept instruction slices per (pid, lane) in event order, flag times per flag key."""
    by_thread, flags, meta = _split(events)
    procs, threads = _names(meta)
    out = Collected(procs=procs)
    lane_of_key: dict[tuple[Any, Any], tuple[Any, str]] = {}
    for key, bucket in by_thread.items():
        lane = lane_of(str(threads.get(key, key[1])).split(" ")[0])
        if lane in keep:
            lane_of_key[key] = (key[0], lane)
            out.slices.setdefault((key[0], lane), []).extend(bucket)
    if len(lane_of_key) > len(out.slices):  # two tids name one lane: keep their events' order
        out.slices = _merge_in_event_order(events, lane_of_key)
    _flag_times(flags, out)
    return out


def _merge_in_event_order(
    events: list[dict[str, Any]], lane_of_key: dict[tuple[Any, Any], tuple[Any, str]]
) -> dict[tuple[Any, str], list[dict[str, Any]]]:
    """Slow path for lanes fed by several raw tids (rare): one more pass in event order."""
    slices: dict[tuple[Any, str], list[dict[str, Any]]] = {lane: [] for lane in lane_of_key.values()}
    for e in events:
        if e.get("name") not in SYNC_NAMES and e.get("ph") == "X":
            lane = lane_of_key.get((e.get("pid"), e.get("tid")))
            if lane is not None:
                slices[lane].append(e)
    return slices


def _flag_times(flags: list[dict[str, Any]], out: Collected) -> None:
    """Set and wait times per flag key; a flag is an ``X`` slice or a ``B``/``E`` pair
    (matched per pid, tid and name, innermost first)."""
    open_: dict[tuple[Any, Any, str], list[dict[str, Any]]] = defaultdict(list)
    details: dict[str, tuple[str, str, int] | None] = {}
    sets, waits = out.sets, out.waits
    for e in flags:
        ph = e.get("ph")
        if ph == "B":
            open_[(e.get("pid"), e.get("tid"), e["name"])].append(e)
            continue
        if ph == "E":
            stack = open_.get((e.get("pid"), e.get("tid"), e["name"]))
            if not stack:
                continue
            end = float(e.get("ts", 0.0))
            e = stack.pop()  # the flag's B event carries its name, detail and start
            start = float(e.get("ts", 0.0))
        else:
            start = float(e.get("ts", 0.0))
            end = start + float(e.get("dur", 0.0) or 0.0)
        detail = str((e.get("args") or {}).get("detail", ""))
        parsed = details.get(detail, _MISS)
        if parsed is _MISS:
            parsed = details[detail] = _parse_detail(detail)
        if parsed is not None:
            if e["name"] == "SET_FLAG":
                sets[(e.get("pid"), *parsed)].append(start)
            else:
                waits[(e.get("pid"), *parsed)].append(end)


def _parse_detail(detail: str) -> tuple[str, str, int] | None:
    m = _DETAIL.search(detail)
    if m is None:
        return None
    src, dst = lane_of(m.group(1)), lane_of(m.group(2))
    return None if src is None or dst is None else (src, dst, int(m.group(3)))


@dataclass
class _Lane:
    """One kept pipe of one core after packing: slices by start, and per slice its tid,
    start and midpoint (where an arrow binds) as arrays for the flow search."""

    pid: int
    slices: list[dict[str, Any]]
    tids: np.ndarray
    starts: np.ndarray
    mids: np.ndarray


def pack_sublanes(slices: list[dict[str, Any]], pid: int, base: int, color: str) -> _Lane:
    """Sorts ``slices`` by start (in place, stable), puts each on the first sub-lane free by
    then (tid ``base + k``) of process ``pid`` and recolours it."""
    starts: list[float] = []
    durs: list[float] = []
    for e in slices:  # one pass over the dicts (each visit is a cache miss on a big trace)
        starts.append(e["ts"])
        durs.append(e.get("dur") or 0.0)
        e["pid"], e["tid"], e["cname"] = pid, base, color  # the main lane until packed
    ts, dur = np.array(starts, dtype=np.float64), np.array(durs, dtype=np.float64)
    if len(ts) > 1 and (ts[1:] < ts[:-1]).any():
        order = np.argsort(ts, kind="stable")  # the order list.sort(key=ts) gives
        slices[:] = [slices[i] for i in order.tolist()]
        ts, dur = ts[order], dur[order]
    ends = ts + dur
    tids = np.full(len(slices), base, dtype=np.int64)
    if len(ts) > 1 and (ends[:-1] > ts[1:] + EPS).any():  # overlaps: pack them
        tids += np.array(_first_fit(ts.tolist(), ends.tolist()), dtype=np.int64)
        for i in np.flatnonzero(tids != base).tolist():
            slices[i]["tid"] = int(tids[i])
    return _Lane(pid, slices, tids, ts, ts + dur / 2)


def _first_fit(starts: list[float], ends: list[float]) -> list[int]:
    """Greedy sub-lane per slice: the main lane when it is free, else the first free other."""
    lane_end = [float("-inf")]
    picked = []
    for ts, end in zip(starts, ends):
        k = 0
        if lane_end[0] > ts + EPS:
            k = next((i for i in range(1, len(lane_end)) if lane_end[i] <= ts + EPS), len(lane_end))
            if k == len(lane_end):
                lane_end.append(end)
        lane_end[k] = end
        picked.append(k)
    return picked


def core_order(pid: Any, name: str) -> tuple:
    """Cores in cluster order, the cube core before its vector cores; anything else after."""
    m = _CORE.search(name)
    if m:
        return (0, int(m.group(1)), 0 if m.group(2) == "cube" else 1, int(m.group(3)), name)
    return (1, 0, 0, 0, name)


def _layout(got: Collected) -> tuple[list[dict[str, Any]], dict[tuple[Any, str], _Lane], int]:
    """Assigns numeric pids/tids, packs sub-lanes, emits metadata; returns lanes by key."""
    procs = got.procs
    raw_pids = sorted({pid for pid, _ in got.slices}, key=lambda p: core_order(p, procs.get(p, str(p))))
    meta: list[dict[str, Any]] = []
    lanes: dict[tuple[Any, str], _Lane] = {}
    n_lanes = 0
    for n, raw in enumerate(raw_pids, start=1):
        label = procs.get(raw, str(raw))
        meta.append({"name": "process_name", "ph": "M", "pid": n, "args": {"name": label}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": n, "args": {"sort_index": n}})
        for li, lane in enumerate(LANES):
            slices = got.slices.get((raw, lane))
            if not slices:
                continue
            base = (li + 1) * 100
            packed = pack_sublanes(slices, n, base, COLORS[lane])
            for tid in range(base, int(packed.tids.max()) + 1):
                name = lane if tid == base else f"{lane}#{tid - base}"
                meta.append({"name": "thread_name", "ph": "M", "pid": n, "tid": tid,
                             "args": {"name": f"{name} · {LABELS[lane]}"}})  # fmt: skip
                meta.append({"name": "thread_sort_index", "ph": "M", "pid": n, "tid": tid,
                             "args": {"sort_index": tid}})  # fmt: skip
                n_lanes += 1
            lanes[(raw, lane)] = packed
    return meta, lanes, n_lanes


def _flows(got: Collected, lanes: dict[tuple[Any, str], _Lane]) -> tuple[list[dict[str, Any]], int]:
    """Arrow events (a start and an end each) for every set→wait pair, ids in key order."""
    sets, waits = got.sets, got.waits
    flows: list[dict[str, Any]] = []
    skipped = 0
    for key in sorted(sets.keys() | waits.keys(), key=repr):  # deterministic arrow ids
        s_times, w_times = sorted(sets.get(key, ())), sorted(waits.get(key, ()))
        pairs = min(len(s_times), len(w_times))
        skipped += abs(len(s_times) - len(w_times))
        made = _arrows(key, s_times[:pairs], w_times[:pairs], lanes, len(flows) // 2 + 1)
        skipped += pairs - len(made) // 2
        flows.extend(made)
    return flows, skipped


def _arrows(key: FlagKey, t_sets: list[float], t_waits: list[float], lanes: dict, first_id: int) -> list:
    """The arrows of one flag key: from the last producer slice started by each set to the
    first consumer slice starting once its wait is over; pairs without both are left out."""
    pid, src, dst, flag = key
    prod, cons = lanes.get((pid, src)), lanes.get((pid, dst))
    if prod is None or cons is None or not t_sets:
        return []
    i = np.searchsorted(prod.starts, np.array(t_sets) + EPS, side="right") - 1
    j = np.searchsorted(cons.starts, np.array(t_waits) - EPS, side="left")
    ok = (i >= 0) & (j < len(cons.starts))
    i, j = i[ok], j[ok]
    name = f"{src}→{dst} flag{flag}"
    arrows: list[dict[str, Any]] = []
    rows = zip(prod.tids[i].tolist(), prod.mids[i].tolist(), cons.tids[j].tolist(), cons.mids[j].tolist())
    for flow_id, (s_tid, s_ts, f_tid, f_ts) in enumerate(rows, start=first_id):
        arrows.append({"cat": "sync", "name": name, "id": flow_id, "pid": prod.pid,
                       "ph": "s", "tid": s_tid, "ts": s_ts})  # fmt: skip
        arrows.append({"cat": "sync", "name": name, "id": flow_id, "pid": prod.pid,
                       "ph": "f", "bp": "e", "tid": f_tid, "ts": f_ts})  # fmt: skip
    return arrows


def rebuild(raw: dict[str, Any] | list[Any], *, keep_scalar: bool = False) -> Clean:
    """Applies the rules above to a parsed TRACE payload (``{"traceEvents": [...]}`` or a list)."""
    events = raw.get("traceEvents", []) if isinstance(raw, dict) else raw
    keep = frozenset(LANES if keep_scalar else LANES[:-1])
    got = collect(events, keep)
    meta, lanes, n_lanes = _layout(got)
    flows, skipped = _flows(got, lanes)
    n_slices = sum(len(lane.slices) for lane in lanes.values())
    events_out = meta  # one list, grown in place: it holds every kept slice
    for lane in lanes.values():
        events_out.extend(lane.slices)
    events_out.extend(flows)
    other = {"generator": "pypto.tools.clean_sim_trace", "skipped_flags": skipped}
    if isinstance(raw, dict):
        other["source_otherData"] = raw.get("otherData", {})
    trace = {"traceEvents": events_out, "displayTimeUnit": "ns", "otherData": other}
    return Clean(trace, n_slices, n_lanes, len(flows) // 2, skipped)
