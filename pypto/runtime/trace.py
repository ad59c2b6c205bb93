"""Writing a recorded run as the op simulator's raw output (SPEC §9).

Per kernel launch: ``<root>/<kernel>/OPPROF_<timestamp>_<n>/simulator/visualize_data.bin``
(SOURCE blocks with the Python files the instructions came from, a TRACE block of
Chrome-trace JSON, an API_INSTR block of per-instruction metrics) plus the same trace as
``trace.json`` beside it, as the vendor's tool lays it out. Each simulated core of the
launch is one process (``core0.veccore0``, ``core0.cubecore0``, ...), each pipe one lane.

Built from the native record table in bulk: static instructions and flag details through
``np.unique``, counters through ``np.bincount``, one string template per event over
``tolist()`` columns — no per-event dicts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pypto import platforms
from pypto.platforms import Platform
from pypto.runtime.report import PIPES, RECORD_COLUMNS, InstrTrace, RunReport, TaskReport
from pypto.tools.opprof_format import API_INSTR, SOURCE, TRACE, pack_block

log = logging.getLogger(__name__)

# How the vendor spells pipes inside ``args.detail`` (PIPE_V is "VEC", PIPE_M is "M").
FLAG_PIPE_NAMES: tuple[str, ...] = ("MTE2", "MTE1", "M", "VEC", "FIX", "MTE3", "S")
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
_OP = (
    '{"name":%s,"ph":"X","pid":"%s","tid":"%s","ts":%r,"dur":%r,'
    '"args":{"instr":%s,"source_line":%s,"source":%s,"index":%d,"pc_addr":"%s","cycles":%d,"bytes":%d,'
    '"addr":%d}}'
)
_SYNC = (
    '{"name":"%s","ph":"X","pid":"%s","tid":"%s","ts":%r,"dur":%r,'
    '"args":{"detail":"%s","source_line":%s,"source":%s,"index":%d,"pc_addr":"%s","cycles":%d}}'
)


@dataclass
class CoreRecords:
    """The records of one simulated core in one launch, and their static-instruction codes."""

    pid: str
    trace: InstrTrace
    codes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def col(self, name: str) -> np.ndarray:
        return self.trace.raw["table"][:, _COL[name]]


@dataclass
class Sites:
    """Static instructions of a launch: one per distinct (name, source, pipe), numbered."""

    keys: list[tuple[str, str, int]] = field(default_factory=list)
    index: dict[tuple[str, str, int], int] = field(default_factory=dict)

    def code_of(self, key: tuple[str, str, int]) -> int:
        if key not in self.index:
            self.index[key] = len(self.keys)
            self.keys.append(key)
        return self.index[key]

    def codes(self, core: CoreRecords) -> np.ndarray:
        raw = core.trace.raw
        if len(raw["table"]) == 0:
            return np.empty(0, np.int64)
        key = (
            (raw["name_id"].astype(np.int64) << 40) | (raw["loc_id"].astype(np.int64) << 8) | core.col("pipe")
        )
        uniq, inverse = np.unique(key, return_inverse=True)
        strings = raw["strings"]
        local = [
            self.code_of((strings[k >> 40], strings[(k >> 8) & 0xFFFFFFFF], k & 0xFF)) for k in uniq.tolist()
        ]
        return np.asarray(local, dtype=np.int64)[inverse.reshape(-1)]

    def address(self, code: int) -> str:
        return f"0x{_PC_BASE + 4 * code:x}"


def core_pid(block: int, cube: bool) -> str:
    """Vendor-style core names: a cluster ``coreN`` holds one cube core and two vector cores."""
    return f"core{block}.cubecore0" if cube else f"core{block // 2}.veccore{block % 2}"


def _is_cube(task: TaskReport, cube_kernels: list[str] | None) -> bool:
    if cube_kernels is not None:
        return task.name in cube_kernels
    table = task.trace.raw["table"] if task.trace is not None else np.empty((0, len(RECORD_COLUMNS)))
    return bool(np.isin(table[:, _COL["pipe"]], _CUBE_PIPES).any())


def _details(core: CoreRecords) -> list[str]:
    """Per record: ``PIPE:<src>,TRIGGERPIPE:<dst>,FLAGID:<id>,`` for a flag, ``PIPE:<p>,`` for a
    barrier, ``""`` for an operation."""
    kind = core.col("kind")
    flag, barrier = (kind == 1) | (kind == 2), kind == 3
    pipe = np.where(barrier, core.col("pipe"), 0)
    src, dst, fid = (np.where(flag, core.col(c), 0) for c in ("flag_src", "flag_dst", "flag_id"))
    key = (((kind * 8 + pipe) * 8 + src) * 8 + dst) * 256 + fid
    uniq, inverse = np.unique(key, return_inverse=True)
    texts = []
    for k in uniq.tolist():
        f, d, s = k % 256, (k // 256) % 8, (k // 2048) % 8
        p, kd = (k // 16384) % 8, k // 131072
        if kd in (1, 2):
            texts.append(f"PIPE:{FLAG_PIPE_NAMES[s]},TRIGGERPIPE:{FLAG_PIPE_NAMES[d]},FLAGID:{f},")
        else:
            texts.append(f"PIPE:{FLAG_PIPE_NAMES[p]}," if kd == 3 else "")
    return [texts[i] for i in inverse.reshape(-1).tolist()]


def _events(core: CoreRecords, sites: Sites, us_per_cycle: float) -> list[str]:
    raw = core.trace.raw
    start = np.round(core.col("start") * us_per_cycle, 6)
    dur = np.round(np.round(core.col("end") * us_per_cycle, 6) - start, 6)
    jstr = [json.dumps(s) for s in raw["strings"]]
    pcs = [sites.address(i) for i in range(len(sites.keys))]
    pid, lanes, sync = core.pid, PIPES, SYNC_EVENT_NAMES
    cycles = (core.col("end") - core.col("start")).tolist()
    rows = zip(
        core.col("kind").tolist(), core.col("pipe").tolist(), start.tolist(), dur.tolist(),
        raw["name_id"].tolist(), raw["loc_id"].tolist(), core.col("index").tolist(), core.codes.tolist(),
        cycles, core.col("bytes").tolist(), core.col("addr").tolist(), _details(core),
    )  # fmt: skip
    return [
        _OP % (jstr[n], pid, lanes[p], t, d, jstr[n], jstr[s], jstr[s], i, pcs[pc], cy, b, a)
        if k == 0
        else _SYNC % (sync[k], pid, lanes[p], t, d, det, jstr[s], jstr[s], i, pcs[pc], cy)
        for k, p, t, d, n, s, i, pc, cy, b, a, det in rows
    ]


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


def trace_json(cores: list[CoreRecords], sites: Sites, clock_hz: float) -> str:
    """The TRACE payload: Chrome-trace JSON, timestamps in microseconds of simulated time."""
    us_per_cycle = 1e6 / clock_hz
    parts = _metadata([c.pid for c in cores])
    for core in cores:
        parts.extend(_events(core, sites, us_per_cycle))
    other = json.dumps({"generator": "pypto", "clock_hz": clock_hz, "time_unit": "us"})
    return '{"traceEvents":[' + ",".join(parts) + '],"displayTimeUnit":"ns","otherData":' + other + "}"


def _per_core(core: CoreRecords, n: int, repeat_bytes: int) -> dict[str, np.ndarray]:
    codes = core.codes
    nbytes = core.col("bytes").astype(np.float64)
    first = np.full(n, -1, dtype=np.int64)
    uniq, idx = np.unique(codes, return_index=True)
    first[uniq] = core.col("addr")[idx]
    return {
        "count": np.bincount(codes, minlength=n),
        "cycles": np.bincount(
            codes, weights=(core.col("end") - core.col("start")).astype(np.float64), minlength=n
        ),
        "bytes": np.bincount(codes, weights=nbytes, minlength=n),
        "capacity": np.bincount(codes, weights=np.ceil(nbytes / repeat_bytes) * repeat_bytes, minlength=n),
        "addr": first,
    }


def _stacked(sums: list[dict[str, np.ndarray]], key: str, n: int) -> np.ndarray:
    return np.stack([s[key] for s in sums], axis=1) if sums else np.zeros((n, 0))


def api_instr_json(cores: list[CoreRecords], sites: Sites, repeat_bytes: int) -> str:
    """The API_INSTR payload: one entry per static instruction, one counter per core."""
    n = len(sites.keys)
    sums = [_per_core(core, n, repeat_bytes) for core in cores]
    count = _stacked(sums, "count", n).astype(np.int64).tolist()
    cycles = _stacked(sums, "cycles", n).astype(np.int64).tolist()
    nbytes = _stacked(sums, "bytes", n)
    capacity = _stacked(sums, "capacity", n)
    util = np.where(capacity > 0, np.round(100.0 * nbytes / np.maximum(capacity, 1), 2), -1.0)
    util[[pipe != _VECTOR for _, _, pipe in sites.keys]] = -1.0  # utilisation of the vector unit only
    addr = _stacked(sums, "addr", n).astype(np.int64).tolist()
    instructions = [
        {
            "Address": sites.address(code),
            "Source": name,
            "AscendC Inner Code": loc,
            "Pipe": PIPES[pipe],
            "Instructions Executed": count[code],
            "Cycles": cycles[code],
            "Process Bytes": nbytes[code].astype(np.int64).tolist(),
            "Vector Utilization Percentage": util[code].tolist(),
            "Buffer Address": [f"0x{a:x}" if a >= 0 else "" for a in addr[code]],
        }
        for code, (name, loc, pipe) in enumerate(sites.keys)
    ]
    doc = {
        "Cores": [c.pid for c in cores],
        "Instructions": instructions,
        "Instructions Dtype": {"Instructions": _API_DTYPES},
    }
    return json.dumps(doc, separators=(",", ":"))


def _source_blocks(cores: list[CoreRecords]) -> list[bytes]:
    locs = {c.trace.raw["strings"][i] for c in cores for i in set(c.trace.raw["loc_id"].tolist())}
    files = sorted({loc.rsplit(":", 2)[0] for loc in locs if loc.count(":") >= 2})
    return [pack_block(SOURCE, Path(f).read_bytes(), path=f) for f in files if Path(f).is_file()]


def container(cores: list[CoreRecords], clock_hz: float, repeat_bytes: int = 256) -> tuple[bytes, str]:
    """``visualize_data.bin`` bytes of one launch, and its TRACE JSON (for ``trace.json``)."""
    sites = Sites()
    for core in cores:
        core.codes = sites.codes(core)
    trace = trace_json(cores, sites, clock_hz)
    api = api_instr_json(cores, sites, repeat_bytes)
    blocks = _source_blocks(cores) + [pack_block(TRACE, trace.encode()), pack_block(API_INSTR, api.encode())]
    return b"".join(blocks), trace


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


def _opprof_dir(root: Path, kernel: str, stamp: str, n: int) -> Path:
    for attempt in range(1000):
        suffix = f"_{attempt}" if attempt else ""
        sim = root / kernel / f"OPPROF_{stamp}_{n:03d}{suffix}" / "simulator"
        try:
            sim.mkdir(parents=True, exist_ok=False)
            return sim
        except FileExistsError:
            continue
    raise FileExistsError(f"no free OPPROF folder name under {root / kernel}")


def write_traces(
    report: RunReport,
    root: str | Path,
    *,
    cube_kernels: Iterable[str] | None = None,
    platform: Platform | None = None,
) -> list[str]:
    """Writes one OPPROF folder per recorded launch of ``report`` under ``root``; returns the
    ``visualize_data.bin`` paths (also appended to ``report.trace_paths``).

    ``cube_kernels`` names the AIC kernels (their cores are ``cubecore``s); by default a
    launch that used MTE1, CUBE or FIXPIPE counts as one. ``platform`` (default: the
    report's) gives the vector repeat size behind the utilisation figures."""
    root = Path(root)
    plat = platform or platforms.get(report.platform)
    stamp = datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]
    kinds = list(cube_kernels) if cube_kernels is not None else None
    paths = []
    for n, group in enumerate(launches(report.tasks)):
        cores = [CoreRecords(core_pid(t.core, _is_cube(t, kinds)), t.trace) for t in group if t.trace]
        data, trace = container(cores, report.clock_hz, int(plat.vector_repeat_bytes))
        sim = _opprof_dir(root, group[0].name, stamp, n)
        (sim / "visualize_data.bin").write_bytes(data)
        (sim / "trace.json").write_text(trace)
        paths.append(str(sim / "visualize_data.bin"))
        log.debug("wrote the trace of %s (%d cores) to %s", group[0].name, len(cores), sim)
    report.trace_paths.extend(paths)
    return paths
