"""Calling the native trace cleaner on hand-made events (shared by the tools tests; not a test
module)."""

from __future__ import annotations

import json

from pypto import _native


def clean(payload: bytes | str, keep_scalar: bool = False) -> tuple[dict, dict]:
    data = payload.encode() if isinstance(payload, str) else payload
    out, stats = _native.clean_trace(data, keep_scalar, "SOURCE")
    return json.loads(out), stats


def events(*evs: dict) -> str:
    return json.dumps({"traceEvents": list(evs)})


def x(name: str, ts, dur=1.0, pid="core0.veccore0", tid="VECTOR", **extra) -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, **extra}


def flag(name: str, ts: float, detail: str, tid: str, dur: float = 0.01, pid="core0.veccore0") -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {"detail": detail}}


def kept(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def arrows(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("cat") == "sync"]
