"""``@pl.jit`` end to end: parse → passes → C++ → build → launch plan → run.

A compiled program is cached on the kernel object per (specialisation key, compile options),
so a warm call costs a dict lookup plus the native run.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto import _native, knobs
from pypto.codegen import generate_kernel
from pypto.diagnostics.hints import HintSink, write_hints
from pypto.ir.enums import Direction
from pypto.ir.printer import print_program
from pypto.ir.stmt import Program
from pypto.ir.types import TensorType
from pypto.passes.context import PassContext
from pypto.passes.pipeline import run_passes
from pypto.runtime.build import KernelSource, build_kernels
from pypto.runtime.config import RunConfig
from pypto.runtime.marshal import ArgumentError, as_array, scalar_slot
from pypto.runtime.plan import Task, plan_orchestration
from pypto.runtime.report import RunReport, sequential_report

log = logging.getLogger(__name__)


@dataclass
class CompiledProgram:
    """What one compile produced; ``run(*args)`` executes it and returns a RunReport."""

    name: str
    output_dir: Path
    param_names: list[str]
    platform: str
    program: Program
    config: RunConfig
    kernels: dict[str, Path]
    tasks: list[Task]
    outputs: frozenset[int]
    tensor_params: list[int] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def _platform(self) -> tuple:
        cached = self.__dict__.get("_plat")
        if cached is None:  # resolved once: the config of a compiled program never changes
            plat = self.config.resolved_platform()
            cached = self.__dict__["_plat"] = (plat, plat.to_native())
        return cached

    def _array(self, args: tuple, i: int) -> tuple:
        try:
            return as_array(args[i], name=self.param_names[i], output=i in self.outputs)
        except ArgumentError as e:  # point at the parameter in the user's kernel
            raise ArgumentError(e.message, _param_span(self.program, i)) from None

    def run(self, *args: Any) -> RunReport:
        if len(args) != len(self.param_names):
            raise ArgumentError(
                f"{self.name} takes {len(self.param_names)} arguments "
                f"({', '.join(self.param_names)}), got {len(args)}"
            )
        arrays = [self._array(args, i) for i in self.tensor_params]
        plat, native_plat = self._platform()
        blocks = []
        for t in self.tasks:
            slots = [scalar_slot(v, name=t.kernel) for v in t.scalars]
            blocks.append(
                (
                    t.kernel,
                    _native.run_kernel(
                        str(self.kernels[t.kernel]),
                        [arrays[i] for i in t.tensors],
                        slots,
                        native_plat,
                        t.kernel,
                        1,
                        True,
                        True,
                    ),
                )
            )
        return sequential_report(plat.name, plat.clock_hz, plat.task_dispatch_cycles, blocks)


def _param_span(program: Program, i: int):
    return program.entry.params[i].span


def _entry_outputs(program: Program) -> tuple[list[str], frozenset[int], list[int]]:
    entry = program.entry
    names = [p.var.name for p in entry.params]
    outs = frozenset(i for i, p in enumerate(entry.params) if p.direction in (Direction.Out, Direction.InOut))
    tensors = [i for i, p in enumerate(entry.params) if isinstance(p.var.type, TensorType)]
    return names, outs, tensors


def _output_dir(name: str, key: tuple, config: RunConfig) -> Path:
    if config.output_dir is not None:
        return Path(config.output_dir)
    digest = hashlib.sha256(repr((name, key)).encode()).hexdigest()[:16]
    return knobs.cache_dir() / "programs" / f"{name}-{digest}"


def _dumper(out: Path, config: RunConfig):
    if config.dump_level.name == "NONE":
        return None
    folder = out / "passes_dump"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.py"):
        old.unlink()

    def dump(index: int, pass_name: str, program: Program) -> None:
        stem = "00_frontend" if index == 0 else f"{index:02d}_after_{pass_name}"
        (folder / f"{stem}.py").write_text(print_program(program))

    return dump


def lower_program(
    jf: Any,
    args: tuple,
    kwargs: dict,
    config: RunConfig,
    out: Path | None = None,
    sink: HintSink | None = None,
) -> Program:
    """Frontend + passes: the lowered IR (no codegen, no artifacts unless dumping)."""
    program = jf.parse(*args, **kwargs)
    ctx = PassContext(config.resolved_platform(), config.planner, sink or HintSink())
    dump = _dumper(out, config) if out is not None else None
    return run_passes(program, ctx, dump=dump)


def compile_program(jf: Any, args: tuple, kwargs: dict, config: RunConfig) -> CompiledProgram:
    key = (jf.specialization_key(*args, **kwargs), config.compile_key())
    cache = jf.__dict__.setdefault("_pypto_compiled", {})
    if key in cache:
        return cache[key]
    out = _output_dir(jf.name, key, config)
    disabled = frozenset(config.disabled_diagnostics or ())
    sink = HintSink(disabled)
    lowered = lower_program(jf, args, kwargs, config, out, sink)
    incore = [f for f in lowered.functions if f.kind.is_incore and f.external_source is None]
    sources = [KernelSource(name=f.name, code=generate_kernel(f)) for f in incore]
    paths = build_kernels(sources, platform=config.platform, output_dir=out)
    write_hints(sink, out)
    names, outs, tensors = _entry_outputs(lowered)
    scalar_args = {n: a for n, a in zip(names, args) if isinstance(a, (int, float))}
    tasks = plan_orchestration(lowered, lowered.entry, scalar_args)
    compiled = CompiledProgram(
        jf.name,
        out,
        names,
        config.platform,
        lowered,
        config,
        {f.name: p for f, p in zip(incore, paths)},
        tasks,
        outs,
        tensors,
        sink.lines(),
    )
    cache[key] = compiled
    log.debug("compiled %s into %s (%d kernels, %d tasks)", jf.name, out, len(paths), len(tasks))
    return compiled


def call_jit(jf: Any, args: tuple, kwargs: dict, config: RunConfig | None) -> Any:
    """``kernel(*args, config=...)``: compile (cached), run, keep ``last_report``, return outputs."""
    compiled = compile_program(jf, args, kwargs, config or RunConfig())
    jf.last_report = compiled.run(*args)
    outs = [args[i] for i in sorted(compiled.outputs)]
    return outs[0] if len(outs) == 1 else tuple(outs) if outs else None
