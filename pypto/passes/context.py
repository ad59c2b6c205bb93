"""What every pass may read: the target platform, the planner choice, the hint sink.

Configuration and sinks only: whatever one pass decides for a later one lives in the IR, so
a pass dump holds all a pass reads and any pass can be rerun from the dump before it. The
pipelining decisions are ``For.staged`` (PlanPipelineLoops → ExpandPipelineLoops) and
``Function.pipeline_groups`` (ExpandPipelineLoops → the memory planner), see
:mod:`pypto.ir.stmt`.
"""

from __future__ import annotations

from dataclasses import field

from pypto._dataclass import dataclass
from pypto.diagnostics.hints import HintSink
from pypto.passes.options import MemoryPlanner
from pypto.platforms import Platform


@dataclass
class PassContext:
    platform: Platform
    planner: MemoryPlanner = MemoryPlanner.PYPTO
    hints: HintSink = field(default_factory=HintSink)
