"""Writing a recorded run as the op simulator's raw output (SPEC §9).

Per kernel launch: ``<root>/<kernel>/OPPROF_<timestamp>_<n>/simulator/visualize_data.bin``
(SOURCE blocks with the Python files the instructions came from, a TRACE block of
Chrome-trace JSON, an API_INSTR block of per-instruction metrics) plus the same trace as
``trace.json`` beside it, as the vendor's tool lays it out. Each simulated core of the
launch is one process (``core0.veccore0``, ``core0.cubecore0``, ...), each pipe one lane.

Everything here is built from the recorded numpy columns in bulk: one string template per
event over ``tolist()`` columns, aggregates with ``np.bincount`` — no per-event dicts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pypto import platforms
from pypto.platforms import Platform
from pypto.runtime.report import PIPES, RunReport, TaskReport
from pypto.tools.opprof_format import API_INSTR, SOURCE, TRACE, pack_block

log = logging.getLogger(__name__)

# How the vendor spells pipes inside ``args.detail`` (PIPE_V is "VEC", PIPE_M is "M").
FLAG_PIPE_NAMES: tuple[str, ...] = ("MTE2", "MTE1", "M", "VEC", "FIX", "MTE3", "S")
SYNC_EVENT_NAMES = {1: "SET_FLAG", 2: "WAIT_FLAG", 3: "BAR"}
_CUBE_PIPES = (PIPES.index("MTE1"), PIPES.index("CUBE"), PIPES.index("FIXPIPE"))
_VECTOR = PIPES.index("VECTOR")
_PC_BASE = 0x10000
# MindStudio Insight column kinds: 1 int, 2 float, 3 string (lists of them per core).
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
    '"args":{"instr":%s,"source":%s,"index":%d,"pc_addr":"%s","cycles":%d,"bytes":%d,"addr":%d}}'
)
_SYNC = (
    '{"name":"%s","ph":"X","pid":"%s","tid":"%s","ts":%r,"dur":%r,'
    '"args":{"detail":"%s","source":%s,"index":%d,"pc_addr":"%s","cycles":%d}}'
)


@dataclass
class CoreRecords:
    """The records of one simulated core in one launch."""

    pid: str
    columns: dict[str, Any]


@dataclass
class Sites:
    """Static instructions: one per distinct (name, source, pipe); ``code`` maps each record."""

    keys: list[tuple[str, str, int]]
    index: dict[tuple[str, str, int], int]

    def codes(self, columns: dict[str, Any]) -> np.ndarray:
        keys = zip(columns["name"], columns["loc"], columns["pipe"].tolist())
        index = self.index
        out = []
        for key in keys:
            code = index.get(key)
            if code is None:
                code = index[key] = len(self.keys)
                self.keys.append(key)
            out.append(code)
        return np.asarray(out, dtype=np.int64)

    def address(self, code: int) -> str:
        return f"0x{_PC_BASE + 4 * code:x}"


def core_pid(block: int, cube: bool) -> str:
    """Vendor-style core names: a cluster ``coreN`` holds one cube core and two vector cores."""
    return f"core{block}.cubecore0" if cube else f"core{block // 2}.veccore{block % 2}"


def _is_cube(task: TaskReport, cube_kernels: Iterable[str] | None) -> bool:
    if cube_kernels is not None:
        return task.name in set(cube_kernels)
    pipes = task.trace.columns["pipe"] if task.trace is not None else np.empty(0)
    return bool(np.isin(pipes, _CUBE_PIPES).any())


def _events(core: CoreRecords, codes: np.ndarray, sites: Sites, us_per_cycle: float) -> list[str]:
    c = core.columns
    start = np.round(c["start"] * us_per_cycle, 6)
    dur = np.round(np.round(c["end"] * us_per_cycle, 6) - start, 6)
    jname = {n: json.dumps(n) for n in set(c["name"])}
    jloc = {s: json.dumps(s) for s in set(c["loc"])}
    pcs = [sites.address(i) for i in range(len(sites.keys))]
    detail = _details(c)
    pid, lanes = core.pid, PIPES
    cycles = (c["end"] - c["start"]).tolist()
    rows = zip(
        c["kind"].tolist(), c["pipe"].tolist(), start.tolist(), dur.tolist(), c["name"], c["loc"],
        c["index"].tolist(), codes.tolist(), cycles, c["bytes"].tolist(), c["addr"].tolist(), detail,
    )  # fmt: skip
    return [
        _OP % (jname[n], pid, lanes[p], t, d, jname[n], jloc[s], i, pcs[pc], cy, b, a)
        if k == 0
        else _SYNC % (SYNC_EVENT_NAMES[k], pid, lanes[p], t, d, det, jloc[s], i, pcs[pc], cy)
        for k, p, t, d, n, s, i, pc, cy, b, a, det in rows
    ]


def _details(c: dict[str, Any]) -> list[str]:
    """``PIPE:<src>,TRIGGERPIPE:<dst>,FLAGID:<id>,`` for flags, ``PIPE:<pipe>,`` for barriers."""
    table: dict[tuple[int, int, int, int], str] = {}
    out = []
    rows = zip(c["kind"].tolist(), c["pipe"].tolist(), c["flag_src"].tolist(), c["flag_dst"].tolist(),
               c["flag_id"].tolist())  # fmt: skip
    for key in rows:
        text = table.get(key)
        if text is None:
            kind, pipe, src, dst, fid = key
            if kind in (1, 2):
                text = f"PIPE:{FLAG_PIPE_NAMES[src]},TRIGGERPIPE:{FLAG_PIPE_NAMES[dst]},FLAGID:{fid},"
            else:
                text = f"PIPE:{FLAG_PIPE_NAMES[pipe]}," if kind == 3 else ""
            table[key] = text
        out.append(text)
    return out


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


def trace_json(cores: list[CoreRecords], all_codes: list[np.ndarray], sites: Sites, clock_hz: float) -> str:
    """The TRACE payload: Chrome-trace JSON, timestamps in microseconds of simulated time."""
    us_per_cycle = 1e6 / clock_hz
    parts = _metadata([c.pid for c in cores])
    for core, codes in zip(cores, all_codes):
        parts.extend(_events(core, codes, sites, us_per_cycle))
    other = json.dumps({"generator": "pypto", "clock_hz": clock_hz, "time_unit": "us"})
    return '{"traceEvents":[' + ",".join(parts) + '],"displayTimeUnit":"ns","otherData":' + other + "}"


def _per_core_sums(codes: np.ndarray, n: int, c: dict[str, Any], repeat_bytes: int) -> dict[str, np.ndarray]:
    bytes_ = c["bytes"].astype(np.float64)
    repeats = np.ceil(bytes_ / repeat_bytes) * repeat_bytes
    first = np.full(n, -1, dtype=np.int64)
    uniq, idx = np.unique(codes, return_index=True)
    first[uniq] = c["addr"][idx]
    return {
        "count": np.bincount(codes, minlength=n),
        "cycles": np.bincount(codes, weights=(c["end"] - c["start"]).astype(np.float64), minlength=n),
        "bytes": np.bincount(codes, weights=bytes_, minlength=n),
        "lanes": np.bincount(codes, weights=repeats, minlength=n),
        "addr": first,
    }


def api_instr_json(
    cores: list[CoreRecords], all_codes: list[np.ndarray], sites: Sites, repeat_bytes: int
) -> str:
    """The API_INSTR payload: one entry per static instruction, counters per core."""
    n = len(sites.keys)
    sums = [_per_core_sums(codes, n, core.columns, repeat_bytes) for core, codes in zip(cores, all_codes)]
    count = np.stack([s["count"] for s in sums], axis=1).tolist() if sums else []
    cycles = np.stack([s["cycles"] for s in sums], axis=1).astype(np.int64).tolist() if sums else []
    nbytes = np.stack([s["bytes"] for s in sums], axis=1).astype(np.int64).tolist() if sums else []
    util = _vector_util(sums, sites) if sums else []
    addr = np.stack([s["addr"] for s in sums], axis=1).tolist() if sums else []
    instructions = [
        {
            "Address": sites.address(code),
            "Source": name,
            "AscendC Inner Code": loc,
            "Pipe": PIPES[pipe],
            "Instructions Executed": count[code],
            "Cycles": cycles[code],
            "Process Bytes": nbytes[code],
            "Vector Utilization Percentage": util[code],
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


def _vector_util(sums: list[dict[str, np.ndarray]], sites: Sites) -> list[list[float]]:
    """Bytes processed over the bytes the issued vector repeats could hold, in percent."""
    used = np.stack([s["bytes"] for s in sums], axis=1)
    lanes = np.stack([s["lanes"] for s in sums], axis=1)
    pct = np.where(lanes > 0, np.round(100.0 * used / np.maximum(lanes, 1), 2), -1.0)
    is_vec = np.array([pipe == _VECTOR for _, _, pipe in sites.keys], dtype=bool)
    pct[~is_vec] = -1.0
    return pct.tolist()


def _source_blocks(cores: list[CoreRecords]) -> list[bytes]:
    locs = {loc for c in cores for loc in set(c.columns["loc"])}
    files = sorted({loc.rsplit(":", 2)[0] for loc in locs if loc.count(":") >= 2})
    blocks = []
    for f in files:
        path = Path(f)
        if path.is_file():
            blocks.append(pack_block(SOURCE, path.read_bytes(), path=str(path)))
    return blocks


def container(cores: list[CoreRecords], clock_hz: float, repeat_bytes: int = 256) -> tuple[bytes, str]:
    """``visualize_data.bin`` bytes of one launch, and its TRACE JSON (for ``trace.json``)."""
    sites = Sites([], {})
    codes = [sites.codes(c.columns) for c in cores]
    trace = trace_json(cores, codes, sites, clock_hz)
    api = api_instr_json(cores, codes, sites, repeat_bytes)
    blocks = _source_blocks(cores) + [pack_block(TRACE, trace.encode()), pack_block(API_INSTR, api.encode())]
    return b"".join(blocks), trace


def _launches(tasks: list[TaskReport]) -> list[list[TaskReport]]:
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
    base = root / kernel
    for attempt in range(1000):
        suffix = f"_{attempt}" if attempt else ""
        sim = base / f"OPPROF_{stamp}_{n:03d}{suffix}" / "simulator"
        try:
            sim.mkdir(parents=True, exist_ok=False)
            return sim
        except FileExistsError:
            continue
    raise FileExistsError(f"no free OPPROF folder name under {base}")


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
    paths = []
    kinds = list(cube_kernels) if cube_kernels is not None else None
    for n, group in enumerate(_launches(report.tasks)):
        cores = [CoreRecords(core_pid(t.core, _is_cube(t, kinds)), t.trace.columns) for t in group]
        data, trace = container(cores, report.clock_hz, int(plat.vector_repeat_bytes))
        sim = _opprof_dir(root, group[0].name, stamp, n)
        (sim / "visualize_data.bin").write_bytes(data)
        (sim / "trace.json").write_text(trace)
        paths.append(str(sim / "visualize_data.bin"))
        log.debug("wrote the trace of %s (%d cores) to %s", group[0].name, len(cores), sim)
    report.trace_paths.extend(paths)
    return paths
