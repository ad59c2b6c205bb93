"""JSON for big traces: ``orjson`` when it is installed (several times faster on a
million-event trace), the standard library otherwise — same documents either way."""

from __future__ import annotations

import json
from typing import Any

try:  # optional accelerator, never required
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

BACKEND = "orjson" if _orjson is not None else "json"


def loads(data: bytes | str) -> Any:
    """Parses JSON; errors are ``ValueError`` subclasses with both backends."""
    return _orjson.loads(data) if _orjson is not None else json.loads(data)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON."""
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
