"""Collecting perf hints during a compile and writing them where users look.

Line format (SPEC §7): ``[perf_hint <CODE>] <RuleName>: <message> at <file>:<line>:<col>``.
Every hint goes to ``<output_dir>/report/perf_hints.log``; stderr gets one summary line.
Identical hints at one source location merge into one line with an occurrence count.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from pypto.errors import SourceSpan


@dataclass(frozen=True)
class PerfHint:
    code: str  # "PH001"
    rule: str  # "TileInnermostDimGranularity"
    message: str
    span: SourceSpan | None = None

    def line(self, count: int = 1) -> str:
        where = f" at {self.span}" if self.span else ""
        times = f" (x{count})" if count > 1 else ""
        return f"[perf_hint {self.code}] {self.rule}: {self.message}{times}{where}"


@dataclass
class HintSink:
    """Hints of one compile, deduplicated; rules named in ``disabled`` (name or code) are dropped."""

    disabled: frozenset[str] = frozenset()
    counts: dict[PerfHint, int] = field(default_factory=dict)

    def emit(self, hint: PerfHint) -> None:
        if hint.code in self.disabled or hint.rule in self.disabled:
            return
        self.counts[hint] = self.counts.get(hint, 0) + 1

    @property
    def hints(self) -> list[PerfHint]:
        return list(self.counts)

    def lines(self) -> list[str]:
        return [h.line(n) for h, n in self.counts.items()]


def write_hints(sink: HintSink, output_dir: Path, *, stream=None) -> Path:
    """Appends the hints to report/perf_hints.log and prints the one-line summary."""
    log = output_dir / "report" / "perf_hints.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        for line in sink.lines():
            f.write(line + "\n")
    if sink.counts:
        sites = len({h.span for h in sink.counts})
        print(
            f"[perf_hint] {len(sink.counts)} hints across {sites} sites; see {log}", file=stream or sys.stderr
        )
    return log
