"""Writing a recorded run as the op simulator's raw output (docs/trace.md).

Per kernel: ``<root>/<kernel>/OPPROF_<timestamp>_<n>/simulator/visualize_data.bin`` (SOURCE
blocks with the Python files the instructions came from, a TRACE block of Chrome-trace JSON, an
API_INSTR block of per-instruction metrics) and, on request (``json_copy=True``), the TRACE
block again as a plain ``trace.json`` beside it, as the vendor's tool lays it out. The container
holds every launch of the kernel, each at its offset from the earliest (a decode launches a kernel
thousands of times: a folder and a copy of the sources a launch made 700 MB of files). Each
simulated core is one process (``core0.veccore0``, ``core0.cubecore0``, ...), each pipe one
lane.

The events are formatted and both files written in C++ (``_native.write_trace``, from the
records table the run returned), which also numbers the static instructions and writes their
totals per core as the API_INSTR block (a decode writes thousands of short launches: in Python
that block had been a quarter of a traced call) and the arrows from each tile push to its pop
(``pipe_flows`` pairs them; as JSON made in Python they had been two thirds of a traced
FlashAttention call); this module adds the metadata and the SOURCE blocks, and the text around
the block's entries.

Time unit: one simulated cycle is one nanosecond of trace time (``ts``/``dur`` are Chrome-trace
microseconds: the decimal ``cycles / 1000``, or the next double up where that decimal reads
back a hair low), so viewers that keep integer nanoseconds — truncating or
rounding — hold every cycle boundary exactly; ``otherData`` records the platform clock for
converting to real time.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pypto import platforms
from pypto.hardware import FLAG_PIPE_NAMES  # AscendC's spellings, as traces use
from pypto.platforms import Platform
from pypto.report.opprof_format import SOURCE, pack_block
from pypto.report.progress import progress
from pypto.report.run_report import PIPES, RECORD_COLUMNS, InstrTrace, RunReport, TaskReport

log = logging.getLogger(__name__)

# How the vendor spells pipes inside ``args.detail`` (PIPE_V is "VEC", PIPE_M is "M").

SYNC_EVENT_NAMES = ("", "SET_FLAG", "WAIT_FLAG", "BAR")
_COL = {name: i for i, name in enumerate(RECORD_COLUMNS)}
_CUBE_PIPES = (PIPES.index("MTE1"), PIPES.index("CUBE"), PIPES.index("FIXPIPE"))
_VECTOR = PIPES.index("VECTOR")
_PC_BASE = 0x10000
# MindStudio Insight column kinds: 1 int, 2 float, 3 string (lists of them: one per core).
_API_DTYPES = {
    "Address": 3,
    "Source": 3,
    "AscendC Inner Code": 3,
    "Pipe": 3,
    "Instructions Executed": 1,
    "Cycles": 1,
    "Process Bytes": 1,
    "Vector Utilization Percentage": 2,
    "Buffer Address": 3,
}


@dataclass
class CoreRecords:
    """The records of one simulated core in one launch, ``offset`` cycles after the time 0 of
    the container holding them (its kernel's earliest launch)."""

    pid: str
    trace: InstrTrace
    offset: int = 0


def core_pid(block: int, cube: bool) -> str:
    """Vendor-style core names: a cluster ``coreN`` holds one cube core and two vector cores."""
    return f"core{block}.cubecore0" if cube else f"core{block // 2}.veccore{block % 2}"


def _is_cube(task: TaskReport, cube_kernels: list[str] | None) -> bool:
    if task.cluster is not None:  # a core of a cluster task knows its kind
        return task.core_type == "AIC"
    if cube_kernels is not None:
        return task.name in cube_kernels
    pipe = task.trace.by_column[_COL["pipe"]] if task.trace is not None else np.empty(0, np.int64)
    return bool(np.isin(pipe, _CUBE_PIPES).any())


def _meta(name: str, pid: str, args: dict[str, Any], tid: str | None = None) -> str:
    event: dict[str, Any] = {"name": name, "ph": "M", "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return json.dumps(event)


def _metadata(pids: list[str]) -> list[str]:
    meta = []
    for n, pid in enumerate(pids):
        meta += [
            _meta("process_name", pid, {"name": pid}),
            _meta("process_sort_index", pid, {"sort_index": n}),
        ]
        for i, lane in enumerate(PIPES):
            meta.append(_meta("thread_name", pid, {"name": lane}, lane))
            meta.append(_meta("thread_sort_index", pid, {"sort_index": i}, lane))
    return meta


def _shared(cache: dict, key: tuple, make: Callable[..., Any], *args: Any) -> Any:
    """``make(*args)``, once per ``key`` in ``cache``: what the containers of one run repeat
    (their source files, encoded strings, metadata) is made once (write_container)."""
    if key not in cache:
        cache[key] = make(*args)
    return cache[key]


def pipe_flows(cores: list[CoreRecords], places: list[tuple[int, int, int] | None]) -> np.ndarray:
    """The arrows from each tile push to the pop that received it, over a container's ``cores``:
    on each route of a cluster in one launch (from core, to core, pipe id: the flag columns of
    TPUSH and TPOP) the k-th push pairs with the k-th pop. As the native writer takes them: per
    arrow a row for its push, then one for its pop — id (from 1, launch by launch), tile pipe id,
    core entry, lane (pipe), cycles from the container's time 0, 0 at the push and 1 at the pop.
    ``places``: each core's (launch, cluster, number in the cluster), None for a core of a launch
    without tile pipes."""
    ends = [_pipe_ends(core, place, k) for k, (core, place) in enumerate(zip(cores, places)) if place]
    found = [e for e in ends if len(e)]
    if not found:
        return np.zeros((0, 6), np.int64)
    # columns: launch, cluster, from, to, pipe id, is push, entry, lane, cycles; in container order
    e = np.concatenate(found)
    e = e[np.lexsort(e[:, 5::-1].T)]  # by route, pops before pushes, each in container order (stable)
    new_group = np.r_[True, np.any(e[1:, :6] != e[:-1, :6], axis=1)]
    starts = np.flatnonzero(new_group)
    rank = np.arange(len(e)) - starts[np.cumsum(new_group) - 1]
    route = np.cumsum(np.r_[True, np.any(e[1:, :5] != e[:-1, :5], axis=1)])
    key = route * (len(e) + 1) + rank  # (route, k): ascending among the pops, and the pushes
    push = e[:, 5] == 1
    pop_keys = key[~push]
    at = np.searchsorted(pop_keys, key[push])
    paired = at < len(pop_keys)
    paired[paired] = pop_keys[at[paired]] == key[push][paired]
    pushes, pops = e[push][paired], e[~push][at[paired]]
    n = len(pushes)
    out = np.empty((2 * n, 6), np.int64)
    out[0::2, 0] = out[1::2, 0] = np.arange(1, n + 1)
    out[0::2, 1] = out[1::2, 1] = pushes[:, 4]
    out[0::2, 2:5], out[1::2, 2:5] = pushes[:, 6:9], pops[:, 6:9]
    out[0::2, 5], out[1::2, 5] = 0, 1
    return out


def _pipe_ends(core: CoreRecords, place: tuple[int, int, int], entry: int) -> np.ndarray:
    """A core's ends of tile pipes: its pushes (from it) and pops (to it) as rows of launch,
    cluster, from, to, pipe id, is push, entry, lane, cycles (see pipe_flows), in record order."""
    raw = core.trace.raw
    names = raw["strings"]
    pushes, pops = (
        np.array([i for i, n in enumerate(names) if n == op], np.int32) for op in ("TPUSH", "TPOP")
    )
    if not len(pushes) and not len(pops):
        return np.zeros((0, 9), np.int64)
    is_push = np.isin(raw["name_id"], pushes)
    keep = np.flatnonzero(is_push | np.isin(raw["name_id"], pops))  # a long trace stays cheap
    rows = raw["table"][keep][:, [_COL[c] for c in ("flag_src", "flag_dst", "flag_id", "pipe", "start")]]
    is_push = is_push[keep]
    mine = np.where(is_push, rows[:, 0], rows[:, 1]) == place[2]  # its own end of each
    rows, is_push = rows[mine], is_push[mine]
    out = np.empty((len(rows), 9), np.int64)
    out[:, 0:2], out[:, 2:5], out[:, 5] = place[:2], rows[:, :3], is_push
    out[:, 6], out[:, 7], out[:, 8] = entry, rows[:, 3], rows[:, 4] + core.offset
    return out


def _place(launch: int, t: TaskReport) -> tuple[int, int, int]:
    """A cluster kernel's task: (launch, cluster, number in the cluster: 0 the AIC, 1 and 2 its
    AIVs), as the flag columns of its tile pipe ops number its cores."""
    return (launch, t.core, 0) if t.core_type == "AIC" else (launch, t.core // 2, 1 + t.core % 2)


def _layout(pids: list[str], clock_hz: float, repeat_bytes: int, cache: dict) -> dict[str, Any]:
    other = {
        "generator": "pypto",
        "clock_hz": clock_hz,
        "time_unit": "cycle",
        "time_scale": "1 trace ns = 1 simulated cycle",
    }
    columns = ("kind", "pipe", "start", "end", "bytes", "addr", "flag_src", "flag_dst", "flag_id")
    return {
        "columns": [_COL[c] for c in columns],
        "lanes": list(PIPES),
        "flag_pipes": list(FLAG_PIPE_NAMES),
        "sync_names": list(SYNC_EVENT_NAMES),
        "repeat_bytes": repeat_bytes,
        "pc_base": _PC_BASE,
        "head": '{"traceEvents":[' + ",".join(_shared(cache, ("metadata", *pids), _metadata, pids)),
        "tail": '],"displayTimeUnit":"ns","otherData":' + json.dumps(other) + "}",
        # The API_INSTR block (per static instruction, one figure per core), written natively.
        "api_head": '{"Cores":' + json.dumps(pids, separators=(",", ":")) + ',"Instructions":[',
        "api_tail": "]," + _API_DTYPES_JSON[1:],
        "vector_pipe": _VECTOR,
    }


_API_DTYPES_JSON = json.dumps({"Instructions Dtype": {"Instructions": _API_DTYPES}}, separators=(",", ":"))


def _used_locations(cores: list[CoreRecords]) -> set[str]:
    """The source lines the cores' records name: per distinct string table, the ids its cores
    use (a decode's thousands of launches share a few tables: one count per table)."""
    by_table: dict[tuple[str, ...], list[np.ndarray]] = {}
    for c in cores:
        raw = c.trace.raw
        by_table.setdefault(tuple(raw["strings"]), []).append(raw["loc_id"])
    used: set[str] = set()
    for strings, ids in by_table.items():
        counts = np.bincount(np.concatenate(ids), minlength=len(strings))
        used.update(strings[i] for i in np.flatnonzero(counts).tolist())
    return used


def _source_blocks(cores: list[CoreRecords], cache: dict) -> list[bytes]:
    locs = _used_locations(cores)
    files = sorted({loc.rsplit(":", 2)[0] for loc in locs if loc.count(":") >= 2})

    def block(f: str) -> bytes | None:
        return pack_block(SOURCE, Path(f).read_bytes(), path=f) if Path(f).is_file() else None

    found = [_shared(cache, ("source", f), block, f) for f in files]
    return [b for b in found if b is not None]


def _json_strings(strings: list[str], cache: dict) -> list[str]:
    """A record table's interned strings as JSON string literals (the kernels of a run share
    them: encoded once per run, not once per launch)."""
    return _shared(cache, ("strings", *strings), lambda: [json.dumps(s) for s in strings])


def write_container(
    cores: list[CoreRecords],
    sim: Path | str,
    clock_hz: float,
    repeat_bytes: int = 256,
    flows: np.ndarray | None = None,
    json_copy: bool = False,
    cache: dict | None = None,
) -> Path:
    """``visualize_data.bin`` of a kernel's launches in the folder ``sim`` (and ``trace.json``
    when ``json_copy``): ``cores``, each launch's cores in turn, each at its offset from the
    container's time 0; a core of several launches is one process, its totals summed.
    ``flows``: the tile pipes' arrows (``pipe_flows``' rows, their entries indexing ``cores``).
    ``cache``: what the containers of one run share (source files read, strings encoded), kept
    between them."""
    from pypto import _native

    cache = {} if cache is None else cache
    pids = list(dict.fromkeys(c.pid for c in cores))  # each core once, in order of first use
    slot = {pid: k for k, pid in enumerate(pids)}
    native_cores = [
        (c.pid, c.trace.raw, _json_strings(c.trace.raw["strings"], cache), c.offset, slot[c.pid])
        for c in cores
    ]
    prefix = b"".join(_source_blocks(cores, cache))
    layout = _shared(
        cache, ("layout", clock_hz, repeat_bytes, *pids), _layout, pids, clock_hz, repeat_bytes, cache
    )
    if flows is not None and len(flows):
        layout = {**layout, "flows": flows}
    bin_path = os.path.join(sim, "visualize_data.bin")
    json_path = os.path.join(sim, "trace.json") if json_copy else ""
    _native.write_trace(native_cores, layout, prefix, json_path, bin_path)
    return Path(bin_path)


def flag_pairs(ev: dict[str, np.ndarray]) -> np.ndarray:
    """(set, wait) index pairs of the columns ``kind``, ``start``, ``core``, ``fsrc``, ``fdst``,
    ``fid`` (a flag's pipes and id; ``fid`` -1: none): each wait takes the earliest set of its
    flag (same core, pipes and id) still unclaimed by its start, as a queue would; a wait with
    none is skipped.

    Per flag, in time order (a set before a wait of the same cycle): with S sets and W waits
    so far, the waits left unpaired so far are U = max(0, max(W - S)) (a wait goes unpaired
    exactly when it raises that maximum), so the k-th paired wait takes the k-th set."""
    sync = np.nonzero(((ev["kind"] == 1) | (ev["kind"] == 2)) & (ev["fid"] >= 0))[0]
    if not len(sync):
        return np.zeros((0, 2), np.int64)
    flag = np.stack([ev[k][sync] for k in ("core", "fsrc", "fdst", "fid")])
    _, group = np.unique(flag, axis=1, return_inverse=True)
    group = group.ravel()
    order = np.lexsort((ev["kind"][sync] != 1, ev["start"][sync], group))
    sync, group = sync[order], group[order]
    is_set = ev["kind"][sync] == 1
    first = np.r_[True, group[1:] != group[:-1]]
    base = np.maximum.accumulate(np.where(first, np.arange(len(group)), 0))

    def running(x: np.ndarray) -> np.ndarray:  # inclusive count within each flag's run
        c = np.cumsum(x)
        return c - (c[base] - x[base])

    sets, waits = running(is_set), running(~is_set)
    big = 2 * len(group) + 2  # above any W - S: a new flag's values exceed every earlier one
    reach = (
        np.maximum.accumulate(np.where(is_set, 0, np.maximum(waits - sets, 0)) + group * big) - group * big
    )
    before = np.where(first, 0, np.r_[0, reach[:-1]])
    paired = ~is_set & (waits - sets <= before)
    rank = running(paired)
    set_key = (group * big + sets)[is_set]
    wait_key = (group * big + rank)[paired]
    return np.stack([sync[is_set][np.searchsorted(set_key, wait_key)], sync[paired]], axis=1)


def launches(tasks: list[TaskReport]) -> list[list[TaskReport]]:
    """Blocks of one launch are consecutive task reports with the same kernel and start."""
    groups: list[list[TaskReport]] = []
    for t in tasks:
        if t.trace is None:
            continue
        if groups and groups[-1][0].name == t.name and groups[-1][0].start == t.start:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def kernel_launches(tasks: list[TaskReport]) -> dict[str, list[list[TaskReport]]]:
    """Each traced kernel's launches (``launches``), the kernels in the order of their first
    launch: the containers ``write_traces`` writes, one a kernel."""
    by_kernel: dict[str, list[list[TaskReport]]] = {}
    for group in launches(tasks):
        by_kernel.setdefault(group[0].name, []).append(group)
    return by_kernel


def _opprof_dir(root: Path, kernel: str, stamp: str, n: int) -> str:
    """A new ``OPPROF_<stamp>_<n>[_k]/simulator`` folder under ``root / kernel``."""
    folder = os.path.join(root, kernel)
    os.makedirs(folder, exist_ok=True)
    for attempt in range(1000):
        suffix = f"_{attempt}" if attempt else ""
        opprof = os.path.join(folder, f"OPPROF_{stamp}_{n:03d}{suffix}")
        try:
            os.mkdir(opprof)
        except FileExistsError:
            continue
        sim = os.path.join(opprof, "simulator")
        os.mkdir(sim)
        return sim
    raise FileExistsError(f"no free OPPROF folder name under {folder}")


def write_traces(
    report: RunReport,
    root: str | Path,
    *,
    cube_kernels: Iterable[str] | None = None,
    platform: Platform | None = None,
    json_copy: bool = False,
) -> list[str]:
    """Writes one OPPROF folder per traced kernel of ``report`` under ``root``, holding every
    launch of it; returns the ``visualize_data.bin`` paths (also appended to
    ``report.trace_paths``). ``json_copy``: also each container's ``trace.json`` (the TRACE
    block as a plain file, for JSON readers).

    A container's time 0 is its kernel's earliest launch; each other launch sits at its
    start's offset from it, as on the run's time axis. ``cube_kernels`` names the AIC kernels (their
    cores are ``cubecore``s); by default a launch that used MTE1, CUBE or FIXPIPE counts as
    one. ``platform`` (default: the report's) gives the vector repeat size behind the
    utilisation figures."""
    root = Path(root)
    plat = platform or platforms.get(report.platform)
    repeat = int(plat.vector_repeat_bytes)
    stamp = datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]
    kinds = list(cube_kernels) if cube_kernels is not None else None
    paths = []
    cache: dict = {}  # what the containers share: write_container
    by_kernel = kernel_launches(report.tasks)
    with progress("writing traces", len(by_kernel), "kernel") as done:
        for n, (kernel, groups) in enumerate(by_kernel.items()):
            origin = min(group[0].start for group in groups)  # its earliest launch
            cores: list[CoreRecords] = []
            places: list[tuple[int, int, int] | None] = []  # pipe_flows'
            for k, group in enumerate(groups):
                traced = [t for t in group if t.trace]
                cores += [
                    CoreRecords(core_pid(t.core, _is_cube(t, kinds)), t.trace, t.start - origin)
                    for t in traced
                    if t.trace  # (for the type checker: all are)
                ]
                cluster = len({t.core_type for t in traced}) == 2  # an AIC and AIVs: tile pipes between them
                places += [_place(k, t) if cluster else None for t in traced]
            sim = _opprof_dir(root, kernel, stamp, n)
            flows = pipe_flows(cores, places)
            paths.append(str(write_container(cores, sim, report.clock_hz, repeat, flows, json_copy, cache)))
            log.debug("wrote the trace of %s (%d launches) to %s", kernel, len(groups), sim)
            done.update()
    report.trace_paths.extend(paths)
    return paths
