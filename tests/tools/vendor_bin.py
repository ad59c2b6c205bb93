"""A vendor-style ``visualize_data.bin`` built by hand from the documented layout (docs/trace.md),
independently of pypto's writer: struct-packed 12-byte headers, 4-byte padding, a SOURCE
block with its 4096-byte path field, an unknown block kind, B/E flag slices, numeric-free
string pids and tids, noise lanes. Not a test module."""

from __future__ import annotations

import json
import struct

SET_DETAIL = "PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:0,"
BACK_DETAIL = "PIPE:VEC,TRIGGERPIPE:MTE3,FLAGID:1,"
VEC = "core0.veccore0"
CUBE = "core0.cubecore0"


def block(kind: int, payload: bytes, version: int = 0) -> bytes:
    pad = (4 - len(payload) % 4) % 4
    return struct.pack("<QBBBB", len(payload) + pad, kind, pad, version, 0x5A) + payload + b"\0" * pad


def x(name: str, pid: str, tid: str, ts: float, dur: float, **args) -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def flag(name: str, pid: str, tid: str, ts: float, end: float, detail: str) -> list[dict]:
    begin = {"name": name, "ph": "B", "pid": pid, "tid": tid, "ts": ts, "args": {"detail": detail}}
    return [begin, {"name": name, "ph": "E", "pid": pid, "tid": tid, "ts": end}]


def trace_events() -> list[dict]:
    """Two loads overlap on MTE2 (pipelined DMA); each feeds a VADD through flag 0; the
    second VADD feeds a store through flag 1. Plus scalar work and noise lanes."""
    return [
        x("thread_state_runnable", VEC, "CACHEMISS", 0.1, 0.2),
        x("JUMP", VEC, "FLOWCTRL", 0.2, 0.01),
        x("BAR", VEC, "ALL", 9.0, 0.01),
        x("MOV_XD_IMM", VEC, "SCALAR", 0.5, 0.01, pc_addr="0x10"),
        x("MOV_SRC_TO_DST_ALIGN", VEC, "MTE2", 1.0, 2.0, pc_addr="0x20", detail="a"),
        x("MOV_SRC_TO_DST_ALIGN", VEC, "MTE2", 1.5, 1.4, pc_addr="0x20", detail="b"),
        *flag("SET_FLAG", VEC, "MTE2", 3.0, 3.01, SET_DETAIL),
        *flag("WAIT_FLAG", VEC, "VECTOR", 0.9, 3.02, SET_DETAIL),
        x("VADD", VEC, "VECTOR", 3.05, 0.5, pc_addr="0x30"),
        *flag("SET_FLAG", VEC, "MTE2", 3.51, 3.52, SET_DETAIL),
        *flag("WAIT_FLAG", VEC, "VECTOR", 3.56, 3.6, SET_DETAIL),
        x("VADD", VEC, "VECTOR", 3.6, 0.5, pc_addr="0x30"),
        {
            "name": "SET_FLAG",
            "ph": "X",
            "pid": VEC,
            "tid": "VECTOR",
            "ts": 4.1,
            "dur": 0.01,
            "args": {"detail": BACK_DETAIL},
        },  # fmt: skip
        {
            "name": "WAIT_FLAG",
            "ph": "X",
            "pid": VEC,
            "tid": "MTE3",
            "ts": 0.5,
            "dur": 3.65,
            "args": {"detail": BACK_DETAIL},
        },  # fmt: skip
        x("MOV_UB_TO_OUT", VEC, "MTE3", 4.2, 1.0, pc_addr="0x40"),
        x("MMAD", CUBE, "CUBE", 1.0, 1.0, pc_addr="0x50"),
        *flag("SET_FLAG", VEC, "VECTOR", 6.0, 6.01, "PIPE:VEC,TRIGGERPIPE:MTE2,FLAGID:3,"),  # no consumer
    ]


def api_instr() -> dict:
    return {
        "Cores": [CUBE, VEC],
        "Instructions": [
            {"Address": "0x20", "Source": "MOV_SRC_TO_DST_ALIGN", "Pipe": "MTE2", "Cycles": [0, 740],
             "Instructions Executed": [0, 2], "Vector Utilization Percentage": [-1, -1]},
            {"Address": "0x30", "Source": "VADD", "Pipe": "VECTOR", "Cycles": [0, 185],
             "Instructions Executed": [0, 2], "Vector Utilization Percentage": [-1, 12.5]},
        ],
        "Instructions Dtype": {"Instructions": {"Cycles": 1, "Vector Utilization Percentage": 2}},
    }  # fmt: skip


def vendor_bin(*, with_trace: bool = True, with_api: bool = True) -> bytes:
    source = b"/home/me/add_custom.cpp".ljust(4096, b"\0") + b"int main() {}\n"
    parts = [block(1, source), block(9, b'{"whatever": 1}')]
    if with_trace:
        trace = {"traceEvents": trace_events(), "profilingType": "op"}
        parts.append(block(2, json.dumps(trace).encode()))
    if with_api:
        parts.append(block(4, json.dumps(api_instr()).encode(), version=0x5A))
    return b"".join(parts)
