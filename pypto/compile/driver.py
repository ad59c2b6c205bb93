"""The compile driver: a kernel and its call's arguments in, one :class:`Artifact` out.

``STAGES`` is the order, one line per stage with why it sits where it does; ``compile`` runs
them over a :class:`Work` record that each stage adds its part to. Saving the product (the
program cache, the output folder) is not a stage: those are codecs of the finished Artifact
(:mod:`pypto.compile.codecs`), applied by the caller.

This module loads the whole compiler; :mod:`pypto.runtime.jit` imports it only on a miss, so a
process whose programs all come from the program cache never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from pypto._dataclass import dataclass
from pypto._light import Logger
from pypto.codegen import kernel_sources
from pypto.compile.artifact import DUMP_FOLDER, Artifact, Launch, Lazy
from pypto.compile.kernels import check_loadable
from pypto.compile.options import CompileOptions
from pypto.compile.plan import Plan, plan_orchestration
from pypto.diagnostics.hints import HintSink, write_hints
from pypto.frontend.specialize import bind_arguments
from pypto.ir.enums import Direction, FunctionType
from pypto.ir.printer import print_program
from pypto.ir.stmt import Program
from pypto.ir.types import TensorType
from pypto.kernel_build import KernelSource, build_kernels
from pypto.kernel_build.cache_files import ensure_dir
from pypto.passes.context import PassContext
from pypto.passes.pipeline import Dump, run_passes

log = Logger(__name__)

__all__ = ["STAGES", "KernelCall", "Stage", "Work", "compile", "from_lowered", "lower"]


@dataclass(frozen=True)
class KernelCall:
    """What is compiled: a kernel (``@pl.jit``, or a ``@pl.program`` seen as one) and the
    arguments of the call it is specialised on."""

    kernel: Any  # has .name and .parse(*args, **kwargs) -> Program
    args: tuple
    kwargs: dict


@dataclass
class Work:
    """A compile in progress: each stage reads what earlier stages filled in and adds its part."""

    call: KernelCall
    options: CompileOptions
    folder: Path | None  # where the build, the dumps and the hint log go (None: nowhere)
    sink: HintSink
    program: Program | None = None
    sources: list[KernelSource] = field(default_factory=list)  # generated kernels
    external: list[KernelSource] = field(default_factory=list)  # hand-written kernels
    kernels: dict[str, Path] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    plan: Plan | None = None
    dumps: list[tuple[str, str]] = field(default_factory=list)  # (file stem, program text)

    @property
    def lowered(self) -> Program:
        assert self.program is not None, "a stage ran before parse"
        return self.program


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Work], None]


def _parse(work: Work) -> None:
    work.program = work.call.kernel.parse(*work.call.args, **work.call.kwargs)


def _passes(work: Work) -> None:
    ctx = PassContext(work.options.resolved_platform(), work.options.planner, work.sink)
    work.program = run_passes(work.lowered, ctx, dump=_dumper(work))


def _kernel_sources(work: Work) -> None:
    work.sources = [KernelSource(name=name, code=code) for name, code in kernel_sources(work.lowered)]
    work.external = [
        KernelSource(
            name=f.name, path=Path(f.external_source), include_dirs=tuple(Path(d) for d in f.include_dirs)
        )
        for f in work.lowered.functions
        if f.external_source is not None
    ]


def _build(work: Work) -> None:
    every = work.sources + work.external
    paths = build_kernels(every, platform=work.options.platform, output_dir=work.folder)
    work.kernels = {src.name: path for src, path in zip(every, paths)}


def _load_check(work: Work) -> None:
    check_loadable(work.kernels, work.sources + work.external, work.options.platform)


def _hints(work: Work) -> None:
    if work.folder is not None:
        write_hints(work.sink, ensure_dir(work.folder))


def _launch_plan(work: Work) -> None:
    program, call = work.lowered, work.call
    names = [p.var.name for p in program.entry.params]
    work.params = {n: a for n, a in zip(names, call.args) if isinstance(a, (int, float))}
    args = tuple(bind_arguments("", names, call.args, call.kwargs, None)) if call.kwargs else call.args
    work.plan = plan_orchestration(program, program.entry, work.params, args)


STAGES: list[Stage] = [
    # The body is read against the call's shapes and dtypes: every later stage is specialised.
    Stage("parse", _parse),
    # The pass list (verified, dumped); perf hints are collected into the sink as it runs.
    Stage("passes", _passes),
    # One C++ unit per InCore function, from the final IR; hand-written kernels join here.
    Stage("kernel sources", _kernel_sources),
    # Into the content-addressed kernel cache (a hit is a lookup), all kernels in one build.
    Stage("build", _build),
    # Each kernel loaded now, so a missing entry point is a compile error naming its file.
    Stage("load check", _load_check),
    # Written only once the kernels load: a failed compile leaves the last hint log alone.
    Stage("hints", _hints),
    # Last: the orchestration is evaluated against the final signature and the compiled scalars.
    Stage("launch plan", _launch_plan),
]


def compile(call: KernelCall, options: CompileOptions, folder: Path | None = None) -> Artifact:
    """Runs ``STAGES`` and freezes the result; ``folder`` receives the build files, the pass
    dumps and the hint log (the codecs write the rest)."""
    work = Work(call, options, folder, HintSink(frozenset(options.disabled_diagnostics or ())))
    for stage in STAGES:
        stage.run(work)
    artifact = _freeze(work)
    log.debug(
        "compiled %s (%d kernels, %d tasks)", artifact.name, len(artifact.kernels), len(artifact.launch.specs)
    )
    return artifact


def lower(call: KernelCall, options: CompileOptions, folder: Path | None = None, sink: Any = None) -> Program:
    """Only the stages up to the lowered IR (parse and passes): no codegen, no build."""
    work = Work(call, options, folder, sink or HintSink())
    for stage in STAGES[:2]:
        stage.run(work)
    return work.lowered


def from_lowered(
    name: str,
    options: CompileOptions,
    folder: Path,
    program: Program,
    sources: list[KernelSource],
    params: dict[str, Any],
    hints: tuple[str, ...],
) -> Artifact:
    """The Artifact of a program lowered earlier (an output folder read back): only the build
    (a lookup when the kernels are still cached) and the launch plan run again."""
    work = Work(KernelCall(_Named(name), (), {}), options, folder, HintSink(), program=program)
    work.sources = [s for s in sources if s.code is not None]
    work.external = [s for s in sources if s.code is None]
    _build(work)
    work.params = dict(params)
    work.plan = plan_orchestration(program, program.entry, work.params)
    return _freeze(work, hints)


@dataclass(frozen=True)
class _Named:
    """A kernel known by its name only (its program is already lowered)."""

    name: str


def _freeze(work: Work, hints: tuple[str, ...] | None = None) -> Artifact:
    program, plan = work.lowered, work.plan
    assert plan is not None
    params = program.entry.params
    launch = Launch(
        specs=tuple(plan.launch_specs()),
        intermediates=tuple(plan.table_entries()),
        dynamic=bool(plan.dynamic) or plan.data,
        cube_kernels=tuple(f.name for f in program.functions if f.kind is FunctionType.AIC),
    )
    return Artifact(
        name=work.call.kernel.name,
        options=work.options,
        program=Lazy(program),
        plan=Lazy(plan),
        launch=launch,
        kernels=dict(work.kernels),
        sources={s.name: s.code for s in work.sources if s.code is not None},
        external=tuple(work.external),
        hints=tuple(work.sink.lines()) if hints is None else hints,
        dumps=tuple(work.dumps),
        params=work.params,
        param_names=tuple(p.var.name for p in params),
        outputs=frozenset(i for i, p in enumerate(params) if p.direction in (Direction.Out, Direction.InOut)),
        tensor_params=tuple(i for i, p in enumerate(params) if isinstance(p.var.type, TensorType)),
    )


def _dumper(work: Work) -> Dump | None:
    """Each pass's result, kept in the Artifact and written as the passes run (a compile that
    fails in a later pass leaves the dumps before it)."""
    if work.options.dump_level.name == "NONE":
        return None
    folder = None if work.folder is None else ensure_dir(work.folder / DUMP_FOLDER)
    for old in folder.glob("*.py") if folder is not None else ():
        old.unlink()

    def dump(index: int, pass_name: str, program: Program) -> None:
        stem = "00_frontend" if index == 0 else f"{index:02d}_after_{pass_name}"
        work.dumps.append((stem, print_program(program)))
        if folder is not None:
            (folder / f"{stem}.py").write_text(work.dumps[-1][1])

    return dump
