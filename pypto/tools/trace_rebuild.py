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
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

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
_MISS: list[dict[str, Any]] = []  # sentinel: (pid, tid) not classified yet
_CORE = re.compile(r"core(\d+)\.(cube|vec)core(\d+)")
_DETAIL = re.compile(r"PIPE:([A-Za-z0-9_]+),TRIGGERPIPE:([A-Za-z0-9_]+),FLAGID:(\d+)")


def lane_of(name: Any) -> str | None:
    """The pipeline lane a raw tid names (``"VEC"`` and ``"VECTOR"`` alike), or None."""
    text = str(name).upper().removeprefix("PIPE_")
    text = _ALIASES.get(text, text)
    return text if text in LANES else None


FlagKey = tuple[Any, str, str, int]  # (pid, producer lane, consumer lane, flag id)


@dataclass
class Collected:
    """Instruction slices per (pid, lane), and per flag key the times of its sets (their
    starts) and of its waits (their ends), from one pass over the raw events."""

    slices: dict[tuple[Any, str], list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    sets: dict[FlagKey, list[float]] = field(default_factory=lambda: defaultdict(list))
    waits: dict[FlagKey, list[float]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class Clean:
    """The rebuilt trace and what it took to make it."""

    trace: dict[str, Any]
    slices: int
    lanes: int
    flows: int
    skipped_flags: int


def _names(events: list[dict[str, Any]]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    procs: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for e in events:
        if e.get("ph") == "M":
            name = (e.get("args") or {}).get("name")
            if e.get("name") == "process_name" and name is not None:
                procs[e.get("pid")] = str(name)
            elif e.get("name") == "thread_name" and name is not None:
                threads[(e.get("pid"), e.get("tid"))] = str(name)
    return procs, threads


class _Collector:
    """One pass over the raw events (the hot loop of the tool: keep it lean)."""

    def __init__(self, events: list[dict[str, Any]], keep: frozenset[str]) -> None:
        self.procs, self.threads = _names(events)
        self.keep = keep
        self.buckets: dict[tuple[Any, Any], list[dict[str, Any]] | None] = {}
        self.detail_cache: dict[str, tuple[str, str, int] | None] = {}
        self.open: dict[tuple[Any, Any, str], list[dict[str, Any]]] = defaultdict(list)
        self.out = Collected()

    def bucket(self, pid: Any, tid: Any) -> list[dict[str, Any]] | None:
        """The slice list of the kept lane that (pid, tid) names, or None (dropped lane)."""
        key = (pid, tid)
        if key not in self.buckets:
            lane = lane_of(str(self.threads.get(key, tid)).split(" ")[0])
            self.buckets[key] = self.out.slices[(pid, lane)] if lane in self.keep else None
        return self.buckets[key]

    def run(self, events: list[dict[str, Any]]) -> Collected:
        buckets, sync, miss = self.buckets, SYNC_NAMES, _MISS
        for e in events:
            if e.get("name") in sync:
                self.flag(e, e.get("ph"))
            elif e.get("ph") == "X":
                pid, tid = e.get("pid"), e.get("tid")
                target = buckets.get((pid, tid), miss)
                if target is miss:
                    target = self.bucket(pid, tid)
                if target is not None:
                    target.append(e)
        return self.out

    def flag(self, e: dict[str, Any], ph: Any) -> None:
        if ph == "B":
            self.open[(e.get("pid"), e.get("tid"), e["name"])].append(e)
            return
        if ph == "E":
            stack = self.open.get((e.get("pid"), e.get("tid"), e["name"]))
            if stack:
                begin = stack.pop()
                self.add_flag(begin, float(begin.get("ts", 0.0)), float(e.get("ts", 0.0)))
            return
        ts = float(e.get("ts", 0.0))
        self.add_flag(e, ts, ts + float(e.get("dur", 0.0) or 0.0))

    def add_flag(self, e: dict[str, Any], start: float, end: float) -> None:
        name = e["name"]
        if name not in ("SET_FLAG", "WAIT_FLAG"):
            return
        detail = str((e.get("args") or {}).get("detail", ""))
        if detail not in self.detail_cache:
            m = _DETAIL.search(detail)
            lanes = (lane_of(m.group(1)), lane_of(m.group(2))) if m else (None, None)
            ok = m is not None and None not in lanes
            self.detail_cache[detail] = (lanes[0], lanes[1], int(m.group(3))) if ok else None  # type: ignore
        parsed = self.detail_cache[detail]
        if parsed is None:
            return
        key = (e.get("pid"), *parsed)
        if name == "SET_FLAG":
            self.out.sets[key].append(start)
        else:
            self.out.waits[key].append(end)


def pack_sublanes(
    slices: list[dict[str, Any]], pid: int, base: int, color: str
) -> tuple[list[int], list[float]]:
    """Sorts ``slices`` by start (in place), puts each on the first sub-lane free by then
    (tid ``base + k``) of process ``pid``; returns each slice's tid and the start times."""
    starts = [e["ts"] for e in slices]
    if any(b < a for a, b in zip(starts, starts[1:])):
        slices.sort(key=lambda e: e["ts"])
        starts = [e["ts"] for e in slices]
    ends: list[float] = [float("-inf")]
    tids = []
    for e, ts in zip(slices, starts):
        end = ts + (e.get("dur") or 0.0)
        k = 0
        if ends[0] > ts + EPS:  # the main lane is busy: first free sub-lane, or a new one
            k = next((i for i in range(1, len(ends)) if ends[i] <= ts + EPS), len(ends))
            if k == len(ends):
                ends.append(end)
        ends[k] = end
        e["pid"], e["tid"], e["cname"] = pid, base + k, color
        tids.append(base + k)
    return tids, starts


def core_order(pid: Any, name: str) -> tuple:
    """Cores in cluster order, the cube core before its vector cores; anything else after."""
    m = _CORE.search(name)
    if m:
        return (0, int(m.group(1)), 0 if m.group(2) == "cube" else 1, int(m.group(3)), name)
    return (1, 0, 0, 0, name)


@dataclass
class _Lane:
    pid: int
    tids: list[int]
    slices: list[dict[str, Any]]
    starts: list[float]


def _layout(got: Collected, procs: dict[Any, str]) -> tuple[list[dict[str, Any]], dict, int]:
    """Assigns numeric pids/tids, packs sub-lanes, emits metadata; returns lanes by key."""
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
            tids, starts = pack_sublanes(slices, n, base, COLORS[lane])
            for tid in range(base, max(tids) + 1):
                name = lane if tid == base else f"{lane}#{tid - base}"
                meta.append({"name": "thread_name", "ph": "M", "pid": n, "tid": tid,
                             "args": {"name": f"{name} · {LABELS[lane]}"}})  # fmt: skip
                meta.append({"name": "thread_sort_index", "ph": "M", "pid": n, "tid": tid,
                             "args": {"sort_index": tid}})  # fmt: skip
                n_lanes += 1
            lanes[(raw, lane)] = _Lane(n, tids, slices, starts)
    return meta, lanes, n_lanes


def _flows(got: Collected, lanes: dict[tuple[Any, str], _Lane]) -> tuple[list[dict[str, Any]], int]:
    sets, waits = got.sets, got.waits
    flows: list[dict[str, Any]] = []
    skipped = 0
    for key in sorted(sets.keys() | waits.keys(), key=repr):  # deterministic arrow ids
        s_times, w_times = sorted(sets.get(key, ())), sorted(waits.get(key, ()))
        skipped += abs(len(s_times) - len(w_times))
        for t_set, t_wait in zip(s_times, w_times):
            arrow = _arrow(key, t_set, t_wait, lanes, len(flows) // 2 + 1)
            if arrow is None:
                skipped += 1
            else:
                flows.extend(arrow)
    return flows, skipped


def _arrow(key: tuple, t_set: float, t_wait: float, lanes: dict, flow_id: int) -> list[dict] | None:
    pid, src, dst, flag = key
    prod_lane, cons_lane = lanes.get((pid, src)), lanes.get((pid, dst))
    if prod_lane is None or cons_lane is None:
        return None
    i = bisect_right(prod_lane.starts, t_set + EPS) - 1
    j = bisect_left(cons_lane.starts, t_wait - EPS)
    if i < 0 or j >= len(cons_lane.starts):
        return None
    prod, cons = prod_lane.slices[i], cons_lane.slices[j]
    name = f"{src}→{dst} flag{flag}"
    mid = lambda e: e["ts"] + (e.get("dur") or 0.0) / 2  # noqa: E731 - binds inside the slice
    common = {"cat": "sync", "name": name, "id": flow_id, "pid": prod_lane.pid}
    return [
        {**common, "ph": "s", "tid": prod_lane.tids[i], "ts": mid(prod)},
        {**common, "ph": "f", "bp": "e", "tid": cons_lane.tids[j], "ts": mid(cons)},
    ]


def rebuild(raw: dict[str, Any] | list[Any], *, keep_scalar: bool = False) -> Clean:
    """Applies the rules above to a parsed TRACE payload (``{"traceEvents": [...]}`` or a list)."""
    events = raw.get("traceEvents", []) if isinstance(raw, dict) else raw
    keep = frozenset(LANES if keep_scalar else LANES[:-1])
    collector = _Collector(events, keep)
    got = collector.run(events)
    meta, lanes, n_lanes = _layout(got, collector.procs)
    flows, skipped = _flows(got, lanes)
    slices = [e for lane in lanes.values() for e in lane.slices]
    other = {"generator": "pypto.tools.clean_sim_trace", "skipped_flags": skipped}
    if isinstance(raw, dict):
        other["source_otherData"] = raw.get("otherData", {})
    trace = {"traceEvents": meta + slices + flows, "displayTimeUnit": "ns", "otherData": other}
    return Clean(trace, len(slices), n_lanes, len(flows) // 2, skipped)
