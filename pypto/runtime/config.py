"""``RunConfig``: how a kernel is compiled and run — the public spelling of both halves,
``CompileOptions`` and ``RunOptions`` (:mod:`pypto.compile.options`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto import platforms
from pypto.compile.options import CompileOptions, RunOptions
from pypto.errors import ArgumentValueError, ConfigError
from pypto.ir.enums import PassDumpLevel
from pypto.passes.options import MemoryPlanner
from pypto.runtime.dfx import DfxOptions
from pypto.runtime.launch import check_limits, check_run_limit
from pypto.runtime.upstream_options import translate


@dataclass(frozen=True)
class RunConfig:
    """Compile and run options. ``platform`` is checked at construction (ValueError lists names)."""

    platform: str = "a2a3sim"
    memory_planner: MemoryPlanner | None = None
    dump_passes: bool | PassDumpLevel = False
    disabled_diagnostics: frozenset[str] | set[str] | None = None
    output_dir: str | Path | None = None
    trace: bool = False
    platform_overrides: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None  # shuffles the order atomic adds land in (reduction-order studies)
    # A run past either limit stops with SimulationLimitError naming the kernel and its line.
    max_cycles: int | None = None  # simulated cycles, end to end
    max_instructions: int | None = None  # per kernel instance
    # Run in a worker process (a native crash becomes KernelCrashError). None: isolated exactly
    # when the program has a hand-written (external_source) kernel.
    isolate: bool | None = None
    timeout_s: float | None = None  # wall-clock limit of an isolated run (SimulationLimitError)
    timeline: bool = False  # with trace: write <output_dir>/report/timeline.html after each run
    # With trace: also each launch's trace.json, the TRACE block of its visualize_data.bin again
    # as a plain file (by default every instruction is written once per form: docs/trace.md).
    trace_json: bool = False
    # Which cost table the simulator prices instructions with: "device" (calibrated against
    # device evidence) or "pto-isa" (pto-isa's cost model, to compare with that simulator).
    # Simulation only: the compiled kernels are the same. platform_overrides apply on top.
    cost_profile: str = "device"
    # Upstream PyPTO's run-time diagnostics (pypto.runtime.dfx): each writes into
    # <output_dir>/dfx_outputs after every launch. A swimlane level > 0 also turns on trace and
    # timeline. Not part of the compile: a compiled program takes them per call.
    enable_chip_swimlane: int | bool = 0
    enable_dump_args: int | bool = 0
    enable_pmu: int | bool = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    # Upstream's chip family (pypto.backend.BackendType); checked against `platform`.
    backend_type: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.platform, str) or self.platform not in platforms.names():
            raise ConfigError(
                f"unknown platform {self.platform!r}; valid platforms: {', '.join(platforms.names())}"
            )
        profiles = platforms.cost_profiles()
        if not isinstance(self.cost_profile, str) or self.cost_profile not in profiles:
            raise ConfigError(
                f"unknown cost_profile {self.cost_profile!r}; valid profiles: {', '.join(profiles)}"
            )
        if self.memory_planner is not None and not isinstance(self.memory_planner, MemoryPlanner):
            raise ConfigError(
                f"memory_planner must be a pypto.passes.MemoryPlanner, got {self.memory_planner!r}"
            )
        if not isinstance(self.dump_passes, (bool, PassDumpLevel)):
            raise ConfigError(f"dump_passes must be a bool or a PassDumpLevel, got {self.dump_passes!r}")
        self._check_fields()
        self._check_upstream_fields()
        plat = self.resolved_platform()  # refuse bad overrides now, not at the first run
        if self.platform_overrides:  # as checked: plain int/float (a numpy scalar is converted)
            checked = {k: plat.fields[k] for k in self.platform_overrides}
            object.__setattr__(self, "platform_overrides", checked)

    def _check_fields(self) -> None:
        d = self.disabled_diagnostics
        if d is not None and (not isinstance(d, (set, frozenset)) or not all(isinstance(x, str) for x in d)):
            raise ConfigError(f"disabled_diagnostics must be a set of diagnostic ids (str), got {d!r}")
        if self.output_dir is not None and not isinstance(self.output_dir, (str, Path)):
            raise ConfigError(f"output_dir must be a str or pathlib.Path, got {self.output_dir!r}")
        if not isinstance(self.trace, bool):
            raise ConfigError(f"trace must be True or False, got {self.trace!r}")
        if not isinstance(self.trace_json, bool):
            raise ConfigError(f"trace_json must be True or False, got {self.trace_json!r}")
        if not isinstance(self.platform_overrides, dict) or not all(
            isinstance(k, str) for k in self.platform_overrides
        ):
            raise ConfigError(
                f"platform_overrides must be a dict of field name -> number, got {self.platform_overrides!r}"
            )
        s = self.seed
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**64):
            raise ConfigError(f"seed must be None or an integer in [0, 2**64), got {s!r}")
        if self.isolate is not None and not isinstance(self.isolate, bool):
            raise ConfigError(f"isolate must be None, True or False, got {self.isolate!r}")
        try:
            check_limits(self.isolate is not False, self.timeout_s, "RunConfig.")
            check_run_limit("max_cycles", self.max_cycles, "RunConfig.")
            check_run_limit("max_instructions", self.max_instructions, "RunConfig.")
        except ArgumentValueError as e:
            raise ConfigError(e.message) from None

    def _check_upstream_fields(self) -> None:
        try:
            dfx = DfxOptions(self.enable_chip_swimlane, self.enable_dump_args, self.enable_pmu,
                             self.enable_dep_gen, self.enable_scope_stats)  # fmt: skip
        except (TypeError, ValueError) as e:
            raise ConfigError(str(e)) from None
        object.__setattr__(self, "enable_chip_swimlane", dfx.enable_chip_swimlane)
        object.__setattr__(self, "enable_dump_args", dfx.enable_dump_args)
        object.__setattr__(self, "enable_pmu", dfx.enable_pmu)
        if dfx.enable_chip_swimlane:  # the swimlane is pypto's trace and timeline
            object.__setattr__(self, "trace", True)
            object.__setattr__(self, "timeline", True)
        if self.backend_type is not None:
            from pypto.backend import check_platform

            try:
                check_platform(self.backend_type, self.platform, "RunConfig")
            except (TypeError, ValueError) as e:
                raise ConfigError(str(e)) from None

    def any_dfx_enabled(self) -> bool:
        """Whether a DFX option is on (upstream's name; cheap: read on every call)."""
        return bool(
            self.enable_chip_swimlane or self.enable_dump_args or self.enable_pmu
            or self.enable_dep_gen or self.enable_scope_stats
        )  # fmt: skip

    @property
    def dfx(self) -> Any:
        """The DFX switches of this config (``pypto.runtime.dfx.DfxOptions``)."""
        return DfxOptions(self.enable_chip_swimlane, self.enable_dump_args, self.enable_pmu,
                          self.enable_dep_gen, self.enable_scope_stats)  # fmt: skip

    @property
    def device_id(self) -> int:
        """Upstream's device index: always 0, the one simulated chip."""
        return 0

    def isolated(self, has_external: bool) -> bool:
        """Whether a run goes to a worker process: as set, else when a kernel is hand-written
        (or a timeout is asked for)."""
        if self.isolate is not None:
            return self.isolate
        return has_external or self.timeout_s is not None

    @property
    def planner(self) -> MemoryPlanner:
        return self.memory_planner or MemoryPlanner.PYPTO

    @property
    def dump_level(self) -> PassDumpLevel:
        if self.dump_passes is True:
            return PassDumpLevel.CONCISE
        return self.dump_passes or PassDumpLevel.NONE

    def resolved_platform(self) -> platforms.Platform:
        base = platforms.get(self.platform, self.cost_profile)
        return base.with_overrides(**self.platform_overrides) if self.platform_overrides else base

    def compile_options(self) -> CompileOptions:
        """The half of this config a compile reads (what keys the compiled Artifact)."""
        disabled = None if self.disabled_diagnostics is None else tuple(sorted(self.disabled_diagnostics))
        return CompileOptions(
            self.platform,
            self.planner,
            self.dump_level,
            disabled,
            tuple(sorted(self.platform_overrides.items())),
        )

    def run_options(self) -> RunOptions:
        """The half of this config only a run reads (never recompiles)."""
        return RunOptions(
            self.trace, self.timeline, self.cost_profile, self.seed, self.max_cycles,
            self.max_instructions, self.isolate, self.timeout_s, self.output_dir,
        )  # fmt: skip

    def compile_key(self) -> tuple:
        """What identifies a compiled program (the public face a run uses: it keeps its config,
        so ``trace`` and the cost profile are in it); the Artifact underneath is keyed by
        ``compile_options()`` alone, so a run option makes a new face, never a new compile."""
        # Kept after the first call (it is on the warm-call path) unless a field can still
        # change in place: a set of disabled diagnostics or a non-empty overrides dict.
        key = self.__dict__.get("_compile_key")
        if key is not None and not self.platform_overrides:
            return key
        key = self._compute_compile_key()
        if not self.platform_overrides and not isinstance(self.disabled_diagnostics, set):
            self.__dict__["_compile_key"] = key  # frozen: bypass the dataclass __setattr__
        return key

    def _compute_compile_key(self) -> tuple:
        o = self.compile_options()
        return _HashedOnce(
            (
                o.platform,
                o.planner,
                o.dump_level,
                o.disabled_diagnostics,
                self.trace,
                str(self.output_dir) if self.output_dir else None,
                o.platform_overrides,
                self.timeline,
                self.trace_json,
                self.cost_profile,  # the compiled program keeps its config, so it runs on this table
            )
        )


class _HashedOnce(tuple):
    """A tuple that computes its hash once. The compile key holds enums, whose hash is Python
    code (half a microsecond for the key), and every warm call looks the key up."""

    def __hash__(self) -> int:
        found = self.__dict__.get("hash")
        if found is None:
            found = self.__dict__["hash"] = tuple.__hash__(self)
        return found


_GENERATED_INIT = RunConfig.__init__


@functools.wraps(_GENERATED_INIT)
def _init_with_upstream_options(self: RunConfig, *args: Any, **kwargs: Any) -> None:
    """Upstream PyPTO's options are accepted too (``pypto.runtime.upstream_options``)."""
    _GENERATED_INIT(self, *args, **translate(kwargs))


RunConfig.__init__ = _init_with_upstream_options  # type: ignore[method-assign]


def call_config(config: Any) -> RunConfig:
    """A call's ``config=``: a RunConfig (None: the defaults); anything else is a ConfigError."""
    if config is None:
        return RunConfig()
    if not isinstance(config, RunConfig):
        raise ConfigError(
            f"config must be a pypto.runtime.RunConfig, got {type(config).__name__} {config!r} "
            "(e.g. config=RunConfig(platform='a5sim'))"
        )
    return config
