"""What every pass may read: the target platform, the planner choice, the hint sink."""

from __future__ import annotations

from dataclasses import dataclass, field

from pypto.diagnostics.hints import HintSink
from pypto.passes.options import MemoryPlanner
from pypto.platforms import Platform


@dataclass
class PassContext:
    platform: Platform
    planner: MemoryPlanner = MemoryPlanner.PYPTO
    hints: HintSink = field(default_factory=HintSink)
