"""Collecting perf hints during a compile and writing them where users look.

Line format (docs/perf_hints.md): ``[perf_hint <CODE>] <RuleName>: <message> at <file>:<line>:<col>``.
Every compile rewrites ``<output_dir>/report/perf_hints.log`` with its hints (one file per
compile's output folder, never appended to). The one-line summary is logged by
``pypto.perf_hints``: at WARNING when the hints are new or changed, at INFO when a recompile
found exactly the hints already in the log — so an unchanged kernel prints nothing by
default (``PYPTO_LOG_LEVEL=INFO`` shows it). Identical hints at one source location merge
into one line with an occurrence count.
"""

from __future__ import annotations

import logging
import os
from dataclasses import field
from pathlib import Path

from pypto._dataclass import dataclass
from pypto.errors import SourceSpan

logger = logging.getLogger("pypto.perf_hints")


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


def write_hints(sink: HintSink, output_dir: Path) -> Path:
    """Rewrites report/perf_hints.log with this compile's hints and logs the summary line."""
    log = output_dir / "report" / "perf_hints.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(line + "\n" for line in sink.lines())
    try:
        unchanged = log.read_text() == text
    except OSError:
        unchanged = False
    if not unchanged:  # written whole then renamed: a concurrent reader never sees a mix
        tmp = log.with_name(f".{log.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, log)
    if sink.counts:
        sites = len({h.span for h in sink.counts})
        level = logging.INFO if unchanged else logging.WARNING
        logger.log(level, "[perf_hint] %d hints across %d sites; see %s", len(sink.counts), sites, log)
    return log
