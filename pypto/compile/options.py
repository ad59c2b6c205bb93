"""The two halves of a ``RunConfig``: what a compile depends on, and what only a run reads.

``CompileOptions`` is hashed into the program cache key and keys the compiled product on the
kernel object; ``RunOptions`` never does, so changing one (tracing, a timeline, another cost
table, a seed, limits, isolation, another output folder) reuses the compiled product.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pypto import platforms
from pypto._dataclass import dataclass
from pypto.ir.enums import PassDumpLevel
from pypto.passes.options import MemoryPlanner


@dataclass(frozen=True)
class CompileOptions:
    """Everything a compile reads besides the kernel and the call's arguments."""

    platform: str = "a2a3sim"
    planner: MemoryPlanner = MemoryPlanner.PYPTO
    dump_level: PassDumpLevel = PassDumpLevel.NONE
    disabled_diagnostics: tuple[str, ...] | None = None
    platform_overrides: tuple[tuple[str, Any], ...] = ()

    def key(self) -> tuple:
        """The options as one hashable value (the program cache key hashes its repr)."""
        return (
            self.platform,
            self.planner,
            self.dump_level,
            self.disabled_diagnostics,
            self.platform_overrides,
        )

    def resolved_platform(self) -> platforms.Platform:
        """The table the passes and codegen read: its capacities, alignments and ids. Cost
        profiles differ only in prices, which no pass reads, so the compile always sees the
        default profile and a run's ``cost_profile`` never recompiles."""
        base = platforms.get(self.platform)
        return base.with_overrides(**dict(self.platform_overrides)) if self.platform_overrides else base


@dataclass(frozen=True)
class RunOptions:
    """What only a run reads: none of it changes the compiled kernels or the launch plan."""

    trace: bool = False
    timeline: bool = False
    cost_profile: str = "device"
    seed: int | None = None
    max_cycles: int | None = None
    max_instructions: int | None = None
    isolate: bool | None = None
    timeout_s: float | None = None
    output_dir: str | Path | None = None
