"""What every pass may read: the target platform, the planner choice, the hint sink.

It is also the one channel between passes that is not the IR itself: PlanPipelineLoops
records a :class:`PipelinePlan` per ``pl.pipeline`` loop, ExpandPipelineLoops consumes it and
records a :class:`PipelineGroup` per expanded loop, and AllocateMemoryAddr's capacity gate
reads the groups (which tiles are the clones of which stage).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pypto.diagnostics.hints import HintSink
from pypto.errors import SourceSpan
from pypto.passes.options import MemoryPlanner
from pypto.platforms import Platform


@dataclass(frozen=True)
class PipelinePlan:
    """One validated ``pl.pipeline`` loop of ``function`` (keyed by its loop variable)."""

    function: str
    loop_var: str
    depth: int
    step: int
    staged: tuple[str, ...]  # the tiles the body defines: each clone gets its own copy
    span: SourceSpan | None = None


@dataclass(frozen=True)
class PipelineClone:
    """One clone of a replicated body: ``staged`` are its tiles in the source body's order (so
    position ``j`` of every clone is the same source tile), ``defs`` every name its top-level
    statements bind, ``hoisted`` the names bound by the loads moved ahead of all compute."""

    staged: tuple[str, ...]
    defs: frozenset[str]
    hoisted: frozenset[str]


@dataclass(frozen=True)
class PipelineGroup:
    """The clones of one expanded pipeline loop: ``blocks`` are the replicated blocks (the
    loop body, then the static leftover clones after the loop), each a tuple of clones."""

    function: str
    name: str
    depth: int
    blocks: tuple[tuple[PipelineClone, ...], ...]
    span: SourceSpan | None = None


@dataclass
class PassContext:
    platform: Platform
    planner: MemoryPlanner = MemoryPlanner.PYPTO
    hints: HintSink = field(default_factory=HintSink)
    pipeline_plans: dict[tuple[str, str], PipelinePlan] = field(default_factory=dict)
    pipeline_groups: list[PipelineGroup] = field(default_factory=list)
