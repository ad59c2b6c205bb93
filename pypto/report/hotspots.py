"""Hot spots by Python source line: where a run's instruction cycles went.

One row per (source line, pipe): the cycles its instructions kept that pipe busy, how many
ran, and their share of every instruction cycle of the run. Flag and barrier slices are not
work and are left out. The report (print and JSON) and the timeline page both build their
table here, from the columns of the instruction records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pypto.hardware import PIPES
from pypto.report.run_report import RECORD_COLUMNS

NO_LINE = "(no source line)"  # instructions of a hand-written kernel carry no location


@dataclass(frozen=True)
class HotLine:
    source: str  # file:line:col
    pipe: str
    cycles: int
    count: int  # instructions executed
    share: float  # of all instruction cycles of the run, in [0, 1]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LineCycles:
    """One chunk of operations: ``loc`` indexes ``strings``; ``cycles`` per entry, an entry
    being one instruction or, with ``count``, that many instructions' sum."""

    strings: Sequence[str]
    loc: np.ndarray
    pipe: np.ndarray
    cycles: np.ndarray
    count: np.ndarray | None = None
    summed: bool = False  # each (loc, pipe) once, with its count: as chunk_of returns them


_LINE_COLUMNS = [RECORD_COLUMNS.index(c) for c in ("kind", "pipe", "start", "end")]


def chunk_of(raw: dict[str, Any]) -> LineCycles:
    """The operations of one task's native records (``InstrTrace.raw``), summed per source
    line and pipe in one native pass over the row-major table."""
    from pypto import _native

    sums = _native.line_totals(raw["table"], raw["loc_id"], len(raw["strings"]), len(PIPES), _LINE_COLUMNS)
    loc, pipe, cycles, count = sums
    return LineCycles(raw["strings"], loc, pipe, cycles, count, summed=True)


# Tasks of fewer records than this are summed together when they share a string table: a
# decode's 16,448 tasks of ~20 records took a native pass each, 0.15 s in all.
_SHORT_TASK = 1024


def chunks_of(raws: Iterable[dict[str, Any]]) -> list[LineCycles]:
    """``chunk_of`` of tasks' records (``InstrTrace.raw``): each long task's, and the short tasks
    that share a string table in one pass over their tables joined. A bad row of a joined
    table is named by its own task's pass."""
    chunks, short = [], dict[tuple[str, ...], list[dict[str, Any]]]()
    for raw in raws:
        if len(raw["table"]) >= _SHORT_TASK:
            chunks.append(chunk_of(raw))
        else:
            short.setdefault(tuple(raw["strings"]), []).append(raw)
    for group in short.values():
        joined = {k: np.concatenate([r[k] for r in group]) for k in ("table", "loc_id")}
        try:
            chunks.append(chunk_of({**joined, "strings": group[0]["strings"]}))
        except IndexError:
            chunks += [chunk_of(r) for r in group]  # raises, naming the task's row
    return chunks


def hot_lines(chunks: Iterable[LineCycles], top: int | None = None) -> list[HotLine]:
    """The table, most cycles first (ties by source then pipe); ``top`` keeps the first rows."""
    totals: dict[tuple[str, int], list[int]] = {}
    for c in chunks:
        if not len(c.loc):
            continue
        sites: Iterable[tuple[int, int, int, int]]
        if c.summed and c.count is not None:  # a task's sums (a decode's thousands of tasks of a few)
            sites = zip(c.loc.tolist(), c.pipe.tolist(), c.cycles.tolist(), c.count.tolist())
        else:
            key = c.loc.astype(np.int64) * len(PIPES) + c.pipe.astype(np.int64)
            keys, inverse = np.unique(key, return_inverse=True)  # a few hundred sites per million
            cycles = np.bincount(inverse, weights=c.cycles, minlength=len(keys)).astype(np.int64)
            counts = np.bincount(inverse, weights=c.count, minlength=len(keys)).astype(np.int64)
            sites = (
                (*divmod(k, len(PIPES)), cyc, n)
                for k, cyc, n in zip(keys.tolist(), cycles.tolist(), counts.tolist())
            )
        for loc, pipe, cyc, n in sites:
            slot = totals.setdefault((c.strings[loc] or NO_LINE, pipe), [0, 0])
            slot[0] += cyc
            slot[1] += n
    whole = sum(v[0] for v in totals.values()) or 1
    rows = [HotLine(src, PIPES[pipe], cyc, n, cyc / whole) for (src, pipe), (cyc, n) in totals.items()]
    rows.sort(key=lambda r: (-r.cycles, r.source, PIPES.index(r.pipe)))
    return rows[:top] if top is not None else rows


def format_hot_lines(rows: list[HotLine], top: int = 10) -> str:
    """The printed table: the ``top`` rows, one per line."""
    if not rows:
        return ""
    width = max(len(r.source) for r in rows[:top])
    lines = [f"hot spots by source line (top {min(top, len(rows))} of {len(rows)}):"]
    lines.append(f"  {'source line':<{width}}  {'pipe':<8}{'cycles':>12}{'share':>8}{'count':>10}")
    for r in rows[:top]:
        lines.append(f"  {r.source:<{width}}  {r.pipe:<8}{r.cycles:>12,}{r.share:>8.1%}{r.count:>10,}")
    return "\n".join(lines)
